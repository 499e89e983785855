"""The stream framings (coupler.translators.framing) the socket adapter and the wrappers share."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coupler.translators.framing import (
    Delimited,
    FixedLength,
    FrameError,
    FrameTooLarge,
    LengthPrefixed,
    mllp,
    parse_delimiter,
    stx_etx,
)

FRAMINGS = [
    LengthPrefixed(size=1, max_frame=200),
    LengthPrefixed(size=2, byteorder="little"),
    LengthPrefixed(size=4, byteorder="big", includes_header=True),
    LengthPrefixed(size=2, byteorder="big", includes_header=True),
    Delimited(delimiter=b"\n"),
    Delimited(delimiter=b"\r\n"),
    Delimited(delimiter=b"\x00"),
    Delimited(delimiter=b"<END>"),
    stx_etx(),
    mllp(),
]


def _payload_for(framing, data: bytes) -> bytes:
    """Strip what a framing cannot carry (its delimiter) from generated data."""
    for marker in (getattr(framing, "delimiter", None), getattr(framing, "end", None)):
        if marker:
            data = data.replace(marker, b"")
            while marker in data:  # removing can create the marker anew ("<EN<END>D>")
                data = data.replace(marker, b"")
    return data[: framing.max_frame]


@pytest.mark.parametrize("framing", FRAMINGS, ids=lambda f: f"{type(f).__name__}-{f.describe()}")
@given(payloads=st.lists(st.binary(max_size=300), max_size=8), cut=st.integers(min_value=1, max_value=50))
@settings(max_examples=40, deadline=None)
def test_every_chunking_yields_the_same_frames(framing, payloads, cut):
    payloads = [_payload_for(framing, p) for p in payloads]
    wire = b"".join(framing.encode(p) for p in payloads)
    decoder = framing.decoder()
    got = []
    for i in range(0, len(wire), cut):
        got.extend(decoder.feed(wire[i : i + cut]))
    assert got == payloads
    assert decoder.buffered == 0


def test_length_prefix_layouts_on_the_wire():
    assert LengthPrefixed(size=2, byteorder="big").encode(b"abc") == b"\x00\x03abc"
    assert LengthPrefixed(size=2, byteorder="little").encode(b"abc") == b"\x03\x00abc"
    assert LengthPrefixed(size=4, includes_header=True).encode(b"abc") == b"\x00\x00\x00\x07abc"
    assert LengthPrefixed(size=1).encode(b"") == b"\x00"


def test_length_prefix_too_small_for_itself_is_a_framing_error():
    with pytest.raises(FrameError, match="smaller than the prefix"):
        LengthPrefixed(size=4, includes_header=True).decoder().feed(b"\x00\x00\x00\x02")


def test_declared_length_beyond_the_limit_is_refused_before_the_body_arrives():
    decoder = LengthPrefixed(size=4, max_frame=1000).decoder()
    with pytest.raises(FrameTooLarge, match="1001 bytes exceeds the maximum of 1000"):
        decoder.feed((1001).to_bytes(4, "big"))
    assert decoder.buffered <= 4


def test_delimiter_never_found_is_refused_at_the_limit():
    framing = Delimited(delimiter=b"\r\n", max_frame=100)
    decoder = framing.decoder()
    decoder.feed(b"x" * 100 + b"\r")  # could still become a frame of exactly 100 bytes
    with pytest.raises(FrameTooLarge):
        decoder.feed(b"x")


def test_delimited_frame_of_exactly_the_limit_is_accepted():
    framing = Delimited(delimiter=b"\n", max_frame=10)
    assert framing.decoder().feed(b"0123456789\n") == [b"0123456789"]
    with pytest.raises(FrameTooLarge):
        framing.decoder().feed(b"01234567890\n")


def test_room_bounds_reads_to_one_maximal_frame():
    framing = Delimited(delimiter=b"\n", max_frame=10)
    decoder = framing.decoder()
    assert decoder.room() == 11
    decoder.feed(b"12345")
    assert decoder.room() == 6


def test_fixed_length_records():
    framing = FixedLength(length=5)
    assert framing.decoder().feed(b"aaaaabbbbbcc") == [b"aaaaa", b"bbbbb"]
    with pytest.raises(FrameError, match="not a 5-byte"):
        framing.encode(b"abc")


def test_bracketed_needs_its_start_marker():
    with pytest.raises(FrameError, match="start marker"):
        mllp().decoder().feed(b"MSH|")
    assert mllp().encode(b"MSH|x") == b"\x0bMSH|x\x1c\r"
    with pytest.raises(FrameError, match="end marker"):
        stx_etx().encode(b"a\x03b")


def test_delimiter_names_and_hex():
    assert parse_delimiter("CRLF") == b"\r\n"
    assert parse_delimiter("nul") == b"\x00"
    assert parse_delimiter("hex:0d0a") == b"\r\n"
    assert parse_delimiter("||") == b"||"
