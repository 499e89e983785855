"""The public framing helpers other readers (the Spark data source, the multi-version
reader) build on: ``looks_like_bdw``, ``variable_size_records``, ``length_field_framing``."""

from __future__ import annotations

import io

import pytest

from coupler.translators.copybook.decoder import (
    RecordDecoder,
    length_field_framing,
    variable_size_records,
)
from coupler.translators.copybook.errors import CopybookError
from coupler.translators.copybook.framing import iter_records, looks_like_bdw
from coupler.translators.copybook.layout import build_layout
from coupler.translators.copybook.options import CopybookOptions
from coupler.translators.copybook.parser import parse_copybook

ODO = """\
       01  REC.
           05  N       PIC 9.
           05  ITEMS   OCCURS 0 TO 5 TIMES DEPENDING ON N PIC X(2).
           05  TAIL    PIC X.
"""
LENGTH_FIELD = """\
       01  REC.
           05  NAME    PIC X(2).
           05  LEN     PIC 9(2).
           05  DATA    PIC X(20).
"""


def opts(**kw: str) -> CopybookOptions:
    return CopybookOptions.from_mapping(kw)


def test_looks_like_bdw_accepts_a_block_of_whole_records_only() -> None:
    fb = opts(record_format="FB", is_rdw_big_endian="true")
    assert looks_like_bdw(bytes([0, 4 + 3 * 10, 0, 0]), 10, fb)
    assert not looks_like_bdw(bytes([0, 4 + 25, 0, 0]), 10, fb)  # not a whole number of records
    assert not looks_like_bdw(bytes([0, 34, 0, 1]), 10, fb)  # reserved bytes set
    assert not looks_like_bdw(bytes([0, 4, 0, 0]), 10, fb)  # an empty block
    assert not looks_like_bdw(b"\x00\x22", 10, fb)  # too short to be a descriptor
    little = opts(record_format="FB")
    assert looks_like_bdw(bytes([0, 0, 4 + 2 * 10, 0]), 10, little)


def test_variable_size_records_end_where_decoding_ends() -> None:
    layout = build_layout(parse_copybook(ODO))
    options = opts(record_format="F", encoding="ascii", variable_size_occurs="true", file_start_offset="3")
    decoder = RecordDecoder(layout, options)
    data = b"HDR" + b"2AABBx" + b"0y" + b"1CCz"
    frames = list(variable_size_records(io.BytesIO(data), decoder))
    assert [(f.number, f.offset, f.payload) for f in frames] == [(0, 3, b"2AABBx"), (1, 9, b"0y"), (2, 11, b"1CCz")]
    assert decoder.decode(frames[0].payload)["ITEMS"] == ["AA", "BB"]


def test_length_field_framing_reads_each_records_length_from_the_field() -> None:
    layout = build_layout(parse_copybook(LENGTH_FIELD))
    options = opts(record_format="F", encoding="ascii", record_length_field="LEN")
    decoder = RecordDecoder(layout, options)
    kwargs = length_field_framing(layout, decoder)
    data = b"AA06xx" + b"BB09yyyyy" + b"CC04"
    frames = list(iter_records(io.BytesIO(data), options, record_size=layout.size, **kwargs))
    assert [(f.offset, f.payload) for f in frames] == [(0, b"AA06xx"), (6, b"BB09yyyyy"), (15, b"CC04")]
    assert length_field_framing(layout, RecordDecoder(layout, opts(encoding="ascii"))) == {}
    with pytest.raises(CopybookError, match="NAME is not a numeric field"):
        length_field_framing(layout, RecordDecoder(layout, opts(encoding="ascii", record_length_field="NAME")))
