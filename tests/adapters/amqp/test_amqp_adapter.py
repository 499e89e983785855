"""The amqp adapter against the machine's RabbitMQ, pika playing the other application."""

from __future__ import annotations

import json
import uuid
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import pytest

from coupler.adapters.amqp import AmqpAdapter
from coupler.bus.testing import EmbeddedBus
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError
from coupler.canonical.tracecontext import TRACEPARENT, TraceContext
from tests.bus.site_helpers import wait_for
from tests.bus.transport.amqp.broker import AMQP_URL

from .conftest import Broker


def consumer(bus: EmbeddedBus, queue: str, **options: Any) -> AmqpAdapter:
    return bus.adapter(AmqpAdapter, "legacy-in", {"url": AMQP_URL, "queue": queue, **options},
                       direction="inbound", channel="orders", format=options.pop("format", None))


def test_messages_of_another_application_are_published_then_acknowledged(bus: EmbeddedBus, broker: Broker) -> None:
    q = broker.queue("in")
    trace = TraceContext.new()
    broker.publish(q, b'{"orderNo": "A-1"}', message_id="ERP-000017", correlation_id="batch-9",
                   content_type="application/json", type="erp.order", app_id="erp",
                   headers={"region": "EU", TRACEPARENT: trace.header})
    broker.publish(q, b"second", message_id="5f0b8a4e-6c1d-4b8e-9a3f-2d7c1e0b9a11")
    a = consumer(bus, q)
    got: list[Envelope] = []
    wait_for(lambda: got.extend(bus.published("orders")) or len(got) == 2, "both messages on the bus")
    first, second = got
    assert first.body == b'{"orderNo": "A-1"}' and first.correlation_id == "batch-9"
    assert str(first.format) == f"amqp.{q.replace('.', '_')}@1;application/json"
    assert first.properties["amqp.message_id"] == "ERP-000017" and first.properties["amqp.type"] == "erp.order"
    assert first.properties["amqp.header.region"] == "EU" and first.properties["amqp.app_id"] == "erp"
    assert TraceContext.parse(first.properties[TRACEPARENT]).trace_id == trace.trace_id  # type: ignore[union-attr]
    assert second.message_id == "5f0b8a4e-6c1d-4b8e-9a3f-2d7c1e0b9a11"  # a UUID id is kept as it is
    wait_for(lambda: a.counts["acked"] == 2 and broker.depth(q) == 0, "acknowledged")


def test_a_message_the_bus_cannot_take_stays_in_the_queue(bus: EmbeddedBus, broker: Broker) -> None:
    q = broker.queue("retry")
    broker.publish(q, b"keep me", message_id="m-1")
    context = bus.context("legacy-in", "orders")
    publish, calls = context.publish, []

    def failing(envelope, channel=None):  # type: ignore[no-untyped-def]
        calls.append(envelope.message_id)
        if len(calls) == 1:
            raise OSError("disk full")
        return publish(envelope, channel)

    context.publish = failing  # type: ignore[method-assign]
    adapter = AmqpAdapter("legacy-in", {"url": AMQP_URL, "queue": q}, context)
    adapter.direction, adapter.channel = "inbound", "orders"
    adapter.start()
    try:
        wait_for(lambda: len(bus.published("orders")) == 1 or None, "published on the second attempt", timeout=30)
        assert adapter.counts["requeued"] == 1 and calls[0] == calls[1]  # the same message, the same id
        wait_for(lambda: broker.depth(q) == 0, "acknowledged after the bus took it")
    finally:
        adapter.stop()


def test_an_unreadable_envelope_goes_to_the_invalid_channel_and_the_next_goes_on(bus: EmbeddedBus,
                                                                                  broker: Broker) -> None:
    q = broker.queue("bridge")
    broker.publish(q, b"not an envelope")
    good = Envelope(format=FormatIndicator("acme.Order", 1, "application/json"), body=b"{}")
    broker.publish(q, good.to_bytes())
    a = consumer(bus, q, payload="envelope")
    got: list[Envelope] = []
    wait_for(lambda: got.extend(bus.published("orders")) or len(got) == 1, "the good one")
    assert got[0].message_id == good.message_id
    (bad,) = bus.invalid()
    assert "cannot be read" in bad.reason and bad.raw == b"not an envelope"
    wait_for(lambda: a.counts["acked"] == 2 and broker.depth(q) == 0, "both acknowledged")


def test_documents_are_published_persistent_and_confirmed(bus: EmbeddedBus, broker: Broker) -> None:
    q = broker.queue("out")
    a = bus.adapter(AmqpAdapter, "legacy-out", {"url": AMQP_URL, "routing_key": q}, direction="outbound",
                    channel="orders")
    trace = TraceContext.new()
    env = Envelope(format=FormatIndicator("acme.Order", 2, "application/json"), body=json.dumps({"n": 1}).encode(),
                   correlation_id="c-1", properties={"region": "EU", TRACEPARENT: trace.header,
                                                     "amqp.header.priority": "high"})
    bus.deliver(a, env)  # returns once the broker confirmed it
    got = broker.get(q)
    assert got is not None
    props, body = got
    assert body == b'{"n": 1}'
    assert props.message_id == env.message_id and props.correlation_id == "c-1"  # type: ignore[attr-defined]
    assert props.delivery_mode == 2 and props.content_type == "application/json"  # type: ignore[attr-defined]
    headers = props.headers  # type: ignore[attr-defined]
    assert headers["region"] == "EU" and headers["priority"] == "high" and headers["coupler-format"] == "acme.Order@2"
    assert TraceContext.parse(headers[TRACEPARENT]).trace_id == trace.trace_id  # type: ignore[union-attr]


def test_an_unroutable_document_is_not_acknowledged(bus: EmbeddedBus, broker: Broker) -> None:
    a = bus.adapter(AmqpAdapter, "legacy-out", {"url": AMQP_URL, "routing_key": "test.h28.no-such-queue"},
                    direction="outbound", channel="orders")
    with pytest.raises(CouplerError, match="could not route"):
        bus.deliver(a, Envelope(format=FormatIndicator("acme.Order", 1, "application/json"), body=b"{}"))


def test_a_missing_queue_fails_the_start_with_its_name(bus: EmbeddedBus, broker: Broker) -> None:
    with pytest.raises(CouplerError, match="queue 'test.h28.absent' cannot be used"):
        consumer(bus, "test.h28.absent")


def test_the_password_comes_from_password_env_with_the_user_alone_in_the_url(
        bus: EmbeddedBus, broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    """The documented form: `url = "amqp://USER@HOST:5672/VHOST"`, never a password there, and
    `password_env` (pika alone cannot read a URL with a user and no password)."""
    parts = urlsplit(AMQP_URL)
    assert parts.password is not None, "COUPLER_TEST_AMQP_URL names a password"
    monkeypatch.setenv("H98_TEST_MQ_PASSWORD", unquote(parts.password))
    url = urlunsplit(parts._replace(netloc=f"{parts.username}@{parts.hostname}:{parts.port or 5672}"))
    q = f"h98_test.{uuid.uuid4().hex[:10]}"
    broker.channel.queue_declare(q, durable=True)
    broker.queues.append(q)
    broker.publish(q, b"hello", message_id="m-1")
    consumer(bus, q, url=url, password_env="H98_TEST_MQ_PASSWORD")
    wait_for(lambda: [e.body for e in bus.published("orders")] == [b"hello"] or None, "the message on the bus")

    monkeypatch.delenv("H98_TEST_MQ_PASSWORD")
    with pytest.raises(CouplerError, match=rf"names the user '{parts.username}' but no password.*password_env"):
        consumer(bus, q, url=url)
