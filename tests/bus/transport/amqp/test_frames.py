"""The link's frame decoder (``frames.decode_frame``): a content header whose properties pika
cannot decode (a timestamp beyond the calendar, a field type no AMQP 0-9-1 table has, a table
longer than its frame) is a Header frame of the same channel and body size whose properties
carry the cause, so that the delivery completes and the message can be filed as invalid;
every other frame is pika's. No broker is needed; random bytes too (bounded by
``COUPLER_FUZZ_SECONDS``; ``COUPLER_FUZZ_SEED=N`` replays a run)."""

from __future__ import annotations

import random
import struct
import time

import pika.frame
import pika.spec
import pytest

from coupler.bus.transport.amqp.frames import decode_frame, undecodable
from tests.bus.transport.amqp.broker import Raw, write_raw_values
from tests.fuzzing import BUDGET, SEED, bounded

HOSTILE = {
    "timestamp 2^63": Raw(b"T" + struct.pack(">Q", 2**63)),
    "unknown type Z": Raw(b"Z"),
}


def _wire(props: pika.spec.BasicProperties, channel: int = 3, body_size: int = 5) -> bytes:
    """The content header frame of ``props`` as the broker sends it."""
    return pika.frame.Header(channel, body_size, props).marshal()


def _header_frame(raw_properties: bytes, channel: int = 3, body_size: int = 5) -> bytes:
    payload = struct.pack(">HHQ", pika.spec.BasicProperties.INDEX, 0, body_size) + raw_properties
    return struct.pack(">BHL", 2, channel, len(payload)) + payload + b"\xce"


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_header_frame_pika_cannot_decode_is_a_header_carrying_the_cause(
        monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    write_raw_values(monkeypatch)
    props = pika.spec.BasicProperties(content_type="text/plain", headers={"fine": 1, "worse": HOSTILE[name]},
                                      delivery_mode=2, message_id="m-1", timestamp=7, app_id="them")
    data = _wire(props) + b"next frame"
    with pytest.raises(Exception):  # noqa: B017 - what pika raises differs per value
        pika.frame.decode_frame(data)
    used, frame = decode_frame(data)
    assert used == len(data) - len(b"next frame")
    assert isinstance(frame, pika.frame.Header) and (frame.channel_number, frame.body_size) == (3, 5)
    got = frame.properties
    # the properties before and after the table are read; the table is left out
    assert (got.content_type, got.delivery_mode, got.message_id, got.timestamp, got.app_id, got.headers) == (
        "text/plain", 2, "m-1", 7, "them", None)
    cause = undecodable(got)
    assert cause is not None and "\n" not in cause and "header 'worse'" in cause, cause
    assert undecodable(pika.frame.decode_frame(_wire(pika.spec.BasicProperties(headers={"a": 1})))[1].properties) is None


def test_properties_that_cannot_be_read_at_all_are_a_header_carrying_the_cause() -> None:
    """A table longer than the frame: nothing after it can be read either."""
    flags = struct.pack(">H", pika.spec.BasicProperties.FLAG_HEADERS | pika.spec.BasicProperties.FLAG_MESSAGE_ID)
    data = _header_frame(flags + struct.pack(">I", 1000) + b"\x01k")
    used, frame = decode_frame(data)
    assert used == len(data) and isinstance(frame, pika.frame.Header) and frame.body_size == 5
    cause = undecodable(frame.properties)
    assert cause is not None and "\n" not in cause and "properties" in cause, cause
    assert frame.properties.message_id is None


def test_a_method_frame_that_cannot_be_decoded_still_fails_the_connection() -> None:
    """Not a message of another application (only the broker writes method frames): pika's
    error stands, and the connection is closed as the AMQP specification says."""
    payload = struct.pack(">I", 0x003C_0063)  # no such method
    data = struct.pack(">BHL", 1, 3, len(payload)) + payload + b"\xce"
    with pytest.raises(KeyError):
        decode_frame(data)


def test_random_property_bytes_are_read_or_carry_their_cause() -> None:
    """Any bytes as the properties of a content header: a Header frame of the same channel and
    body size, its properties as pika reads them or carrying the cause -- never an exception."""
    print(f"COUPLER_FUZZ_SEED={SEED}")
    rng = random.Random(SEED)
    deadline, count, seen = time.monotonic() + BUDGET, 0, {"read": 0, "marked": 0}
    kinds = b"tbBUuIiLlfdDsSxATFVZ\x00"
    while time.monotonic() < deadline:
        count += 1
        flags = rng.choice([0x2000, 0x2080, 0xA080, 0xFFFC, rng.getrandbits(16) & ~1])
        table = bytearray()
        for _ in range(rng.randint(0, 4)):
            key = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 4)))
            table += bytes([len(key)]) + key + bytes([rng.choice(kinds)])
            table += bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 4, 8, 9])))
        length = len(table) if rng.random() < 0.8 else rng.getrandbits(32)
        raw = struct.pack(">HI", flags, length) + table + bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 40)))
        data = _header_frame(raw, channel=rng.randint(1, 65535), body_size=rng.getrandbits(63))
        with bounded(f"frame {count} (COUPLER_FUZZ_SEED={SEED})"):
            try:
                used, frame = decode_frame(data)
            except Exception as exc:  # noqa: BLE001 - the finding, reported with the frame that caused it
                pytest.fail(f"frame {count} (COUPLER_FUZZ_SEED={SEED}): {type(exc).__name__}: {exc}; {data!r}")
        assert used == len(data) and isinstance(frame, pika.frame.Header)
        cause = undecodable(frame.properties)
        assert cause is None or ("\n" not in cause and len(cause) < 400), cause
        seen["read" if cause is None else "marked"] += 1
    assert seen["marked"], seen
