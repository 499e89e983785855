"""The schema registry: every version of every canonical entity.

Subjects are Avro full names (``acme.Customer``) with integer versions. Schemas are loaded
from directories of ``.avsc`` files named ``v<N>.avsc`` (``schemas/acme/customer/v2.avsc``),
from Coupler's own ``schemas/`` and from the directories plugins contribute. A schema may
refer to another subject by full name (its latest version) or pinned as ``name@version``;
references are expanded when the schema is loaded, so each version is self-contained.

Conversion between versions of one entity follows Avro schema resolution (fastavro);
adding a version is checked against a compatibility mode (:mod:`.compat`).
"""

from __future__ import annotations

import functools
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import fastavro
from fastavro.validation import ValidationError, validate

from .compat import MODES, PRIMITIVES, compatibility_problems, resolution_problems
from .errors import ConversionError, IncompatibleSchemaError, SchemaError, UnknownSchemaError
from .format import FormatIndicator
from .textformats import TextFormatError, load_json

_VERSION_FILE = re.compile(r"^v([1-9][0-9]*)\.avsc$")


@dataclass(frozen=True)
class SchemaVersion:
    """One version of one subject: the expanded schema (JSON value) and where it came from."""

    subject: str
    version: int
    schema: Any = field(compare=False)
    source: str = field(default="<registered>", compare=False)

    @property
    def format(self) -> FormatIndicator:
        return FormatIndicator(self.subject, self.version)

    @functools.cached_property
    def parsed(self) -> Any:
        """The schema parsed by fastavro (for reading and writing)."""
        return fastavro.parse_schema(self.schema)

    def text(self) -> str:
        return json.dumps(self.schema, indent=2)


def fullname_of(schema: Any) -> str:
    """The full name of a named (record, enum, fixed) schema."""
    if not isinstance(schema, dict) or "name" not in schema:
        raise SchemaError("a canonical entity's schema must be a named type (a record, enum or fixed)")
    name, ns = schema["name"], schema.get("namespace")
    return name if "." in name or not ns else f"{ns}.{name}"


class SchemaRegistry:
    """Versions of canonical entities, compatibility checks and conversion between versions."""

    def __init__(self) -> None:
        self._subjects: dict[str, dict[int, SchemaVersion]] = {}

    # -- loading -------------------------------------------------------------------------------

    @classmethod
    def from_dirs(cls, dirs: Iterable[str | Path]) -> SchemaRegistry:
        registry = cls()
        for d in dirs:
            registry.load_dir(d)
        return registry

    @classmethod
    def default(cls, extra_dirs: Iterable[str | Path] = (), pm: Any = None) -> SchemaRegistry:
        """Coupler's own schemas, those of every installed plugin, then ``extra_dirs``."""
        from coupler.bus.plugins.manager import plugin_manager, schema_dirs  # the bus owns plugins

        return cls.from_dirs([*schema_dirs(pm or plugin_manager()), *extra_dirs])

    def load_dir(self, directory: str | Path) -> None:
        """Load every ``v<N>.avsc`` below ``directory``; references across files are resolved
        in dependency order, whatever the file order."""
        root = Path(directory)
        if not root.is_dir():
            raise SchemaError(f"schema directory {root} does not exist or is not a directory")
        pending: list[tuple[Path, int, Any]] = []
        for path in sorted(root.rglob("v*.avsc")):
            m = _VERSION_FILE.match(path.name)
            if not m:
                continue
            pending.append((path, int(m.group(1)), read_schema_file(path)))
        pending.sort(key=lambda p: p[1])
        # a schema can only be expanded once what it refers to is loaded: repeat until stuck
        while pending:
            unresolved: list[tuple[Path, int, Any, str]] = []
            for path, version, raw in pending:
                try:
                    self._add(fullname_of(raw), version, self.expand(raw), str(path))
                except _UnknownReference as ref:
                    unresolved.append((path, version, raw, ref.name))
            if len(unresolved) == len(pending):
                path, _, _, name = unresolved[0]
                raise SchemaError(
                    f"unknown type {name!r}", where=str(path),
                    hint="define it in the same file or load the directory that defines it",
                )
            pending = [(p, v, r) for p, v, r, _ in unresolved]

    def _add(self, subject: str, version: int, schema: Any, source: str) -> SchemaVersion:
        try:
            fastavro.parse_schema(schema)
        except Exception as exc:  # fastavro raises several exception types for bad schemas
            raise SchemaError(f"invalid Avro schema for {subject}@{version}: {exc}", where=source) from exc
        existing = self._subjects.get(subject, {}).get(version)
        if existing is not None:
            if existing.schema == schema:
                return existing
            raise SchemaError(
                f"{subject}@{version} is defined twice, differently: in {existing.source} and {source}"
            )
        sv = SchemaVersion(subject, version, schema, source)
        self._subjects.setdefault(subject, {})[version] = sv
        return sv

    def expand(self, schema: Any) -> Any:
        """``schema`` with references to other subjects (``name`` or ``name@version``)
        replaced by their definitions at first use."""
        return _expand(schema, None, set(), self)

    # -- queries --------------------------------------------------------------------------------

    def subjects(self) -> list[str]:
        return sorted(self._subjects)

    def versions(self, name: str) -> list[int]:
        return sorted(self._versions(name))

    def _versions(self, name: str) -> dict[int, SchemaVersion]:
        try:
            return self._subjects[name]
        except KeyError:
            raise UnknownSchemaError(
                f"no schema named {name!r}",
                hint=f"known subjects: {', '.join(self.subjects()) or 'none'}",
            ) from None

    def get(self, name: str, version: int | None = None) -> SchemaVersion:
        """Version ``version`` of subject ``name`` (the latest when None)."""
        versions = self._versions(name)
        if version is None:
            return versions[max(versions)]
        try:
            return versions[version]
        except KeyError:
            raise SchemaError(
                f"no version {version} of {name}", hint=f"versions: {', '.join(map(str, sorted(versions)))}"
            ) from None

    def latest(self, name: str) -> SchemaVersion:
        return self.get(name)

    def resolve(self, ref: str | FormatIndicator) -> SchemaVersion:
        """``name@version`` or ``name`` (latest) to a schema version."""
        if isinstance(ref, FormatIndicator):
            return self.get(ref.name, ref.version)
        if "@" in ref:
            fi = FormatIndicator.parse(ref)
            return self.get(fi.name, fi.version)
        return self.get(ref)

    # -- evolution ------------------------------------------------------------------------------

    def check(self, name: str, schema: Any, mode: str = "backward") -> list[str]:
        """Every reason ``schema`` cannot become the next version of ``name`` in ``mode``.

        The new version is checked against *every* existing version (transitively): the
        bus converts between any two versions a producer and a consumer use.
        """
        if mode not in MODES:
            raise SchemaError(f"unknown compatibility mode {mode!r}", hint=f"use one of {', '.join(MODES)}")
        expanded = self.expand(schema)
        subject = fullname_of(expanded)
        if subject != name:
            return [f"schema is named {subject}, not {name}"]
        if mode == "none" or name not in self._subjects:
            return []
        problems = []
        for version, existing in sorted(self._subjects[name].items()):
            problems += [f"v{version}: {p}" for p in compatibility_problems(expanded, existing.schema, mode)]
        return problems

    def register(self, name: str, schema: Any, mode: str = "backward") -> SchemaVersion:
        """Add ``schema`` as the next version of ``name``, refusing it (with every reason)
        when it is incompatible in ``mode``."""
        problems = self.check(name, schema, mode)
        if problems:
            raise IncompatibleSchemaError(name, problems)
        versions = self._subjects.get(name, {})
        return self._add(name, max(versions, default=0) + 1, self.expand(schema), "<registered>")

    # -- conversion -----------------------------------------------------------------------------

    def _pair(self, from_format: FormatIndicator | str, to_format: FormatIndicator | str) -> tuple[SchemaVersion, SchemaVersion]:
        writer, reader = self.resolve(from_format), self.resolve(to_format)
        if writer.subject != reader.subject:
            raise ConversionError(f"cannot convert {writer.subject} into another entity, {reader.subject}")
        problems = resolution_problems(reader.schema, writer.schema)
        if problems:
            raise ConversionError(
                f"cannot convert {writer.subject}@{writer.version} to version {reader.version}: "
                + "; ".join(problems)
            )
        return writer, reader

    def convert(self, record: dict[str, Any], from_format: FormatIndicator | str, to_format: FormatIndicator | str) -> dict[str, Any]:
        """``record`` (written as ``from_format``) as version ``to_format`` reads it."""
        writer, reader = self._pair(from_format, to_format)
        try:
            validate(record, writer.parsed, raise_errors=True)
        except ValidationError as exc:
            raise ConversionError(
                f"record is not a valid {writer.subject}@{writer.version}: " + "; ".join(map(str, exc.errors))
            ) from exc
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, writer.parsed, record)
        buf.seek(0)
        return cast(dict[str, Any], fastavro.schemaless_reader(buf, writer.parsed, reader.parsed))

    def convert_body(self, body: bytes, from_format: FormatIndicator | str, to_format: FormatIndicator | str) -> bytes:
        """An Avro binary body written as ``from_format`` re-encoded as ``to_format``."""
        writer, reader = self._pair(from_format, to_format)
        try:
            record = fastavro.schemaless_reader(io.BytesIO(body), writer.parsed, reader.parsed)
        except Exception as exc:  # truncated or corrupt body
            raise ConversionError(f"body is not a valid {writer.subject}@{writer.version}: {exc!r}") from exc
        out = io.BytesIO()
        fastavro.schemaless_writer(out, reader.parsed, record)
        return out.getvalue()

    def encode(self, record: dict[str, Any], fmt: FormatIndicator | str) -> bytes:
        """``record`` as an Avro binary body of ``fmt``, validated first."""
        sv = self.resolve(fmt)
        try:
            validate(record, sv.parsed, raise_errors=True)
        except ValidationError as exc:
            raise ConversionError(f"record is not a valid {sv.subject}@{sv.version}: " + "; ".join(map(str, exc.errors))) from exc
        out = io.BytesIO()
        fastavro.schemaless_writer(out, sv.parsed, record)
        return out.getvalue()

    def decode(self, body: bytes, fmt: FormatIndicator | str) -> dict[str, Any]:
        sv = self.resolve(fmt)
        try:
            return cast(dict[str, Any], fastavro.schemaless_reader(io.BytesIO(body), sv.parsed, None))
        except Exception as exc:
            raise ConversionError(f"body is not a valid {sv.subject}@{sv.version}: {exc!r}") from exc

    def __iter__(self) -> Iterator[SchemaVersion]:
        for subject in self.subjects():
            yield from (self._subjects[subject][v] for v in sorted(self._subjects[subject]))


class _UnknownReference(Exception):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def read_schema_file(path: Path) -> Any:
    try:
        return load_json(path.read_text(encoding="utf-8"))
    except TextFormatError as exc:
        raise SchemaError(exc.reason, where=exc.at(path)) from None
    except OSError as exc:
        raise SchemaError(f"cannot read schema file: {exc.strerror}", where=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise SchemaError(
            f"not UTF-8 text (byte 0x{exc.object[exc.start]:02X} at {exc.start})", where=str(path),
            hint="a schema file is Avro schema JSON (.avsc)",
        ) from None


def _expand(schema: Any, namespace: str | None, defined: set[str], registry: SchemaRegistry) -> Any:
    """Expand references to registry subjects; ``defined`` holds names already defined."""
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return schema
        name, _, version = schema.partition("@")
        full = name if "." in name or not namespace else f"{namespace}.{name}"
        for candidate in (full, name):
            if candidate in defined:
                return candidate
        for candidate in (full, name):
            if candidate in registry._subjects:
                target = registry.get(candidate, int(version) if version else None)
                if candidate in defined:
                    return candidate
                return _expand(target.schema, None, defined, registry)
        raise _UnknownReference(schema)
    if isinstance(schema, list):
        return [_expand(b, namespace, defined, registry) for b in schema]
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    out = dict(schema)
    if kind in ("record", "error", "enum", "fixed"):
        ns = schema.get("namespace", namespace)
        full = schema["name"] if "." in schema["name"] or not ns else f"{ns}.{schema['name']}"
        defined.add(full)
        ns = full.rsplit(".", 1)[0] if "." in full else None
        if kind in ("record", "error"):
            out["fields"] = [
                {**f, "type": _expand(f["type"], ns, defined, registry)} for f in schema.get("fields", [])
            ]
        return out
    if kind == "array":
        out["items"] = _expand(schema["items"], namespace, defined, registry)
    elif kind == "map":
        out["values"] = _expand(schema["values"], namespace, defined, registry)
    elif isinstance(kind, (dict, list)) or (isinstance(kind, str) and kind not in PRIMITIVES):
        out["type"] = _expand(kind, namespace, defined, registry)
    return out
