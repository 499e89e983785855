"""Record formats named by a spec: where records come from and go to, streamed.

A spec is what ``coupler translate --from/--to`` and a mapping's ``legacy`` key take:

``copybook:FILE.cpy``
    fixed-width COBOL records (Cobrix options such as ``encoding=ascii`` or
    ``record_format=V`` come from ``-o KEY=VALUE`` or a mapping's ``[legacy_options]``);
``xml:FILE.xsd[#ELEMENT][@ROOT/RECORD]``
    XML: without ``@`` one document is one record (the root ``ELEMENT``, needed when the
    XSD declares several); with ``@orders/order`` each repeated ``order`` under ``orders``
    is a record, streamed (``#ELEMENT`` may then name the root or the record element);
``avro:NAME@V``
    an Avro container file of canonical entity ``NAME@V`` from the schema registry, with
    the format indicator in the file metadata (``coupler.format``);
``jsonl``
    JSON lines, one record per line (decimals exact, dates ISO 8601, bytes base64).

Relative files are resolved against ``base_dir`` (the mapping file's directory for a
mapping, the working directory on the command line).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from coupler.canonical.errors import CouplerError, one_line
from coupler.canonical.streams import avro_container

from .errors import TranslateError

#: file metadata key of the format indicator in Avro container files
FORMAT_METADATA = "coupler.format"
KINDS = ("copybook", "xml", "avro", "jsonl")
_XML = re.compile(r"^(?P<file>[^#@]+)(?:#(?P<element>[^@]+))?(?:@(?P<path>.+))?$")


@dataclass(frozen=True)
class Spec:
    """A parsed format specification."""

    kind: str
    text: str
    path: Path | None = None
    element: str | None = None
    record_path: str | None = None
    ref: str | None = None
    options: dict[str, str] = field(default_factory=dict, hash=False)
    #: xml: directories the XSD's includes and imports may read besides its own (a site's folder)
    schema_roots: tuple[Path, ...] = field(default=(), hash=False)


def parse_spec(text: str, *, base_dir: Path | None = None, options: dict[str, str] | None = None,
               schema_roots: Iterable[str | Path] = ()) -> Spec:
    """``copybook:F.cpy``, ``xml:F.xsd#el@root/rec``, ``avro:NAME@V`` or ``jsonl``; an XSD's
    includes and imports may read files under its directory and ``schema_roots``."""
    raw = (text or "").strip()
    kind, _, rest = raw.partition(":")
    kind = kind.lower()
    if kind not in KINDS:
        raise TranslateError(
            f"unknown format {raw!r}",
            hint="use copybook:FILE.cpy, xml:FILE.xsd[#ELEMENT][@ROOT/RECORD], avro:NAME@V or jsonl",
        )
    base = base_dir or Path(".")
    if kind == "jsonl":
        if rest:
            raise TranslateError(f"jsonl takes no argument, got {raw!r}")
        return Spec("jsonl", raw)
    if not rest:
        raise TranslateError(f"{kind}: needs an argument, e.g. {_EXAMPLES[kind]}")
    if kind == "copybook":
        return Spec("copybook", raw, path=base / rest, options=dict(options or {}))
    if kind == "avro":
        from coupler.canonical.format import FormatIndicator

        try:
            fi = FormatIndicator.parse(rest)
        except CouplerError as exc:
            raise TranslateError(f"{raw!r}: {exc.message}") from None
        return Spec("avro", raw, ref=fi.ref)
    m = _XML.match(rest)
    if not m:
        raise TranslateError(f"{raw!r} is not xml:FILE.xsd[#ELEMENT][@ROOT/RECORD]")
    path = m.group("path")
    return Spec("xml", raw, path=base / m.group("file"), element=m.group("element"),
                record_path=path.strip("/") if path else None, schema_roots=tuple(Path(r) for r in schema_roots))


_EXAMPLES = {"copybook": "copybook:customer.cpy", "avro": "avro:acme.Customer@2", "xml": "xml:orders.xsd@orders/order"}


class InputError:
    """A record of the input that could not be read (the reading goes on)."""

    def __init__(self, message: str):
        self.message = message

    def __str__(self) -> str:
        return self.message


ErrorReport = Callable[[int, CouplerError | str], None]


class RecordFormat:
    """Reads records from a file and writes records to a file, streamed."""

    spec: Spec
    schema: Any = None  # the Avro schema of the records (None for jsonl)

    def read(self, path: Path) -> Iterator[dict[str, Any] | InputError]:
        raise NotImplementedError

    def position(self) -> int:
        """Bytes of the input read so far (for progress)."""
        return 0

    def write(self, records: Iterable[dict[str, Any]], path: Path, report: ErrorReport) -> int:
        """Write ``records``; a record that cannot be written is reported and skipped
        where the format allows it. Returns how many were written."""
        raise NotImplementedError


def record_format(spec: Spec, *, registry: Any = None, policy: str = "lenient") -> RecordFormat:
    """The :class:`RecordFormat` of ``spec`` (``registry`` resolves ``avro:`` specs)."""
    if spec.kind == "copybook":
        return CopybookFormat(spec, policy=policy)
    if spec.kind == "xml":
        return XmlFormat(spec)
    if spec.kind == "avro":
        return AvroFormat(spec, registry)
    return JsonlFormat(spec)


class CopybookFormat(RecordFormat):
    def __init__(self, spec: Spec, *, policy: str = "lenient"):
        from coupler.translators.copybook.avro import avro_schema
        from coupler.translators.copybook.decoder import DecodeStats, parse_options
        from coupler.translators.copybook.layout import build_layout
        from coupler.translators.copybook.parser import parse_file

        assert spec.path is not None
        self.spec = spec
        self.options = parse_options(spec.options)
        self.layout = build_layout(parse_file(spec.path), pointer_size=self.options.pointer_size)
        self.schema = avro_schema(self.layout, self.options)
        self.policy = policy
        self.stats = DecodeStats()

    def read(self, path: Path) -> Iterator[dict[str, Any] | InputError]:
        from coupler.translators.copybook.decoder import BadRecord, decode_files

        for record in decode_files(self.layout, [path], self.options, stats=self.stats, policy=self.policy):
            yield InputError(str(record.error)) if isinstance(record, BadRecord) else record

    def position(self) -> int:
        return self.stats.bytes

    def write(self, records: Iterable[dict[str, Any]], path: Path, report: ErrorReport) -> int:
        from coupler.translators.copybook.encoder import RecordEncoder

        encoder = RecordEncoder(self.layout, self.options)
        count = 0
        with open(path, "wb") as out:
            for n, record in enumerate(records, 1):
                try:
                    data = encoder.framed(record)
                except CouplerError as exc:
                    report(n, exc)
                    continue
                out.write(data)
                count += 1
        return count


class XmlFormat(RecordFormat):
    def __init__(self, spec: Spec):
        from coupler.translators.xml import XsdModel

        assert spec.path is not None
        self.spec = spec
        self.model = XsdModel.load(spec.path, schema_roots=spec.schema_roots)
        self._stream: Any = None
        if spec.record_path:
            steps = [s for s in spec.record_path.split("/") if s]
            if len(steps) < 2:
                raise TranslateError(f"{spec.text}: a record path needs the root and the record element, e.g. @orders/order")
            self.root: str | None = steps[0]
            if spec.element and _local(spec.element) not in (_local(steps[0]), _local(steps[-1])):
                raise TranslateError(f"{spec.text}: #{spec.element} is neither the root nor the record element of @{spec.record_path}")
            self.schema = self._record_schema(steps)
        else:
            self.root = spec.element
            self.schema = self.model.avro_schema(spec.element)

    def _record_schema(self, steps: list[str]) -> Any:
        from coupler.translators.xml.model import Poly, value_avro

        value: Any = self.model.root_value(steps[0])
        for step in steps[1:]:
            records = value.branches if isinstance(value, Poly) else [value]
            matches = [f for r in records for f in getattr(r, "fields", [])
                       if f.kind == "element" and _local(f.qname or "") == _local(step)]
            if not matches:
                raise TranslateError(f"{self.spec.text}: no element {step!r} in the record path")
            value = matches[0].value
        if not hasattr(value, "fields") and not isinstance(value, Poly):
            raise TranslateError(f"{self.spec.text}: the record element {steps[-1]!r} has a simple type")
        return value_avro(value, set())

    def read(self, path: Path) -> Iterator[dict[str, Any] | InputError]:
        decoder = self.model.decoder(self.root)
        with open(path, "rb") as stream:
            self._stream = stream
            if self.spec.record_path:
                yield from decoder.iter_records(stream, self.spec.record_path, name=str(path))
            else:
                yield decoder.decode_document(stream, name=str(path))

    def position(self) -> int:
        try:
            return self._stream.tell() if self._stream is not None else 0
        except (ValueError, OSError):
            return 0

    def write(self, records: Iterable[dict[str, Any]], path: Path, report: ErrorReport) -> int:
        encoder = self.model.encoder(self.root)
        if self.spec.record_path:
            return encoder.write_stream(records, path, self.spec.record_path)
        iterator = iter(records)
        first = next(iterator, None)
        if first is None:
            raise TranslateError("no record to write as an XML document", where=str(path))
        if next(iterator, None) is not None:
            raise TranslateError(
                f"several records but an XML document has one root ({self.spec.text})",
                hint="write them as repeated elements: xml:FILE.xsd@ROOT/RECORD",
            )
        path.write_bytes(encoder.encode(first, label="record 1"))
        return 1


class AvroFormat(RecordFormat):
    def __init__(self, spec: Spec, registry: Any):
        if registry is None:
            from coupler.canonical.registry import SchemaRegistry

            registry = SchemaRegistry.default()
        self.spec = spec
        self.version = registry.resolve(spec.ref)
        self.schema = self.version.schema
        self._stream: Any = None

    def read(self, path: Path) -> Iterator[dict[str, Any] | InputError]:
        import fastavro
        from fastavro.schema import SchemaParseException

        with open(path, "rb") as stream:
            self._stream = stream
            try:
                # lengths the file claims are read up to its end at most (a damaged one: EOFError)
                reader, records = avro_container(stream, reader_schema=self.version.parsed)
                written = reader.metadata.get(FORMAT_METADATA)
                if written and written.split("@")[0] != self.version.subject:
                    raise TranslateError(f"the file holds {written}, not {self.version.subject}", where=str(path))
                yield from cast(Iterator[dict[str, Any]], records)
            except TranslateError:
                raise
            except fastavro.read.SchemaResolutionError as exc:
                # fastavro's message prints both schemas whole (kilobytes): the file's name and fields instead
                reason = one_line(exc)
                if reason.startswith("Schema mismatch"):
                    reason = f"the file's records are {_written_schema(path)}"
                raise TranslateError(f"cannot read it as {self.spec.ref}: {reason}", where=str(path),
                                     hint="name the schema it was written with: --from avro:NAME@V") from None
            except (ValueError, EOFError) as exc:
                raise TranslateError(f"cannot read it as {self.spec.ref}: {one_line(exc) or type(exc).__name__}",
                                     where=str(path)) from None
            except (KeyError, IndexError, SchemaParseException) as exc:  # fastavro's, on a damaged header or block
                raise TranslateError(f"cannot read it as {self.spec.ref}: {type(exc).__name__}: {one_line(exc)}",
                                     where=str(path)) from None

    def position(self) -> int:
        try:
            return self._stream.tell() if self._stream is not None else 0
        except (ValueError, OSError):
            return 0

    def write(self, records: Iterable[dict[str, Any]], path: Path, report: ErrorReport) -> int:
        import fastavro
        from fastavro.validation import ValidationError, validate

        parsed = self.version.parsed
        count = 0

        def valid() -> Iterator[dict[str, Any]]:
            nonlocal count
            for n, record in enumerate(records, 1):
                try:
                    validate(record, parsed, raise_errors=True)
                except ValidationError as exc:
                    report(n, f"not a valid {self.spec.ref}: " + "; ".join(map(str, exc.errors)))
                    continue
                count += 1
                yield record

        with open(path, "wb") as out:
            fastavro.writer(out, parsed, valid(), metadata={FORMAT_METADATA: self.version.format.ref})
        return count


class JsonlFormat(RecordFormat):
    def __init__(self, spec: Spec):
        self.spec = spec
        self.schema = None
        self._stream: Any = None

    def read(self, path: Path) -> Iterator[dict[str, Any] | InputError]:
        from .jsonvalues import loads

        with open(path, "rb") as stream:
            self._stream = stream
            for number, line in enumerate(stream, 1):
                if not line.strip():
                    continue
                try:
                    record = loads(line.decode("utf-8"))
                except (ValueError, UnicodeDecodeError) as exc:
                    yield InputError(f"{path}:{number}: not JSON: {exc}")
                    continue
                if not isinstance(record, dict):
                    yield InputError(f"{path}:{number}: a line must hold a JSON object")
                    continue
                yield record

    def position(self) -> int:
        try:
            return self._stream.tell() if self._stream is not None else 0
        except (ValueError, OSError):
            return 0

    def write(self, records: Iterable[dict[str, Any]], path: Path, report: ErrorReport) -> int:
        from .jsonvalues import dumps

        count = 0
        with open(path, "w", encoding="utf-8") as out:
            for record in records:
                out.write(dumps(record))
                out.write("\n")
                count += 1
        return count


def _local(name: str) -> str:
    return name.rsplit("}", 1)[-1].rsplit(":", 1)[-1]


def _written_schema(path: Path) -> str:
    """``NAME (fields a, b, c)`` of the records of the Avro container file ``path``."""
    import fastavro

    try:
        with open(path, "rb") as stream:
            schema = fastavro.reader(stream).writer_schema
    except Exception:  # noqa: BLE001 - a description for a message: the header was read before
        return "of another schema"
    if isinstance(schema, dict) and schema.get("type") == "record":
        names = [f.get("name") for f in schema.get("fields", [])]
        shown = ", ".join(map(str, names[:8])) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        return f"{schema.get('name')} (fields {shown})"
    return f"of type {schema.get('type') if isinstance(schema, dict) else schema}"
