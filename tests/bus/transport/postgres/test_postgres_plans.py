"""The postgres transport's receive and acknowledgement find their rows by index whatever plan
PostgreSQL caches for them.

psycopg prepares a statement run five times, and PostgreSQL may then keep one generic plan for
it, planned with the channel table's size at that moment. Planned while the channel was nearly
empty, a statement joining the channel table to the rows it leases or deletes chose a hash join
over the whole table: every receive and acknowledgement then read every message of the channel
(4 ms a statement at 20,000 messages, growing with the depth)."""

from __future__ import annotations

from urllib.parse import quote

from coupler.bus.transport.postgres.transport import PostgresTransport, table_of
from coupler.canonical import Envelope
from tests.bus.transport.amqp.broker import PG_DSN, servers_or_fail, unique_names


def _cycle(t: PostgresTransport, n: int) -> None:
    t.send("deep", [Envelope(format="test.Note@1", body=b"x") for _ in range(n)])
    got = t.receive("deep", "test", max=n)
    assert len(got) == n
    t.ack(got)


def test_sends_receives_and_acknowledgements_do_not_read_the_whole_channel_with_generic_plans() -> None:
    servers_or_fail()
    dsn = f"{PG_DSN}{'&' if '?' in PG_DSN else '?'}options={quote('-c plan_cache_mode=force_generic_plan')}"
    t = PostgresTransport(dsn, schema=unique_names()["postgres_schema"]).open()
    try:
        conn = t._conn()  # this thread's: every statement below runs on it
        conn.prepare_threshold = 0  # prepared (and planned, generically) at their first run
        for n in (1, 10):  # planned while the channel is (nearly) empty
            _cycle(t, n)
        for _ in range(50):
            t.send("deep", [Envelope(format="test.Note@1", body=b"x" * 1024) for _ in range(100)])
        plans: list[str] = []
        conn.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
        conn.execute("LOAD 'auto_explain'")
        conn.execute("SET auto_explain.log_min_duration = 0")
        conn.execute("SET auto_explain.log_level = notice")
        for n in (1, 10):
            _cycle(t, n)
        table = table_of("deep")
        sends = [p for p in plans if f"INSERT INTO {t.schema}.{table}" in p]  # and whether to announce
        leases = [p for p in plans if f"UPDATE {t.schema}.{table}" in p]
        settles = [p for p in plans if f"DELETE FROM {t.schema}.{table}" in p]
        assert len(sends) == 2 and len(leases) == 2 and len(settles) == 2, plans
        scans = [p for p in sends + leases + settles if f"Seq Scan on {table}" in p]
        assert not scans, scans[0]
    finally:
        t.destroy()
