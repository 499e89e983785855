"""The copybook translator as the Spark data sources see it: one picklable object.

:class:`CopybookCodec` holds a copybook (its path and text) and the Cobrix-named options;
on first use in a process it parses the copybook, builds the layout, the Avro schema and a
record decoder. It answers the three questions the data sources ask:

* :meth:`CopybookCodec.arrow_schema` -- the columns (derived from the translator's Avro
  schema, plus the ``_corrupt_record`` column);
* :meth:`CopybookCodec.framing` -- how a file splits (:mod:`.splits`);
* :meth:`CopybookCodec.read_split` -- the Arrow record batches of one split.

This is the only module of the data sources that calls the copybook translator's decoding
functions; the per-record decoder's dicts become Arrow batches in :func:`records_to_batch`,
the single place to swap in the vectorised batch decoder.
"""

from __future__ import annotations

import io
import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa

from coupler.canonical.errors import CouplerError
from coupler.translators.copybook.batch import DEFAULT_BATCH_RECORDS

from .splits import FileSplit, Framing, plan_splits
from .types import arrow_schema

log = logging.getLogger(__name__)

#: options of the Spark data source that are not copybook options
SPARK_ONLY_OPTIONS = (
    "path",
    "paths",
    "copybook_contents",
    "copy_paths",
    "input_split_size_mb",
    "policy",
    "corrupt_record_column",
    "batch_size",
    "errors_path",
)
DEFAULT_CORRUPT_COLUMN = "_corrupt_record"
DEFAULT_BATCH_ROWS = 8192


class CopybookSourceError(CouplerError):
    """The copybook data source is misconfigured."""


class _RangeReader(io.RawIOBase):
    """Bytes ``start``..``end`` of a file as a stream of their own."""

    def __init__(self, path: str, start: int, end: int):
        self._fh = open(path, "rb")  # noqa: SIM115 - closed by close()
        self._fh.seek(start)
        self._left = end - start

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0 or n > self._left:
            n = self._left
        data = self._fh.read(n)
        self._left -= len(data)
        return data

    def close(self) -> None:
        self._fh.close()
        super().close()


def _import_translator() -> Any:
    from coupler.translators.copybook import avro, decoder, framing, layout, options, parser

    return avro, decoder, framing, layout, options, parser


class CopybookCodec:
    """A copybook and its options, decoded lazily in each process (picklable)."""

    def __init__(self, copybook: str | None, options: Mapping[str, Any], *, copybook_text: str | None = None):
        self.options = {str(k).lower(): v for k, v in options.items()}
        if copybook_text is None:
            if not copybook:
                raise CopybookSourceError(
                    "the copybook data source needs a copybook",
                    hint='use .option("copybook", PATH) or .option("copybook_contents", TEXT)',
                )
            try:
                copybook_text = Path(copybook).read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                raise CopybookSourceError(f"cannot read copybook {copybook}: {exc.strerror}", where=copybook) from exc
        self.copybook = copybook or "<copybook_contents>"
        self.copybook_text = copybook_text
        self.policy = str(self.options.get("policy", "lenient")).lower()
        if self.policy not in ("lenient", "strict"):
            raise CopybookSourceError(f"unknown policy {self.policy!r}", where="option policy", hint="use lenient or strict")
        self.corrupt_column = str(self.options.get("corrupt_record_column", DEFAULT_CORRUPT_COLUMN))
        self.batch_rows = int(self.options.get("batch_size", DEFAULT_BATCH_ROWS))
        self.errors_path = str(self.options.get("errors_path") or "")
        _ = self.parsed_options  # validate on the driver, where errors reach the user

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> CopybookCodec:
        opts = {str(k).lower(): v for k, v in options.items()}
        return cls(opts.get("copybook"), opts, copybook_text=opts.get("copybook_contents"))

    def __getstate__(self) -> dict[str, Any]:
        keep = ("options", "copybook", "copybook_text", "policy", "corrupt_column", "batch_rows", "errors_path")
        return {k: self.__dict__[k] for k in keep}

    # -- the translator, built once per process -----------------------------------------

    @cached_property
    def parsed_options(self) -> Any:
        _avro, _dec, _fr, _lay, options, _par = _import_translator()
        return options.CopybookOptions.from_mapping(self.options, ignore=SPARK_ONLY_OPTIONS)

    @cached_property
    def layout(self) -> Any:
        _avro, _dec, _fr, layout, _opt, parser = _import_translator()
        copy_paths = [p for p in str(self.options.get("copy_paths", "")).split(":") if p]
        if self.copybook != "<copybook_contents>":
            copy_paths.append(str(Path(self.copybook).parent))
        cb = parser.parse_copybook(self.copybook_text, file=self.copybook, copy_paths=copy_paths)
        return layout.build_layout(cb, pointer_size=self.parsed_options.pointer_size)

    @cached_property
    def avro_schema(self) -> dict[str, Any]:
        avro, *_ = _import_translator()
        return avro.avro_schema(self.layout, self.parsed_options)

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        schema = arrow_schema(self.avro_schema)
        if self.corrupt_column:
            schema = schema.append(pa.field(self.corrupt_column, pa.string()))
        return schema

    @cached_property
    def decoder(self) -> Any:
        _avro, decoder, *_ = _import_translator()
        return decoder.RecordDecoder(self.layout, self.parsed_options, policy=self.policy)

    # -- splitting -----------------------------------------------------------------------

    def framing(self, path: str) -> Framing:
        """How ``path`` splits: at record boundaries when the records can be found without decoding."""
        o = self.parsed_options
        base = {"start": o.file_start_offset, "end_trim": o.file_end_offset}
        whole = Framing("whole", **base)
        if (
            o.record_length_field
            or o.segment_id_levels
            or o.segment_id_root
            or (o.variable_size_occurs and o.record_format in ("F", "FB") and o.record_length is None and self.layout.has_depending_on)
            or (o.segment_children and o.record_format not in ("V", "VB"))
        ):
            return whole
        if o.record_format == "F" or (o.record_format == "FB" and not self._has_bdw(path)):
            length = o.record_length or (self.layout.size + o.record_start_offset + o.record_end_offset)
            return Framing("fixed", record_length=length, **base)
        if o.record_format in ("V", "VB"):
            return Framing(
                "rdw" if o.record_format == "V" else "bdw",
                big_endian=o.is_rdw_big_endian,
                rdw_adjustment=o.rdw_adjustment,
                rdw_includes_header=o.is_rdw_part_of_record_length,
                bdw_big_endian=o.is_rdw_big_endian,
                **base,
            )
        return whole

    def group_starts(self) -> tuple[Any, int]:
        """Hierarchical records (``segment-children``): a function telling from the first
        bytes of a record whether it is a root record (where a split may start), and how
        many bytes it needs; ``(None, 0)`` otherwise."""
        dec = self.decoder
        if dec.hierarchy is None or dec.segment_field is None:
            return None, 0
        skip = self.parsed_options.record_start_offset
        head = skip + dec.segment_field.offset + dec.segment_field.size
        roots = dec.hierarchy.root_ids

        def starts_group(raw: bytes) -> bool:
            return dec.segment_id(raw[skip:]) in roots

        return starts_group, head

    def _has_bdw(self, path: str) -> bool:
        _a, _d, framing, *_ = _import_translator()
        o = self.parsed_options
        length = o.record_length or (self.layout.size + o.record_start_offset + o.record_end_offset)
        with open(path, "rb") as fh:
            fh.seek(o.file_start_offset)
            return bool(framing.looks_like_bdw(fh.read(4), length, o))

    def split_size(self) -> tuple[int, int | None]:
        """(bytes, records) per split from ``input_split_size_mb`` / ``input_split_records``."""
        from .splits import DEFAULT_SPLIT_BYTES

        mb = self.options.get("input_split_size_mb")
        size = int(float(mb) * 1024 * 1024) if mb else DEFAULT_SPLIT_BYTES
        return max(size, 1), self.parsed_options.input_split_records

    def plan(self, paths: Sequence[str], *, slots: int = 1) -> list[tuple[FileSplit, Framing]]:
        """The splits of ``paths`` with their framing, as every reader of copybook files
        plans them (the ``copybook`` data source and ``batch translate``'s split job): sized
        by :meth:`split_size`, and for hierarchical records starting only at a root record
        (:meth:`group_starts`), so that no split cuts children from their parent. ``slots``:
        the job's task slots (smaller last splits, :func:`.splits.guided_split_bytes`)."""
        split_bytes, split_records = self.split_size()
        starts_group, head = self.group_starts()
        sizes = [os.path.getsize(path) for path in paths]
        out: list[tuple[FileSplit, Framing]] = []
        for file_id, path in enumerate(paths):
            framing = self.framing(path)
            for s in plan_splits([path], framing, split_bytes=split_bytes, split_records=split_records,
                                 starts_group=starts_group, group_head=head, slots=slots,
                                 later_bytes=sum(sizes[file_id + 1 :])):
                out.append((FileSplit(s.path, file_id, s.start, s.end, s.first_record, s.index), framing))
        return out

    # -- decoding ------------------------------------------------------------------------

    def frames(self, split: FileSplit, framing: Framing) -> Iterator[Any]:
        """The framed records of a split, numbered and placed as in the whole file."""
        _avro, decoder, fr, *_ = _import_translator()
        o = self.parsed_options
        name = split.path
        if framing.kind == "whole":
            with open(name, "rb") as stream:
                if (
                    o.variable_size_occurs and o.record_format in ("F", "FB") and o.record_length is None
                    and not o.record_length_field and self.layout.has_depending_on
                ):
                    yield from decoder.variable_size_records(stream, self.decoder)
                else:
                    yield from fr.iter_records(
                        stream, o, record_size=self.layout.size, file=name,
                        **decoder.length_field_framing(self.layout, self.decoder),
                    )
            return
        local = o.replace(file_start_offset=0, file_end_offset=0)
        ranged: Any = _RangeReader(name, split.start, split.end)
        stream = ranged
        try:
            for frame in fr.iter_records(stream, local, record_size=self.layout.size, file=name):
                yield frame._replace(number=frame.number + split.first_record, offset=frame.offset + split.start)
        finally:
            stream.close()

    def vectorised(self, path: str, framing: Framing) -> bool:
        """Whether the vectorised batch decoder reads this file (fixed-length records only)."""
        from coupler.translators.copybook import batch_files

        return framing.kind == "fixed" and batch_files.batch_supported(self.layout, self.parsed_options, [path])

    def read_split(self, split: FileSplit, framing: Framing) -> Iterator[pa.RecordBatch]:
        """Decode one split into Arrow record batches (bad records in the corrupt column).

        Fixed-length splits go through the vectorised batch decoder when it supports the
        layout; everything else through the per-record decoder.
        """
        if self.vectorised(split.path, framing):
            yield from self._read_vectorised(split)
            return
        _avro, decoder, fr, *_ = _import_translator()
        dec = self.decoder
        stats = decoder.DecodeStats()
        rows: list[dict[str, Any]] = []
        bad: list[str] = []
        name = split.path
        try:
            for frame in decoder.hierarchical_frames(self.frames(split, framing), dec):
                if isinstance(frame, fr.TruncatedRecord):
                    err = frame.error(name)
                    rows.append(self._corrupt(decoder.RecordDecodeError(
                        err.message, file=name, record=frame.number, offset=frame.offset, raw=frame.payload[:64],
                    )))
                else:
                    rec = dec.decode(
                        frame.payload, file=name, file_id=split.file_id, record_id=frame.number,
                        offset=frame.offset, stats=stats, group=frame if dec.hierarchy else None,
                    )
                    if rec is None:
                        continue
                    rows.append(self._corrupt(rec.error) if isinstance(rec, decoder.BadRecord) else rec)
                if len(rows) >= self.batch_rows:
                    rows = self._route_bad(rows, bad)
                    if rows:
                        yield records_to_batch(rows, self.arrow_schema)
                    rows = []
        except fr.FramingError as exc:
            # a split is framed as a stream of its own: place the error in the file
            base_offset, base_record = (0, 0) if framing.kind == "whole" else (split.start, split.first_record)
            rows.append(self._corrupt(decoder.RecordDecodeError(
                exc.message, file=name, record=(getattr(exc, "index", None) or 0) + base_record,
                offset=(getattr(exc, "offset", 0) or 0) + base_offset,
            )))
        rows = self._route_bad(rows, bad)
        if rows:
            yield records_to_batch(rows, self.arrow_schema)
        self._write_errors(split, bad)

    def _read_vectorised(self, split: FileSplit) -> Iterator[pa.RecordBatch]:
        """The split through ``decode_file_batches``: the split is the file between a start and an end offset."""
        from coupler.translators.copybook import batch_files

        size = os.path.getsize(split.path)
        options = self.parsed_options.replace(file_start_offset=split.start, file_end_offset=size - split.end)
        per_batch = int(self.options.get("batch_size", DEFAULT_BATCH_RECORDS))
        bad: list[str] = []
        for fb in batch_files.decode_file_batches(self.layout, [split.path], options, policy=self.policy, batch_records=per_batch):
            if fb.batch.num_rows:
                yield conform(_renumber(fb.batch, split), self.arrow_schema)
            rows = []
            for b in fb.bad:
                info: dict[str, Any] = b.error.to_dict()
                if isinstance(info.get("record"), int):
                    info["record"] += split.first_record
                rows.append({self.corrupt_column or DEFAULT_CORRUPT_COLUMN: json.dumps(info, default=str, sort_keys=True)})
            rows = self._route_bad(rows, bad)
            if rows:
                yield records_to_batch(rows, self.arrow_schema)
        self._write_errors(split, bad)

    def _corrupt(self, error: Any) -> dict[str, Any]:
        info = error.to_dict() if hasattr(error, "to_dict") else {"reason": str(error)}
        return {self.corrupt_column or DEFAULT_CORRUPT_COLUMN: json.dumps(info, default=str, sort_keys=True)}

    def _route_bad(self, rows: list[dict[str, Any]], bad: list[str]) -> list[dict[str, Any]]:
        """Keep bad records out of the rows when they go to ``errors_path`` or nowhere."""
        key = self.corrupt_column or DEFAULT_CORRUPT_COLUMN
        if self.corrupt_column and not self.errors_path:
            return rows
        good = []
        for row in rows:
            if key in row and len(row) == 1:
                bad.append(row[key])
            else:
                good.append(row)
        return good

    def _write_errors(self, split: FileSplit, bad: list[str]) -> None:
        """One JSON-lines file per split under ``errors_path`` (rewritten whole on a retry)."""
        if not self.errors_path:
            if bad:
                log.warning("%s: %d bad records dropped (no corrupt column, no errors_path)", split.path, len(bad))
            return
        folder = Path(self.errors_path)
        target = folder / f"errors-{split.file_id:05d}-{split.index:05d}.jsonl"
        if not bad:  # (the folder is not made for nothing: a job that stopped has removed it)
            target.unlink(missing_ok=True)
            return
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{target.name}.tmp"
        tmp.write_text("".join(line + "\n" for line in bad), encoding="utf-8")
        os.replace(tmp, target)

    def decode_file_sequentially(self, path: str, file_id: int = 0) -> Iterator[dict[str, Any]]:
        """Every record of one file in one pass (the reference the splits are checked against)."""
        split = FileSplit(path, file_id, 0, 0, 0)
        framing = Framing("whole", start=self.parsed_options.file_start_offset)
        for batch in self.read_split(split, framing):
            yield from batch.to_pylist()


def records_to_batch(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.RecordBatch:
    """Decoded records (dicts) as one Arrow record batch of ``schema``."""
    return pa.RecordBatch.from_pylist(rows, schema=schema)


def _renumber(batch: pa.RecordBatch, split: FileSplit) -> pa.RecordBatch:
    """``File_Id`` / ``Record_Id`` of a split decoded as if it were a file of its own, made the
    file's (NumPy over the columns: no Python object per row)."""
    names = batch.schema.names
    if "Record_Id" not in names or (split.first_record == 0 and split.file_id == 0):
        return batch
    import numpy as np

    columns = list(batch.columns)
    i = names.index("Record_Id")
    ids = columns[i]
    if ids.null_count == 0:
        columns[i] = pa.array(ids.to_numpy() + split.first_record, ids.type)
    else:
        import pyarrow.compute as pc

        columns[i] = pc.add(ids, pa.scalar(split.first_record, ids.type))
    if "File_Id" in names:
        j = names.index("File_Id")
        typ = columns[j].type
        columns[j] = pa.array(np.full(batch.num_rows, split.file_id, dtype=typ.to_pandas_dtype()), typ)
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A decoder's record batch with exactly the columns and types of ``schema``."""
    if batch.schema.equals(schema):
        return batch
    columns = []
    for f in schema:
        i = batch.schema.get_field_index(f.name)
        if i < 0:
            columns.append(pa.nulls(batch.num_rows, f.type))
        else:
            col = batch.column(i)
            columns.append(col if col.type.equals(f.type) else col.cast(f.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
