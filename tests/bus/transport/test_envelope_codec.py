"""The transports' hand-written envelope codec writes and reads exactly the canonical bytes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coupler.bus.transport.codec import _fast_decode, _fast_encode, decode, encode, encode_many
from coupler.canonical import Envelope, MessageKind
from coupler.canonical.envelope import HistoryEntry, Sequence
from coupler.canonical.errors import CouplerError

_text = st.text(max_size=40)
_opt_text = st.none() | _text
_times = st.datetimes(
    min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)
_hops = st.builds(HistoryEntry, component=_text, action=_text, timestamp=_times)
_sequences = st.none() | st.builds(
    Sequence,
    id=_text,
    position=st.integers(0, 2**31 - 1),
    size=st.none() | st.integers(0, 2**31 - 1),
    end=st.booleans(),
)
_envelopes = st.builds(
    Envelope,
    format=st.sampled_from(["acme.Customer@1", "bench.Item@12", "x.Y@300"]),
    body=st.binary(max_size=3000),
    kind=st.sampled_from(list(MessageKind)),
    timestamp=_times,
    correlation_id=_opt_text,
    return_address=_opt_text,
    expires_at=st.none() | _times,
    sequence=_sequences,
    history=st.lists(_hops, max_size=5),
    attempt=st.integers(-(2**31), 2**31 - 1),
    origin=_opt_text,
    properties=st.dictionaries(_text, _text, max_size=5),
)


@settings(max_examples=300, deadline=None)
@given(env=_envelopes, hop=st.none() | _hops)
def test_encode_writes_the_canonical_bytes_and_decode_reads_them(env: Envelope, hop: HistoryEntry | None) -> None:
    expected = env.replace(history=[*env.history, hop]) if hop is not None else env
    data = encode(env, extra_hop=hop)
    assert data == expected.to_bytes()
    assert decode(data) == Envelope.from_bytes(data) == expected
    # the hand-written paths themselves (encode/decode fall back to fastavro on a surprise)
    assert _fast_encode(env, hop, env.body, env.properties) == data
    assert _fast_decode(data) == expected


@settings(max_examples=200, deadline=None)
@given(envs=st.lists(_envelopes, max_size=6), hop=st.none() | _hops, shared=st.booleans())
def test_encode_many_writes_what_encode_writes(envs: list[Envelope], hop: HistoryEntry | None, shared: bool) -> None:
    if shared and envs:  # a batch as an adapter publishes it: the headers alike, the history empty
        first = envs[0]
        envs = [e.replace(timestamp=first.timestamp, kind=first.kind, format=first.format, origin=first.origin,
                          correlation_id=first.correlation_id, return_address=first.return_address,
                          expires_at=first.expires_at, attempt=first.attempt, history=[]) for e in envs]
    blobs = encode_many(envs, hop)
    assert blobs == [encode(e, extra_hop=hop) for e in envs]
    # decoded one after the other (the headers of the one before compared, not decoded again)
    assert [decode(b) for b in blobs] == [e.replace(history=[*e.history, hop]) if hop else e for e in envs]


def test_envelopes_of_one_batch_decode_to_envelopes_of_their_own() -> None:
    hop = HistoryEntry("producer", "send q", datetime(2026, 1, 1, tzinfo=UTC))
    first, second = (decode(b) for b in encode_many([Envelope(format="x.Y@1", body=b"1"),
                                                    Envelope(format="x.Y@1", body=b"2")], hop))
    first.history.append(HistoryEntry("consumer", "receive q", datetime(2026, 1, 2, tzinfo=UTC)))
    assert second.history == [hop] and first.history[0] == hop
    assert (first.body, second.body) == (b"1", b"2") and first.message_id != second.message_id


def test_encode_many_reports_a_bad_envelope_like_encode() -> None:
    good = Envelope(format="acme.Customer@1", body=b"a", properties={"k": "v"})
    bad = Envelope(format="acme.Customer@1", body=b"b")
    bad.properties["n"] = 1  # type: ignore[assignment]  # changed after it was checked
    with pytest.raises(CouplerError):
        encode_many([good, bad])
    assert encode_many([good, good]) == [encode(good)] * 2


def test_encode_with_another_body_and_properties() -> None:
    env = Envelope(format="acme.Customer@1", body=b"big", properties={"a": "1"})
    data = encode(env, body=b"", properties={"coupler.claim": "ref"})
    assert data == env.replace(body=b"", properties={"coupler.claim": "ref"}).to_bytes()


@pytest.mark.parametrize("cut", [1, 10, 40, -1])
def test_a_broken_envelope_raises_the_canonical_error(cut: int) -> None:
    data = Envelope(format="acme.Customer@1", body=b"payload").to_bytes()
    with pytest.raises(CouplerError):
        decode(data[:cut])
    with pytest.raises(CouplerError):
        decode(data + b"\x00")


def test_timestamps_keep_their_milliseconds_far_from_the_epoch() -> None:
    ts = datetime(2100, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)
    env = Envelope(format="acme.Customer@1", timestamp=ts, expires_at=ts - timedelta(days=40000))
    assert decode(encode(env)) == env


def test_a_number_longer_than_a_long_is_refused_by_its_tenth_byte() -> None:
    """A corrupt blob of bytes with the continuation bit set is not read as one ever-growing
    number (time growing with the square of its length: a few MB held the reader for
    minutes): a long takes 10 bytes at most, and a tenth byte with more than the 64th bit (or
    an eleventh byte) is refused."""
    blob = bytes([Envelope(format="acme.Customer@1", body=b"").to_bytes()[0]]) + b"\xff" * 200
    with pytest.raises(ValueError, match="varint too long"):
        _fast_decode(blob)
    with pytest.raises(CouplerError):
        decode(blob + b"\xff" * 2_000_000)


def _read(reader, blob: bytes) -> Envelope | str:
    try:
        return reader(blob)
    except CouplerError as exc:
        assert "\n" not in str(exc)
        return "refused"


@pytest.mark.parametrize("tenth", [b"\x7f", b"\x01", b"\x00"])
def test_a_ten_byte_number_beyond_64_bits_reads_as_the_canonical_reader_reads_it(tenth: bytes) -> None:
    """Found by a long differential run: an attempt count written as ten bytes whose tenth
    holds more than the 64th bit was read by the hand-written path as a number of 70 bits
    (one no envelope can be written with again); fastavro keeps the low 64 bits."""
    data = Envelope(format="acme.Customer@1", body=b"").to_bytes()
    assert data[-4:] == b"\x00" * 4  # the attempt, no origin, no properties, an empty body
    blob = data[:-4] + b"\xff" * 9 + tenth + data[-3:]
    assert decode(blob) == Envelope.from_bytes(blob)
    assert -(2**63) <= decode(blob).attempt < 2**63


@settings(max_examples=200, deadline=None)
@given(env=_envelopes, at=st.integers(0, 10_000), junk=st.binary(min_size=1, max_size=12), cut=st.integers(0, 12))
def test_a_damaged_envelope_reads_as_the_canonical_reader_reads_it(env: Envelope, at: int, junk: bytes,
                                                                    cut: int) -> None:
    data = encode(env)
    at %= len(data)
    blob = data[:at] + junk + data[at + cut:]
    assert _read(decode, blob) == _read(Envelope.from_bytes, blob)
