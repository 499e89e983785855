"""The RabbitMQ and PostgreSQL of this machine for the broker transport tests.

Every transport made here gets a prefix and a PostgreSQL schema of its own (unique per test
run and test), and :func:`cleanup` deletes its queues, exchanges and tables afterwards.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pika.data
import pytest

AMQP_URL = os.environ.get("COUPLER_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")
PG_DSN = os.environ.get("COUPLER_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
RUN = uuid.uuid4().hex[:8]

STORE_TABLE = """
[store]
type = "amqp"

[store.amqp]
url = "{url}"
postgres = "{dsn}"
prefix = "{prefix}"
postgres_schema = "{postgres_schema}"
"""


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def servers_or_fail() -> None:
    """The tests run against this machine's real servers (``make test`` starts them when
    they are installed but stopped); a missing server fails the test, never skips it."""
    missing = [name for name, port in (("RabbitMQ", 5672), ("PostgreSQL", 5432)) if not _listening(port)]
    if missing:
        pytest.fail(f"{' and '.join(missing)} not running on 127.0.0.1 (make services starts them)")


def unique_names() -> dict[str, str]:
    tag = uuid.uuid4().hex[:8]
    return {"prefix": f"test.{RUN}.{tag}.", "postgres_schema": f"t_{RUN}_{tag}"}


def store_table(names: dict[str, str]) -> str:
    """The ``[store]`` table of a site.toml for the broker transport under ``names``."""
    return STORE_TABLE.format(url=AMQP_URL, dsn=PG_DSN, **names)


@contextmanager
def site_store() -> Iterator[str]:
    """A ``[store]`` table for a daemon's site.toml on the broker transport, with names of its
    own; what the daemons made under them is deleted afterwards."""
    servers_or_fail()
    names = unique_names()
    try:
        yield store_table(names)
    finally:
        destroy(names)


class Raw(bytes):
    """A field value of an AMQP table written as these bytes (its type octet first): what
    another application's client may write and pika cannot read (see :func:`write_raw_values`)."""


def write_raw_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make pika, as the other application, write :class:`Raw` field values as they are (its
    encoder writes only what it can decode)."""
    encode = pika.data.encode_value

    def encode_value(pieces: list[bytes], value: Any) -> int:
        if isinstance(value, Raw):
            pieces.append(bytes(value))
            return len(value)
        return encode(pieces, value)

    monkeypatch.setattr(pika.data, "encode_value", encode_value)


def amqp_transport(data_dir: Path, **options: Any) -> Any:
    """Contract-test factory: an open AmqpTransport with names of its own."""
    servers_or_fail()
    from coupler.bus.transport.amqp.transport import AmqpTransport

    options = {**unique_names(), **options}
    options.setdefault("reconnect_timeout", 30.0)
    return AmqpTransport(AMQP_URL, postgres=PG_DSN, **options).open()


def cleanup(transport: Any) -> None:
    """Delete the broker objects and the PostgreSQL schema of a test transport."""
    retry(transport.destroy)


def destroy(names: dict[str, str]) -> None:
    """Delete what a test made under ``names`` (prefix and schema)."""
    from coupler.bus.transport.amqp.transport import AmqpTransport

    retry(lambda: AmqpTransport(AMQP_URL, postgres=PG_DSN, **names).destroy())


def retry(fn: Any, timeout: float = 30.0) -> None:
    """Run ``fn`` again while the broker is away (another run's restart test may be running)."""
    from coupler.bus.transport.base import TransportError

    deadline = time.monotonic() + timeout
    while True:
        try:
            fn()
            return
        except TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


amqp_transport.cleanup = cleanup  # type: ignore[attr-defined]


def postgres_transport(data_dir: Path, **options: Any) -> Any:
    """Contract-test factory: an open PostgresTransport in a schema of its own."""
    servers_or_fail()
    from coupler.bus.transport.postgres.transport import PostgresTransport

    return PostgresTransport(PG_DSN, schema=unique_names()["postgres_schema"], **options).open()


postgres_transport.cleanup = lambda t: t.destroy()  # type: ignore[attr-defined]
