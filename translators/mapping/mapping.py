"""A loaded mapping and its two directions (legacy -> canonical, canonical -> legacy).

A :class:`Mapping` holds the compiled rules of one mapping file; :meth:`Mapping.direction`
gives a :class:`Direction` whose :meth:`~Direction.apply` maps one record. A direction is
checked when it is asked for: every rule must work that way (a lookup table that is not
one-to-one, a function without an inverse or a cast with no way back cannot be inverted)
and every required field of the target must be set by some rule; the error names the
mapping file and the line of each rule in the way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .avrotypes import AType, SchemaTypes, Step, path_text
from .errors import MappingError
from .records import complete, get_path, required_fields, set_path

TO_CANONICAL = "to_canonical"
TO_LEGACY = "to_legacy"
DIRECTIONS = (TO_CANONICAL, TO_LEGACY)


@dataclass
class Op:
    """One rule compiled for one direction: read values, compute, write values."""

    where: str  # file:line of the rule
    label: str  # what the rule maps, for messages
    reads: list[tuple[Step, ...]]
    writes: list[tuple[Step, ...]]
    write_types: list[AType]
    fn: Callable[[list[Any]], list[Any]]

    def run(self, source: dict[str, Any], target: dict[str, Any]) -> None:
        values = [get_path(source, p) for p in self.reads]
        try:
            results = self.fn(values)
        except MappingError:
            raise
        except (ValueError, TypeError, ArithmeticError, KeyError, LookupError) as exc:
            raise MappingError(f"{self.label}: {_reason(exc)}", where=self.where) from None
        for steps, atype, value in zip(self.writes, self.write_types, results, strict=True):
            if value is None and not atype.nullable:
                raise MappingError(
                    f"{self.label}: {path_text(steps)} is required ({atype.describe()}) but the value is null",
                    where=self.where, hint="give the rule a default",
                )
            if value is None:
                continue  # a null is what completing the record gives a field nobody set
            set_path(target, steps, value)


@dataclass
class Compiled:
    """A rule compiled both ways; ``problems`` says why a direction is not available."""

    where: str
    ops: dict[str, Op | None] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    #: paths (names only) each direction writes, for the required-field check
    writes: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)


@dataclass
class Level:
    """The rules of one record level (the top record, or the elements of an array)."""

    rules: list[Compiled]
    legacy: AType
    canonical: AType
    where: str  # where the level is declared (for required-field errors)


class Direction:
    """One way of a mapping: maps records of the source schema to the target schema."""

    def __init__(self, mapping: Mapping, name: str, level: Level):
        self.mapping = mapping
        self.name = name
        self.level = level
        self.target_types = mapping.canonical_types if name == TO_CANONICAL else mapping.legacy_types
        self.source_types = mapping.legacy_types if name == TO_CANONICAL else mapping.canonical_types
        self.ops = [op for r in level.rules if (op := r.ops.get(name)) is not None]
        self.target = level.canonical if name == TO_CANONICAL else level.legacy
        self.source = level.legacy if name == TO_CANONICAL else level.canonical

    @property
    def source_schema(self) -> Any:
        return self.source.schema

    @property
    def target_schema(self) -> Any:
        return self.target.schema

    def apply(self, record: dict[str, Any]) -> dict[str, Any]:
        """The mapped record, complete with the target schema's defaults."""
        if not isinstance(record, dict):
            raise MappingError(f"expected a record (a dict), got {type(record).__name__}")
        out: dict[str, Any] = {}
        for op in self.ops:
            op.run(record, out)
        return complete(out, self.target, self.target_types)

    __call__ = apply


class Mapping:
    """A mapping file, loaded and checked against the legacy and the canonical schema."""

    def __init__(
        self,
        file: str,
        legacy_schema: Any,
        canonical_schema: Any,
        *,
        legacy_spec: str | None = None,
        canonical_ref: str | None = None,
        legacy_options: dict[str, Any] | None = None,
        description: str | None = None,
        schema_roots: Iterable[str | Path] = (),
    ):
        self.file = file
        #: directories the XSD of an ``xml:`` legacy spec may read besides its own (a site's folder)
        self.schema_roots = tuple(Path(r) for r in schema_roots)
        self.legacy_schema = legacy_schema
        self.canonical_schema = canonical_schema
        self.legacy_spec = legacy_spec
        self.canonical_ref = canonical_ref
        self.legacy_options = dict(legacy_options or {})
        self.description = description
        self.legacy_types = SchemaTypes(legacy_schema, "legacy")
        self.canonical_types = SchemaTypes(canonical_schema, "canonical")
        self.top: Level | None = None
        self.nested: list[tuple[Level, Compiled]] = []  # each level of [[field.each]] and its rule
        self._directions: dict[str, Direction] = {}

    def direction(self, name: str) -> Direction:
        """The direction ``to_canonical`` or ``to_legacy``; MappingError when this mapping
        cannot be used that way (naming the file and the line of each rule in the way)."""
        if name not in DIRECTIONS:
            raise MappingError(f"unknown direction {name!r}", hint="use to_canonical or to_legacy")
        if name not in self._directions:
            assert self.top is not None
            problems = self._problems(self.top, name)
            if problems:
                where, first = problems[0]
                more = f" (and {len(problems) - 1} more: " + "; ".join(f"{w}: {p}" for w, p in problems[1:]) + ")" if len(problems) > 1 else ""
                side = "canonical -> legacy" if name == TO_LEGACY else "legacy -> canonical"
                raise MappingError(f"the mapping cannot be used {side}: {first}{more}", where=where)
            self._directions[name] = Direction(self, name, self.top)
        return self._directions[name]

    def to_canonical(self, record: dict[str, Any]) -> dict[str, Any]:
        return self.direction(TO_CANONICAL).apply(record)

    def to_legacy(self, record: dict[str, Any]) -> dict[str, Any]:
        return self.direction(TO_LEGACY).apply(record)

    @property
    def invertible(self) -> bool:
        """True when the mapping works both ways."""
        assert self.top is not None
        return not self._problems(self.top, TO_CANONICAL) and not self._problems(self.top, TO_LEGACY)

    def _problems(self, level: Level, name: str) -> list[tuple[str, str]]:
        problems = [(r.where, r.problems[name]) for r in level.rules if name in r.problems]
        for nested, rule in self.nested:
            if any(rule is r for r in level.rules) and name not in rule.problems:
                problems += self._problems(nested, name)
        target = level.canonical if name == TO_CANONICAL else level.legacy
        types = self.canonical_types if name == TO_CANONICAL else self.legacy_types
        written = [w for r in level.rules for w in r.writes.get(name, [])]
        side = "canonical" if name == TO_CANONICAL else "legacy"
        for missing in _unset_required(target, types, written, ()):
            problems.append((level.where, f"{side} field {missing!r} is required and no rule sets it"))
        return problems


def _unset_required(atype: AType, types: SchemaTypes, written: list[tuple[str, ...]], prefix: tuple[str, ...]) -> list[str]:
    missing = []
    for name in required_fields(atype, types):
        here = (*prefix, name)
        if any(w == here for w in written):
            continue
        below = [w for w in written if w[: len(here)] == here]
        ftype = types.type_of(atype.fields[name]["type"])
        if below and ftype.kind == "record":
            missing += _unset_required(ftype, types, written, here)
        elif not below:
            missing.append(".".join(here))
    return missing


def _reason(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc) or type(exc).__name__
