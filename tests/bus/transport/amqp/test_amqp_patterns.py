"""The consumer patterns of a site (Idempotent Receiver, Message Sequence reassembly) run by a
daemon on RabbitMQ + PostgreSQL, as tests/bus/runtime/test_daemon_patterns.py runs them on SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from coupler.bus.messaging.sequence import split
from coupler.canonical import Envelope
from tests.bus.runtime.test_daemon_patterns import IDEMPOTENT, SEQUENCES, TEXT, drained, order
from tests.bus.site_helpers import running_daemon, wait_for, write_site
from tests.bus.transport.amqp.broker import site_store


@pytest.fixture
def store() -> Iterator[str]:
    with site_store() as table:
        yield table


def test_an_idempotent_route_on_the_broker(store: str, tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, store + IDEMPOTENT)) as d:
        t = d.transport
        assert t is not None
        first = order(b"order 17", order_no="17")
        t.send("orders.in", [first, order(b"order 17 again", order_no="17"), order(b"order 18", order_no="18")])
        t.send("orders.in", first.replace())
        routed = drained(d, "orders.out", 2)
        wait_for(lambda: t.stats("orders.in")[0].depth == 0, "orders.in drained")
        assert sorted(e.body for e in routed) == [b"order 17", b"order 18"]
        assert t.receive("orders.out", "test") == []


def test_parts_are_reassembled_on_the_broker(store: str, tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, store + SEQUENCES)) as d:
        t = d.transport
        assert t is not None
        big = Envelope(format=TEXT, body=bytes(range(256)) * 20)
        t.send("docs", list(reversed(split(big, 1000))))
        [whole] = drained(d, "docs.whole", 1)
        assert whole.body == big.body and whole.message_id == big.message_id and whole.sequence is None
        assert t.receive("docs.whole", "test") == []
