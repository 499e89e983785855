"""Version-aware legacy formats (Data Format Flexibility): one record, several copybooks.

A legacy system changes its record layout over the years and old files (or old programs)
keep producing the old versions. A :class:`LayoutFamily` holds every version of the layout
of one record (``name`` + ``{version: copybook}``) and a selector that says which version
a record was written in:

* :class:`FieldSelector` - a record-version field (at the same offset in every version):
  its decoded value, as text, maps to a version (``{"01": 1, "02": 2}``);
* :class:`FileNameSelector` - shell-style patterns on the file name (``"*_V1.DAT" -> 1``),
  first match wins.

Both take a ``default`` version for what they cannot place; without one, such a record is a
:class:`~.decoder.BadRecord` (a file no pattern matches is an error naming the patterns).

Every decoded record is a :class:`VersionedRecord` carrying the
:class:`~coupler.canonical.format.FormatIndicator` ``name@version`` of the layout it was read
with, so the bus can convert it (``SchemaRegistry.convert``) to the canonical version a
consumer reads. :meth:`LayoutFamily.schemas` gives the Avro schema of every version under
the family's name (``acme.Customer`` -> record ``Customer`` in namespace ``acme``), ready
for :meth:`LayoutFamily.register`.

A family is declared in TOML or JSON (:meth:`LayoutFamily.load`) or as a dict
(:meth:`LayoutFamily.from_config`)::

    name = "acme.Customer"
    versions = { 1 = "customer_v1.cpy", 2 = "customer_v2.cpy" }   # paths relative to the file
    [selector]                        # either a field ...
    field = "REC-VERSION"
    values = { "01" = 1, "02" = 2 }
    # file_name = { "*_V1.DAT" = 1, "*.DAT" = 2 }   # ... or file-name patterns
    # default = 2
    [options]                         # Cobrix options, shared by every version
    record_format = "V"

With a field selector and fixed-length records (``record_format`` F) whose versions differ
in size, each record's length is the size of the version its field selects.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coupler.canonical.errors import CouplerError
from coupler.canonical.format import FormatIndicator
from coupler.canonical.textformats import TextFormatError, load_json, load_toml

from .avro import as_options, avro_schema
from .decoder import (
    BadRecord,
    DecodeStats,
    RecordDecoder,
    length_field_framing,
    variable_size_records,
)
from .errors import CopybookError, CopybookLayoutError, RecordDecodeError
from .layout import Field, Layout, build_layout
from .options import CopybookOptions
from .parser import parse_file

__all__ = [
    "FamilyError",
    "FieldSelector",
    "FileNameSelector",
    "LayoutFamily",
    "VersionedRecord",
]


class FamilyError(CopybookError):
    """A layout family declaration that cannot be used (names the key path)."""


@dataclass(frozen=True)
class FieldSelector:
    """The version of a record is the value of its record-version ``field``."""

    field: str
    values: Mapping[str, int]
    default: int | None = None

    def version(self, value: Any) -> int | None:
        key = "" if value is None else str(value).strip()
        return self.values.get(key, self.default)

    def describe(self) -> str:
        pairs = ", ".join(f"{k!r} -> {v}" for k, v in self.values.items())
        return f"field {self.field} ({pairs}{f'; default {self.default}' if self.default else ''})"


@dataclass(frozen=True)
class FileNameSelector:
    """The version of every record of a file comes from the file name (first pattern that
    matches the name, or the whole path, wins; case-sensitive shell patterns)."""

    patterns: tuple[tuple[str, int], ...]
    default: int | None = None

    def version(self, path: str | Path) -> int | None:
        p = Path(path)
        for pattern, version in self.patterns:
            if fnmatch.fnmatchcase(p.name, pattern) or fnmatch.fnmatchcase(str(p), pattern):
                return version
        return self.default

    def describe(self) -> str:
        pairs = ", ".join(f"{p!r} -> {v}" for p, v in self.patterns)
        return f"file names ({pairs}{f'; default {self.default}' if self.default else ''})"


Selector = FieldSelector | FileNameSelector


@dataclass
class VersionedRecord:
    """A decoded record and the format (``name@version``) of the layout it was read with."""

    format: FormatIndicator
    record: dict[str, Any]
    file: str = "<data>"
    number: int = 0  # 0-based record number in its file
    offset: int = 0  # file byte offset of the record

    @property
    def version(self) -> int:
        return self.format.version


@dataclass
class LayoutFamily:
    """Every version of one record's layout and the selector that picks one per record."""

    name: str
    layouts: Mapping[int, Layout]
    selector: Selector
    options: CopybookOptions = field(default_factory=CopybookOptions)

    def __post_init__(self) -> None:
        try:
            FormatIndicator(self.name, 1)
        except CouplerError as exc:
            raise FamilyError(f"family name {self.name!r} is not a format name: {exc.message}",
                              where="name", hint="use a dotted name such as acme.Customer") from None
        if not self.layouts:
            raise FamilyError("a layout family needs at least one version", where="versions")
        for v in self.layouts:
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise FamilyError(f"version {v!r} is not a positive integer", where=f"versions.{v}")
        self.options = as_options(self.options)
        if self.options.segment_children:
            raise FamilyError(
                "hierarchical records (segment-children) are not supported in a layout family",
                where="options.segment-children",
                hint="decode each version's files with coupler copybook decode and its copybook",
            )
        wanted = set(self.selector.values.values()) if isinstance(self.selector, FieldSelector) else {
            v for _, v in self.selector.patterns}
        if self.selector.default is not None:
            wanted.add(self.selector.default)
        unknown = sorted(wanted - set(self.layouts))
        if unknown:
            raise FamilyError(
                f"the selector names version {unknown[0]}, which the family does not declare",
                where="selector", hint=f"declared versions: {', '.join(map(str, sorted(self.layouts)))}",
            )
        self._field: Field | None = None
        if isinstance(self.selector, FieldSelector):
            self._field = self._selector_field(self.selector.field)

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *, base_dir: str | Path = ".",
                    source: str = "<family>") -> LayoutFamily:
        """A family from its declaration (see the module documentation); copybook paths are
        relative to ``base_dir``; errors name ``source`` and the key path."""
        def fail(message: str, key: str, hint: str | None = None) -> FamilyError:
            return FamilyError(message, where=f"{source}: {key}", hint=hint)

        known = {"name", "versions", "selector", "options", "source_format", "copy_path"}
        for key in config:
            if key not in known:
                raise fail(f"unknown key {key!r}", key, hint="keys: " + ", ".join(sorted(known)))
        name = config.get("name")
        if not isinstance(name, str):
            raise fail("a family needs a name (the format name, e.g. acme.Customer)", "name")
        versions = config.get("versions")
        if not isinstance(versions, Mapping) or not versions:
            raise fail("a family needs versions = {1 = \"v1.cpy\", 2 = \"v2.cpy\"}", "versions")
        base = Path(base_dir)
        source_format = config.get("source_format", "fixed")
        if source_format not in ("fixed", "free"):
            raise fail(f"source_format {source_format!r} is not fixed or free", "source_format")
        copy_paths = config.get("copy_path", [])
        copy_paths = [copy_paths] if isinstance(copy_paths, str) else list(copy_paths)
        layouts: dict[int, Layout] = {}
        for raw_version, path in versions.items():
            version = _int(raw_version, fail, f"versions.{raw_version}")
            if not isinstance(path, str):
                raise fail(f"version {raw_version}: a copybook path is text", f"versions.{raw_version}")
            cb = base / path
            if not cb.is_file():
                raise fail(f"copybook {cb} does not exist", f"versions.{raw_version}")
            layouts[version] = build_layout(parse_file(
                cb, source_format=source_format, copy_paths=[base / p for p in copy_paths] + [cb.parent]))
        sel = config.get("selector")
        if not isinstance(sel, Mapping):
            raise fail("a family needs a selector: field + values, or file_name patterns", "selector")
        extra = set(sel) - {"field", "values", "file_name", "default"}
        if extra:
            raise fail(f"unknown key {sorted(extra)[0]!r}", f"selector.{sorted(extra)[0]}",
                       hint="selector keys: field, values, file_name, default")
        default = _int(sel["default"], fail, "selector.default") if sel.get("default") is not None else None
        selector: Selector
        if "field" in sel and "file_name" in sel:
            raise fail("choose field or file_name, not both", "selector")
        if "field" in sel:
            values = sel.get("values")
            if not isinstance(values, Mapping) or not values:
                raise fail("a field selector needs values = {\"01\" = 1, ...}", "selector.values")
            selector = FieldSelector(
                str(sel["field"]),
                {str(k).strip(): _int(v, fail, f"selector.values.{k}") for k, v in values.items()},
                default,
            )
        elif "file_name" in sel:
            patterns = sel["file_name"]
            if not isinstance(patterns, Mapping) or not patterns:
                raise fail("file_name needs patterns: {\"*_V1.DAT\" = 1, ...}", "selector.file_name")
            selector = FileNameSelector(
                tuple((str(p), _int(v, fail, f"selector.file_name.{p}")) for p, v in patterns.items()), default)
        else:
            raise fail("a selector needs field (with values) or file_name", "selector")
        options = config.get("options", {})
        if not isinstance(options, Mapping):
            raise fail("options is a table of Cobrix options", "options")
        try:
            opts = CopybookOptions.from_mapping(options)
        except CouplerError as exc:
            raise fail(exc.message, f"options ({exc.where})", exc.hint) from None
        try:
            return cls(name, layouts, selector, opts)
        except FamilyError as exc:
            raise fail(exc.message, exc.where or "", exc.hint) from None

    @classmethod
    def load(cls, path: str | Path) -> LayoutFamily:
        """A family declared in a TOML (``.toml``) or JSON file."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise FamilyError(f"cannot read {p}: {exc.strerror or exc}", where=str(p)) from None
        except UnicodeDecodeError as exc:
            raise FamilyError(f"{p} is not UTF-8 text (byte 0x{exc.object[exc.start]:02X} at {exc.start})",
                              where=str(p), hint="a family is declared in TOML or JSON") from None
        try:
            config = load_json(text) if p.suffix.lower() == ".json" else load_toml(text)
        except TextFormatError as exc:
            raise FamilyError(exc.reason, where=exc.at(p)) from None
        if not isinstance(config, Mapping):
            raise FamilyError(f"{p} does not hold a table", where=str(p))
        return cls.from_config(config, base_dir=p.parent, source=str(p))

    def _selector_field(self, name: str) -> Field:
        found: list[tuple[int, Field]] = []
        for version, layout in sorted(self.layouts.items()):
            try:
                node = layout.find(name)
            except CopybookLayoutError as exc:
                raise FamilyError(f"version {version}: {exc.message}", where=f"versions.{version}",
                                  hint="the record-version field must be in every version") from None
            if not isinstance(node, Field) or node.occurs:
                raise FamilyError(f"version {version}: {name} is not a single elementary field",
                                  where=f"versions.{version}")
            found.append((version, node))
        first_version, first = found[0]
        for version, node in found[1:]:
            if (node.offset, node.size, node.field_type.usage) != (first.offset, first.size, first.field_type.usage):
                raise FamilyError(
                    f"the record-version field {name} is at bytes {first.offset + 1}-{first.offset + first.size}"
                    f" in version {first_version} but {node.offset + 1}-{node.offset + node.size} in version {version}",
                    where="selector.field", hint="the selector field must have the same place and type in every version",
                )
        return first

    # -- the canonical side -----------------------------------------------------------------

    @property
    def versions(self) -> list[int]:
        return sorted(self.layouts)

    def format(self, version: int) -> FormatIndicator:
        """The format indicator ``name@version`` of records read with ``version``."""
        return FormatIndicator(self.name, version)

    def schema(self, version: int) -> dict[str, Any]:
        """The Avro schema of ``version``, named after the family (``acme.Customer``)."""
        namespace, _, short = self.name.rpartition(".")
        return avro_schema(self.layouts[version], self.options, name=short, namespace=namespace or None)

    def schemas(self) -> dict[int, dict[str, Any]]:
        return {v: self.schema(v) for v in self.versions}

    def register(self, registry: Any, mode: str = "backward") -> list[FormatIndicator]:
        """Register every version's schema in a :class:`~coupler.canonical.registry.SchemaRegistry`
        (in version order, checked in ``mode``); versions the registry already holds with the
        same schema are kept. The registry numbers versions 1, 2, ...: the family's must too."""
        out = []
        for version in self.versions:
            schema = self.schema(version)
            known = registry.versions(self.name) if self.name in registry.subjects() else []
            if version in known:
                if registry.get(self.name, version).schema != registry.expand(schema):
                    raise FamilyError(f"{self.name}@{version} is registered with another schema",
                                      hint="give the new layout a new version number")
            else:
                if version != max(known, default=0) + 1:
                    raise FamilyError(f"cannot register {self.name}@{version} after versions {known or 'none'}",
                                      hint="number the family's versions 1, 2, 3 ... without gaps")
                registry.register(self.name, schema, mode)
            out.append(self.format(version))
        return out

    # -- decoding ---------------------------------------------------------------------------

    def version_of(self, data: bytes, *, file: str | Path | None = None) -> int | None:
        """The version of one record (its bytes, or its file's name); None if unplaced."""
        if isinstance(self.selector, FileNameSelector):
            return self.selector.version(file or "")
        assert self._field is not None
        raw = data[self._field.offset : self._field.offset + self._field.size]
        if len(raw) < self._field.size:
            return self.selector.default
        try:
            value = self._field.field_type.decode(raw, self.options.decode_context())
        except CopybookError:
            return self.selector.default
        return self.selector.version(value)

    def decode_files(
        self,
        paths: Iterable[str | Path],
        *,
        stats: DecodeStats | None = None,
        policy: str = "lenient",
    ) -> Iterator[VersionedRecord | BadRecord]:
        """Decode data files record by record, each record with the layout of its version."""
        stats = stats if stats is not None else DecodeStats()
        decoders = {v: RecordDecoder(layout, self.options, policy=policy) for v, layout in self.layouts.items()}
        for file_id, path in enumerate(paths):
            version = None
            if isinstance(self.selector, FileNameSelector):
                version = self.selector.version(path)
                if version is None:
                    raise FamilyError(
                        f"no version of {self.name} for the file name {Path(path).name}",
                        where=str(path), hint=f"the selector knows {self.selector.describe()}; add a pattern or a default",
                    )
            yield from self._decode_file(path, decoders, stats, file_id, version)

    def _frames(self, stream: Any, name: str, decoders: Mapping[int, RecordDecoder], version: int | None) -> Iterable[Any]:
        from . import framing

        opts = self.options
        sizes = {self.layouts[version].size} if version else {layout.size for layout in self.layouts.values()}
        if opts.record_format in ("F", "FB") and opts.record_length is None and len(sizes) > 1:
            assert self._field is not None
            prefix = self._field.offset + self._field.size
            return framing.iter_records(stream, opts, length_reader=self._length_of, length_prefix=prefix, file=name)
        decoder = decoders[version or min(decoders)]
        if (opts.variable_size_occurs and opts.record_format == "F" and opts.record_length is None
                and not opts.record_length_field and decoder.layout.has_depending_on):
            return variable_size_records(stream, decoder)
        return framing.iter_records(stream, opts, record_size=max(sizes), file=name,
                                    **length_field_framing(decoder.layout, decoder))

    def _decode_file(self, path: str | Path, decoders: Mapping[int, RecordDecoder], stats: DecodeStats,
                     file_id: int, fixed: int | None) -> Iterator[VersionedRecord | BadRecord]:
        from . import framing

        name = str(path)
        try:
            with open(path, "rb") as stream:
                for frame in self._frames(stream, name, decoders, fixed):
                    stats.bytes += len(frame.payload)
                    if isinstance(frame, framing.TruncatedRecord):
                        stats.errors += 1
                        yield BadRecord(RecordDecodeError(frame.error(name).message, file=name, record=frame.number,
                                                          offset=frame.offset, raw=frame.payload[:64]))
                        continue
                    version = fixed or self.version_of(frame.payload)
                    if version is None:
                        assert self._field is not None
                        stats.errors += 1
                        raw = frame.payload[self._field.offset : self._field.offset + self._field.size]
                        yield BadRecord(RecordDecodeError(
                            f"the record-version field maps to no version of {self.name}"
                            f" (the selector knows {self.selector.describe()})",
                            file=name, record=frame.number, offset=frame.offset + self._field.offset,
                            field=self._field.dotted_path, raw=raw))
                        continue
                    rec = decoders[version].decode(frame.payload, file=name, file_id=file_id,
                                                   record_id=frame.number, offset=frame.offset, stats=stats)
                    if rec is None:  # segment_filter
                        continue
                    if isinstance(rec, BadRecord):
                        yield rec
                        continue
                    yield VersionedRecord(self.format(version), rec, name, frame.number, frame.offset)
        except framing.FramingError as exc:
            stats.errors += 1
            yield BadRecord(RecordDecodeError(exc.message, file=name, record=exc.index or 0, offset=exc.offset))
        except OSError as exc:
            raise CopybookError(f"cannot read {name}: {exc.strerror or exc}", where=name) from exc

    def _length_of(self, head: bytes) -> int:
        """The record length of fixed-length records whose versions differ in size."""
        version = self.version_of(head)
        if version is None:
            raise CopybookError(f"the record-version field maps to no version ({self.selector.describe()})")
        return self.layouts[version].size


def _int(value: Any, fail: Any, key: str) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise fail(f"{value!r} is not a version number", key) from None
    if n < 1 or isinstance(value, bool) or (isinstance(value, float) and value != n):
        raise fail(f"{value!r} is not a version number (1, 2, ...)", key)
    return n
