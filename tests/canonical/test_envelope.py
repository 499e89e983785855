"""Envelope and Format Indicator: exact round trips and clear errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coupler.canonical import Envelope, FormatIndicator, HistoryEntry, MessageKind, Sequence
from coupler.canonical.errors import EnvelopeError, FormatIndicatorError

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}(\.[A-Za-z_][A-Za-z0-9_]{0,8}){0,2}", fullmatch=True)
content_types = st.sampled_from(
    ["avro/binary", "application/json", "application/xml", "application/x-cobol-record", "text/plain"]
)
formats = st.builds(FormatIndicator, names, st.integers(1, 2**31 - 1), content_types)
instants = st.datetimes(
    min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)
text = st.text(max_size=40)
optional_text = st.none() | text
sequences = st.none() | st.builds(
    Sequence, text, st.integers(0, 2**31 - 1), st.none() | st.integers(0, 2**31 - 1), st.booleans()
)
envelopes = st.builds(
    Envelope,
    format=formats,
    body=st.binary(max_size=2048),
    kind=st.sampled_from(list(MessageKind)),
    message_id=st.uuids().map(str),
    timestamp=instants,
    correlation_id=optional_text,
    return_address=optional_text,
    expires_at=st.none() | instants,
    sequence=sequences,
    history=st.lists(st.builds(HistoryEntry, text, text, instants), max_size=5),
    attempt=st.integers(0, 2**31 - 1),
    origin=optional_text,
    properties=st.dictionaries(text, text, max_size=6),
)


@settings(max_examples=300, deadline=None)
@given(envelopes)
def test_envelope_round_trips_exactly(envelope: Envelope) -> None:
    data = envelope.to_bytes()
    again = Envelope.from_bytes(data)
    assert again == envelope
    assert again.to_bytes() == data


def test_timestamps_are_utc_milliseconds() -> None:
    local = datetime(2026, 11, 21, 10, 30, 0, 123456, tzinfo=UTC).astimezone(
        __import__("datetime").timezone(timedelta(hours=2))
    )
    env = Envelope(format="acme.Customer@1", timestamp=local)
    assert env.timestamp == datetime(2026, 11, 21, 10, 30, 0, 123000, tzinfo=UTC)
    with pytest.raises(EnvelopeError, match="no time zone"):
        Envelope(format="acme.Customer@1", timestamp=datetime(2026, 1, 1))


def test_reply_is_correlated_to_the_command() -> None:
    command = Envelope(format="coupler.commands.Ping@1", kind="command", return_address="replies")
    reply = command.reply(b"pong", "coupler.commands.Reply@1")
    assert reply.kind is MessageKind.REPLY
    assert reply.correlation_id == command.message_id
    assert reply.message_id != command.message_id


def test_expiration_and_history() -> None:
    past = datetime.now(UTC) - timedelta(seconds=1)
    env = Envelope(format="acme.Customer@1", expires_at=past)
    assert env.is_expired()
    assert not Envelope(format="acme.Customer@1").is_expired()
    env.record_hop("filedrop-in", "received").record_hop("router", "routed")
    assert [h.component for h in Envelope.from_bytes(env.to_bytes()).history] == ["filedrop-in", "router"]


@pytest.mark.parametrize(
    "data, where",
    [
        (b"", "byte 0"),
        (b"\x07whatever", "byte 0"),
        (b"\x01\x02", "byte"),
    ],
)
def test_bad_bytes_name_the_offset(data: bytes, where: str) -> None:
    with pytest.raises(EnvelopeError) as info:
        Envelope.from_bytes(data)
    assert where in str(info.value)


def test_trailing_bytes_are_refused() -> None:
    data = Envelope(format="acme.Customer@1", body=b"x").to_bytes()
    with pytest.raises(EnvelopeError, match=f"byte {len(data)}: 3 trailing bytes"):
        Envelope.from_bytes(data + b"abc")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("acme.Customer@2", FormatIndicator("acme.Customer", 2, "avro/binary")),
        ("acme.Customer@12;application/json", FormatIndicator("acme.Customer", 12, "application/json")),
        ("  Customer@1 ", FormatIndicator("Customer", 1)),
    ],
)
def test_format_indicator_parses_and_prints(text: str, expected: FormatIndicator) -> None:
    fi = FormatIndicator.parse(text)
    assert fi == expected
    assert FormatIndicator.parse(str(fi)) == fi
    assert fi.ref == f"{expected.name}@{expected.version}"


@pytest.mark.parametrize(
    "text", ["acme.Customer", "acme.Customer@", "acme.Customer@0", "acme.Customer@v2", "@2", "1acme@2", "acme..C@1", "acme.Customer@2;json"]
)
def test_malformed_format_indicator_shows_expected_form(text: str) -> None:
    with pytest.raises(FormatIndicatorError) as info:
        FormatIndicator.parse(text)
    assert "expected NAME@VERSION" in str(info.value)
    assert repr(text) in str(info.value)


def test_content_type_argument_applies_when_text_has_none() -> None:
    assert FormatIndicator.parse("a.B@1", "application/xml").content_type == "application/xml"
    assert FormatIndicator.parse("a.B@1;application/json", "application/xml").content_type == "application/json"


def test_many_makes_the_envelopes_one_by_one_would() -> None:
    import uuid

    from coupler.canonical.envelope import new_message_ids

    ts = datetime(2026, 11, 26, 12, 0, 0, 123000, tzinfo=UTC)
    bodies = [b"a", b"", b"c" * 300]
    ids = new_message_ids(3)
    props = [{"k": "1"}, {}, {"k": "3", "x": "y"}]
    seqs = [Sequence("s", 0), None, Sequence("s", 2, end=True)]
    hop = HistoryEntry("test", "made", ts)
    many = Envelope.many("acme.Order@2", bodies, message_ids=ids, properties=props, sequences=seqs,
                         kind=MessageKind.EVENT, timestamp=ts, origin="db-in", correlation_id="c-1", history=[hop])
    one_by_one = [Envelope("acme.Order@2", b, kind=MessageKind.EVENT, message_id=i, timestamp=ts, correlation_id="c-1",
                           sequence=s, history=[hop], origin="db-in", properties=p)
                  for b, i, p, s in zip(bodies, ids, props, seqs, strict=True)]
    assert many == one_by_one
    assert [Envelope.from_bytes(e.to_bytes()) for e in many] == one_by_one
    many[0].record_hop("x", "y")  # each its own history
    assert len(many[1].history) == 1
    fresh = Envelope.many(FormatIndicator("acme.Order", 1), [b"x"] * 200)
    assert len({e.message_id for e in fresh}) == 200
    assert all(uuid.UUID(e.message_id).version == 4 and str(uuid.UUID(e.message_id)) == e.message_id for e in fresh)


@pytest.mark.parametrize(("args", "error"), [
    ({"bodies": ["text"]}, "body must be bytes"),
    ({"bodies": [b"x"], "properties": [{"n": 1}]}, "properties are strings"),
    ({"bodies": [b"x"], "properties": ["k=v"]}, "properties must be a dict"),
    ({"bodies": [b"x", b"y"], "message_ids": ["one"]}, "one of each per message"),
    ({"bodies": [b"x"], "kind": "memo"}, "memo"),
])
def test_many_refuses_what_the_constructor_refuses(args: dict, error: str) -> None:  # type: ignore[type-arg]
    with pytest.raises((EnvelopeError, ValueError), match=error):
        Envelope.many("acme.Order@1", **args)


def test_name_id_is_the_rfc4122_uuid5() -> None:
    import uuid

    from coupler.canonical.envelope import name_id

    namespace = uuid.UUID("0d6a7c55-3c1b-4f0e-8c8e-5b1d2a9e7f28")
    for name in ("", "orders-in|public.orders|1", "ü|ß|€", "x" * 500):
        assert name_id(namespace.bytes, name) == str(uuid.uuid5(namespace, name))


def test_a_truncated_envelope_names_why_even_when_the_reader_says_nothing():
    # fastavro raises a bare EOFError() when the bytes end inside a field: the line must not
    # end in "not a valid envelope: " with nothing after it
    whole = Envelope(format="acme.Customer@1", body=b"x").to_bytes()
    with pytest.raises(EnvelopeError) as caught:
        Envelope.from_bytes(whole[:1])
    assert str(caught.value).endswith("not a valid envelope: EOFError"), str(caught.value)
