"""Helpers for the transport tests: a controllable clock and transport factories."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from coupler.bus.transport.base import Transport
from coupler.bus.transport.sqlite.transport import SqliteTransport
from coupler.canonical import Envelope


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


#: name -> factory(data_dir, **options) of every transport the contract tests run against;
#: a broker transport adds itself here (its factory may skip when its server is missing)
TRANSPORTS: dict[str, Any] = {"sqlite": sqlite_transport}

from tests.bus.amqp.broker import amqp_transport  # noqa: E402  (RabbitMQ + PostgreSQL)

TRANSPORTS["amqp"] = amqp_transport


#: bodies larger than this are claim-checked by the transports of the contract tests
CLAIM_THRESHOLD = 4096


def stored_claims(transport: Transport) -> list[str]:
    """The claim-checked bodies a transport stores now (files of the embedded store, rows of
    the broker transport's PostgreSQL)."""
    files = getattr(transport, "claim_files", None)
    return files() if files is not None else transport.store.claim_refs()  # type: ignore[attr-defined]


def doc(body: bytes = b"payload", **headers: Any) -> Envelope:
    headers.setdefault("format", "acme.Customer@1")
    return Envelope(body=body, **headers)


def bodies(deliveries: list[Any]) -> list[bytes]:
    return [d.envelope.body for d in deliveries]


def drain(transport: Transport, channel: str, consumer: str = "drain", wait: float = 0.0) -> list[Any]:
    out = []
    while True:
        got = transport.receive_wait(channel, consumer, max=100, wait=wait)
        if not got:
            return out
        transport.ack(got)
        out.extend(got)
