"""Messages another producer writes into the store's queues with a content header pika cannot
decode (a timestamp beyond the calendar, a field type no AMQP 0-9-1 table has).

pika decodes a delivery's content header while it reads the connection, before the transport
sees the message; its exception used to drop the connection, the broker gave the message
back first on the next one, and the queue was blocked for good (a poison message). Now the
transport files it in the Invalid Message Channel with its cause and goes on, on the same
connection (the link's frame decoder: test_frames.py)."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pika
import pytest

from coupler.bus.transport.amqp.transport import AmqpTransport
from tests.bus.site_helpers import wait_for
from tests.bus.transport.amqp.broker import (
    AMQP_URL,
    PG_DSN,
    Raw,
    destroy,
    servers_or_fail,
    unique_names,
    write_raw_values,
)
from tests.bus.transport.contract.support import doc

#: values RabbitMQ (3.10) takes and passes on but pika (1.4) cannot decode: only timestamps beyond
#: the calendar, at any depth (the broker itself refuses a field type it does not know, such as
#: ``Z``, and a float NaN or infinity: it closes the publisher's connection with INTERNAL_ERROR,
#: and the message never reaches the queue; the frame decoder's tests cover those, test_frames.py)
HOSTILE = {
    "timestamp 2^63": Raw(b"T" + struct.pack(">Q", 2**63)),
    "timestamp of year 36812 in an array in a table": {"t": [Raw(b"T" + struct.pack(">Q", 2**40))]},
}


@pytest.fixture
def names() -> Iterator[dict[str, str]]:
    servers_or_fail()
    names = unique_names()
    names["prefix"] = f"h102_{names['prefix']}"
    yield names
    destroy(names)


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_foreign_message_whose_header_the_client_cannot_decode_is_invalid_and_the_connection_stays(
        names: dict[str, str], monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    write_raw_values(monkeypatch)
    t = AmqpTransport(AMQP_URL, postgres=PG_DSN, reconnect_timeout=10, **names).open()
    try:
        t.declare("orders")
        link = t._link
        assert link is not None
        conn, generation = link.conn, link.generation
        foreign = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
        try:
            foreign.channel().basic_publish("", f"{names['prefix']}q:orders", b"bad", pika.BasicProperties(
                delivery_mode=2, headers={"worse": HOSTILE[name]}, message_id="bad-1"))
        finally:
            foreign.close()
        t.send("orders", doc(b"good"))
        got = wait_for(lambda: t.receive_wait("orders", "c", max=10, wait=0.5), "the good message", timeout=20)
        assert [d.envelope.body for d in got] == [b"good"]
        t.ack(got)
        (dead,) = wait_for(lambda: t.dead_letters(kind="invalid"), "the bad message, invalid", timeout=20)
        assert (dead.raw, dead.channel) == (b"bad", "orders")
        assert "\n" not in dead.error and "header 'worse'" in dead.error, dead.error
        assert t.receive_wait("orders", "c", max=10, wait=0.2) == []
        assert link.conn is conn and link.generation == generation  # never reconnected
    finally:
        t.close()
