"""Helpers for the transport tests: a controllable clock and transport factories."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from coupler.bus.transport.memory import MemoryTransport
from coupler.bus.transport.sqlite.transport import SqliteTransport


class FakeClock:
    """Wall-clock seconds that only move when the test says so."""

    def __init__(self, start: float | None = None):
        self.now = time.time() if start is None else start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def sqlite_transport(data_dir: Path, **options: Any) -> SqliteTransport:
    return SqliteTransport(data_dir, **options).open()


def memory_transport(data_dir: Path, **options: Any) -> MemoryTransport:
    return MemoryTransport(**options).open()


#: name -> factory(data_dir, **options) of every transport the contract tests run against;
#: a broker transport adds itself here (its factory may skip when its server is missing)
TRANSPORTS: dict[str, Any] = {"sqlite": sqlite_transport, "memory": memory_transport}

from tests.bus.transport.amqp.broker import amqp_transport, postgres_transport  # noqa: E402  (RabbitMQ + PostgreSQL)

TRANSPORTS["amqp"] = amqp_transport
TRANSPORTS["postgres"] = postgres_transport

from coupler.bus.testing.contract import CLAIM_THRESHOLD, bodies, doc, drain, stored_claims  # noqa: E402,F401
