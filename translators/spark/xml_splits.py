"""XML files of repeated records translated by a Spark split job, without DataFrame rows.

``coupler batch translate --from xml:ORDERS.xsd#order --to parquet`` (or ``avro:...``): the
driver plans splits of each file (:func:`plan_xml_splits`), each task slot claims splits
until none is left (:func:`.direct.run_split_job`), and each split (:class:`XmlSplitTask`)
has its records decoded by Coupler's XML translator (the compiled per-schema decoder over
lxml ``iterparse``, as ``coupler xml decode --record-path`` does) and written as one file
into the job's staging folder; the driver
publishes the files atomically (:mod:`.commit`), as for copybook files (:mod:`.direct`).

How a file splits (:mod:`coupler.translators.xml.splits`, also what ``coupler xml decode
--jobs`` uses): at record boundaries among the root's children, each split read as a
well-formed document of its own (the file's head, the split's bytes, the root's end tag).
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any

from coupler.translators.xml.errors import XmlValidationError
from coupler.translators.xml.splits import (  # noqa: F401 - the planner, also known by this module's names
    XML_SPLIT_BYTES,
    XML_TAIL_DIVISOR,
    XmlSplit,
    XmlSplitError,
    _local,
    plan_xml_job,
    plan_xml_splits,
)
from coupler.translators.xml.splits import (
    SplitStream as _SplitStream,
)

from .commit import OutputCommitter
from .direct import run_split_job

# pyarrow (with NumPy) and .types, which imports it, are imported where Parquet is written:
# a worker running XML splits to Avro does without them (~0.2 s of CPU of each worker's
# first split in a session, issue 32)

#: rows per Arrow batch handed to the Parquet writer
BATCH_ROWS = 8192
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


def _newlines(path: str, end: int) -> int:
    """How many line ends the file has before byte ``end`` (counted when an error is reported)."""
    count = 0
    with open(path, "rb") as fh:
        while end > 0:
            chunk = fh.read(min(end, 1 << 24))
            if not chunk:
                break
            count += chunk.count(b"\n")
            end -= len(chunk)
    return count


def _in_file(exc: XmlValidationError, split: XmlSplit) -> XmlValidationError:
    """A split's error with the file's own line number (the split is read after the file's
    head: its lines were counted from there); the record's number said to be the split's
    (``/orders/order/quantity ... (record 7 of the split at byte 1048576)``: the records of
    the splits before it are not counted, which only reading the file before it could do; an
    XPath ``order[7]`` would say the file's seventh); and, for a document that is not
    well-formed there, what it means when the whole file is: the planner took a ``</rec> <rec``
    inside a record for a boundary (an element of the record's own name nested in it, which no
    byte search can tell)."""
    line = exc.line
    if line is not None:
        head_lines = _newlines(split.path, split.head) if split.head else 0
        if line > head_lines:
            line = line - head_lines + _newlines(split.path, split.start)
    message, hint, path = exc.message, exc.hint, exc.path
    depth = len(split.record_path.split("/"))  # the record's step in /ROOT/RECORD[n]/...
    steps = (path or "").split("/")
    numbered = re.fullmatch(r"(.*)\[(\d+)\]", steps[depth]) if len(steps) > depth else None
    if numbered and split.head:  # read after the file's head: numbered from its own start (the first split: the file's)
        steps[depth] = numbered.group(1)
        path = "/".join(steps)
        message += f" (record {numbered.group(2)} of the split at byte {split.start})"
    if message.startswith("not well-formed XML"):
        record = split.record_path.rsplit("/", 1)[-1]
        message += f" (in the split of bytes {split.start}-{split.end})"
        hint = (f"if the file is well-formed, an element <{record}> nested in a record was taken for a record"
                f" boundary: translate this file with a split size larger than the file")
    return XmlValidationError(message, path=path, line=line, source=split.path, hint=hint)


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
        except XmlValidationError as exc:
            if not split.head and not split.tail:
                raise
            raise _in_file(exc, split) from None
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
    roots = tuple(schema_roots) if schema_roots is not None else (os.getcwd(),)
    splits = plan_xml_job(_model(xsd, roots), paths, element, split_bytes=max(1, split_bytes or XML_SPLIT_BYTES),
                          slots=slots)
    record_path = next((s.record_path for s in splits if s.record_path), "")
    schema = avro_schema or record_avro_schema(xsd, element, record_path, schema_roots)
    if kind == "parquet":
        from .types import arrow_schema

        arrow_schema(columnar_schema(schema)[0])
    committer = OutputCommitter(output, "overwrite", {"parquet": "parquet", "avro": "avro"}[kind])
    committer.check_target()
    return run_split_job(spark, splits, XmlSplitTask(xsd, element, committer, kind, schema, indicator, codec, schema_roots), committer)
