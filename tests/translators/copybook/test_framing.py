"""Record framing over corpus files and hand-built streams."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import pytest

from coupler.translators.copybook.framing import (
    FramedRecord,
    FramingError,
    TruncatedRecord,
    iter_records,
)
from coupler.translators.copybook.options import CopybookOptions
from coupler.translators.copybook.picture import DecodeContext, field_type

CORPUS = Path(__file__).parent / "data" / "cobrix"
T5 = CORPUS / "04_test5_ebcdic_rdw_multiseg"
T1 = CORPUS / "01_test1_fixed_comp3_odo" / "test1_data" / "example.bin"


def opts(**kw) -> CopybookOptions:
    return CopybookOptions.from_mapping(kw)


def frame(data: bytes, options: CopybookOptions, **kw) -> list:
    return list(iter_records(io.BytesIO(data), options, chunk_size=7, **kw))


class OneWayStream(io.RawIOBase):
    """A stream that cannot seek and returns short reads (a pipe)."""

    def __init__(self, data: bytes):
        self._data = memoryview(data)

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        n = min(n if n >= 0 else len(self._data), 5)
        out, self._data = bytes(self._data[:n]), self._data[n:]
        return out


@pytest.mark.parametrize(
    ("path", "big_endian"),
    [
        ("test5_data/COMP.DETAILS.SEP30.DATA.dat", False),
        ("test5b_data/COMP.DETAILS.FEB02.DATA.RDW.BE.dat", True),
    ],
)
def test_rdw_files_of_the_corpus(path, big_endian):
    with open(T5 / path, "rb") as f:
        records = list(iter_records(f, opts(record_format="V", is_rdw_big_endian=big_endian)))
    assert len(records) == 1000
    assert all(isinstance(r, FramedRecord) for r in records)
    assert Counter(len(r.payload) for r in records) == {60: 684, 64: 316}
    assert [r.number for r in records] == list(range(1000))
    assert records[0].offset == 4
    assert records[1].offset == 4 + len(records[0].payload) + 4
    assert sum(len(r.payload) + 4 for r in records) == (T5 / path).stat().st_size


def test_wrong_endianness_is_a_corrupt_rdw_naming_the_offset():
    with open(T5 / "test5_data/COMP.DETAILS.SEP30.DATA.dat", "rb") as f:
        with pytest.raises(FramingError, match="corrupt record descriptor word 00004000") as err:
            list(iter_records(f, opts(record_format="V", is_rdw_big_endian=True)))
    assert err.value.offset == 0
    assert "byte 0" in str(err.value)


def test_record_length_field_with_adjustment():
    with open(T5 / "test5b_data/COMP.DETAILS.FEB02.DATA.RDW.BE.dat", "rb") as f:
        records = list(
            iter_records(
                f,
                opts(record_length_field="RECORD-LENGTH", rdw_adjustment=4),
                length_reader=lambda head: int.from_bytes(head[:2], "big"),
                length_prefix=2,
            )
        )
    assert len(records) == 1000
    assert Counter(len(r.payload) for r in records) == {64: 684, 68: 316}


def test_fixed_records_and_record_offsets_of_test1():
    with open(T1, "rb") as f:
        plain = list(iter_records(f, opts(), record_size=2202))
    assert [len(r.payload) for r in plain] == [2202] * 10
    with open(T1, "rb") as f:
        cut = list(
            iter_records(
                f, opts(record_start_offset=2, record_end_offset=27), record_size=2202 - 29
            )
        )
    assert [(r.number, r.offset) for r in cut][:2] == [(0, 2), (1, 2204)]
    assert all(c.payload == p.payload[2:-27] for c, p in zip(cut, plain, strict=True))


def test_truncated_last_record_comes_after_the_complete_ones():
    records = frame(b"AAAABBBBCC", opts(), record_size=4)
    assert records[:2] == [FramedRecord(0, 0, b"AAAA"), FramedRecord(1, 4, b"BBBB")]
    last = records[2]
    assert isinstance(last, TruncatedRecord)
    assert (last.number, last.offset, last.expected, last.actual) == (2, 8, 4, 2)
    err = last.error("data.bin")
    assert "data.bin: byte 8 (record 3)" in str(err) and "4 bytes expected, 2 found" in str(err)


def rdw(payload: bytes, big: bool = True) -> bytes:
    n = len(payload)
    return (bytes([n >> 8, n & 255, 0, 0]) if big else bytes([0, 0, n & 255, n >> 8])) + payload


def test_v_records_with_adjustment_and_rdw_in_length():
    data = rdw(b"abc") + rdw(b"defgh")
    got = frame(data, opts(record_format="V", is_rdw_big_endian=True))
    assert [r.payload for r in got] == [b"abc", b"defgh"]
    inclusive = bytes([0, 7, 0, 0]) + b"abc" + bytes([0, 9, 0, 0]) + b"defgh"
    got = frame(
        inclusive,
        opts(record_format="V", is_rdw_big_endian=True, is_rdw_part_of_record_length=True),
    )
    assert [r.payload for r in got] == [b"abc", b"defgh"]
    got = frame(rdw(b"abcXY"), opts(record_format="V", is_rdw_big_endian=True, rdw_adjustment=-2))
    assert got[0].payload == b"abc"
    truncated = frame(
        rdw(b"abc") + bytes([0, 9, 0, 0]) + b"de", opts(record_format="V", is_rdw_big_endian=True)
    )
    assert isinstance(truncated[1], TruncatedRecord) and truncated[1].offset == 11


def test_zero_rdw_is_an_error_after_the_good_records():
    data = rdw(b"abc") + bytes(4) + b"zzz"
    it = iter_records(io.BytesIO(data), opts(record_format="V", is_rdw_big_endian=True))
    assert next(it).payload == b"abc"
    with pytest.raises(FramingError, match="byte 7"):
        next(it)


def test_vb_blocks_of_rdw_records():
    block1 = rdw(b"abc") + rdw(b"de")
    block2 = rdw(b"fghij")
    data = b""
    for block in (block1, block2):
        n = len(block) + 4
        data += bytes([n >> 8, n & 255, 0, 0]) + block
    got = frame(data, opts(record_format="VB", is_rdw_big_endian=True))
    assert [(r.number, r.payload) for r in got] == [(0, b"abc"), (1, b"de"), (2, b"fghij")]
    assert got[2].offset == 4 + len(block1) + 4 + 4
    bad = bytes([0, 5, 0, 0]) + rdw(b"abc")
    with pytest.raises(FramingError, match="overrun"):
        frame(bad, opts(record_format="VB", is_rdw_big_endian=True))


def test_fb_with_and_without_block_descriptors():
    plain = b"AAAABBBBCCCC"
    assert [r.payload for r in frame(plain, opts(record_format="FB"), record_size=4)] == [
        b"AAAA",
        b"BBBB",
        b"CCCC",
    ]
    blocked = bytes([0, 12, 0, 0]) + b"AAAABBBB" + bytes([0, 8, 0, 0]) + b"CCCC"
    got = frame(blocked, opts(record_format="FB", is_rdw_big_endian=True), record_size=4)
    assert [(r.payload, r.offset) for r in got] == [(b"AAAA", 4), (b"BBBB", 8), (b"CCCC", 16)]


def test_text_lines_and_file_offsets():
    data = b"HEADER\nline one\r\n\nline two\nTRAILER"
    o = opts(record_format="D", encoding="ascii", file_start_offset=7, file_end_offset=7)
    got = frame(data, o)
    assert [(r.number, r.offset, r.payload) for r in got] == [
        (0, 7, b"line one"),
        (1, 18, b"line two"),
    ]
    fixed = frame(b"HHxxxxyyyyTTT", opts(file_start_offset=2, file_end_offset=3), record_size=4)
    assert [r.payload for r in fixed] == [b"xxxx", b"yyyy"]


def test_streams_that_cannot_seek_are_read_in_pieces():
    data = b"".join(rdw(bytes([65 + i]) * (i + 1), big=False) for i in range(50))
    got = list(
        iter_records(OneWayStream(data), opts(record_format="V", file_end_offset=0), chunk_size=3)
    )
    assert [len(r.payload) for r in got] == list(range(1, 51))
    trailer = list(
        iter_records(OneWayStream(b"ABCDEFGH12"), opts(file_end_offset=2), record_size=4)
    )
    assert [r.payload for r in trailer] == [b"ABCD", b"EFGH"]


def test_length_reader_errors_become_framing_errors():
    ft = field_type("9(2)")
    o = opts(record_length_field="LEN")
    ascii_ctx = DecodeContext(encoding="ascii")
    good = frame(b"03a05bcd", o, length_reader=lambda h: ft.decode(h, ascii_ctx), length_prefix=2)
    assert [r.payload for r in good] == [b"03a", b"05bcd"]
    with pytest.raises(FramingError, match="record length field LEN"):
        frame(b"XX", o, length_reader=lambda h: ft.decode(h), length_prefix=2)


@pytest.mark.parametrize("claim", [2**31, 2**40, 10**18])
def test_a_huge_record_length_field_allocates_only_what_arrived(tmp_path, claim):
    """A length field claiming 10**18 bytes was read as one ``stream.read(10**18)`` of a file,
    which allocates its size first: a MemoryError. It is a truncated record at byte 0."""
    path = tmp_path / "huge.bin"
    path.write_bytes(claim.to_bytes(8, "big") + b"x" * 20)
    with open(path, "rb") as f:
        (record,) = iter_records(f, opts(record_length_field="LEN"),
                                 length_reader=lambda head: int.from_bytes(head, "big"), length_prefix=8)
    assert isinstance(record, TruncatedRecord) and (record.offset, len(record.payload)) == (0, 28)
    assert f"{claim} bytes expected, 28 found" in record.error(str(path)).message
