"""Helpers of the race tests: several daemons of one multi-node site (one queue prefix, one
PostgreSQL schema) on the AMQP + PostgreSQL store or the PostgreSQL-only one, and the wait for
a backend of theirs blocked on another's row lock."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from coupler.bus.transport import storage
from coupler.bus.transport.amqp import transport as amqp
from coupler.bus.transport.amqp.transport import AmqpTransport
from coupler.bus.transport.postgres.transport import PostgresTransport
from tests.bus.transport.amqp.broker import AMQP_URL, PG_DSN, cleanup, servers_or_fail, unique_names

#: store -> (the class of its transactions, its table of idempotency keys)
STORES: dict[str, tuple[Any, str]] = {"amqp": (amqp._AmqpTx, "seen"), "postgres": (storage.StorageTransaction, "state")}


@contextmanager
def daemons(store: str, count: int = 2) -> Iterator[tuple[list[Any], str]]:
    """``count`` open transports of one site on ``store`` (``amqp`` or ``postgres``), as that
    many daemons have, and the site's PostgreSQL schema; closed and removed afterwards."""
    servers_or_fail()
    names = unique_names()
    if store == "amqp":
        transports: list[Any] = [AmqpTransport(AMQP_URL, postgres=PG_DSN, **names).open() for _ in range(count)]
    else:
        transports = [PostgresTransport(PG_DSN, schema=names["postgres_schema"]).open() for _ in range(count)]
    try:
        yield transports, names["postgres_schema"]
    finally:
        for t in reversed(transports):
            t.close()
        if store == "amqp":
            cleanup(transports[0])
        else:
            transports[0].destroy()


def waiting_on_a_lock(table: str) -> bool:
    """A backend waits for a lock in a statement on ``table`` (``schema.table``): another
    transaction's row, e.g. the same idempotency key."""
    with psycopg.connect(PG_DSN, autocommit=True) as c:
        row = c.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
                        (f"%{table}%",)).fetchone()
    return bool(row and row[0])
