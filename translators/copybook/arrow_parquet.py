"""Parquet files from a stream of Arrow record batches, in row groups of a useful size.

The batch decoder works in small batches (they stay in the CPU caches); Parquet readers
want row groups of tens of thousands of rows. :class:`ParquetBatchWriter` gathers batches
until a row group is full, so both get what suits them.

``background=True`` encodes and writes each full row group on a thread of its own while the
caller decodes the next (pyarrow releases the GIL while it encodes): a full row group is
handed over when the thread has finished the previous one, so at most two row groups are
held (one encoding, one gathering) and memory stays flat. It overlaps work only where there is a second
core (or I/O to wait for); on one core it costs about what it saves.
"""

from __future__ import annotations

import errno
import os
import queue
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa

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
                 statistics: bool | str = "outside-lists"):
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
        self._writer, self._sink = _parquet_writer(str(path), schema, compression=compression,
                                                   use_dictionary=use_dictionary, write_statistics=stats,
                                                   write_batch_size=WRITE_BATCH_SIZE)
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
        assert self._queue is not None
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
            if self._queue is None:
                self._writer.write_table(table, row_group_size=table.num_rows)
            else:
                # hand over when the thread is idle: one row group encoding, one gathering
                # (not a third waiting in the queue: memory stays flat at two row groups)
                self._queue.join()
                self._check()
                self._queue.put(table)

    def close(self) -> None:
        try:
            self._flush()
        finally:
            if self._thread is not None and self._queue is not None:
                self._queue.put(None)
                self._thread.join()
                self._thread = None
            try:
                self._writer.close()
            finally:
                self._sink.close()
        self._check()

    def __enter__(self) -> ParquetBatchWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _parquet_writer(path: str, schema: pa.Schema, **options: Any) -> tuple[Any, Any]:
    """(writer, file): the writer ``pyarrow.parquet.ParquetWriter(path, schema, **options)``
    makes for a local path, and the file it writes to (closed after the writer).

    Not through ``pyarrow.parquet``: importing it imports ``pyarrow.fs`` (the S3, GCS and HDFS
    file systems, ``ssl``), about 6 % of the start-up of ``coupler copybook decode``
    (docs/performance.md), for a local file. ``pyarrow._parquet.ParquetWriter`` is the
    internal writer ``pyarrow.parquet.ParquetWriter`` wraps; the arguments below are those it
    passes for a local path and no ``flavor`` (pyarrow 26, ``parquet/core.py``).
    tests/translators/copybook/test_arrow_parquet.py checks that both write the same bytes
    and raise the same errors, so that a pyarrow upgrade that changes them shows there.
    """
    try:
        from pyarrow._parquet import ParquetWriter  # internal: see above
    except ImportError:  # another pyarrow (pyproject admits >= 15): the public writer
        return _public_parquet_writer(path, schema, **options)

    if os.path.isdir(path):  # LocalFileSystem's error (pa.OSFile's own check says it otherwise)
        raise IsADirectoryError(
            errno.EISDIR, f"Failed to open local file '{path}'. Detail: [errno {errno.EISDIR}] Is a directory",
        )
    sink = pa.OSFile(path, "wb")
    try:
        writer = ParquetWriter(
            sink, schema, version="2.6", writer_engine_version="V2", data_page_version="1.0",
            use_deprecated_int96_timestamps=False, use_compliant_nested_type=True, store_schema=True,
            **options,
        )
    except TypeError:  # another pyarrow's internal arguments: the public writer, as before
        sink.close()
        return _public_parquet_writer(path, schema, **options)
    except BaseException:
        sink.close()
        raise
    return writer, sink


class _NoSink:
    """The file of a public ``pyarrow.parquet.ParquetWriter``: it closes its own."""

    def close(self) -> None:
        pass


def _public_parquet_writer(path: str, schema: pa.Schema, **options: Any) -> tuple[Any, Any]:
    """(writer, file) through the public ``pyarrow.parquet.ParquetWriter`` (the same file;
    what a pyarrow whose internal writer takes other arguments is given)."""
    import pyarrow.parquet as pq

    return pq.ParquetWriter(path, schema, **options), _NoSink()


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
