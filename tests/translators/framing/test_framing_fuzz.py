"""Fuzzing the framing readers (issue 17): random and mutated streams, lengths that claim far
more than arrives. Only CouplerError subclasses escape, no case takes more than 2 s (the
hypothesis deadline) or 200 MB, and nothing is allocated from a claimed size before the
bytes are there: a decoder holds at most one maximal frame of what actually arrived.
"""

from __future__ import annotations

import contextlib
import tracemalloc
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coupler.adapters.socket import hl7v2
from coupler.adapters.socket.server import CHUNK
from coupler.canonical.errors import CouplerError
from coupler.translators.framing import (
    Delimited,
    FixedLength,
    Framing,
    LengthPrefixed,
    mllp,
    stx_etx,
)
from coupler.translators.wrappers.framing import FramingWrapper

MB = 1024 * 1024
#: the budget of one case (the acceptance bound); the assertions below are much tighter
MAX_CASE_BYTES = 200 * MB

FRAMINGS: list[Framing] = [
    LengthPrefixed(size=1, max_frame=100),
    LengthPrefixed(size=2, byteorder="little", max_frame=4096),
    LengthPrefixed(size=4, max_frame=64 * 1024),
    LengthPrefixed(size=4, byteorder="little", includes_header=True, max_frame=64 * 1024),
    LengthPrefixed(size=4, max_frame=(1 << 32) - 5),  # a limit so high only the data bounds it
    Delimited(delimiter=b"\n", max_frame=4096),
    Delimited(delimiter=b"\r\n", max_frame=64 * 1024),
    Delimited(delimiter=b"<EOM>", max_frame=1000),
    FixedLength(length=7),
    FixedLength(length=1 << 30),  # a record length no stream will complete here
    stx_etx(4096),
    mllp(64 * 1024),
]
IDS = [f"{type(f).__name__}-{'-'.join(f'{k}={v}' for k, v in f.describe().items() if k != 'framing')}" for f in FRAMINGS]

FUZZ = settings(
    max_examples=60,
    deadline=2000,  # ms: no case may take longer than 2 s
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=False,
)


@contextlib.contextmanager
def peak_allocation() -> Iterator[list[int]]:
    """The peak bytes allocated inside the block (traced only there: tracing is slow)."""
    out: list[int] = []
    tracemalloc.start()
    try:
        yield out
        out.append(tracemalloc.get_traced_memory()[1])
    finally:
        tracemalloc.stop()


def _carriable(framing: Framing, data: bytes) -> bytes:
    for marker in (getattr(framing, "delimiter", None), getattr(framing, "end", None)):
        while marker and marker in data:
            data = data.replace(marker, b"")
    if isinstance(framing, FixedLength):
        return data[: framing.length].ljust(framing.length, b"F") if framing.length < 1 << 20 else b""
    return data[: min(framing.max_frame, 2000)]


@st.composite
def streams(draw: st.DrawFn, framing: Framing) -> bytes:
    """Random bytes, or valid frames then mutated: flipped, cut, spliced, or a claimed length
    replaced by a huge one."""
    if draw(st.booleans()):
        return draw(st.binary(max_size=5000))
    payloads = draw(st.lists(st.binary(max_size=600), max_size=6))
    wire = bytearray(b"".join(framing.encode(p) for p in (_carriable(framing, p) for p in payloads) if p or not isinstance(framing, FixedLength)))
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "delete", "huge"]))
        at = draw(st.integers(0, len(wire))) if wire else 0
        if kind == "flip" and wire:
            at = min(at, len(wire) - 1)
            wire[at] ^= draw(st.integers(1, 255))
        elif kind == "cut":
            del wire[at:]
        elif kind == "insert":
            wire[at:at] = draw(st.binary(min_size=1, max_size=300))
        elif kind == "delete":
            del wire[at : at + draw(st.integers(1, 50))]
        elif kind == "huge" and isinstance(framing, LengthPrefixed):
            claim = draw(st.integers((1 << (8 * framing.size)) // 2, (1 << (8 * framing.size)) - 1))
            wire[at:at] = claim.to_bytes(framing.size, framing.byteorder)
    return bytes(wire)


def _feed(framing: Framing, stream: bytes, reads: list[int]) -> list[bytes]:
    """Feed ``stream`` as a connection does: each read at most ``decoder.room()`` bytes."""
    decoder = framing.decoder()
    frames: list[bytes] = []
    pos, i = 0, 0
    while pos < len(stream):
        n = min(reads[i % len(reads)], decoder.room())
        i += 1
        chunk = stream[pos : pos + n]
        pos += len(chunk)
        try:
            got = decoder.feed(chunk)
        except CouplerError:
            return frames  # the connection would be closed here, with this reason
        frames.extend(got)
        assert decoder.buffered <= framing.max_wire
        assert all(len(f) <= framing.max_frame for f in got)
    return frames


@pytest.mark.parametrize("framing", FRAMINGS, ids=IDS)
@FUZZ
@given(data=st.data(), reads=st.lists(st.integers(1, CHUNK), min_size=1, max_size=8))
def test_decoders_on_random_and_mutated_streams(framing: Framing, data: st.DataObject, reads: list[int]) -> None:
    stream = data.draw(streams(framing))
    with peak_allocation() as peak:
        _feed(framing, stream, reads)
    # nothing is allocated from a claimed size: only what arrived, a few copies of it
    assert peak[0] < 8 * len(stream) + 256 * 1024 < MAX_CASE_BYTES


@pytest.mark.parametrize("framing", FRAMINGS, ids=IDS)
@FUZZ
@given(data=st.data())
def test_wrapper_unwrap_of_random_and_mutated_frames(framing: Framing, data: st.DataObject) -> None:
    wrapper = FramingWrapper(framing)
    stream = data.draw(streams(framing))
    with peak_allocation() as peak:
        try:
            payload, _ = wrapper.unwrap(stream)
        except CouplerError:
            payload = b""
    assert len(payload) <= framing.max_frame
    assert peak[0] < 8 * len(stream) + 256 * 1024


@pytest.mark.parametrize("size", [1, 2, 4])
@pytest.mark.parametrize("byteorder", ["big", "little"])
def test_the_largest_claimed_length_allocates_nothing_before_its_bytes_arrive(size: int, byteorder: str) -> None:
    claim = (1 << (8 * size)) - 1  # 255 B, 64 KiB, 4 GiB
    framing = LengthPrefixed(size=size, byteorder=byteorder, max_frame=claim)
    decoder = framing.decoder()
    piece = min(1000, claim // 20)
    with peak_allocation() as peak:
        assert decoder.feed(claim.to_bytes(size, byteorder)) == []
        for _ in range(10):
            assert decoder.feed(b"y" * piece) == []
    assert decoder.buffered == size + 10 * piece
    assert peak[0] < 64 * 1024  # what arrived (at most 10 kB) is held; the claim is not allocated


@settings(FUZZ, max_examples=40)
@given(message=st.one_of(st.binary(max_size=2000), st.text(max_size=500).map(lambda t: ("MSH" + t).encode("utf-8", "replace"))),
       code=st.sampled_from(["AA", "AE", "AR"]), text=st.text(max_size=300))
def test_hl7_acknowledgement_of_anything_never_raises(message: bytes, code: str, text: str) -> None:
    ack = hl7v2.acknowledgement(message, code, text)
    assert ack.startswith(b"MSH") and b"\rMSA" in ack
