"""The machine's RabbitMQ as the other application's broker: queues of their own per test,
deleted afterwards; pika is the other application."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest

from coupler.bus.testing import EmbeddedBus
from tests.bus.transport.amqp.broker import AMQP_URL, servers_or_fail


class Broker:
    def __init__(self) -> None:
        self.connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
        self.channel = self.connection.channel()
        self.queues: list[str] = []

    def queue(self, purpose: str) -> str:
        name = f"test.h28.{purpose}.{uuid.uuid4().hex[:10]}"
        self.channel.queue_declare(name, durable=True)
        self.queues.append(name)
        return name

    def publish(self, queue: str, body: bytes, **props: object) -> None:
        self.channel.basic_publish("", queue, body, pika.BasicProperties(delivery_mode=2, **props))  # type: ignore[arg-type]

    def get(self, queue: str) -> tuple[object, bytes] | None:
        method, props, body = self.channel.basic_get(queue, auto_ack=True)
        return None if method is None else (props, body)

    def depth(self, queue: str) -> int:
        return int(self.channel.queue_declare(queue, durable=True, passive=True).method.message_count)

    def close(self) -> None:
        for q in self.queues:
            self.channel.queue_delete(q)
        self.connection.close()


@pytest.fixture
def broker() -> Iterator[Broker]:
    servers_or_fail()
    b = Broker()
    yield b
    b.close()


@pytest.fixture
def bus(tmp_path: Path) -> Iterator[EmbeddedBus]:
    with EmbeddedBus(tmp_path / "site") as b:
        yield b
