"""Whole files through the vectorised decoder, with the per-record decoder's bad-data policy.

:func:`decode_file_batches` reads fixed-length files in chunks, decodes each chunk with
:class:`~.batch.BatchDecoder` into an Arrow record batch and applies the same policy as
:func:`~.decoder.decode_files`: the records, the values, the bad-record reports (file,
record number, byte offset, field, raw bytes, reason), the counters of
:class:`~.decoder.DecodeStats` and the truncated last record are those of the per-record
path. Records the kernels flag (a field that cannot be read, an OCCURS DEPENDING ON counter
out of range) are decoded again by the per-record decoder, which decides: under ``strict``
its :class:`~.decoder.BadRecord` replaces the row (the row leaves the batch), under
``lenient`` its counts of bad fields are kept. Bad data is rare, so this costs nothing on
good files and keeps one definition of the policy.

Use :func:`batch_supported` to know whether a layout and options can take this path
(:meth:`BatchDecoder.supports`, and no block descriptor words in an FB file).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from coupler.canonical.plain import NEW, Plain

from .arrow_json import normalize_groups
from .avro import as_options
from .batch import DEFAULT_BATCH_RECORDS, BatchDecoder, read_fully
from .decoder import BadRecord, DecodeStats, RecordDecoder
from .errors import CopybookError, RecordDecodeError
from .framing import TruncatedRecord, looks_like_bdw
from .kernels import arrow_type, decode_column
from .layout import Field, Layout, Node, depending_on_counter
from .options import CopybookOptions

if TYPE_CHECKING:  # concurrent.futures: with --jobs 2 or more, for a file of 2 chunks or more (start-up)
    from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["FileBatch", "batch_supported", "decode_file_batches", "split_records"]


class FileBatch(Plain):
    """Decoded records of one chunk of one file: ``batch`` holds the good ones (in file
    order), ``bad`` the rejected and truncated ones."""

    file: str
    batch: pa.RecordBatch
    bad: list[BadRecord]
    bytes: int = 0  # file bytes of the chunk's records

    def __init__(self, file: str, batch: pa.RecordBatch, bad: list[BadRecord] = NEW, bytes: int = 0) -> None:
        self.file = file
        self.batch = batch
        self.bad = [] if bad is NEW else bad
        self.bytes = bytes


def _framing(layout: Layout, options: CopybookOptions) -> tuple[int, CopybookOptions]:
    """(bytes per record in the file, the options of the batch decoder for the payload).

    ``record_start_offset``/``record_end_offset`` are cut here, as the framing does."""
    start, end = options.record_start_offset, options.record_end_offset
    stride = options.record_length or (layout.size + start + end)
    if not start and not end:
        return stride, options
    payload = stride - start - end
    return stride, options.replace(
        record_start_offset=0, record_end_offset=0,
        record_length=payload if options.record_length else None,
    )


def batch_supported(layout: Layout, options: Any = None, paths: Iterable[str | Path] = ()) -> bool:
    """Whether :func:`decode_file_batches` can decode ``paths`` with ``layout`` and ``options``."""
    options = as_options(options)
    if options.segment_children:
        return False  # hierarchical records: rows of several records, the per-record decoder's
    length, inner = _framing(layout, options)
    if length - options.record_start_offset - options.record_end_offset < layout.size:
        return False  # short records: the per-record decoder reads what there is
    if not BatchDecoder.supports(layout, inner):
        return False
    for node in layout.walk():  # a text counter (occurs_mappings) is the per-record decoder's
        if node.occurs and node.occurs.depending_on:
            if depending_on_counter(layout, node).field_type.kind not in ("integer", "decimal"):
                return False
    if options.record_format == "FB":
        for path in paths:
            try:
                with open(path, "rb") as fh:
                    fh.seek(options.file_start_offset)
                    if looks_like_bdw(fh.read(4), length, options):
                        return False
            except OSError:
                continue  # reported when the file is decoded
    return True


class _Counter:
    """An OCCURS DEPENDING ON item the per-record decoder checks, and its counter field."""

    def __init__(self, node: Node, counter: Field, decoder: BatchDecoder):
        assert node.occurs is not None
        self.node = node
        self.counter = counter
        self.low = node.occurs.min
        self.high = node.occurs.max
        from .avro import field_avro_type

        self.typ = arrow_type(counter.field_type, field_avro_type(counter))
        self.ctx = decoder.ctx

    def out_of_range(self, rows: np.ndarray) -> np.ndarray:
        block = rows[:, self.counter.offset : self.counter.offset + self.counter.size]
        arr, _bad = decode_column(self.counter.field_type, block, self.ctx, self.typ)
        if pa.types.is_integer(arr.type):
            counts = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        else:  # the per-record decoder's int(value): truncation toward zero
            counts = np.array([int(v) if v is not None else 0 for v in arr.to_pylist()], dtype=object)
        return np.asarray((counts < max(self.low, 0)) | (counts > self.high), dtype=bool)


def _counters(layout: Layout, batch: BatchDecoder, record: RecordDecoder) -> list[_Counter]:
    out = []
    for node in layout.walk():
        if node.occurs and node.occurs.depending_on and id(node) in record._wanted:
            counter = layout.find(node.occurs.depending_on)
            assert isinstance(counter, Field)
            out.append(_Counter(node, counter, batch))
    return out


def decode_file_batches(
    layout: Layout,
    paths: Iterable[str | Path],
    options: Any = None,
    *,
    stats: DecodeStats | None = None,
    policy: str = "lenient",
    batch_records: int = DEFAULT_BATCH_RECORDS,
    jobs: int = 1,
    records: tuple[int, int] | None = None,
) -> Iterator[FileBatch]:
    """Decode fixed-length data files chunk by chunk into Arrow batches (memory stays flat).

    ``jobs`` > 1 decodes chunks on threads (the compiled kernel and the file reads release
    the GIL) and yields them in file order, with the bad-field reports and counters in that
    order too: the output is the same whatever ``jobs`` is. ``min(jobs, 3)`` threads decode,
    started for the first file of more than one chunk (a file of one chunk is decoded on the
    calling thread, where a thread would only take it over), and 3 chunks (``_READ_AHEAD``)
    are read ahead of the caller, so memory stays flat: up to 3 chunks decode at once while
    the caller (the writer) takes the one before.

    ``records=(first, count)`` decodes only those whole records of each file (numbered from
    0, as in the reports), and its truncated last record only when the range reaches the end:
    :func:`split_records` cuts files into such ranges for ordered part files.

    Raises :class:`ValueError` when :func:`batch_supported` is false for the layout and
    options; a file that cannot be read raises :class:`~.errors.CopybookError`.
    """
    stats = stats if stats is not None else DecodeStats()
    options = as_options(options)
    if not batch_supported(layout, options):
        raise ValueError("the vectorised decoder cannot decode this layout with these options")
    size, inner = _framing(layout, options)
    decoders = _Decoders(layout, inner, options, policy)
    pool: ThreadPoolExecutor | None = None
    try:
        for file_id, path in enumerate(paths):
            name = str(path)
            try:
                total = max(Path(path).stat().st_size - options.file_start_offset - options.file_end_offset, 0)
                with open(path, "rb") as stream:
                    whole = total // size
                    begin, end = (0, whole) if records is None else (records[0], min(records[0] + records[1], whole))
                    chunks = ((first, min(batch_records, end - first)) for first in range(begin, end, batch_records))
                    if pool is None and jobs > 1 and end - begin > batch_records:
                        # the threads are started for the first file of more than one chunk: a
                        # file of one chunk decodes on this thread (a pool would only hand it over)
                        from concurrent.futures import ThreadPoolExecutor

                        pool = ThreadPoolExecutor(min(jobs, _READ_AHEAD), thread_name_prefix="copybook-decode")
                    if pool is None or end - begin <= batch_records:
                        stream.seek(options.file_start_offset + begin * size)
                        # one buffer read into again for every chunk (a decoded batch keeps no
                        # reference to its input), not fresh bytes a chunk
                        buffer = memoryview(bytearray(max(min(batch_records, end - begin), 1) * size))
                        for first, count in chunks:
                            data = buffer[: count * size]
                            if read_fully(stream, data) < count * size:  # the file shrank
                                raise OSError(f"{name} ended early")
                            yield _chunk(*decoders.get(), data, count, name, file_id, first, options, stats)
                    else:
                        yield from _parallel(pool, decoders, stream.fileno(), chunks, size, name, file_id,
                                             options, stats)
                    tail = total - whole * size if end == whole else 0
                    if tail:
                        stream.seek(options.file_start_offset + whole * size)
                        payload = stream.read(tail)
                        number, offset = whole, options.file_start_offset + whole * size
                        err = TruncatedRecord(number, offset, payload, size, len(payload)).error(name)
                        stats.bytes += len(payload)
                        stats.errors += 1
                        bad = BadRecord(RecordDecodeError(err.message, file=name, record=number, offset=offset,
                                                          raw=payload[:64]))
                        empty = decoders.get()[0].decode(b"", first_record=number, file_id=file_id).batch
                        yield FileBatch(name, normalize_groups(empty), [bad], len(payload))
            except OSError as exc:
                raise CopybookError(f"cannot read {name}: {getattr(exc, 'strerror', None) or exc}", where=name) from exc
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def split_records(layout: Layout, paths: Iterable[str | Path], options: Any, parts: int) -> list[tuple[Path, int, int]]:
    """``(path, first record, count)`` ranges, in file order, about ``parts`` of them: each
    file cut on record boundaries into ranges of about the same number of records (a file's
    truncated last record goes with its last range; an empty file is one empty range)."""
    options = as_options(options)
    size, _ = _framing(layout, options)
    counts = []
    for path in paths:
        try:
            total = max(Path(path).stat().st_size - options.file_start_offset - options.file_end_offset, 0)
        except OSError:
            total = 0  # reported when the file is decoded
        counts.append((Path(path), total // size))
    per = max(-(-sum(n for _, n in counts) // max(parts, 1)), 1)
    out: list[tuple[Path, int, int]] = []
    for path, n in counts:
        pieces = max(-(-n // per), 1)
        step = -(-n // pieces) if n else 0
        for k in range(pieces):
            first = k * step
            out.append((path, first, n - first if k == pieces - 1 else min(step, n - first)))
    return out


class _Decoders(threading.local):
    """A batch decoder, its per-record oracle and its counters for each thread."""

    def __init__(self, layout: Layout, inner: CopybookOptions, options: CopybookOptions, policy: str):
        self.args = (layout, inner, options, policy)
        self.made: tuple[BatchDecoder, RecordDecoder, list[_Counter]] | None = None

    def get(self) -> tuple[BatchDecoder, RecordDecoder, list[_Counter]]:
        if self.made is None:
            layout, inner, options, policy = self.args
            decoder = BatchDecoder(layout, inner)
            oracle = RecordDecoder(layout, options, policy=policy)
            self.made = (decoder, oracle, _counters(layout, decoder, oracle))
        return self.made


#: chunks decoded ahead of the consumer at most, whatever ``jobs`` is: each holds ~18 MB (its
#: bytes, its Arrow batch, the kernel's buffers); the consumer (the Parquet, Avro or JSON
#: writer) is slower than one decoding thread, so more would only hold memory (5 took
#: `--jobs 4` to 267-292 MB of peak RSS on the 207 MB benchmark file, 3 to 245-253 MB at the
#: same speed; docs/performance.md)
_READ_AHEAD = 3


def _parallel(
    pool: ThreadPoolExecutor, decoders: _Decoders, fd: int, chunks: Iterator[tuple[int, int]],
    size: int, name: str, file_id: int, options: CopybookOptions, stats: DecodeStats,
) -> Iterator[FileBatch]:
    """Chunks decoded on ``pool``'s threads, :data:`_READ_AHEAD` ahead of the caller, yielded
    in order with their counters and reports merged into ``stats`` in order (each thread
    counts into a scratch of its own)."""

    def work(first: int, count: int) -> tuple[FileBatch, DecodeStats, list[Any]]:
        data = os.pread(fd, count * size, options.file_start_offset + first * size)
        if len(data) < count * size:
            raise OSError(f"{name} ended early")
        reports: list[Any] = []
        scratch = DecodeStats(on_bad_field=reports.append)
        return _chunk(*decoders.get(), data, count, name, file_id, first, options, scratch), scratch, reports

    pending: deque[Future[tuple[FileBatch, DecodeStats, list[Any]]]] = deque()
    for first, count in chunks:
        pending.append(pool.submit(work, first, count))
        if len(pending) >= _READ_AHEAD:
            yield _merged(pending.popleft().result(), stats)
    while pending:
        yield _merged(pending.popleft().result(), stats)


def _merged(done: tuple[FileBatch, DecodeStats, list[Any]], stats: DecodeStats) -> FileBatch:
    batch, scratch, reports = done
    stats.bytes += scratch.bytes
    stats.records += scratch.records
    stats.errors += scratch.errors
    stats.bad_fields += scratch.bad_fields
    for key, n in scratch.bad_field_names.items():
        stats.bad_field_names[key] = stats.bad_field_names.get(key, 0) + n
    if stats.on_bad_field is not None:
        for report in reports:
            stats.on_bad_field(report)
    return batch


def _chunk(
    decoder: BatchDecoder,
    oracle: RecordDecoder,
    counters: list[_Counter],
    data: bytes | memoryview,
    count: int,
    name: str,
    file_id: int,
    first: int,
    options: Any,
    stats: DecodeStats,
) -> FileBatch:
    stride, size = len(data) // count, decoder.record_size
    start = options.record_start_offset
    rows = np.frombuffer(data, dtype=np.uint8).reshape(count, stride)
    if stride != size:
        rows = np.ascontiguousarray(rows[:, start : start + size])
    decoded = decoder.decode(rows, first_record=first, file_id=file_id)
    batch = decoded.batch
    flagged = {b.record - first for b in decoded.bad}
    odo = np.zeros(len(rows), dtype=bool)
    for c in counters:
        odo |= c.out_of_range(rows)
    flagged.update(np.flatnonzero(odo).tolist())
    stats.bytes += count * size  # payload bytes, as the per-record path counts them
    bad: list[BadRecord] = []
    if flagged:
        drop: set[int] = set()
        replace: dict[int, dict[str, Any]] = {}
        for i in sorted(flagged):
            scratch = DecodeStats(on_bad_field=stats.on_bad_field)
            result = oracle.decode(
                rows[i].tobytes(), file=name, file_id=file_id, record_id=first + i,
                offset=options.file_start_offset + (first + i) * stride + start, stats=scratch,
            )
            stats.bad_fields += scratch.bad_fields
            for key, n in scratch.bad_field_names.items():
                stats.bad_field_names[key] = stats.bad_field_names.get(key, 0) + n
            if isinstance(result, BadRecord):
                bad.append(result)
                drop.add(i)
            elif odo[i] and result is not None:
                replace[i] = result
        batch = _rebuild(batch, drop, replace)
    stats.errors += len(bad)
    stats.records += batch.num_rows
    return FileBatch(name, normalize_groups(batch), bad, len(data))


def _rebuild(batch: pa.RecordBatch, drop: set[int], replace: dict[int, dict[str, Any]]) -> pa.RecordBatch:
    """``batch`` without the rows ``drop`` and with the rows ``replace`` decoded anew."""
    if not drop and not replace:
        return batch
    pieces: list[pa.RecordBatch] = []
    start = 0
    for i in sorted(drop | set(replace)):
        if i > start:
            pieces.append(batch.slice(start, i - start))
        if i in replace:
            pieces.append(pa.RecordBatch.from_pylist([replace[i]], schema=batch.schema))
        start = i + 1
    if start < batch.num_rows:
        pieces.append(batch.slice(start))
    if not pieces:
        return batch.slice(0, 0)
    return pa.Table.from_batches(pieces, schema=batch.schema).combine_chunks().to_batches()[0]
