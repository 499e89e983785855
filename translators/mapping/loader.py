"""Loading a mapping file (TOML): every rule checked against both schemas.

The format is documented in ``docs/mappings.md``. Each ``[[field]]`` names a ``legacy``
and a ``canonical`` field path (or a list of them, for concatenation and splitting) and
optionally how the value changes on the way: ``format`` (casts), ``lookup``, ``separator``,
``constant``, ``default`` / ``legacy_default``, ``function`` / ``inverse``, ``each``
(the elements of arrays) and ``direction``. An unknown key, an unknown field or a type
mismatch is a :class:`MappingError` naming the file and the line of the offending key.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coupler.canonical.textformats import TextFormatError, load_toml

from .avrotypes import AType, SchemaTypes, Step, parse_path, path_text, strip_docs
from .casts import CastUnsupported, is_scalar, make_cast
from .errors import MappingError
from .jsonvalues import coerce
from .lines import LineIndex, key_lines
from .mapping import DIRECTIONS, TO_CANONICAL, TO_LEGACY, Compiled, Level, Mapping, Op
from .records import complete

TOP_KEYS = ("description", "legacy", "canonical", "legacy_options", "lookups", "field")
RULE_KEYS = (
    "canonical", "legacy", "format", "separator", "lookup", "constant", "default",
    "legacy_default", "function", "inverse", "each", "direction", "note",
)
_STRING = AType("string", "string")
_SIDES = {TO_CANONICAL: ("legacy", "canonical"), TO_LEGACY: ("canonical", "legacy")}


def load_mapping(
    path: str | Path,
    *,
    registry: Any = None,
    legacy_schema: Any = None,
    canonical_schema: Any = None,
    functions: MappingABC[str, Callable[..., Any]] | None = None,
    schema_roots: Iterable[str | Path] = (),
) -> Mapping:
    """Load and check the mapping file at ``path``.

    ``legacy_schema`` / ``canonical_schema`` (Avro JSON) override the file's ``legacy`` spec
    and ``canonical`` reference; ``registry`` (a :class:`SchemaRegistry`, default: the
    built-in and plugin schemas) resolves ``canonical``; ``functions`` are the custom
    transforms rules may name (``coupler.bus.plugins.manager.mapping_functions``);
    ``schema_roots`` are directories the XSD of an ``xml:`` legacy spec may include and import
    from besides its own (a site passes its folder and ``[schemas] paths``).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise MappingError(f"cannot read the mapping file: {exc.strerror or exc}", where=str(p)) from None
    return parse_mapping(
        text, file=str(p), base_dir=p.parent, registry=registry, legacy_schema=legacy_schema,
        canonical_schema=canonical_schema, functions=functions, schema_roots=schema_roots,
    )


def parse_mapping(
    text: str,
    *,
    file: str = "<mapping>",
    base_dir: Path | None = None,
    registry: Any = None,
    legacy_schema: Any = None,
    canonical_schema: Any = None,
    functions: MappingABC[str, Callable[..., Any]] | None = None,
    schema_roots: Iterable[str | Path] = (),
) -> Mapping:
    """Like :func:`load_mapping`, from the text of a mapping file."""
    try:
        data = load_toml(text)
    except TextFormatError as exc:
        raise MappingError(exc.reason, where=exc.at(file)) from None
    index = key_lines(text, file)
    loader = _Loader(file, index, base_dir or Path("."), dict(functions or {}), tuple(Path(r) for r in schema_roots))
    return loader.load(data, registry, legacy_schema, canonical_schema)


@dataclass
class _Side:
    """One side of a rule: the paths it names, resolved, with their types."""

    name: str  # "legacy" | "canonical"
    paths: list[tuple[Step, ...]]
    types: list[AType]
    is_list: bool

    @property
    def single(self) -> tuple[tuple[Step, ...], AType]:
        return self.paths[0], self.types[0]


class _Loader:
    def __init__(self, file: str, index: LineIndex, base_dir: Path, functions: dict[str, Callable[..., Any]],
                 schema_roots: tuple[Path, ...] = ()):
        self.file = file
        self.schema_roots = schema_roots
        self.index = index
        self.base_dir = base_dir
        self.functions = functions
        self.lookups: dict[str, dict[str, Any]] = {}
        self.mapping: Mapping | None = None

    def fail(self, key: tuple[Any, ...], message: str, hint: str | None = None) -> MappingError:
        return MappingError(message, where=self.index.where(key), hint=hint)

    # -- the file ------------------------------------------------------------------------------

    def load(self, data: dict[str, Any], registry: Any, legacy_schema: Any, canonical_schema: Any) -> Mapping:
        for key in data:
            if key not in TOP_KEYS:
                raise self.fail((key,), f"unknown key {key!r}", _close(key, TOP_KEYS))
        legacy_spec = self._string(data, ("legacy",), required=legacy_schema is None)
        canonical_ref = self._string(data, ("canonical",), required=canonical_schema is None)
        options = data.get("legacy_options", {})
        if not isinstance(options, dict):
            raise self.fail(("legacy_options",), "legacy_options must be a table of options")
        if legacy_schema is None:  # avro:NAME@V resolves in the same registry as canonical
            legacy_schema = self._legacy_schema(legacy_spec or "", options, registry)
        if canonical_schema is None:
            canonical_schema = self._canonical_schema(canonical_ref or "", registry)
        mapping = self.mapping = Mapping(
            self.file, legacy_schema, canonical_schema, legacy_spec=legacy_spec,
            canonical_ref=canonical_ref, legacy_options={k: str(v) for k, v in options.items()},
            description=data.get("description"), schema_roots=self.schema_roots,
        )
        for side, types in (("legacy", mapping.legacy_types), ("canonical", mapping.canonical_types)):
            if types.root.kind != "record":
                raise self.fail((side,), f"the {side} schema is {types.root.describe()}, not a record")
        self._load_lookups(data.get("lookups", {}))
        rules = data.get("field", [])
        if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
            raise self.fail(("field",), "field must be an array of tables ([[field]])")
        if not rules:
            raise self.fail((), "the mapping has no [[field]] rules")
        mapping.top = self._level(rules, ("field",), mapping.legacy_types.root, mapping.canonical_types.root,
                                  self.index.where(("canonical",)))
        return mapping

    def _string(self, data: dict[str, Any], key: tuple[str, ...], *, required: bool) -> str | None:
        value = data.get(key[0])
        if value is None:
            if required:
                raise self.fail((), f"the mapping needs a top-level {key[0]!r} key",
                                hint='e.g. legacy = "copybook:customer.cpy" and canonical = "acme.Customer@2"')
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, f"{key[0]} must be a non-empty string")
        return value

    def _legacy_schema(self, spec: str, options: dict[str, Any], registry: Any = None) -> Any:
        from .formats import parse_spec, record_format

        try:
            parsed = parse_spec(spec, base_dir=self.base_dir, options={k: str(v) for k, v in options.items()},
                                schema_roots=self.schema_roots)
            fmt = record_format(parsed, registry=registry)
            schema = fmt.schema
        except MappingError as exc:
            raise self.fail(("legacy",), f"legacy {spec!r}: {exc.message}", exc.hint) from None
        except Exception as exc:  # a CouplerError of the copybook or XML translator
            message = getattr(exc, "args", [str(exc)])[0] if not hasattr(exc, "message") else str(exc)
            raise self.fail(("legacy",), f"legacy {spec!r}: {message}") from None
        if schema is None:
            raise self.fail(("legacy",), f"legacy {spec!r} has no schema", hint="use copybook:, xml: or avro:")
        return schema

    def _canonical_schema(self, ref: str, registry: Any) -> Any:
        from coupler.canonical.errors import CouplerError

        try:
            if registry is None:
                from coupler.canonical.registry import SchemaRegistry

                registry = SchemaRegistry.default()
            return registry.resolve(ref).schema
        except CouplerError as exc:
            raise self.fail(("canonical",), f"canonical {ref!r}: {exc.message}", exc.hint) from None

    def _load_lookups(self, lookups: Any) -> None:
        if not isinstance(lookups, dict):
            raise self.fail(("lookups",), "lookups must be a table of tables ([lookups.NAME])")
        for name, table in lookups.items():
            if not isinstance(table, dict) or not table:
                raise self.fail(("lookups", name), f"lookup table {name!r} must be a non-empty table of KEY = VALUE")
            for key, value in table.items():
                if isinstance(value, dict | list):
                    raise self.fail(("lookups", name, key), f"lookup table {name!r}: the value of {key!r} must be a single value")
            self.lookups[name] = table

    # -- rules ---------------------------------------------------------------------------------

    def _level(self, rules: list[dict[str, Any]], key: tuple[Any, ...], legacy: AType, canonical: AType, where: str) -> Level:
        compiled = [self._rule(rule, (*key, n), legacy, canonical) for n, rule in enumerate(rules)]
        return Level(compiled, legacy, canonical, where)

    def _rule(self, rule: dict[str, Any], key: tuple[Any, ...], legacy_root: AType, canonical_root: AType) -> Compiled:
        assert self.mapping is not None
        for name in rule:
            if name not in RULE_KEYS:
                raise self.fail((*key, name), f"unknown key {name!r} in [[field]]", _close(name, RULE_KEYS))
        where = self.index.where(key)
        direction = rule.get("direction", "both")
        if direction not in ("both", *DIRECTIONS):
            raise self.fail((*key, "direction"), f"direction must be both, to_canonical or to_legacy, not {direction!r}")
        legacy = self._side(rule, key, "legacy", legacy_root, self.mapping.legacy_types)
        canonical = self._side(rule, key, "canonical", canonical_root, self.mapping.canonical_types)
        compiled = Compiled(where)
        if "constant" in rule:
            self._constant(rule, key, legacy, canonical, compiled)
        else:
            if legacy is None or canonical is None:
                missing = "legacy" if legacy is None else "canonical"
                raise self.fail(key, f"the rule has no {missing!r} field", hint="name both fields, or give a constant")
            self._both(rule, key, legacy, canonical, compiled)
        for name in DIRECTIONS:
            if direction not in ("both", name):
                compiled.ops[name] = None
                compiled.problems.pop(name, None)
            elif compiled.ops.get(name) is not None:
                target = canonical if name == TO_CANONICAL else legacy
                if target is not None:
                    compiled.writes[name] = [tuple(s.name for s in p) for p in target.paths]
        if direction != "both" and direction in compiled.problems:
            raise self.fail(key, compiled.problems[direction])
        return compiled

    def _side(self, rule: dict[str, Any], key: tuple[Any, ...], side: str, root: AType, types: SchemaTypes) -> _Side | None:
        raw = rule.get(side)
        if raw is None:
            return None
        items = raw if isinstance(raw, list) else [raw]
        if not items or not all(isinstance(i, str) for i in items):
            raise self.fail((*key, side), f"{side} must be a field path or a list of field paths")
        paths, kinds = [], []
        for text in items:
            try:
                steps = parse_path(text)
                atype, fixed = types.resolve(steps, root)
            except ValueError as exc:
                raise self.fail((*key, side), f"{side}: {exc}") from None
            except LookupError as exc:
                name = f" {root.name}" if root.name else ""
                raise self.fail((*key, side), f"{side} field {text!r}: {exc} in the {side} record{name}") from None
            paths.append(fixed)
            kinds.append(atype)
        if isinstance(raw, list) and len(items) < 2:
            raise self.fail((*key, side), f"a list of {side} fields needs at least two (concatenation or splitting)")
        return _Side(side, paths, kinds, isinstance(raw, list))

    def _constant(self, rule: dict[str, Any], key: tuple[Any, ...], legacy: _Side | None, canonical: _Side | None, compiled: Compiled) -> None:
        for other in ("lookup", "separator", "function", "inverse", "each", "format", "default", "legacy_default"):
            if other in rule:
                raise self.fail((*key, other), f"a constant cannot be combined with {other!r}")
        if (legacy is None) == (canonical is None):
            raise self.fail((*key, "constant"), "a constant sets either a legacy or a canonical field, not both",
                            hint="name only the field the constant goes to")
        side = legacy or canonical
        assert side is not None
        if side.is_list:
            raise self.fail((*key, side.name), "a constant sets one field")
        steps, atype = side.single
        value = self._value(rule["constant"], atype, (*key, "constant"), side.name)
        name = TO_LEGACY if side is legacy else TO_CANONICAL
        compiled.ops[name] = Op(compiled.where, f"constant -> {path_text(steps)}", [], [steps], [atype], lambda _v: [value])
        compiled.ops[TO_CANONICAL if name == TO_LEGACY else TO_LEGACY] = None

    def _value(self, raw: Any, atype: AType, key: tuple[Any, ...], side: str) -> Any:
        assert self.mapping is not None
        types = self.mapping.legacy_types if side == "legacy" else self.mapping.canonical_types
        try:
            value = coerce(raw, atype, types, "")
        except ValueError as exc:
            raise self.fail(key, f"{key[-1]} does not fit the {side} field ({atype.describe()}): {str(exc).removeprefix('value: ')}") from None
        return complete(value, atype, types)

    def _both(self, rule: dict[str, Any], key: tuple[Any, ...], legacy: _Side, canonical: _Side, compiled: Compiled) -> None:
        kinds = [k for k in ("function", "lookup", "separator", "each") if k in rule]
        if len(kinds) > 1:
            raise self.fail((*key, kinds[1]), f"{kinds[0]!r} and {kinds[1]!r} cannot be combined in one rule")
        kind = kinds[0] if kinds else "cast"
        if "inverse" in rule and kind != "function":
            raise self.fail((*key, "inverse"), "inverse only goes with function")
        if kind == "function":
            self._function(rule, key, legacy, canonical, compiled)
            return
        if legacy.is_list or canonical.is_list:
            if kind != "separator":
                raise self.fail((*key, "legacy" if legacy.is_list else "canonical"),
                                "a list of fields needs a separator (concatenation and splitting) or a function")
            self._separator(rule, key, legacy, canonical, compiled)
            return
        if kind == "separator":
            raise self.fail((*key, "separator"), "a separator needs a list of fields on one side")
        defaults = {
            TO_CANONICAL: self._default(rule, key, "default", canonical),
            TO_LEGACY: self._default(rule, key, "legacy_default", legacy),
        }
        if kind == "lookup":
            self._lookup(rule, key, legacy, canonical, compiled, defaults)
        elif kind == "each":
            self._each(rule, key, legacy, canonical, compiled)
        else:
            self._cast(rule, key, legacy, canonical, compiled, defaults)

    def _default(self, rule: dict[str, Any], key: tuple[Any, ...], name: str, side: _Side) -> Any:
        if name not in rule:
            return None
        return self._value(rule[name], side.single[1], (*key, name), side.name)

    # -- rule kinds ----------------------------------------------------------------------------

    def _cast(self, rule: dict[str, Any], key: tuple[Any, ...], legacy: _Side, canonical: _Side,
              compiled: Compiled, defaults: dict[str, Any]) -> None:
        fmt = rule.get("format")
        if fmt is not None and not isinstance(fmt, str):
            raise self.fail((*key, "format"), "format must be a string")
        lpath, ltype = legacy.single
        cpath, ctype = canonical.single
        label = f"{path_text(lpath)} <-> {path_text(cpath)}"
        for name in DIRECTIONS:
            (src, spath, stype), (dst, dpath, dtype) = self._ends(name, legacy, canonical)
            try:
                convert = self._converter(stype, dtype, fmt)
            except CastUnsupported as exc:
                problem = f"{src} {path_text(spath)} ({stype.describe()}) -> {dst} {path_text(dpath)} ({dtype.describe()}): {exc}"
                if name == TO_CANONICAL and rule.get("direction", "both") != TO_LEGACY:
                    raise self.fail((*key, "format" if fmt is not None else "canonical"), f"type mismatch: {problem}") from None
                compiled.problems[name] = f"no way back: {problem}"
                compiled.ops[name] = None
                continue
            compiled.ops[name] = Op(compiled.where, label, [spath], [dpath], [dtype],
                                    _single(convert, defaults[name], text_source=stype.kind == "string" and dtype.kind != "string"))

    def _converter(self, src: AType, dst: AType, fmt: str | None) -> Callable[[Any], Any]:
        if is_scalar(src) and is_scalar(dst):
            return make_cast(src, dst, fmt)
        if src.kind == "array" and dst.kind == "array":
            assert self.mapping is not None
            s_item = self._item(src)
            d_item = self._item(dst)
            if is_scalar(s_item) and is_scalar(d_item):
                cast = make_cast(s_item, d_item, fmt)
                return lambda values: [None if v is None else cast(v) for v in values]
            if _same_shape(s_item.schema, d_item.schema):
                return lambda values: values
            raise CastUnsupported("arrays of records are mapped element by element: add [[field.each]] rules")
        if src.kind == dst.kind and src.kind in ("record", "map", "union") and _same_shape(src.schema, dst.schema):
            return lambda v: v
        if src.kind == "record" or dst.kind == "record":
            raise CastUnsupported("records are mapped field by field: name their fields with dotted paths (address.city)")
        raise CastUnsupported(f"no cast from {src.describe()} to {dst.describe()}")

    def _item(self, array: AType) -> AType:
        assert self.mapping is not None
        for types in (self.mapping.legacy_types, self.mapping.canonical_types):
            try:
                return types.type_of(array.items)
            except KeyError:
                continue
        raise CastUnsupported("unknown array item type")

    @staticmethod
    def _ends(name: str, legacy: _Side, canonical: _Side) -> tuple[tuple[str, tuple[Step, ...], AType], tuple[str, tuple[Step, ...], AType]]:
        lpath, ltype = legacy.single
        cpath, ctype = canonical.single
        if name == TO_CANONICAL:
            return ("legacy", lpath, ltype), ("canonical", cpath, ctype)
        return ("canonical", cpath, ctype), ("legacy", lpath, ltype)

    def _lookup(self, rule: dict[str, Any], key: tuple[Any, ...], legacy: _Side, canonical: _Side,
                compiled: Compiled, defaults: dict[str, Any]) -> None:
        assert self.mapping is not None
        ref = rule["lookup"]
        if isinstance(ref, str):
            if ref not in self.lookups:
                raise self.fail((*key, "lookup"), f"no lookup table {ref!r}", hint=_close(ref, list(self.lookups)) or f"declare it as [lookups.{ref}]")
            table, table_key, name = self.lookups[ref], ("lookups", ref), ref
        elif isinstance(ref, dict) and ref:
            table, table_key, name = ref, (*key, "lookup"), "inline"
        else:
            raise self.fail((*key, "lookup"), "lookup must name a [lookups.NAME] table or be an inline table")
        if "format" in rule:
            raise self.fail((*key, "format"), "a lookup cannot have a format: the table gives the values")
        lpath, ltype = legacy.single
        cpath, ctype = canonical.single
        for t in (ltype, ctype):
            if not is_scalar(t):
                raise self.fail((*key, "lookup"), f"a lookup maps single values, not {t.describe()}")
        forward: dict[Any, Any] = {}
        for raw_key, raw_value in table.items():
            try:
                k = make_cast(_STRING, ltype)(raw_key)
            except (CastUnsupported, ValueError, TypeError, ArithmeticError) as exc:
                raise self.fail((*table_key, raw_key), f"lookup {name!r}: key {raw_key!r} is not a legacy {ltype.describe()} value: {exc}") from None
            forward[k] = self._value(raw_value, ctype, (*table_key, raw_key), "canonical")
        backward: dict[Any, Any] = {}
        clash = None
        for k, v in forward.items():
            if v in backward and clash is None:
                clash = f"lookup table {name!r} maps both {backward[v]!r} and {k!r} to {v!r}: it is not one-to-one"
            backward.setdefault(v, k)
        label = f"{path_text(lpath)} <-> {path_text(cpath)} (lookup {name})"
        compiled.ops[TO_CANONICAL] = Op(compiled.where, label, [lpath], [cpath], [ctype],
                                        _table(forward, name, defaults[TO_CANONICAL]))
        if clash:
            compiled.problems[TO_LEGACY] = clash
            compiled.ops[TO_LEGACY] = None
        else:
            compiled.ops[TO_LEGACY] = Op(compiled.where, label, [cpath], [lpath], [ltype],
                                         _table(backward, name, defaults[TO_LEGACY]))

    def _separator(self, rule: dict[str, Any], key: tuple[Any, ...], legacy: _Side, canonical: _Side, compiled: Compiled) -> None:
        sep = rule["separator"]
        if not isinstance(sep, str) or not sep:
            raise self.fail((*key, "separator"), "separator must be a non-empty string")
        if legacy.is_list == canonical.is_list:
            raise self.fail((*key, "separator"), "concatenation and splitting need a list of fields on exactly one side")
        for other in ("format", "default", "legacy_default"):
            if other in rule:
                raise self.fail((*key, other), f"{other!r} does not go with a separator")
        many, one = (legacy, canonical) if legacy.is_list else (canonical, legacy)
        one_path, one_type = one.single
        try:
            to_text = [make_cast(t, _STRING) for t in many.types]
            from_text = [make_cast(_STRING, t) for t in many.types]
            whole_in = make_cast(_STRING, one_type)
            whole_out = make_cast(one_type, _STRING)
        except CastUnsupported as exc:
            raise self.fail((*key, "separator"), f"type mismatch: {exc}") from None
        joined = ", ".join(path_text(p) for p in many.paths)
        join = Op(compiled.where, f"[{joined}] -> {path_text(one_path)}", list(many.paths), [one_path], [one_type],
                  _join(sep, to_text, whole_in))
        split = Op(compiled.where, f"{path_text(one_path)} -> [{joined}]", [one_path], list(many.paths), list(many.types),
                   _split(sep, whole_out, from_text, many.types))
        joins_to = TO_CANONICAL if many is legacy else TO_LEGACY
        compiled.ops[joins_to] = join
        compiled.ops[TO_LEGACY if joins_to == TO_CANONICAL else TO_CANONICAL] = split

    def _function(self, rule: dict[str, Any], key: tuple[Any, ...], legacy: _Side, canonical: _Side, compiled: Compiled) -> None:
        for other in ("format", "lookup", "separator", "each"):
            if other in rule:
                raise self.fail((*key, other), f"{other!r} does not go with a function")
        labels = {
            TO_CANONICAL: f"{', '.join(path_text(p) for p in legacy.paths)} -> {', '.join(path_text(p) for p in canonical.paths)}",
            TO_LEGACY: f"{', '.join(path_text(p) for p in canonical.paths)} -> {', '.join(path_text(p) for p in legacy.paths)}",
        }
        for name, field in ((TO_CANONICAL, "function"), (TO_LEGACY, "inverse")):
            fname = rule.get(field)
            src, dst = (legacy, canonical) if name == TO_CANONICAL else (canonical, legacy)
            if fname is None:
                compiled.problems[name] = f"function {rule['function']!r} has no inverse (add inverse = \"NAME\")"
                compiled.ops[name] = None
                continue
            if not isinstance(fname, str):
                raise self.fail((*key, field), f"{field} must be the name of a registered mapping function")
            fn = self.functions.get(fname)
            if fn is None:
                known = ", ".join(sorted(self.functions)) or "none"
                raise self.fail((*key, field), f"unknown mapping function {fname!r}",
                                hint=f"functions come from plugins (coupler_mapping_functions); registered: {known}")
            compiled.ops[name] = Op(compiled.where, f"{labels[name]} ({fname})", list(src.paths), list(dst.paths),
                                    list(dst.types), _call(fn, fname, len(dst.paths)))

    def _each(self, rule: dict[str, Any], key: tuple[Any, ...], legacy: _Side, canonical: _Side, compiled: Compiled) -> None:
        assert self.mapping is not None
        lpath, ltype = legacy.single
        cpath, ctype = canonical.single
        for side, t in (("legacy", ltype), ("canonical", ctype)):
            if t.kind != "array":
                raise self.fail((*key, side), f"each maps array elements, but {side} {path_text(lpath if side == 'legacy' else cpath)} is {t.describe()}")
        for other in ("format", "default", "legacy_default"):
            if other in rule:
                raise self.fail((*key, other), f"{other!r} does not go with each (put it on the element rules)")
        litem = self.mapping.legacy_types.type_of(ltype.items)
        citem = self.mapping.canonical_types.type_of(ctype.items)
        if litem.kind != "record" or citem.kind != "record":
            raise self.fail((*key, "each"), "each maps arrays of records; arrays of values are cast without each")
        rules = rule["each"]
        if not isinstance(rules, list) or not rules or not all(isinstance(r, dict) for r in rules):
            raise self.fail((*key, "each"), "each must be a non-empty array of tables ([[field.each]])")
        level = self._level(rules, (*key, "each"), litem, citem, compiled.where)
        self.mapping.nested.append((level, compiled))
        label = f"{path_text(lpath)} <-> {path_text(cpath)} (each)"
        for name in DIRECTIONS:
            (_, spath, _), (_, dpath, dtype) = self._ends(name, legacy, canonical)
            ops = [r.ops.get(name) for r in level.rules]
            target_types = self.mapping.canonical_types if name == TO_CANONICAL else self.mapping.legacy_types
            target_item = citem if name == TO_CANONICAL else litem
            compiled.ops[name] = Op(compiled.where, label, [spath], [dpath], [dtype],
                                    _elements([o for o in ops if o is not None], target_item, target_types, dtype.nullable))


# -- the functions of compiled rules ---------------------------------------------------------------


def _single(convert: Callable[[Any], Any], default: Any, *, text_source: bool) -> Callable[[list[Any]], list[Any]]:
    def fn(values: list[Any]) -> list[Any]:
        value = values[0]
        if value is None or (value == "" and (text_source or default is not None)):
            return [default]
        return [convert(value)]

    return fn


def _table(table: dict[Any, Any], name: str, default: Any) -> Callable[[list[Any]], list[Any]]:
    def fn(values: list[Any]) -> list[Any]:
        value = values[0]
        if value is None:
            return [default]
        try:
            return [table[value]]
        except (KeyError, TypeError):
            if value == "":
                return [default]
            raise ValueError(f"{value!r} is not in lookup table {name!r}") from None

    return fn


def _join(sep: str, to_text: list[Callable[[Any], Any]], whole: Callable[[Any], Any]) -> Callable[[list[Any]], list[Any]]:
    def fn(values: list[Any]) -> list[Any]:
        if all(v is None for v in values):
            return [None]
        # an empty or missing part is left out, not joined as an empty string: "Ann" + "" +
        # "Smith" is "Ann Smith", and a missing first name gives "Smith", not " Smith"
        parts = ("" if v is None else cast(v) for cast, v in zip(to_text, values, strict=True))
        return [whole(sep.join(p for p in parts if p != ""))]

    return fn


def _split(sep: str, whole: Callable[[Any], Any], from_text: list[Callable[[Any], Any]], types: list[AType]) -> Callable[[list[Any]], list[Any]]:
    n = len(from_text)

    def fn(values: list[Any]) -> list[Any]:
        if values[0] is None:
            return [None] * n
        parts = whole(values[0]).split(sep, n - 1)
        parts += [""] * (n - len(parts))
        return [None if p == "" and t.kind != "string" else cast(p) for cast, p, t in zip(from_text, parts, types, strict=True)]

    return fn


def _call(fn: Callable[..., Any], name: str, outputs: int) -> Callable[[list[Any]], list[Any]]:
    def run(values: list[Any]) -> list[Any]:
        try:
            result = fn(*values)
        except (ValueError, TypeError, ArithmeticError, KeyError, LookupError) as exc:
            raise ValueError(f"function {name!r} failed: {exc}") from None
        if outputs == 1:
            return [result]
        if not isinstance(result, list | tuple) or len(result) != outputs:
            raise ValueError(f"function {name!r} must return {outputs} values, got {result!r}")
        return list(result)

    return run


def _elements(ops: list[Op], item: AType, types: SchemaTypes, nullable: bool) -> Callable[[list[Any]], list[Any]]:
    def fn(values: list[Any]) -> list[Any]:
        source = values[0]
        if source is None:
            return [None if nullable else []]
        out: list[Any] = []
        for n, element in enumerate(source):
            if element is None:
                out.append(None)
                continue
            target: dict[str, Any] = {}
            for op in ops:
                try:
                    op.run(element, target)
                except MappingError as exc:
                    raise MappingError(f"element {n}: {exc.message}", where=exc.where, hint=exc.hint) from None
            out.append(complete(target, item, types))
        return [out]

    return fn


def _same_shape(a: Any, b: Any) -> bool:
    return _shape(strip_docs(a)) == _shape(strip_docs(b))


def _shape(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _shape(v) for k, v in schema.items() if k not in ("name", "namespace", "aliases")}
    if isinstance(schema, list):
        return [_shape(v) for v in schema]
    return schema


def _close(name: str, known: Any) -> str | None:
    close = difflib.get_close_matches(str(name), list(known), n=1)
    return f"did you mean {close[0]!r}?" if close else None
