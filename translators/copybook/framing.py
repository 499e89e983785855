"""Record framing: cut a binary stream into the records a copybook describes.

:func:`iter_records` reads a stream in chunks (never the whole file) and yields a
:class:`FramedRecord` ``(number, offset, payload)`` per record: ``number`` counts from 0,
``offset`` is the file byte offset of the payload's first byte, ``payload`` the record
bytes the layout decodes (RDW/BDW removed, ``record_start_offset``/``record_end_offset``
cut off).

Record formats (``record_format`` option, Cobrix's names):

* ``F`` fixed length: ``record_length`` or the layout size (plus the record start/end
  offsets); a record length may also come from a field (``record_length_field``), read by
  the ``length_reader`` the decoder passes in.
* ``FB`` fixed blocked: as ``F``; when the file starts with a block descriptor word (BDW)
  whose length is 4 plus a whole number of records, every block is read with its BDW.
* ``V`` variable with a 4-byte record descriptor word (RDW), little-endian by default
  (Cobrix's default) or big-endian (``is_rdw_big_endian``); the payload length is the RDW
  length plus ``rdw_adjustment``, minus 4 when ``is_rdw_part_of_record_length``.
* ``VB`` variable blocked: BDW-prefixed blocks of RDW records.
* ``D`` text lines (ASCII): one record per line, LF or CRLF, empty lines skipped.

``file_start_offset``/``file_end_offset`` skip a header and a trailer of the file.

A truncated last record is yielded as a :class:`TruncatedRecord` (after every complete
record before it); a corrupt RDW or BDW raises :class:`FramingError` naming the byte offset,
since the records after it cannot be found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import BinaryIO, NamedTuple

from coupler.translators.copybook.errors import CopybookError
from coupler.translators.copybook.options import CopybookOptions

__all__ = ["FramedRecord", "FramingError", "TruncatedRecord", "iter_records", "looks_like_bdw"]

CHUNK = 1 << 20


class FramingError(CopybookError):
    """Records cannot be cut from the data: a corrupt RDW/BDW or a truncated record."""

    def __init__(
        self,
        message: str,
        *,
        offset: int,
        record: int | None = None,
        expected: int | None = None,
        actual: int | None = None,
        file: str | None = None,
        hint: str | None = None,
    ):
        self.offset = offset
        self.index = record  # 0-based, as FramedRecord.number
        self.record = None if record is None else record + 1  # numbered from 1, as reported
        self.expected = expected
        self.actual = actual
        self.file = file
        where = f"{file or '<data>'}: byte {offset}"
        if record is not None:
            where += f" (record {record + 1})"
        super().__init__(message, where=where, hint=hint)


class FramedRecord(NamedTuple):
    """One record: 0-based ``number``, file ``offset`` of the payload, the ``payload``."""

    number: int
    offset: int
    payload: bytes


class TruncatedRecord(NamedTuple):
    """The last record of the data, shorter than its framing says it is."""

    number: int
    offset: int
    payload: bytes
    expected: int
    actual: int

    def error(self, file: str | None = None) -> FramingError:
        """The :class:`FramingError` that reports this record."""
        return FramingError(
            f"truncated record: {self.expected} bytes expected, {self.actual} found",
            offset=self.offset,
            record=self.number,
            expected=self.expected,
            actual=self.actual,
            file=file,
            hint="the file ends in the middle of a record; check the record format and length",
        )


#: the most bytes :class:`_Source` asks its stream for at once
_MAX_READ = 16 * 1024 * 1024


class _Source:
    """Exact reads over a stream, holding back the last ``end_skip`` bytes (the trailer)."""

    def __init__(self, stream: BinaryIO, start_skip: int, end_skip: int, chunk: int):
        self._stream = stream
        self._end_skip = end_skip
        self._chunk = max(chunk, 1)
        self._buf = bytearray()
        self._pos = 0
        self._eof = False
        self.offset = 0  # file offset of the next byte read
        while start_skip > 0:
            got = len(self.read(min(start_skip, self._chunk)))
            if not got:
                break
            start_skip -= got

    def _fill(self, n: int) -> None:
        want = n + self._end_skip
        while not self._eof and len(self._buf) - self._pos < want:
            if self._pos > self._chunk:
                del self._buf[: self._pos]
                self._pos = 0
            # never more than a chunk, or than what is missing, what arrived already and
            # _MAX_READ, at once: a read of ``n`` bytes allocates them before any arrives, and
            # ``want`` may come from the data (a record length field of 10**18 bytes was a
            # MemoryError; then a 16 MiB read for a 4-byte file): growing by at most what
            # arrived, a long record takes few reads and never twice the bytes there are
            held = len(self._buf) - self._pos
            data = self._stream.read(max(self._chunk, min(want - held, held, _MAX_READ)))
            if not data:
                self._eof = True
            else:
                self._buf += data

    def available(self, n: int) -> int:
        self._fill(n)
        return max(0, min(n, len(self._buf) - self._pos - self._end_skip))

    def peek(self, n: int) -> bytes:
        k = self.available(n)
        return bytes(self._buf[self._pos : self._pos + k])

    def read(self, n: int) -> bytes:
        data = self.peek(n)
        self._pos += len(data)
        self.offset += len(data)
        return data

    def at_end(self) -> bool:
        return self.available(1) == 0

    def read_line(self) -> tuple[int, bytes] | None:
        """The next line (without LF/CRLF) and its offset; ``None`` at the end."""
        start = self.offset
        parts = bytearray()
        while True:
            k = self.available(self._chunk)
            if k == 0:
                return (start, bytes(parts).removesuffix(b"\r")) if parts else None
            window = self._buf[self._pos : self._pos + k]
            nl = window.find(b"\n")
            if nl >= 0:
                parts += window[:nl]
                self._pos += nl + 1
                self.offset += nl + 1
                return start, bytes(parts).removesuffix(b"\r")
            parts += window
            self._pos += k
            self.offset += k


def _cut(options: CopybookOptions, number: int, offset: int, record: bytes):
    """Apply ``record_start_offset``/``record_end_offset`` to one whole record."""
    start, end = options.record_start_offset, options.record_end_offset
    if not start and not end:
        return FramedRecord(number, offset, record)
    if start + end > len(record):
        return TruncatedRecord(number, offset, record, start + end, len(record))
    return FramedRecord(number, offset + start, record[start : len(record) - end])


def iter_records(
    stream: BinaryIO,
    options: CopybookOptions,
    *,
    record_size: int | None = None,
    length_reader: Callable[[bytes], int] | None = None,
    length_prefix: int = 0,
    file: str | None = None,
    chunk_size: int = CHUNK,
) -> Iterator[FramedRecord | TruncatedRecord]:
    """Yield the records of ``stream`` framed as ``options`` say.

    ``record_size`` is the layout's size (the fixed record length when the options give no
    ``record_length``). With ``record_length_field`` the decoder passes ``length_reader``,
    which returns the record length from the record's first ``length_prefix`` bytes
    (``rdw_adjustment`` is added to it). ``file`` names the data in errors.
    """
    src = _Source(stream, options.file_start_offset, options.file_end_offset, chunk_size)
    fmt = options.record_format
    if options.record_length_field or length_reader is not None:
        if length_reader is None or length_prefix <= 0:
            raise ValueError("record_length_field needs length_reader and length_prefix")
        yield from _length_field_records(src, options, length_reader, length_prefix, file)
    elif fmt in ("F", "FB"):
        yield from _fixed_records(src, options, record_size, file)
    elif fmt == "V":
        yield from _rdw_records(src, options, file, limit=None, number=0)
    elif fmt == "VB":
        yield from _vb_records(src, options, file)
    elif fmt == "D":
        number = 0
        while (line := src.read_line()) is not None:
            offset, data = line
            if data:
                yield _cut(options, number, offset, data)
                number += 1
    else:  # pragma: no cover - options validate record_format
        raise ValueError(f"unknown record format {fmt}")


def _fixed_length(options: CopybookOptions, record_size: int | None) -> int:
    if options.record_length is not None:
        return options.record_length
    if not record_size or record_size <= 0:
        raise FramingError(
            "no record length for fixed-length records",
            offset=0,
            hint="pass the layout size or set -o record_length=N",
        )
    return record_size + options.record_start_offset + options.record_end_offset


def _fixed_records(
    src: _Source, options: CopybookOptions, record_size: int | None, file: str | None
) -> Iterator[FramedRecord | TruncatedRecord]:
    length = _fixed_length(options, record_size)
    if options.record_format == "FB" and looks_like_bdw(src.peek(4), length, options):
        yield from _fixed_blocks(src, options, length, file)
        return
    number = 0
    while True:
        offset = src.offset
        data = src.read(length)
        if not data:
            return
        if len(data) < length:
            yield TruncatedRecord(number, offset, data, length, len(data))
            return
        yield _cut(options, number, offset, data)
        number += 1


def _descriptor_length(word: bytes, big_endian: bool) -> tuple[int, bool]:
    """(length, reserved bytes are zero) of a 4-byte RDW/BDW."""
    if big_endian:
        return word[0] * 256 + word[1], word[2] == 0 and word[3] == 0
    return word[2] + 256 * word[3], word[0] == 0 and word[1] == 0


def looks_like_bdw(word: bytes, length: int, options: CopybookOptions) -> bool:
    """Whether ``word`` (the first 4 bytes of an ``FB`` file's data) is a block descriptor
    word of a block of whole ``length``-byte records: its reserved bytes are zero and its
    length (byte order as ``is_rdw_big_endian``) is 4 plus a positive multiple of
    ``length``. Such a file is read block by block; otherwise as plain fixed-length records."""
    if len(word) < 4:
        return False
    block, zero = _descriptor_length(word, options.is_rdw_big_endian)
    return zero and block > 4 and (block - 4) % length == 0


def _fixed_blocks(
    src: _Source, options: CopybookOptions, length: int, file: str | None
) -> Iterator[FramedRecord | TruncatedRecord]:
    number = 0
    while not src.at_end():
        bdw_at = src.offset
        word = src.read(4)
        if len(word) < 4:
            yield TruncatedRecord(number, bdw_at, word, 4, len(word))
            return
        block, zero = _descriptor_length(word, options.is_rdw_big_endian)
        if not zero or block <= 4 or (block - 4) % length:
            raise FramingError(
                f"corrupt block descriptor word {word.hex().upper()}: a block of {block} bytes "
                f"does not hold whole {length}-byte records",
                offset=bdw_at,
                record=number,
                file=file,
            )
        for _ in range((block - 4) // length):
            offset = src.offset
            data = src.read(length)
            if len(data) < length:
                yield TruncatedRecord(number, offset, data, length, len(data))
                return
            yield _cut(options, number, offset, data)
            number += 1


def _rdw_records(
    src: _Source,
    options: CopybookOptions,
    file: str | None,
    *,
    limit: int | None,
    number: int,
) -> Iterator[FramedRecord | TruncatedRecord]:
    """RDW records until the end of the data, or until ``limit`` bytes (one VB block)."""
    start = src.offset
    while (limit is None or src.offset - start < limit) and not src.at_end():
        rdw_at = src.offset
        word = src.read(4)
        if len(word) < 4:
            yield TruncatedRecord(number, rdw_at, word, 4, len(word))
            return
        rdw_len, zero = _descriptor_length(word, options.is_rdw_big_endian)
        length = rdw_len + options.rdw_adjustment
        if options.is_rdw_part_of_record_length:
            length -= 4
        if not zero or rdw_len == 0 or length <= 0:
            endian = "big" if options.is_rdw_big_endian else "little"
            raise FramingError(
                f"corrupt record descriptor word {word.hex().upper()} ({endian}-endian, "
                f"record length {length})",
                offset=rdw_at,
                record=number,
                file=file,
                hint="check is_rdw_big_endian, rdw_adjustment and is_rdw_part_of_record_length",
            )
        offset = src.offset
        data = src.read(length)
        if len(data) < length:
            yield TruncatedRecord(number, offset, data, length, len(data))
            return
        yield _cut(options, number, offset, data)
        number += 1
    if limit is not None and src.offset - start != limit:
        raise FramingError(
            f"records overrun their block: {src.offset - start} bytes read of a {limit}-byte block",
            offset=src.offset,
            record=number,
            file=file,
        )


def _vb_records(
    src: _Source, options: CopybookOptions, file: str | None
) -> Iterator[FramedRecord | TruncatedRecord]:
    number = 0
    while not src.at_end():
        bdw_at = src.offset
        word = src.read(4)
        if len(word) < 4:
            yield TruncatedRecord(number, bdw_at, word, 4, len(word))
            return
        if options.is_rdw_big_endian and word[0] & 0x80:  # extended BDW: 31-bit length
            block, zero = int.from_bytes(word, "big") & 0x7FFFFFFF, True
        else:
            block, zero = _descriptor_length(word, options.is_rdw_big_endian)
        if not zero or block <= 4:
            raise FramingError(
                f"corrupt block descriptor word {word.hex().upper()} (block length {block})",
                offset=bdw_at,
                record=number,
                file=file,
                hint="record_format VB expects a BDW before every block of RDW records",
            )
        for rec in _rdw_records(src, options, file, limit=block - 4, number=number):
            yield rec
            if isinstance(rec, TruncatedRecord):
                return
            number += 1


def _length_field_records(
    src: _Source,
    options: CopybookOptions,
    length_reader: Callable[[bytes], int],
    prefix: int,
    file: str | None,
) -> Iterator[FramedRecord | TruncatedRecord]:
    number = 0
    while not src.at_end():
        offset = src.offset
        head = src.peek(prefix)
        if len(head) < prefix:
            yield TruncatedRecord(number, offset, src.read(prefix), prefix, len(head))
            return
        try:
            value = length_reader(head)
        except CopybookError as exc:
            raise FramingError(
                f"cannot read the record length"
                f"{' field ' + options.record_length_field if options.record_length_field else ''}: {exc.message}",
                offset=offset,
                record=number,
                file=file,
            ) from None
        length = int(value) + options.rdw_adjustment
        if length <= 0:
            raise FramingError(
                f"record length field {options.record_length_field} gives {length} bytes",
                offset=offset,
                record=number,
                file=file,
                hint="check record_length_field and rdw_adjustment",
            )
        data = src.read(length)
        if len(data) < length:
            yield TruncatedRecord(number, offset, data, length, len(data))
            return
        yield _cut(options, number, offset, data)
        number += 1
