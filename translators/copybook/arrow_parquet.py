"""Parquet files from a stream of Arrow record batches, in row groups of a useful size.

The batch decoder works in small batches (they stay in the CPU caches); Parquet readers
want row groups of tens of thousands of rows. :class:`ParquetBatchWriter` gathers batches
until a row group is full, so both get what suits them.

``background=True`` encodes and writes each full row group on a thread of its own while the
caller decodes the next (pyarrow releases the GIL while it encodes): a full row group is
handed over when the thread has finished the previous one, so at most two row groups are
held (one encoding, one gathering) and memory stays flat. It overlaps work only where there is a second
core (or I/O to wait for); on one core it costs about what it saves.

``encoders=N`` (N > 1) encodes up to N row groups at once, each on a thread of its own into a
Parquet file in memory, and appends them to the one output file in order: the column chunks'
bytes as they are, the footer's offsets moved to where they land (:func:`_stitch`, the footer
read and written in Thrift's compact protocol). pyarrow encodes one file on one thread; this
is how one output file gets more than one core's encoding. At most N row groups are
encoding while the next gathers.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

#: rows per row group: 65,536 of the 207-byte benchmark record are 13.5 MB of input, ~23 MB
#: of Arrow data; the background writer holds two (one encoding, one gathering), which keeps
#: the whole process under 300 MB (131,072 took it to 290-310 MB with the writer thread)
ROW_GROUP_ROWS = 65_536
#: values per round of a column encoder (pyarrow's ``write_batch_size``; its default is 1,024)
WRITE_BATCH_SIZE = 16_384


class ParquetBatchWriter:
    """``with ParquetBatchWriter(path, schema) as w: w.write_batch(batch)`` (rows are kept in order)."""

    def __init__(self, path: str | Path, schema: pa.Schema, *, row_group_rows: int = ROW_GROUP_ROWS,
                 compression: str = "snappy", use_dictionary: bool = False, background: bool = False,
                 statistics: bool | str = "outside-lists", encoders: int = 1):
        # no dictionary pages by default: on decoded records (ids, names, amounts mostly
        # distinct) they halve the writer's speed for files 13 % smaller (207-byte benchmark);
        # statistics (min/max per page and row group) for the columns outside OCCURS arrays
        # only: readers prune row groups on those, not on array elements, and the elements'
        # statistics cost 20-30 % of the writer's time on the benchmark record
        # values handed to the column encoders 16,384 at a time, not pyarrow's 1,024: fewer
        # rounds of level encoding, statistics and page-size checks per row group (2-4 % of the
        # whole `copybook decode --to parquet` process, docs/performance.md); a data page may
        # pass its 1 MB target by one such round
        stats: bool | list[str] = _outside_lists(schema) if statistics == "outside-lists" else bool(statistics)
        self._props: dict[str, Any] = {"compression": compression, "use_dictionary": use_dictionary,
                                       "write_statistics": stats, "write_batch_size": WRITE_BATCH_SIZE}
        self._schema = schema
        self._path = str(path)
        self._stitched: _StitchedFile | None = None
        self._encoders: ThreadPoolExecutor | None = None
        self._encoding: deque[Future[pa.Buffer]] = deque()
        self._writer: pq.ParquetWriter | None = None
        if encoders > 1:
            self._stitched = _StitchedFile(self._path)
            self._encoders = ThreadPoolExecutor(encoders, thread_name_prefix="parquet-encoder")
            self._max_encoding = encoders
        else:
            self._writer = pq.ParquetWriter(self._path, schema, **self._props)
        self._pending: list[pa.RecordBatch] = []
        self._rows = 0
        self.row_group_rows = row_group_rows
        self._queue: queue.Queue[pa.Table | None] | None = None
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        if background:
            self._queue = queue.Queue(maxsize=1)
            self._thread = threading.Thread(target=self._drain, name="parquet-writer", daemon=True)
            self._thread.start()

    def _drain(self) -> None:
        assert self._queue is not None and self._writer is not None
        while (table := self._queue.get()) is not None:
            if self._failure is None:
                try:
                    self._writer.write_table(table, row_group_size=table.num_rows)
                except BaseException as exc:  # raised again in the caller's thread
                    self._failure = exc
            del table
            self._queue.task_done()

    def _check(self) -> None:
        if self._failure is not None:
            raise self._failure

    def write_batch(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows:
            self._pending.append(batch)
            self._rows += batch.num_rows
            if self._rows >= self.row_group_rows:
                self._flush()

    def _flush(self) -> None:
        if self._pending:
            table = pa.Table.from_batches(self._pending)
            self._pending, self._rows = [], 0
            if self._encoders is not None:
                if len(self._encoding) >= self._max_encoding:  # memory stays flat: wait for the oldest
                    self._append_oldest()
                self._encoding.append(self._encoders.submit(self._encode, table))
            elif self._queue is None:
                assert self._writer is not None
                self._writer.write_table(table, row_group_size=table.num_rows)
            else:
                # hand over when the thread is idle: one row group encoding, one gathering
                # (not a third waiting in the queue: memory stays flat at two row groups)
                self._queue.join()
                self._check()
                self._queue.put(table)

    def _encode(self, table: pa.Table) -> pa.Buffer:
        """One row group as a Parquet file in memory (on an encoder thread)."""
        sink = pa.BufferOutputStream()
        with pq.ParquetWriter(sink, self._schema, **self._props) as writer:
            if table.num_rows:
                writer.write_table(table, row_group_size=table.num_rows)
        return sink.getvalue()

    def _append_oldest(self) -> None:
        assert self._stitched is not None
        self._stitched.append(self._encoding.popleft().result())

    def close(self) -> None:
        try:
            self._flush()
            while self._encoding:
                self._append_oldest()
        finally:
            if self._thread is not None and self._queue is not None:
                self._queue.put(None)
                self._thread.join()
                self._thread = None
            if self._encoders is not None:
                for future in self._encoding:
                    future.cancel()
                self._encoders.shutdown(wait=True)
                self._encoders = None
            if self._writer is not None:
                self._writer.close()
            if self._stitched is not None:
                self._stitched.close(lambda: self._encode(self._schema.empty_table()))
        self._check()

    def __enter__(self) -> ParquetBatchWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _outside_lists(schema: pa.Schema) -> list[str]:
    """The Parquet column paths of the leaves not inside a list (``GROUP.FIELD`` in structs)."""
    out: list[str] = []

    def walk(field: pa.Field, prefix: str) -> None:
        path = f"{prefix}{field.name}"
        if pa.types.is_struct(field.type):
            for child in field.type:
                walk(child, path + ".")
        elif not (pa.types.is_list(field.type) or pa.types.is_large_list(field.type)):
            out.append(path)

    for field in schema:
        walk(field, "")
    return out


class _StitchedFile:
    """One Parquet file made of Parquet files in memory (one or more row groups each, one
    schema, the same writer settings), appended in order: their column chunks' bytes as they
    are, one footer with every row group, its offsets moved by where each file's bytes land."""

    def __init__(self, path: str):
        self._out = open(path, "wb")  # noqa: SIM115 - closed in close()
        self._out.write(_MAGIC)
        self._at = len(_MAGIC)
        self._meta: list[list[Any]] | None = None  # the first file's footer fields
        self._groups: list[list[list[Any]]] = []
        self._rows = 0

    def append(self, data: pa.Buffer) -> None:
        raw = memoryview(data).cast("B")  # (a pyarrow buffer's bytes are signed chars)
        meta, start = _footer(raw)
        shift = self._at - len(_MAGIC)
        groups = _get(meta, 4)
        for group in groups[1] if groups else []:
            _shift_row_group(group, shift, len(self._groups))
            self._groups.append(group)
        self._rows += _get(meta, 3) or 0
        if self._meta is None:
            self._meta = meta
        body = raw[len(_MAGIC) : start]
        self._out.write(body)
        self._at += len(body)

    def close(self, empty: Any) -> None:
        try:
            if self._meta is None:  # no row group: the footer of an empty file of the schema
                self.append(empty())
            assert self._meta is not None
            meta = [list(f) for f in self._meta]
            _set(meta, 3, _I64, self._rows)
            _set(meta, 4, _LIST, (_STRUCT, self._groups))
            footer = _ThriftWriter()
            footer.struct(meta)
            self._out.write(footer.out)
            self._out.write(len(footer.out).to_bytes(4, "little"))
            self._out.write(_MAGIC)
        finally:
            self._out.close()


_MAGIC = b"PAR1"


def _footer(raw: memoryview) -> tuple[list[list[Any]], int]:
    """The fields of a Parquet file's FileMetaData, and where the footer starts."""
    if bytes(raw[:4]) != _MAGIC or bytes(raw[-4:]) != _MAGIC:
        raise ValueError("not a Parquet file")
    size = int.from_bytes(raw[-8:-4], "little")
    start = len(raw) - 8 - size
    return _ThriftReader(raw[start : len(raw) - 8]).struct(), start


def _shift_row_group(group: list[list[Any]], shift: int, ordinal: int) -> None:
    """A RowGroup's offsets moved by ``shift`` bytes (parquet.thrift: RowGroup 1 columns,
    5 file_offset, 7 ordinal; ColumnChunk 2 file_offset, 3 meta_data, 4 offset_index_offset,
    6 column_index_offset; ColumnMetaData 9 data_page_offset, 10 index_page_offset,
    11 dictionary_page_offset, 14 bloom_filter_offset)."""
    _move(group, 5, shift)
    if _get(group, 7) is not None:
        _set(group, 7, _I16, ordinal)
    columns = _get(group, 1)
    for chunk in columns[1] if columns else []:
        for fid in (2, 4, 6):
            _move(chunk, fid, shift)
        meta = _get(chunk, 3)
        if meta is not None:
            for fid in (9, 10, 11, 14):
                _move(meta, fid, shift)


def _get(fields: list[list[Any]], fid: int) -> Any:
    for f in fields:
        if f[0] == fid:
            return f[2]
    return None


def _set(fields: list[list[Any]], fid: int, kind: int, value: Any) -> None:
    for f in fields:
        if f[0] == fid:
            f[1], f[2] = kind, value
            return
    fields.append([fid, kind, value])
    fields.sort(key=lambda f: f[0])


def _move(fields: list[list[Any]], fid: int, shift: int) -> None:
    for f in fields:
        if f[0] == fid and f[2] > 0:  # 0: not set (a deprecated ColumnChunk.file_offset)
            f[2] += shift


# Thrift's compact protocol: a struct is a list of [field id, type, value]
_STOP, _TRUE, _FALSE, _I8, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)


class _ThriftReader:
    def __init__(self, data: memoryview):
        self.data, self.pos = data, 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return int(b)

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return result

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, kind: int) -> Any:
        if kind in (_TRUE, _FALSE):  # a struct's bool is its field's type
            return kind == _TRUE
        if kind == _I8:
            return self.byte()
        if kind in (_I16, _I32, _I64):
            return self.zigzag()
        if kind in (_DOUBLE, _BINARY):
            n = 8 if kind == _DOUBLE else self.varint()
            self.pos += n
            return bytes(self.data[self.pos - n : self.pos])
        if kind in (_LIST, _SET):
            head = self.byte()
            n, elem = head >> 4, head & 15
            if n == 15:
                n = self.varint()
            if elem in (_TRUE, _FALSE):  # a list's bools: a byte each, kept as read
                return elem, [self.byte() for _ in range(n)]
            return elem, [self.value(elem) for _ in range(n)]
        if kind == _STRUCT:
            return self.struct()
        raise ValueError(f"Thrift type {kind} in a Parquet footer")

    def struct(self) -> list[list[Any]]:
        fields: list[list[Any]] = []
        last = 0
        while (head := self.byte()) != _STOP:
            kind, delta = head & 15, head >> 4
            fid = last + delta if delta else self.zigzag()
            fields.append([fid, kind, self.value(kind)])
            last = fid
        return fields


class _ThriftWriter:
    def __init__(self) -> None:
        self.out = bytearray()

    def varint(self, n: int) -> None:
        while n > 0x7F:
            self.out.append((n & 0x7F) | 0x80)
            n >>= 7
        self.out.append(n)

    def zigzag(self, n: int) -> None:
        self.varint((n << 1) ^ (n >> 63))

    def value(self, kind: int, v: Any) -> None:
        if kind in (_TRUE, _FALSE):
            return  # in the field's type
        if kind == _I8:
            self.out.append(v)
        elif kind in (_I16, _I32, _I64):
            self.zigzag(v)
        elif kind == _DOUBLE:
            self.out += v
        elif kind == _BINARY:
            self.varint(len(v))
            self.out += v
        elif kind in (_LIST, _SET):
            elem, items = v
            if len(items) < 15:
                self.out.append(len(items) << 4 | elem)
            else:
                self.out.append(0xF0 | elem)
                self.varint(len(items))
            for item in items:
                if elem in (_TRUE, _FALSE):
                    self.out.append(item)
                else:
                    self.value(elem, item)
        elif kind == _STRUCT:
            self.struct(v)
        else:
            raise ValueError(f"Thrift type {kind} in a Parquet footer")

    def struct(self, fields: list[list[Any]]) -> None:
        last = 0
        for fid, kind, v in fields:
            if kind in (_TRUE, _FALSE):
                kind = _TRUE if v else _FALSE
            if 0 < fid - last <= 15:
                self.out.append((fid - last) << 4 | kind)
            else:
                self.out.append(kind)
                self.zigzag(fid)
            self.value(kind, v)
            last = fid
        self.out.append(_STOP)
