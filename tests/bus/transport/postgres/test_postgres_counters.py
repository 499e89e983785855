"""The postgres transport's channel counters: a process adds its counts to the shared
``counters`` table at most once a second, in one round trip to PostgreSQL whatever the
channels and counters, and a flush that fails adds nothing and leaves its counts for the next."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import psycopg
import pytest

from coupler.bus.transport.base import TransportError
from coupler.bus.transport.postgres.transport import PostgresTransport
from tests.bus.transport.amqp.broker import PG_DSN, servers_or_fail, unique_names

COUNTS = {(ch, c): n for n, (ch, c) in enumerate(
    ((ch, c) for ch in ("orders", "invoices", "audit.log", "x") for c in ("sent", "received", "acked")), start=1)}


@pytest.fixture
def transport() -> Iterator[PostgresTransport]:
    servers_or_fail()
    t = PostgresTransport(PG_DSN, schema=unique_names()["postgres_schema"]).open()
    try:
        yield t
    finally:
        t.destroy()


def _count(t: PostgresTransport, counts: dict[tuple[str, str], int]) -> None:
    with t.begin() as stx:  # what a transaction of sends, receipts and acknowledgements counted
        stx.count(counts)


def _round_trips(trace: str) -> int:
    """How often the client waited for the server: runs of frontend messages in a libpq trace."""
    sides = [line.split("\t", 1)[0] for line in trace.splitlines() if line[:2] in ("F\t", "B\t")]
    return sum(1 for i, side in enumerate(sides) if side == "F" and (i == 0 or sides[i - 1] == "B"))


def _expected(*rounds: dict[tuple[str, str], int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for counts in rounds:
        for (ch, c), n in counts.items():
            row = out.setdefault(ch, dict.fromkeys(("sent", "received", "acked", "failed", "dead", "invalid", "expired"), 0))
            row[c] += n
    return out


def test_a_flush_of_many_channels_and_counters_is_one_round_trip(transport: PostgresTransport) -> None:
    t = transport
    conn = t._conn()  # this thread's connection: the transaction and the flush run on it
    for _ in range(2):  # the counters' rows inserted, then added to
        with tempfile.TemporaryFile("w+") as trace:
            conn.pgconn.trace(trace.fileno())
            conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
            try:
                _count(t, COUNTS)  # flushed at once when the last flush is a second old
                t._write_counts(force=True)
            finally:
                conn.pgconn.untrace()
            trace.seek(0)
            text = trace.read()
        assert _round_trips(text) == 1, text  # 4 channels, 12 counts: not a statement each
    assert t.store.counters() == _expected(COUNTS, COUNTS)


def test_a_failed_flush_adds_nothing_and_the_next_adds_its_counts_once(transport: PostgresTransport) -> None:
    t = transport
    _count(t, {("orders", "sent"): 1})
    t._write_counts(force=True)  # the row of "orders" exists
    with psycopg.connect(PG_DSN, autocommit=True) as other:
        with other.transaction():  # another daemon holds the row of "orders" ...
            other.execute(f"SELECT 1 FROM {t.schema}.counters WHERE channel = 'orders' FOR UPDATE")
            t._conn().execute("SET lock_timeout = '100ms'")  # ... longer than this one waits
            _count(t, COUNTS)
            with pytest.raises(TransportError, match=f"schema {t.schema}|store.postgres.dsn"):
                t._write_counts(force=True)
            # nothing of the failed flush was added, not even the channels nobody held
            assert other.execute(f"SELECT channel, sent FROM {t.schema}.counters").fetchall() == [("orders", 1)]
    t._write_counts(force=True)  # the counts kept, added once
    t._write_counts(force=True)  # nothing left to add
    assert t.store.counters() == _expected({("orders", "sent"): 1}, COUNTS)


def test_a_send_that_committed_succeeds_though_the_counts_it_flushes_cannot_be_added(
        transport: PostgresTransport, caplog: pytest.LogCaptureFixture) -> None:
    from coupler.canonical import Envelope

    t = transport
    t.send("orders", Envelope(format="test.Note@1", body=b"first"))
    t._write_counts(force=True)  # the row of "orders" exists
    with psycopg.connect(PG_DSN, autocommit=True) as other:
        with other.transaction():  # another daemon holds the row of "orders"
            other.execute(f"SELECT 1 FROM {t.schema}.counters WHERE channel = 'orders' FOR UPDATE")
            t._conn().execute("SET lock_timeout = '100ms'")
            t._pending_since -= 1.0  # the last flush a second old: this send's commit flushes
            t.send("orders", Envelope(format="test.Note@1", body=b"second"))  # committed: no error
            assert t._pending  # the counts kept for the next flush
    got = t.receive("orders", "test", max=10)
    assert [d.envelope.body for d in got] == [b"first", b"second"]  # sent once each
    t.ack(got)
    assert t.stats("orders")[0].sent == 2 and t.stats("orders")[0].acked == 2
    [report] = [r for r in caplog.records if "counts" in r.getMessage()]
    assert report.exc_info is None and f"schema {t.schema}" in report.getMessage()


def test_counts_read_in_a_transaction_that_rolls_back_are_not_lost(transport: PostgresTransport) -> None:
    from coupler.canonical import Envelope

    t = transport
    t._write_counts(force=True)
    t.send("orders", Envelope(format="test.Note@1", body=b"x"))  # counted, not flushed yet (within the second)
    with pytest.raises(RuntimeError, match="the step failed"):
        with t.transaction():
            assert len(t.peek("orders")) == 1  # the transaction has begun
            assert t.stats("orders")[0].sent == 1
            raise RuntimeError("the step failed")  # the transaction rolled back
    assert t.stats("orders")[0].sent == 1
    t._write_counts(force=True)
    assert t.store.counters()["orders"]["sent"] == 1


def test_an_idle_process_adds_its_last_counts_for_the_others_to_read(transport: PostgresTransport) -> None:
    from coupler.canonical import Envelope
    from tests.bus.site_helpers import wait_for

    t = transport
    t._write_counts(force=True)
    t.send("orders", Envelope(format="test.Note@1", body=b"x"))  # within the second: kept
    [got] = t.receive("orders", "test")
    t.ack([got])
    with psycopg.connect(PG_DSN, autocommit=True) as other:  # another daemon, ctl, the metrics

        def shared() -> tuple[int, int] | None:
            t.receive_wait("orders", "test", wait=0.3)  # this process idle, waiting for messages
            row = other.execute(f"SELECT sent, acked FROM {t.schema}.counters WHERE channel = 'orders'").fetchone()
            return row if row == (1, 1) else None

        assert wait_for(shared, "the counts in the shared table", timeout=10) == (1, 1)


def test_counts_a_close_cannot_add_are_reported(transport: PostgresTransport, caplog: pytest.LogCaptureFixture) -> None:
    t = transport
    _count(t, {("orders", "sent"): 1})
    t._write_counts(force=True)  # the row of "orders" exists
    with psycopg.connect(PG_DSN, autocommit=True) as other:
        with other.transaction():  # another daemon holds the row of "orders" while this one stops
            other.execute(f"SELECT 1 FROM {t.schema}.counters WHERE channel = 'orders' FOR UPDATE")
            t._conn().execute("SET lock_timeout = '100ms'")
            _count(t, {("orders", "sent"): 2, ("invoices", "acked"): 1})
            t.close()  # closed all the same
    [report] = [r for r in caplog.records if "counts" in r.getMessage()]
    assert report.levelname == "WARNING" and report.exc_info is None
    assert f"schema {t.schema}: the last counts of invoices, orders not added" in report.getMessage()
    t.open()  # for the fixture's destroy
