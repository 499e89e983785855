"""XML files of repeated records translated by a Spark split job, without DataFrame rows.

``coupler batch translate --from xml:ORDERS.xsd#order --to parquet`` (or ``avro:...``): the
driver plans splits of each file (:func:`plan_xml_splits`), each task slot claims splits
until none is left (:func:`.direct.run_split_job`), and each split (:class:`XmlSplitTask`)
has its records decoded by Coupler's XML translator (the compiled per-schema decoder over
lxml ``iterparse``, as ``coupler xml decode --record-path`` does) and written as one file
into the job's staging folder; the driver
publishes the files atomically (:mod:`.commit`), as for copybook files (:mod:`.direct`).

How a file splits. The records are the ``element`` children of the document's root (the
record path ``ROOT/element``):

* a file larger than a split is cut at record boundaries: a split starts at a record's
  start tag ``<element`` that directly follows the end tag ``</element>`` of the record
  before it (whitespace between them allowed), found by a byte search near each target
  offset, never by parsing the whole file on the driver. A split other than the first is
  read as the file's head (the XML declaration, the root start tag with its namespace
  declarations and any elements before the first record) followed by its bytes and the
  root's end tag, so every split is a well-formed document of its own;
* a file whose root is the record element holds one record (one split);
* a record element deeper than the root's children, a UTF-16 file, or a file no larger
  than a split is read whole by one task.

A comment or CDATA section that itself contains ``</element> <element`` could be taken
for a boundary; data files of repeated records do not hold such text.
"""

from __future__ import annotations

import io
import json
import mmap
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from coupler.canonical.errors import CouplerError

from .commit import OutputCommitter
from .direct import run_split_job
from .splits import guided_split_bytes, tail_floor

# pyarrow (with NumPy) and .types, which imports it, are imported where Parquet is written:
# a worker running XML splits to Avro does without them (~0.2 s of CPU of each worker's
# first split in a session, issue 32)

#: rows per Arrow batch handed to the Parquet writer
BATCH_ROWS = 8192
#: default bytes per split: an eighth of a copybook file's (``splits.DEFAULT_SPLIT_BYTES``),
#: for XML decodes some 15 times fewer bytes per second than copybook records, and the last
#: splits take a fraction of a second, not half of one
XML_SPLIT_BYTES = 16 * 1024 * 1024
#: the smallest split of the last wave: 128 KB of 16 MB, about 8 ms of a core's work (XML
#: decodes ~18 MB/s per core; a split's own cost is ~1.6 ms of CPU). 53 MB on two slots: 10
#: splits, the last two 0.15 MB; with a sixteenth, before, 7, the last two 1.2 MB (~65 ms: the
#: slots ended up to that far apart)
XML_TAIL_DIVISOR = 128
_WINDOW = 1 << 20  # bytes searched for a boundary per step


class XmlSplitError(CouplerError):
    """An XML input cannot be planned for the split tasks."""


@dataclass(frozen=True)
class XmlSplit:
    """Bytes ``start``..``end`` of ``path``; ``head`` bytes of the file's start go before
    them and ``tail`` after them (a split in the middle of a file); ``record_path`` is
    ``ROOT/element``, or empty when the document is the record."""

    path: str
    file_id: int
    start: int
    end: int
    index: int
    record_path: str
    head: int = 0
    tail: bytes = b""


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _document_shape(path: str, element: str) -> tuple[str, str, str, int] | None:
    """(root local name, root tag as written, record tag as written, offset of the first
    record's start tag) of a document whose records are the root's ``element`` children;
    None when the root is the element or the records are not its children."""
    from lxml import etree

    root_raw = root_local = None
    depth = 0
    try:
        for event, elem in etree.iterparse(path, events=("start", "end"), resolve_entities=False, no_network=True,
                                           load_dtd=False, huge_tree=True):
            if event == "end":
                depth -= 1
                if depth == 0:
                    break
                continue
            depth += 1
            raw = f"{elem.prefix}:{_local(elem.tag)}" if elem.prefix else _local(elem.tag)
            if depth == 1:
                root_local, root_raw = _local(elem.tag), raw
                if root_local == _local(element):
                    return None
            elif depth == 2 and _local(elem.tag) == _local(element):
                break
        else:
            return None
    except etree.XMLSyntaxError:
        return None  # the task reports the document's error where it is
    if depth != 2 or root_raw is None or root_local is None:
        return None
    first = _find(path, re.compile(rb"<" + re.escape(raw.encode()) + rb"[\s/>]"), 0)
    if first is None:
        return None
    return root_local, root_raw, raw, first


def _find(path: str, pattern: re.Pattern[bytes], start: int, group: int = 0) -> int | None:
    """The offset of the first match of ``pattern`` at or after ``start`` (``group``'s start)."""
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        pos = start
        while pos < len(mm):
            m = pattern.search(mm, pos, min(len(mm), pos + _WINDOW + 4096))
            if m:
                return m.start(group)
            pos += _WINDOW
    return None


def plan_xml_splits(
    paths: Sequence[str], element: str, *, split_bytes: int = XML_SPLIT_BYTES, slots: int = 1,
) -> list[XmlSplit]:
    """The splits of every file (see the module's description), file by file."""
    out: list[XmlSplit] = []
    sizes = [os.path.getsize(p) for p in paths]
    floor = tail_floor(sum(sizes), split_bytes, slots, XML_TAIL_DIVISOR)
    for file_id, (path, size) in enumerate(zip(paths, sizes, strict=True)):
        with open(path, "rb") as fh:
            bom = fh.read(2)
        shape = None if bom in (b"\xff\xfe", b"\xfe\xff") else _document_shape(path, element)
        if shape is None:
            out.append(XmlSplit(path, file_id, 0, size, 0, ""))
            continue
        root_local, root_raw, rec_raw, first = shape
        record_path = f"{root_local}/{_local(element)}"
        boundary = re.compile(rb"</" + re.escape(rec_raw.encode()) + rb"\s*>\s*(<" + re.escape(rec_raw.encode()) + rb"[\s/>])")
        later = sum(sizes[file_id + 1 :])
        bounds = [0]
        pos = first
        while True:
            target = pos + guided_split_bytes(size - pos + later, split_bytes, slots, floor)
            if target >= size:
                break
            found = _find(path, boundary, target, 1)
            if found is None:
                break
            bounds.append(found)
            pos = found
        tail = f"</{root_raw}>".encode()
        for i, start in enumerate(bounds):
            last = i == len(bounds) - 1
            out.append(XmlSplit(path, file_id, start, size if last else bounds[i + 1], i, record_path,
                                head=first if i else 0, tail=b"" if last else tail))
    return out


class _SplitStream(io.RawIOBase):
    """The file's head, bytes ``start``..``end``, then ``tail``: a split as a document."""

    def __init__(self, split: XmlSplit):
        self._fh = open(split.path, "rb")  # noqa: SIM115 - closed by close()
        self._parts: list[tuple[int, int] | bytes] = []
        if split.head:
            self._parts.append((0, split.head))
        self._parts.append((split.start, split.end))
        if split.tail:
            self._parts.append(split.tail)
        self._at: int | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._parts:
            part = self._parts[0]
            if isinstance(part, bytes):
                n = min(len(buffer), len(part))
                buffer[:n] = part[:n]
                self._parts[0] = part[n:]
                if not self._parts[0]:
                    self._parts.pop(0)
                return n
            start, end = part
            if self._at != start:
                self._fh.seek(start)
                self._at = start
            n = self._fh.readinto(memoryview(buffer)[: min(len(buffer), end - start)])
            if not n:
                raise XmlSplitError(f"{self._fh.name} ended at byte {start}, before the split's end {end}")
            self._at = start + n
            if start + n >= end:
                self._parts.pop(0)
            else:
                self._parts[0] = (start + n, end)
            return n
        return 0

    def close(self) -> None:
        self._fh.close()
        super().close()


@lru_cache(maxsize=4)
def _model(xsd: str, roots: tuple[str, ...]) -> Any:
    """The schema's model; it may read local files under its own directory and ``roots``
    (the driver's working directory, as on the command line)."""
    from coupler.translators.xml import XsdModel

    return XsdModel.load(xsd, schema_roots=roots)


@lru_cache(maxsize=8)
def _decoder(xsd: str, element: str, roots: tuple[str, ...]) -> Any:
    """The compiled decoder of a global element, built once per process (a worker reads many
    splits with it, as ``xml decode`` reads many files with one)."""
    return _model(xsd, roots).decoder(element)


@lru_cache(maxsize=8)
def _writer_schemas(schema_json: str) -> tuple[Any, Any, Converter]:
    """The parsed Avro schema, the Arrow schema and the row converter of a record schema
    (its JSON text), built once per process rather than once per split."""
    import fastavro

    from .types import SchemaMappingError, arrow_schema

    schema = json.loads(schema_json)
    try:
        shape, fix = columnar_schema(schema)
        columns = arrow_schema(shape)
    except SchemaMappingError:
        columns, fix = None, None  # not Parquet columns: Avro output only
    return fastavro.parse_schema(schema), columns, fix


def record_avro_schema(xsd: str, element: str, record_path: str, roots: Sequence[str] | None = None) -> Any:
    """The Avro schema of the records: the value of ``record_path``'s last step, or of
    ``element`` when the document is the record. ``roots``: the directories the XSD may
    read besides its own (default: the working directory)."""
    from coupler.translators.xml.model import Poly, value_avro

    model = _model(xsd, tuple(roots) if roots is not None else (os.getcwd(),))
    if not record_path:
        return model.avro_schema(_local(element))
    steps = record_path.split("/")
    value: Any = model.root_value(steps[0])
    for step in steps[1:]:
        records = value.branches if isinstance(value, Poly) else [value]
        matches = [f for r in records for f in r.fields if f.kind == "element" and _local(f.qname or "") == step]
        if not matches:
            raise XmlSplitError(f"the XSD {xsd} has no element {step!r} under {steps[0]!r}", where=xsd)
        value = matches[0].value
    return value_avro(value, set())


Converter = Any  # Callable[[Any], Any] | None: None when a value needs no change


def columnar_schema(avro: dict[str, Any]) -> tuple[dict[str, Any], Converter]:
    """The record schema with every union of several types (an element whose ``xsi:type``
    picks a derived type, a choice of simple types) made a record of one nullable field per
    alternative, named after it, which Arrow and Parquet can hold (Spark's Avro reader does
    the same with ``member0``, ``member1``...); and the function that puts a decoded record
    (its alternative named by ``-type``, as fastavro reads it) in that shape, or None when
    the schema has no such union. Only the fields on the way to a union are visited per record."""
    from .types import SchemaMappingError

    names: dict[str, tuple[Any, Converter]] = {}
    open_records: set[str] = set()

    def branch_name(b: Any) -> str:
        if isinstance(b, dict):
            return str(b.get("name") or b.get("logicalType") or b.get("type"))
        return str(b).rsplit(".", 1)[-1]

    def walk(t: Any, ns: str | None) -> tuple[Any, Converter]:
        if isinstance(t, str):
            full = t if "." in t or not ns else f"{ns}.{t}"
            if full in open_records or t in open_records:
                raise SchemaMappingError(
                    f"the record type {t} contains itself, which Arrow and Parquet columns cannot hold",
                    where=str(avro.get("name", "record")), hint="write Avro (--to avro:NAME@VERSION) instead",
                )
            if full in names:
                return t, names[full][1]
            if t in names:
                return t, names[t][1]
            return t, None
        if isinstance(t, list):
            branches = [b for b in t if b != "null"]
            if len(branches) <= 1:
                new, conv = walk(branches[0], ns) if branches else ("null", None)
                return (["null", new] if "null" in t else [new]), conv
            walked = [walk(b, ns) for b in branches]
            fields: list[dict[str, Any]] = []
            table: dict[str, tuple[str, Converter]] = {}
            for b, (new, conv) in zip(branches, walked, strict=True):
                name = branch_name(b)
                fields.append({"name": name, "type": ["null", new], "default": None})
                branch_full = str(b.get("name") if isinstance(b, dict) else b)
                if isinstance(b, dict) and b.get("namespace"):
                    branch_full = f"{b['namespace']}.{b['name']}"
                table[branch_full] = (name, conv)
                table[name] = (name, conv)
            pytypes = {"string": str, "boolean": bool, "int": int, "long": int, "float": float, "double": float}

            def pick(value: Any) -> dict[str, Any]:
                if isinstance(value, dict) and "-type" in value:
                    name, conv = table[str(value["-type"])] if str(value["-type"]) in table else table[
                        str(value["-type"]).rsplit(".", 1)[-1]]
                else:
                    name, conv = next(((n, c) for n, c in (table[branch_name(b)] for b in branches)
                                       if isinstance(value, pytypes.get(n, object))), (fields[0]["name"], None))
                return {name: conv(value) if conv else value}

            union_name = "_or_".join(str(f["name"]) for f in fields)
            return ["null", {"type": "record", "name": union_name, "fields": fields}], pick
        kind = t.get("type")
        if kind == "record":
            own_ns = t.get("namespace") or ns
            full = f"{own_ns}.{t['name']}" if own_ns else str(t["name"])
            new_fields: list[dict[str, Any]] = []
            convs: list[tuple[str, Any]] = []
            record = {**t, "fields": new_fields}
            names[full] = names[t["name"]] = (record, None)
            open_records.update((full, t["name"]))
            for f in t.get("fields", []):
                ft, conv = walk(f["type"], own_ns)
                new_fields.append({**f, "type": ft})
                if conv is not None:
                    convs.append((f["name"], conv))
            open_records.difference_update((full, t["name"]))
            if not convs:
                return record, None

            def fix(value: dict[str, Any]) -> dict[str, Any]:
                for name, conv in convs:
                    v = value.get(name)
                    if v is not None:
                        value[name] = conv(v)
                value.pop("-type", None)
                return value

            names[full] = names[t["name"]] = (record, fix)
            return record, fix
        if kind == "array":
            items, conv = walk(t["items"], ns)
            return {**t, "items": items}, (None if conv is None else lambda xs: [conv(x) for x in xs])
        if kind == "map":
            values, conv = walk(t["values"], ns)
            return {**t, "values": values}, (None if conv is None else lambda m: {k: conv(v) for k, v in m.items()})
        return t, None

    new, conv = walk(avro, avro.get("namespace"))
    return new, conv


class XmlSplitTask:
    """What a task runs for each split it claims: decode the split's records, write one file (picklable)."""

    def __init__(self, xsd: str, element: str, committer: OutputCommitter, kind: str,
                 schema: dict[str, Any], indicator: str | None, codec: str = "deflate",
                 roots: Sequence[str] | None = None):
        self.xsd = xsd
        # the schema roots: the driver's working directory, where the job was started, unless given
        self.roots = tuple(roots) if roots is not None else (os.getcwd(),)
        self.element = element
        self.committer = committer
        self.kind = kind
        self.schema = schema
        self.indicator = indicator
        self.codec = codec

    def records(self, split: XmlSplit, avro_schema: Any = None) -> Iterator[dict[str, Any]]:
        """The split's records; with ``avro_schema`` (the schema ``write_container`` writes),
        those the decoder encodes itself come as their Avro bytes (``EncodedRecord``)."""
        label = split.path if not split.head and not split.tail else f"{split.path} (bytes {split.start}-{split.end})"
        if not split.record_path:
            yield _decoder(self.xsd, _local(self.element), self.roots).decode_document(split.path)
            return
        decoder = _decoder(self.xsd, split.record_path.split("/")[0], self.roots)
        stream = _SplitStream(split)
        try:
            yield from decoder.iter_records(io.BufferedReader(stream, 1 << 20), split.record_path, name=label,
                                            avro_schema=avro_schema)
        finally:
            stream.close()

    def __call__(self, index: int, split: XmlSplit) -> dict[str, Any]:
        path, final = self.committer.task_path(index)
        count = 0
        if self.kind == "parquet":
            import pyarrow as pa

            from coupler.translators.copybook.arrow_parquet import ParquetBatchWriter

            _parsed, schema, fix = _writer_schemas(json.dumps(self.schema, sort_keys=True))
            with ParquetBatchWriter(path, schema) as writer:
                rows: list[dict[str, Any]] = []
                for record in self.records(split):
                    rows.append(fix(record) if fix else record)
                    if len(rows) >= BATCH_ROWS:
                        writer.write_batch(pa.RecordBatch.from_pylist(rows, schema=schema))
                        count += len(rows)
                        rows = []
                if rows:
                    writer.write_batch(pa.RecordBatch.from_pylist(rows, schema=schema))
                    count += len(rows)
        else:
            from coupler.translators.xml.avro import CODECS, write_container

            straight = self.codec in CODECS  # the encoder generated from the schema, as `xml decode --to avro`

            def counted() -> Iterator[dict[str, Any]]:
                nonlocal count
                for record in self.records(split, self.schema if straight else None):
                    count += 1
                    yield record

            metadata = {"coupler.format": self.indicator} if self.indicator else {}
            with open(path, "wb") as fh:
                if straight:
                    write_container(fh, self.schema, counted(), codec=self.codec, metadata=metadata)
                else:
                    import fastavro

                    parsed = _writer_schemas(json.dumps(self.schema, sort_keys=True))[0]
                    fastavro.writer(fh, parsed, counted(), codec=self.codec, metadata=metadata)
        if not count:
            os.unlink(path)
            return {}
        return {"staged": str(path), "final_name": final, "records": count, "bytes": os.path.getsize(path)}


def translate_xml_splits(
    spark: Any, xsd: str, element: str, paths: Sequence[str], output: str, *,
    kind: str = "parquet", avro_schema: dict[str, Any] | None = None, indicator: str | None = None,
    split_bytes: int | None = None, codec: str = "deflate", schema_roots: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Translate the XML files ``paths`` (records: ``element``) to ``output``; the commit
    manifest. ``split_bytes``: the split size (default :data:`XML_SPLIT_BYTES`, 16 MB; the last wave smaller);
    ``codec``: the Avro codec; ``schema_roots``: the directories the XSD may read besides its own
    (default: the working directory). Raises :class:`~.types.SchemaMappingError` before the job
    when the records cannot be Parquet columns (a type that contains itself)."""
    slots = spark.sparkContext.defaultParallelism
    splits = plan_xml_splits(paths, element, split_bytes=max(1, split_bytes or XML_SPLIT_BYTES), slots=slots)
    record_path = next((s.record_path for s in splits if s.record_path), "")
    schema = avro_schema or record_avro_schema(xsd, element, record_path, schema_roots)
    if kind == "parquet":
        from .types import arrow_schema

        arrow_schema(columnar_schema(schema)[0])
    committer = OutputCommitter(output, "overwrite", {"parquet": "parquet", "avro": "avro"}[kind])
    committer.check_target()
    return run_split_job(spark, splits, XmlSplitTask(xsd, element, committer, kind, schema, indicator, codec, schema_roots), committer)
