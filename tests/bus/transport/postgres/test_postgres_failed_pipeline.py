"""A transaction of the postgres transport that fails in its pipeline (an acknowledgement whose
lease was lost divides by zero on purpose, so that PostgreSQL runs none of the statements after
it) leaves the connection's prepared statements as the server has them: the next transactions
on that connection commit.

psycopg prepares a statement at its sixth execution on a connection (``prepare_threshold``)
and, in a pipeline, records it as prepared when it queues its ``Parse``; when a statement
before it in the same pipeline failed, the server skipped that ``Parse``, and every later
execution of the statement failed with ``prepared statement "_pg3_N" does not exist`` (the
``COMMIT``: every transaction of that daemon thread, until its connection broke)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from coupler.bus.testing.contract import doc
from coupler.bus.transport.amqp.store import PgStore, PgStoreError
from coupler.bus.transport.base import LeaseLostError
from coupler.bus.transport.postgres.transport import PostgresTransport
from tests.bus.transport.amqp.broker import PG_DSN, servers_or_fail, unique_names
from tests.bus.transport.contract.support import FakeClock

#: more acknowledgements in a row than psycopg's prepare_threshold (5) + 1: some statement
#: after the failing one reaches its preparing execution inside a failed pipeline
IN_A_ROW = 8


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def transport(clock: FakeClock) -> Iterator[PostgresTransport]:
    servers_or_fail()
    t = PostgresTransport(PG_DSN, schema=unique_names()["postgres_schema"], clock=clock, lease_seconds=30).open()
    try:
        yield t
    finally:
        t.destroy()


def test_transactions_after_acknowledgements_of_lost_leases_commit(transport: PostgresTransport,
                                                                   clock: FakeClock) -> None:
    t = transport
    t.send("q", [doc(b"first"), *(doc(b"%d" % i) for i in range(IN_A_ROW))])
    with t.transaction() as tx:  # one that commits: psycopg counts its statements from now on
        tx.send("out", doc(b"output of first"))
        tx.ack(t.receive("q", "c"))
    stale = t.receive("q", "c", max=IN_A_ROW)
    clock.advance(60)  # every lease ran out: another consumer takes the messages
    taken = t.receive("q", "other", max=IN_A_ROW)
    assert len(stale) == len(taken) == IN_A_ROW
    for d in stale:  # a handled message's output and acknowledgement: one pipeline that fails
        with pytest.raises(LeaseLostError), t.transaction() as tx:
            tx.send("out", doc(b"output of " + d.envelope.body))
            tx.ack(d)
    for d in taken:  # the same statements, on the same connection: they commit
        with t.transaction() as tx:
            tx.send("out", doc(b"output of " + d.envelope.body))
            tx.ack(d)
    assert t.stats("q")[0].depth == 0
    outputs = [d.envelope.body for d in t.receive("out", "c", max=2 * IN_A_ROW)]
    assert sorted(outputs) == sorted([b"output of first", *(b"output of %d" % i for i in range(IN_A_ROW))])


def test_claims_after_pipelines_that_failed_go_on(transport: PostgresTransport) -> None:
    """The shared store's pipelined transactions (a claim and its look in one round trip): one
    that fails is rolled back as the transport's are."""
    store: PgStore = transport.store
    with store.pipelined() as c:  # one that commits: psycopg counts its statements from now on
        c.execute("SELECT 1")
    for i in range(IN_A_ROW):
        with pytest.raises(PgStoreError, match="division by zero"), store.pipelined() as c:
            c.execute("SELECT 1 / 0")
            c.execute("SELECT %s::int", (i,))
    assert store.claim_fresh("consumer", ["k"], until=transport.clock() + 60) == "claimed"
    assert store.claim_fresh("consumer", ["k"], until=transport.clock() + 60) == "busy"
