"""Fixtures of the route and pattern tests run through a real daemon."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(params=["sqlite", "amqp"])
def store(request: pytest.FixtureRequest) -> Iterator[str]:
    """The ``[store]`` of the site: SQLite (the default: no table), or the broker transport
    (RabbitMQ + PostgreSQL, with names of its own, deleted afterwards)."""
    if request.param == "sqlite":
        yield ""
        return
    from tests.bus.transport.amqp.broker import site_store

    with site_store() as table:
        yield table
