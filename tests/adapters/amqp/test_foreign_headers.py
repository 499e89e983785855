"""Messages of other applications whose AMQP properties and headers Coupler's client cannot
read as they are: a timestamp header beyond the calendar (at any depth), headers of every
table type and size, content encodings that are not text. Each such message goes to the
Invalid Message Channel with its cause (or is read), and the consumer goes on with the next
one, on the same connection. (A float NaN or a field type no AMQP 0-9-1 table has never reach
a queue: RabbitMQ refuses them at publish; see HOSTILE.) The other application is pika, told to write the raw
bytes of a field value (its encoder writes only what it can decode). RabbitMQ at
127.0.0.1:5672; the queues are named h99_*."""

from __future__ import annotations

import struct
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pika
import pytest

from coupler.adapters.amqp import AmqpAdapter
from coupler.bus.testing import EmbeddedBus
from coupler.canonical import Envelope
from tests.bus.site_helpers import wait_for
from tests.bus.transport.amqp.broker import AMQP_URL, Raw, write_raw_values


@pytest.fixture
def raw_values(monkeypatch: pytest.MonkeyPatch) -> None:
    write_raw_values(monkeypatch)


@pytest.fixture
def queue() -> Iterator[tuple[Any, str]]:
    connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
    channel = connection.channel()
    name = f"h99_foreign.{uuid.uuid4().hex[:10]}"
    channel.queue_declare(name, durable=True)
    yield channel, name
    channel.queue_delete(name)
    connection.close()


def consumer(bus: EmbeddedBus, queue: str) -> AmqpAdapter:
    return bus.adapter(AmqpAdapter, "legacy-in", {"url": AMQP_URL, "queue": queue}, direction="inbound",
                       channel="orders")


#: values RabbitMQ (3.10) takes and passes on but pika (1.4) cannot decode: only timestamps beyond
#: the calendar, at any depth (the broker itself refuses a field type it does not know, such as
#: ``Z``, and a float NaN or infinity: it closes the publisher's connection with INTERNAL_ERROR,
#: and the message never reaches the queue; the frame decoder's tests cover those, test_frames.py)
HOSTILE = {
    "timestamp 2^63": Raw(b"T" + struct.pack(">Q", 2**63)),
    "timestamp of year 36812 in an array in a table": {"t": [Raw(b"T" + struct.pack(">Q", 2**40))]},
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_header_the_client_cannot_decode_sends_that_message_to_the_invalid_channel_and_goes_on(
        bus: EmbeddedBus, queue: tuple[Any, str], raw_values: None, name: str) -> None:
    channel, q = queue
    channel.basic_publish("", q, b"bad", pika.BasicProperties(headers={"x": HOSTILE[name]}, message_id="bad-1"))
    channel.basic_publish("", q, b"good", pika.BasicProperties(message_id="good-1"))
    a = consumer(bus, q)
    got: list[Envelope] = []
    wait_for(lambda: got.extend(bus.published("orders")) or len(got) == 1, "the good message", timeout=8)
    assert got[0].body == b"good"
    (bad,) = wait_for(lambda: bus.invalid(), "the bad message in the Invalid Message Channel", timeout=8)
    assert "\n" not in bad.reason and "header" in bad.reason, bad.reason
    wait_for(lambda: channel.queue_declare(q, durable=True, passive=True).method.message_count == 0,
             "both acknowledged")
    assert a.counts["received"] >= 1


def test_undecodable_headers_keep_the_connection_and_their_cause_names_header_queue_and_delivery(
        bus: EmbeddedBus, queue: tuple[Any, str], raw_values: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Several such messages in a row, each with properties before and after its headers:
    the consumer's one connection reads them all (never reconnects), and each cause names the
    header, the queue and the delivery (its message id, read from the properties after the
    headers)."""
    channel, q = queue
    opened: list[str] = []
    connect = pika.BlockingConnection

    def counted(*args: Any, **kwargs: Any) -> Any:
        opened.append(threading.current_thread().name)
        return connect(*args, **kwargs)

    monkeypatch.setattr(pika, "BlockingConnection", counted)
    for n, hostile in enumerate(HOSTILE.values()):
        channel.basic_publish("", q, b"bad", pika.BasicProperties(
            content_type="text/plain", headers={"fine": 1, "worse": hostile}, message_id=f"bad-{n}", app_id="them"))
    channel.basic_publish("", q, b"good", pika.BasicProperties(message_id="good-1", headers={"fine": 1}))
    a = consumer(bus, q)
    (good,) = wait_for(lambda: bus.published("orders"), "the good message", timeout=8)
    assert good.body == b"good"
    bad = wait_for(lambda: len(bus.invalid()) == len(HOSTILE) and bus.invalid(), "the bad messages", timeout=8)
    for n in range(len(HOSTILE)):
        (reason,) = [r.reason for r in bad if f"bad-{n}" in r.reason]
        assert "\n" not in reason and "'worse'" in reason and q in reason, reason
    wait_for(lambda: channel.queue_declare(q, durable=True, passive=True).method.message_count == 0,
             "all acknowledged")
    assert opened.count(f"amqp-{a.name}") == 1, opened  # the consumer's connection, never again
    assert a.last_error is None and a.counts["invalid"] == len(HOSTILE)


def test_headers_of_every_table_type_and_size_are_read(bus: EmbeddedBus, queue: tuple[Any, str],
                                                      raw_values: None) -> None:
    channel, q = queue
    headers: dict[str, Any] = {
        "text": "é" * 1000, "bytes": b"\xff\xfe\x00", "int": -(2**63), "big": 2**63 - 1, "float": Raw(b"d" + struct.pack(">d", 1e308)),
        "decimal": Decimal("-1.5E-200"), "time": datetime(9999, 12, 31, tzinfo=UTC), "none": None, "bool": True,
        "table": {"a": {"b": [1, "x", None]}}, "array": [[[]]], "nested": {"t": {"t": {"t": {}}}},
        **{f"k{n}": "v" * 100 for n in range(500)},  # a header frame fits in frame_max (128 KiB)
    }
    channel.basic_publish("", q, b"many", pika.BasicProperties(headers=headers, content_encoding="\xff-binary",
                                                                content_type="x/\x00", timestamp=2**62))
    consumer(bus, q)
    (got,) = wait_for(lambda: bus.published("orders"), "published", timeout=30)
    assert got.properties["amqp.header.big"] == str(2**63 - 1) and len(got.properties) > 500
