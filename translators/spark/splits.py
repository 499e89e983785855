"""Splitting record files into partitions that Spark reads in parallel.

A split is a byte range of one file that starts and ends at record boundaries, with the
0-based number of its first record in the file (so that ``Record_Id`` stays the file's
record number whichever partition reads the record).

* Fixed-length files (``F``/``FB`` without block descriptors) split by arithmetic: the
  record length is known, so the ranges are multiples of it.
* Variable-length files (``V`` with RDW, ``VB`` with BDW + RDW) are split through a
  **sparse index** built in a first pass that reads only the record (or block) headers:
  every ``split_records`` records, or every ``split_bytes`` bytes, the index keeps the
  offset of the next header and the number of the record that starts there. One large
  file is then read by many tasks.
* Hierarchical records (``segment-children``): a row is a root record and the records after
  it, so a split of a variable-length file starts only at a root record (``starts_group``
  looks at the first bytes of a record); fixed-length ones are read as one split per file.
* Everything else (text lines, a record length taken from a field, variable-size OCCURS,
  segment ids generated across records) is read as one split per file.

The index reads headers in large buffered chunks; it never decodes a record.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from coupler.canonical.errors import CouplerError
from coupler.translators.sizing import TAIL_DIVISOR, guided_split_bytes, tail_floor  # noqa: F401 - also this module's

log = logging.getLogger(__name__)

#: default bytes per split, as Spark's own default for files; each split is one output file.
#: A split no longer costs a Spark task (the JVM's 7-10 ms of CPU and PySpark's 1-2 ms each:
#: the split job runs one task per slot, claiming splits, ``direct.run_split_job``), only
#: the opening and closing of its file; guided splits at the end (:func:`guided_split_bytes`)
#: keep the cores finishing together
DEFAULT_SPLIT_BYTES = 128 * 1024 * 1024
_CHUNK = 8 * 1024 * 1024


class SplitError(CouplerError):
    """A file cannot be split (a broken record or block header)."""


@dataclass(frozen=True)
class Framing:
    """What the splitter needs to know about the record format of a file.

    ``kind`` is ``fixed`` (``record_length`` bytes per record), ``rdw`` (a 4-byte record
    descriptor word before each record), ``bdw`` (blocks with a 4-byte block descriptor
    word, each holding RDW records; splits fall on block boundaries) or ``whole`` (not
    splittable). ``start`` / ``end_trim`` are the file header and trailer sizes
    (``file_start_offset`` / ``file_end_offset``).
    """

    kind: str
    record_length: int = 0
    big_endian: bool = False
    rdw_adjustment: int = 0
    rdw_includes_header: bool = False
    bdw_big_endian: bool = True
    bdw_adjustment: int = 0
    start: int = 0
    end_trim: int = 0

    def rdw_length(self, header: bytes, where: str) -> int:
        """Payload bytes after a record descriptor word."""
        n = (header[0] << 8 | header[1]) if self.big_endian else (header[3] << 8 | header[2])
        n += self.rdw_adjustment
        if self.rdw_includes_header:
            n -= 4
        if n <= 0:
            raise SplitError(
                f"record descriptor word {header.hex(' ')} gives a record length of {n}",
                where=where,
                hint="check record_format, is_rdw_big_endian, rdw_adjustment and is_rdw_part_of_record_length",
            )
        return n

    def bdw_length(self, header: bytes, where: str) -> int:
        """Bytes of a block after its block descriptor word."""
        if self.bdw_big_endian:
            if header[0] & 0x80:  # extended BDW: a 31-bit length
                n = int.from_bytes(header, "big") & 0x7FFFFFFF
            else:
                n = header[0] << 8 | header[1]
        else:
            n = header[3] << 8 | header[2]
        n = n + self.bdw_adjustment - 4
        if n <= 0:
            raise SplitError(
                f"block descriptor word {header.hex(' ')} gives a block length of {n}",
                where=where, hint="check record_format, is_bdw_big_endian and bdw_adjustment",
            )
        return n


@dataclass(frozen=True)
class FileSplit:
    """Bytes ``start``..``end`` of ``path`` (file number ``file_id``), from record ``first_record``."""

    path: str
    file_id: int
    start: int
    end: int
    first_record: int
    index: int = 0  # the split's number within its file

    @property
    def length(self) -> int:
        return self.end - self.start


def plan_splits(
    paths: Sequence[str],
    framing: Framing,
    *,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    split_records: int | None = None,
    starts_group: Callable[[bytes], bool] | None = None,
    group_head: int = 0,
    slots: int = 1,
    later_bytes: int = 0,
) -> list[FileSplit]:
    """The splits of every file, in file order then byte order.

    ``starts_group`` (hierarchical records) is given the first ``group_head`` bytes of a
    record's payload and says whether a split may start there (a root record). With
    ``slots`` > 1 (the job's task slots) and no ``split_records``, the last splits of the job
    get smaller (:func:`guided_split_bytes`); ``later_bytes`` are the bytes of the job's
    files after these ``paths`` (when the caller plans file by file)."""
    out: list[FileSplit] = []
    sizes = [os.path.getsize(path) for path in paths]
    floor = tail_floor(sum(sizes) + later_bytes, split_bytes, slots)
    for file_id, (path, size) in enumerate(zip(paths, sizes, strict=True)):
        data_end = max(framing.start, size - framing.end_trim)
        later = later_bytes + sum(sizes[file_id + 1 :])
        if framing.kind == "fixed":
            bounds = _fixed_bounds(framing, data_end, split_bytes, split_records, slots, later, floor)
        elif framing.kind in ("rdw", "bdw"):
            bounds = []
            try:
                for entry in sparse_index(
                    path, framing, data_end, split_bytes=split_bytes, split_records=split_records,
                    starts_group=starts_group, group_head=group_head, slots=slots, later_bytes=later, floor=floor,
                ):
                    bounds.append(entry)
            except SplitError as exc:  # the last split runs to the end; its reader reports the bad header
                log.warning("%s; the rest of the file is read by one task", exc)
        else:
            bounds = [(framing.start, 0)]
        bounds.append((data_end, -1))
        for i, ((start, first), (end, _)) in enumerate(zip(bounds, bounds[1:], strict=False)):
            if end > start or (i == 0 and len(bounds) == 2):
                out.append(FileSplit(path, file_id, start, end, first, i))
    return out


def _fixed_bounds(
    framing: Framing, data_end: int, split_bytes: int, split_records: int | None, slots: int = 1, later: int = 0,
    floor: int | None = None,
) -> list[tuple[int, int]]:
    reclen = framing.record_length
    if reclen <= 0:
        raise SplitError(f"fixed-length records need a positive record length, not {reclen}", hint="set record_length")
    records = max(0, data_end - framing.start) // reclen
    if split_records or slots <= 1:
        per_split = split_records or max(1, split_bytes // reclen)
        return [(framing.start + r * reclen, r) for r in range(0, max(records, 1), per_split)]
    bounds, r = [], 0
    while r < max(records, 1):
        bounds.append((framing.start + r * reclen, r))
        r += max(1, guided_split_bytes((records - r) * reclen + later, split_bytes, slots, floor) // reclen)
    return bounds


def sparse_index(
    path: str,
    framing: Framing,
    data_end: int | None = None,
    *,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    split_records: int | None = None,
    starts_group: Callable[[bytes], bool] | None = None,
    group_head: int = 0,
    slots: int = 1,
    later_bytes: int = 0,
    floor: int | None = None,
) -> Iterator[tuple[int, int]]:
    """``(byte offset, record number)`` of each split start of a variable-length file.

    The first entry is the start of the data. A new entry begins after ``split_records``
    records or once the current split holds ``split_bytes`` bytes (for ``bdw``, at the next
    block boundary: the record number then counts the records of the blocks before it);
    with ``slots`` > 1 the last splits are smaller (:func:`guided_split_bytes`, counting
    ``later_bytes`` of files after this one). With ``starts_group``, only at a record (or
    block whose first record) it accepts: the split grows until the next one.
    """
    if data_end is None:
        data_end = os.path.getsize(path) - framing.end_trim
    pos = framing.start
    record = 0
    split_start, split_first = pos, 0
    target = guided_split_bytes(data_end - pos + later_bytes, split_bytes, slots, floor)
    yield pos, 0
    with open(path, "rb") as fh, open(path, "rb") as peek:

        def may_start(at: int) -> bool:
            if starts_group is None:
                return True
            peek.seek(at + (8 if framing.kind == "bdw" else 4))
            return starts_group(peek.read(group_head))

        buf, buf_at = b"", pos
        while pos < data_end:
            if ((split_records and record - split_first >= split_records) or (
                not split_records and pos - split_start >= target
            )) and may_start(pos):
                split_start, split_first = pos, record
                target = guided_split_bytes(data_end - pos + later_bytes, split_bytes, slots, floor)
                yield pos, record
            if framing.kind == "bdw":
                fh.seek(pos)
                header = fh.read(4)
                if len(header) < 4:
                    return  # a truncated header: the reader reports it
                block_end = pos + 4 + framing.bdw_length(header, f"{path}: byte {pos}")
                record += _count_block_records(fh.read(min(block_end, data_end) - pos - 4), framing, pos + 4, path)
                pos = block_end
                continue
            rel = pos - buf_at
            if rel < 0 or rel + 4 > len(buf):
                if rel < 0 or rel > len(buf):
                    fh.seek(pos)
                    buf = b""
                else:
                    buf = buf[rel:]
                buf += fh.read(_CHUNK)
                buf_at, rel = pos, 0
                if len(buf) < 4:
                    return  # a truncated header: the reader reports it
            pos += 4 + framing.rdw_length(buf[rel : rel + 4], f"{path}: byte {pos}")
            record += 1


def _count_block_records(data: bytes, framing: Framing, start: int, path: str) -> int:
    """Records in one block: the RDW headers in ``data`` (which begins at byte ``start``)."""
    count, i = 0, 0
    while i + 4 <= len(data):
        i += 4 + framing.rdw_length(data[i : i + 4], f"{path}: byte {start + i}")
        count += 1
    return count


def read_range(path: str, start: int, end: int, chunk: int = _CHUNK) -> Iterator[bytes]:
    """The bytes ``start``..``end`` of ``path`` in chunks (streamed, never whole)."""
    with open(path, "rb") as fh:
        fh.seek(start)
        left = end - start
        while left > 0:
            data = fh.read(min(chunk, left))
            if not data:
                return
            left -= len(data)
            yield data
