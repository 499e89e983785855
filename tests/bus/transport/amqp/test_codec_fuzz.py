"""Fuzzing the AMQP codec's reading side (``from_amqp``) with messages another broker or
another client could put on a bridged queue: the headers of real Coupler messages (written by
``to_amqp``) removed, replaced by values of every AMQP table type and size (text, bytes,
numbers beyond 64 bits, floats, decimals, timestamps, tables, arrays, JSON nested deeply or
claiming huge numbers), and the basic properties replaced alike. No broker is needed: the
codec is what decodes each delivery (``Transport._take`` and the dead-letter reader).

Reading one either gives a ``Received`` whose attempts, returns, enqueue time and claim read
as numbers and text, and whose envelope is written again by the store's codec, or raises
:class:`CouplerError` (the transport dead-letters that message as undecodable and goes on):
nothing else escapes, which would stop the transport's receive loop for the whole batch.
Bounded by time (``COUPLER_FUZZ_SECONDS``, 3 s by default); the seed is printed and
``COUPLER_FUZZ_SEED=N`` replays a run."""

from __future__ import annotations

import random
import struct
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pika
import pika.data
import pika.exceptions
import pytest

from coupler.bus.transport import codec
from coupler.bus.transport.amqp.codec import (
    H_ATTEMPTS,
    H_CLAIM,
    H_EXPIRES,
    H_FORMAT,
    H_HISTORY,
    H_PROPERTIES,
    H_SEQUENCE,
    H_TIMESTAMP,
    H_VERSION,
    from_amqp,
    to_amqp,
)
from coupler.canonical import Envelope, MessageKind
from coupler.canonical.envelope import HistoryEntry, Sequence
from coupler.canonical.errors import CouplerError
from tests.fuzzing import BUDGET, SEED, bounded

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

#: Coupler messages as a Coupler node writes them (every optional header present in one)
SAMPLES = [
    Envelope(format="acme.Order@1", body=b'{"id": 1}'),
    Envelope(format="life.Policy@3", body=b"\xc1\xc2", kind=MessageKind.COMMAND, correlation_id="c-1",
             return_address="replies", expires_at=NOW + timedelta(hours=1), origin="sftp-in",
             sequence=Sequence("file-7", 2, 10, False), properties={"file": "a.dat", "record": "3"},
             history=[HistoryEntry("sftp-in", "read", NOW), HistoryEntry("bus", "send orders", NOW)]),
]
HEADERS = [H_FORMAT, H_VERSION, H_TIMESTAMP, H_EXPIRES, H_SEQUENCE, H_HISTORY, H_PROPERTIES, H_ATTEMPTS, H_CLAIM,
           "x-delivery-count", "x-death"]
PROPERTIES = ["message_id", "correlation_id", "reply_to", "type", "content_type", "app_id", "timestamp"]


def _json_values() -> list[Any]:
    return ['{"id": "s", "position": 1}', '{"id": "s", "position": "x"}', '{"id": 5, "position": 1, "size": -3}',
            '{"id": "s", "position": 1, "bogus": 1}', "[]", "[[]]", '[["a", "b"]]', '[["a", "b", "x"]]',
            '[["a", "b", 1e400]]', '[["a", "b", ' + "9" * 30 + "]]", '[[{"a": 1}, [], 1]]', "[1]", '"text"',
            "null", "1", "{", "[" * 50_000 + "]" * 50_000, '{"a":' * 50_000 + "1" + "}" * 50_000]


def _hostile(rng: random.Random) -> Any:
    """A value of any AMQP table type, sized from empty to large, or JSON (the headers hold JSON)."""
    pick = rng.randrange(14)
    if pick == 0:
        return rng.choice(_json_values())
    if pick == 1:
        return rng.choice(_json_values()).encode()
    if pick == 2:
        return rng.choice([0, 1, -1, 2**31, 2**63 - 1, -(2**63), 2**64, 10**30, -(10**30)])
    if pick == 3:
        return rng.choice([0.5, -1.0, 1e300, float("inf"), float("-inf"), float("nan")])
    if pick == 4:
        return rng.choice([Decimal("1.5"), Decimal("-0"), Decimal("1E+400")])
    if pick == 5:
        return rng.choice([True, False, None])
    if pick == 6:
        return datetime(2026, 1, 1, tzinfo=UTC)
    if pick == 7:
        return {"a": "b", "n": 1, "t": {"x": [1, 2]}}
    if pick == 8:
        return [1, "two", b"three", {"four": 4}]
    if pick == 9:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 20)))
    if pick == 10:
        return "".join(chr(rng.randrange(1, 0x3000)) for _ in range(rng.randrange(0, 20)))
    if pick == 11:
        return "x" * rng.choice([0, 1, 255, 256, 70_000])
    if pick == 12:
        return rng.choice(["acme.Order", "1", "-5", "document", "command", "event", "reply", "nope", "avro/binary"])
    return rng.choice([[], {}, "", b""])


def _props(rng: random.Random) -> tuple[pika.BasicProperties, bytes]:
    env = rng.choice(SAMPLES)
    body, props = to_amqp(env, attempts=rng.choice([0, 0, 2]), now=NOW)
    headers = dict(props.headers or {})
    for _ in range(rng.randrange(1, 4)):
        op = rng.randrange(4)
        if op == 0 and headers:
            headers.pop(rng.choice(list(headers)))
        elif op == 1:
            headers[rng.choice(HEADERS)] = _hostile(rng)
        elif op == 2:
            setattr(props, rng.choice(PROPERTIES), _hostile(rng))
        else:  # the string properties of a foreign client: any table
            headers[H_PROPERTIES] = _hostile(rng) if rng.random() < 0.5 else {"k": _hostile(rng)}
    props.headers = _on_the_wire(headers)
    return props, body


def _on_the_wire(headers: dict[str, Any]) -> dict[str, Any]:
    """``headers`` as a consumer receives them (pika's table codec: a long long comes back as
    pika's own subclass of int, text as str or bytes), or as they are when AMQP cannot carry
    them (floats, numbers beyond 64 bits: a foreign client library's types still get through
    as the others)."""
    out: list[bytes] = []
    try:
        pika.data.encode_table(out, headers)
    except (pika.exceptions.UnsupportedAMQPFieldException, struct.error, TypeError, ValueError, OverflowError):
        return headers
    return pika.data.decode_table(b"".join(out), 0)[0]


def _read(props: pika.BasicProperties, body: bytes) -> str:
    """What the transport makes of one delivery: "refused" or "read"; raises what escapes."""
    try:
        rec = from_amqp(props, body)
    except CouplerError as exc:
        assert str(exc).strip() and "\n" not in str(exc)
        return "refused"
    assert isinstance(rec.attempts, int) and isinstance(rec.returned, int)
    assert isinstance(rec.enqueued_at, float)
    assert rec.claim is None or isinstance(rec.claim, str)
    if rec.envelope is not None:
        env = rec.envelope
        env.history.append(HistoryEntry("fuzz", "receive", NOW))
        assert codec.decode(codec.encode(env)) == env  # what the store writes and reads back
    return "read"


def test_foreign_amqp_messages_are_read_or_refused_in_one_line() -> None:
    print(f"COUPLER_FUZZ_SEED={SEED}")
    rng = random.Random(SEED)
    deadline, count, seen = time.monotonic() + BUDGET, 0, {"read": 0, "refused": 0}
    while time.monotonic() < deadline:
        props, body = _props(rng)
        count += 1
        try:
            with bounded(f"message {count} (COUPLER_FUZZ_SEED={SEED})"):
                seen[_read(props, body)] += 1
        except Exception as exc:  # noqa: BLE001 - the finding, reported with the message that caused it
            pytest.fail(f"message {count} (COUPLER_FUZZ_SEED={SEED}): {type(exc).__name__}: {str(exc)[:200]}; "
                        f"headers {str(props.headers)[:300]}, properties {str(props)[:300]}")
    assert seen["read"] and seen["refused"], seen


#: what the fuzz test found (COUPLER_FUZZ_SEED=2465504272 and =1, 60 s): each header as a foreign
#: client wrote it, on the second sample (every header present), and what escaped before
FOUND = {
    "properties not a table (AttributeError)": {H_PROPERTIES: "text"},
    "attempts as text (ValueError from Received.attempts)": {H_ATTEMPTS: "[1]"},
    "attempts a table (TypeError)": {H_ATTEMPTS: {"a": "b"}},
    "attempts infinite (OverflowError)": {H_ATTEMPTS: float("inf")},
    "delivery count as bytes (ValueError)": {"x-delivery-count": b"null"},
    "delivery count a timestamp (TypeError)": {"x-delivery-count": datetime(2026, 1, 1, tzinfo=UTC)},
    "format name not UTF-8 (UnicodeDecodeError)": {H_FORMAT: b"7\x15\x8b\x1a"},
    "claim not UTF-8 (UnicodeDecodeError)": {H_CLAIM: b"\xcf.\xf3"},
    "history nested deeply (RecursionError)": {H_HISTORY: "[" * 50_000 + "]" * 50_000},
    "sequence nested deeply (RecursionError)": {H_SEQUENCE: '{"a":' * 50_000 + "1" + "}" * 50_000},
    "version beyond an Avro int (written wrongly by the store)": {H_VERSION: 1e300},
    "sequence position as text (refused by the store, later)": {H_SEQUENCE: '{"id": "s", "position": "x"}'},
}


@pytest.mark.parametrize("headers", list(FOUND.values()), ids=list(FOUND))
def test_a_bad_header_found_by_fuzzing_is_refused_in_one_line(headers: dict[str, Any]) -> None:
    body, props = to_amqp(SAMPLES[1], attempts=2, now=NOW)
    props.headers = _on_the_wire({**props.headers, **headers})
    assert _read(props, body) == "refused"
    with pytest.raises(CouplerError, match=r"^AMQP message has a bad"):
        from_amqp(props, body)


def test_a_message_as_pika_delivers_it_is_read() -> None:
    """The counts and times a Coupler node writes come back from pika as its long type
    (found by test_amqp_tools' broker tests with the first version of the header checks)."""
    for env in SAMPLES:
        body, props = to_amqp(env, attempts=3, now=NOW)
        props.headers = _on_the_wire({**props.headers, "x-delivery-count": 1})
        rec = from_amqp(props, body)
        assert (rec.attempts, rec.returned, rec.envelope) == (4, 1, env)
