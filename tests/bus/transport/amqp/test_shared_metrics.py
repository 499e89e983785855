"""On a multi-node site the channel figures, which every daemon shares, are exported to
Prometheus by exactly one daemon at a time; another takes over when it goes away."""

from __future__ import annotations

import time

from coupler.bus.transport.amqp.transport import AmqpTransport
from tests.bus.transport.amqp.broker import AMQP_URL, PG_DSN, cleanup, servers_or_fail, unique_names


def test_exactly_one_daemon_exports_the_shared_figures() -> None:
    servers_or_fail()
    names = unique_names()
    first, second = (AmqpTransport(AMQP_URL, postgres=PG_DSN, **names).open() for _ in range(2))
    try:
        assert first.exports_shared_figures() is True
        assert second.exports_shared_figures() is False
        for _ in range(3):  # asked again at every scrape: the holder keeps it, once
            assert first.exports_shared_figures() is True
            assert second.exports_shared_figures() is False
        first.close()  # the daemon holding it exits: its PostgreSQL session ends (the server
        # notices a moment later), and the other takes over at a later scrape
        deadline = time.monotonic() + 30
        while not second.exports_shared_figures():
            assert time.monotonic() < deadline, "the other daemon never took over the shared figures"
            time.sleep(0.1)
    finally:
        second.close()
        cleanup(second)
