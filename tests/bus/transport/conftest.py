"""Fixtures of the transport tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.bus.transport.amqp.broker import destroy, servers_or_fail, unique_names


@pytest.fixture
def broker_names() -> Iterator[dict[str, str]]:
    """Names (queue prefix, PostgreSQL schema) of a broker transport's own, deleted afterwards
    (RabbitMQ and PostgreSQL must run: the test fails otherwise)."""
    servers_or_fail()
    names = unique_names()
    yield names
    destroy(names)
