"""On a multi-node site the channel figures, which every daemon shares, are exported to
Prometheus by exactly one daemon at a time; another takes over when it goes away."""

from __future__ import annotations

from coupler.bus.transport.amqp.transport import AmqpTransport

from .broker import AMQP_URL, PG_DSN, cleanup, servers_or_fail, unique_names


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
        first.close()  # the daemon holding it exits: its PostgreSQL session ends
        assert second.exports_shared_figures() is True
    finally:
        second.close()
        cleanup(second)
