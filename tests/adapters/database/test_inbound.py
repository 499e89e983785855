"""Inbound: rows of a shared table polled into messages, progress in a status column or a
watermark, bad rows to the Invalid Message Channel, LISTEN/NOTIFY (PostgreSQL)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from coupler.adapters.database import DatabaseAdapter
from coupler.bus.api import Command, command_envelope
from coupler.bus.testing import EmbeddedBus
from coupler.canonical.tracecontext import TRACEPARENT, TraceContext
from tests.bus.site_helpers import wait_for

from .conftest import Database

ORDERS = {
    "postgresql": "CREATE TABLE orders (id serial PRIMARY KEY, customer text NOT NULL, amount numeric(10,2), "
                  "ordered date, weight double precision, processed_at timestamptz)",
    "sqlite": "CREATE TABLE orders (id integer PRIMARY KEY, customer text NOT NULL, amount numeric(10,2), "
              "ordered date, weight real, processed_at timestamp)",
}


def make_orders(db: Database, n: int, first: int = 1) -> None:
    if first == 1:
        db.sql(ORDERS[db.kind])
    db.many(f"INSERT INTO orders (id, customer, amount, ordered, weight) VALUES ({db.p}, {db.p}, {db.p}, {db.p}, {db.p})",
            [(i, f"customer {i}", f"{i}.50", f"2026-11-{1 + i % 28:02d}", i * 0.25) for i in range(first, first + n)])


def fetch(adapter: DatabaseAdapter, **query: str) -> dict[str, str]:
    cmd = Command("fetch", adapter.name, command_envelope("fetch", adapter.name), query=dict(query))
    return adapter.handle(cmd).details


def fail_publish_on(adapter: DatabaseAdapter, call: int, key: str | None = "id") -> list[list[Any]]:
    """The adapter's bus refuses its ``call``-th batch (``OSError: disk full``, as a store
    whose transaction fails); the batches offered, each as its rows' ``key`` (or the message
    ids with ``key`` None), in the list returned."""
    assert adapter.context is not None
    publish_many, calls = adapter.context.publish_many, []  # type: ignore[attr-defined]

    def failing(envelopes, channel=None, **kw):  # type: ignore[no-untyped-def]
        calls.append([json.loads(e.body)[key] if key else e.message_id for e in envelopes])
        if len(calls) == call:
            raise OSError("disk full")
        return publish_many(envelopes, channel, **kw)

    adapter.context.publish_many = failing  # type: ignore[attr-defined]
    return calls


def poll_adapter(bus: EmbeddedBus, db: Database, **poll: Any) -> DatabaseAdapter:
    poll = {"table": "orders", "autopoll": False, **poll}
    return bus.adapter(DatabaseAdapter, "orders-in", db.options(poll=poll), direction="inbound", channel="orders")


def test_status_column_rows_published_once_and_marked_in_the_same_transaction(bus: EmbeddedBus, db: Database) -> None:
    make_orders(db, 5)
    a = poll_adapter(bus, db, status_column="processed_at", batch_size=3)
    assert fetch(a)["messages"] == "3"  # one transaction of batch_size rows
    assert fetch(a)["messages"] == "2"
    assert fetch(a)["messages"] == "0"
    msgs = bus.published("orders")
    records = [json.loads(m.body) for m in msgs]
    assert [r["id"] for r in records] == [1, 2, 3, 4, 5]
    first = records[0]
    assert first["customer"] == "customer 1" and first["amount"] == "1.50"  # exact decimal digits
    assert first["ordered"] == "2026-11-02" and first["weight"] == 0.25
    assert str(msgs[0].format) == "db.orders@1;application/json"
    assert msgs[0].properties["db.key"] == "1" and TraceContext.parse(msgs[0].properties[TRACEPARENT])
    assert db.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(0,)]
    # a row added later is published by the next poll, with an id derived from its key
    make_orders(db, 1, first=6)
    fetch(a)
    (sixth,) = bus.published("orders")
    assert json.loads(sixth.body)["id"] == 6 and sixth.message_id not in {m.message_id for m in msgs}


def test_status_values_declared(bus: EmbeddedBus, db: Database) -> None:
    db.sql("CREATE TABLE jobs (job_no varchar(10) PRIMARY KEY, state varchar(10) NOT NULL)")
    db.many(f"INSERT INTO jobs VALUES ({db.p}, {db.p})", [("J1", "NEW"), ("J2", "HELD"), ("J3", "NEW")])
    a = poll_adapter(bus, db, table="jobs", status_column="state", status_pending="NEW", status_done="SENT")
    fetch(a)
    assert [json.loads(m.body)["job_no"] for m in bus.published("orders")] == ["J1", "J3"]
    assert db.sql("SELECT job_no, state FROM jobs ORDER BY job_no") == [("J1", "SENT"), ("J2", "HELD"), ("J3", "SENT")]


def test_watermark_kept_by_the_adapter_survives_a_restart(bus: EmbeddedBus, db: Database) -> None:
    make_orders(db, 4)
    a = poll_adapter(bus, db, watermark_column="id", batch_size=10)
    fetch(a)
    assert len(bus.published("orders")) == 4
    a.stop()
    make_orders(db, 2, first=5)
    b = poll_adapter(bus, db, watermark_column="id", batch_size=10)  # a new instance: the state file
    fetch(b)
    assert [json.loads(m.body)["id"] for m in bus.published("orders")] == [5, 6]
    assert db.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(6,)]  # nothing written


def test_watermark_on_a_timestamp_with_ties_resumes_after_the_last_key(bus: EmbeddedBus, db: Database) -> None:
    db.sql("CREATE TABLE events (id integer PRIMARY KEY, at timestamp NOT NULL)")
    db.many(f"INSERT INTO events VALUES ({db.p}, {db.p})",
            [(i, "2026-11-26 10:00:00" if i <= 4 else "2026-11-26 11:00:00") for i in range(1, 8)])
    a = poll_adapter(bus, db, table="events", watermark_column="at", batch_size=3)
    for _ in range(4):
        fetch(a)
    assert [json.loads(m.body)["id"] for m in bus.published("orders")] == [1, 2, 3, 4, 5, 6, 7]


def test_a_row_that_cannot_be_converted_goes_to_the_invalid_channel_and_the_others_go_on(
        bus: EmbeddedBus, db: Database) -> None:
    make_orders(db, 5)
    db.sql(f"UPDATE orders SET weight = {db.p} WHERE id = 3", (float("inf"),))
    a = poll_adapter(bus, db, status_column="processed_at")
    details = fetch(a)
    assert details["messages"] == "4" and details["invalid"] == "1"
    assert [json.loads(m.body)["id"] for m in bus.published("orders")] == [1, 2, 4, 5]
    (bad,) = bus.invalid()
    assert "row 3 of" in bad.reason and "weight" in bad.reason and "no JSON form" in bad.reason
    assert bad.envelope is not None and json.loads(bad.envelope.body)["id"] == "3"
    # the bad row is marked too: it is in the Invalid Message Channel, not read again forever
    assert db.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(0,)]


def test_rows_per_message_batches_rows_and_contains_a_bad_one(bus: EmbeddedBus, db: Database) -> None:
    make_orders(db, 7)
    db.sql(f"UPDATE orders SET weight = {db.p} WHERE id = 2", (float("inf"),))
    a = poll_adapter(bus, db, status_column="processed_at", rows_per_message=3)
    fetch(a)
    batches = [json.loads(m.body) for m in bus.published("orders")]
    assert [[r["id"] for r in b] for b in batches] == [[1, 3], [4, 5, 6], [7]]
    assert len(bus.invalid()) == 1


def test_the_bus_refusing_a_publish_rolls_the_marks_back(bus: EmbeddedBus, db: Database) -> None:
    make_orders(db, 3)
    a = poll_adapter(bus, db, status_column="processed_at")
    calls = fail_publish_on(a, 1, key=None)  # the store's transaction fails: none of the batch is durable
    with pytest.raises(Exception, match="disk full"):
        a.poller.poll()  # type: ignore[union-attr]
    assert db.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(3,)]
    fetch(a)
    msgs = bus.published("orders")
    assert [json.loads(m.body)["id"] for m in msgs] == [1, 2, 3]
    assert [m.message_id for m in msgs] == calls[0] == calls[1]  # read again: the same ids
    assert db.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(0,)]


def test_a_row_the_mapping_refuses_is_one_dead_letter_when_its_batch_is_read_again(
        bus: EmbeddedBus, db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    make_orders(db, 3)
    a = poll_adapter(bus, db, status_column="processed_at")
    assert a.context is not None

    def mapping(envelope):  # type: ignore[no-untyped-def]  # the site's mapping of the adapter
        if json.loads(envelope.body)["id"] == 2:
            raise ValueError("customer 2 has no account")
        return envelope

    monkeypatch.setattr(a.context, "_inbound", mapping)  # the embedded bus runs no site stages
    send, sends = bus.transport.send, []

    def store_fails_once(channel, envelopes, **kw):  # type: ignore[no-untyped-def]
        sends.append(channel)
        if len(sends) == 1:  # after the mapping refused row 2: the batch's transaction fails
            raise OSError("disk full")
        return send(channel, envelopes, **kw)

    monkeypatch.setattr(bus.transport, "send", store_fails_once)
    with pytest.raises(Exception, match="disk full"):
        a.poller.poll()  # type: ignore[union-attr]
    assert db.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(3,)]  # rolled back
    details = fetch(a)  # the same rows read again, row 2 refused again
    assert details["messages"] == "2" and details["invalid"] == "1"
    assert [json.loads(m.body)["id"] for m in bus.published("orders")] == [1, 3]
    (bad,) = bus.invalid()  # once
    assert "customer 2 has no account" in bad.reason and "cannot translate" in bad.reason
    assert db.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(0,)]


def test_a_row_the_mapping_refuses_counts_once_when_its_published_batch_is_read_again(
        bus: EmbeddedBus, db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bus took the batch (row 2 refused by the mapping, its dead letter made), then the
    batch's own transaction failed (marking its rows): read again, row 2 is refused again and
    is one dead letter, one failure and one invalid row in the adapter's totals."""
    make_orders(db, 3)
    a = poll_adapter(bus, db, status_column="processed_at")
    assert a.context is not None and a.poller is not None

    def mapping(envelope):  # type: ignore[no-untyped-def]  # the site's mapping of the adapter
        if json.loads(envelope.body)["id"] == 2:
            raise ValueError("customer 2 has no account")
        return envelope

    monkeypatch.setattr(a.context, "_inbound", mapping)  # the embedded bus runs no site stages
    mark, marks = a.poller._mark, []

    def mark_fails_once(*args):  # type: ignore[no-untyped-def]
        marks.append(args)
        if len(marks) == 1:
            raise OSError("connection lost")
        return mark(*args)

    monkeypatch.setattr(a.poller, "_mark", mark_fails_once)
    with pytest.raises(OSError, match="connection lost"):
        a.poller.poll()
    assert db.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(3,)]  # rolled back
    assert fetch(a)["invalid"] == "1"  # read again: row 2 is invalid in this batch too ...
    (bad,) = bus.invalid()  # ... and in the Invalid Message Channel once
    assert "customer 2 has no account" in bad.reason
    assert a.describe()["inbound"]["invalid"] == 1  # counted once
    assert db.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(0,)]


def test_the_poll_thread_reads_a_batch_while_the_one_before_is_committed(bus: EmbeddedBus, postgres: Database) -> None:
    make_orders(postgres, 7)
    a = poll_adapter(bus, postgres, status_column="processed_at", batch_size=3)
    assert a.context is not None and a.poller is not None
    publish_many, seen = a.context.publish_many, []  # type: ignore[attr-defined]

    def watching(envelopes, channel=None, **kw):  # type: ignore[no-untyped-def]
        # as a batch is published: the batches before it are committed, its own rows are not
        marked = {r[0] for r in postgres.sql("SELECT id FROM orders WHERE processed_at IS NOT NULL")}
        seen.append(([json.loads(e.body)["id"] for e in envelopes], marked))
        return publish_many(envelopes, channel, **kw)

    a.context.publish_many = watching  # type: ignore[attr-defined]
    result = a.poller.poll(batches=8)
    assert (result.listed, result.done, result.messages) == (7, 7, 7)
    assert seen == [([1, 2, 3], set()), ([4, 5, 6], {1, 2, 3}), ([7], {1, 2, 3, 4, 5, 6})]
    assert [json.loads(m.body)["id"] for m in bus.published("orders")] == [1, 2, 3, 4, 5, 6, 7]
    assert postgres.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(0,)]
    assert a.poller.poll(batches=8).done == 0


def test_a_batch_reads_the_keys_after_the_batch_before_and_a_row_passed_over_comes_next_poll(
        bus: EmbeddedBus, postgres: Database) -> None:
    make_orders(postgres, 7)
    a = poll_adapter(bus, postgres, status_column="processed_at", batch_size=3)
    assert a.context is not None and a.poller is not None
    other = postgres.connect()  # another reader holds row 2 while the first batch is read
    other.execute("SELECT id FROM orders WHERE id = 2 FOR UPDATE")
    publish_many, batches = a.context.publish_many, []  # type: ignore[attr-defined]

    def watching(envelopes, channel=None, **kw):  # type: ignore[no-untyped-def]
        batches.append([json.loads(e.body)["id"] for e in envelopes])
        if len(batches) == 1:
            other.rollback()  # ... and gives it back before the next batch is read
        return publish_many(envelopes, channel, **kw)

    a.context.publish_many = watching  # type: ignore[attr-defined]
    try:
        assert a.poller.poll(batches=8).done == 6
    finally:
        other.close()
    assert batches == [[1, 3, 4], [5, 6, 7]]  # not [2, 5, 6]: keys after 4 only
    assert postgres.sql("SELECT id FROM orders WHERE processed_at IS NULL") == [(2,)]
    assert a.poller.poll(batches=8).done == 1  # the next poll starts from the first key
    assert [json.loads(m.body)["id"] for m in bus.published("orders")] == [1, 3, 4, 5, 6, 7, 2]
    assert postgres.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(0,)]


def test_batches_of_a_table_keyed_by_two_columns(bus: EmbeddedBus, postgres: Database) -> None:
    postgres.sql("CREATE TABLE lines (region text, n integer, qty integer, processed_at timestamptz, "
                 "PRIMARY KEY (region, n))")
    rows = [(r, n, n * 10) for r in ("east", "north", "west") for n in (1, 2, 3)]
    postgres.many(f"INSERT INTO lines (region, n, qty) VALUES ({postgres.p}, {postgres.p}, {postgres.p})", rows)
    a = bus.adapter(DatabaseAdapter, "lines-in", postgres.options(poll={
        "table": "lines", "autopoll": False, "status_column": "processed_at", "batch_size": 1}),
        direction="inbound", channel="lines")
    assert a.poller is not None
    assert a.poller.poll(batches=8).done == 8 and a.poller.poll(batches=8).done == 1  # a row a batch
    got = [json.loads(m.body) for m in bus.published("lines")]
    assert [(r["region"], r["n"]) for r in got] == [(r, n) for r, n, _ in rows]  # each once, in key order
    assert postgres.sql("SELECT count(*) FROM lines WHERE processed_at IS NULL") == [(0,)]


def test_a_failing_batch_stops_those_read_after_it(bus: EmbeddedBus, postgres: Database) -> None:
    make_orders(postgres, 9)
    a = poll_adapter(bus, postgres, status_column="processed_at", batch_size=3)
    assert a.poller is not None
    calls = fail_publish_on(a, 2)
    with pytest.raises(OSError, match="disk full"):
        a.poller.poll(batches=8)
    assert calls == [[1, 2, 3], [4, 5, 6]]  # the batch read after the failing one was not published
    assert postgres.sql("SELECT id FROM orders WHERE processed_at IS NULL ORDER BY id") == [(i,) for i in range(4, 10)]
    assert a.poller.poll(batches=8).done == 6
    assert [json.loads(m.body)["id"] for m in bus.published("orders")] == list(range(1, 10))  # in key order


@pytest.mark.parametrize("failing", [1, 2], ids=["a-batch-before-another", "the-last-batch"])
def test_a_connection_not_given_back_after_its_batch_committed_is_reported_and_the_poll_goes_on(
        bus: EmbeddedBus, postgres: Database, caplog: pytest.LogCaptureFixture, failing: int) -> None:
    import threading

    import psycopg
    import sqlalchemy as sa

    make_orders(postgres, 5)
    given_back = 0

    def checkin(dbapi_connection: Any, record: Any) -> None:  # a pool taking a connection back
        nonlocal given_back
        if threading.current_thread().name == "db-commit":  # after a batch's commit
            given_back += 1
            if given_back == failing:
                raise psycopg.OperationalError("server closed the connection unexpectedly")

    sa.event.listen(sa.pool.Pool, "checkin", checkin)
    try:
        a = poll_adapter(bus, postgres, status_column="processed_at", batch_size=3, autopoll=True, interval=0.05,
                         max_interval=0.2)
        published: list[int] = []

        def drained(n: int) -> bool:
            published.extend(json.loads(m.body)["id"] for m in bus.published("orders"))
            return len(published) >= n

        wait_for(lambda: drained(5), "the first five rows")
        make_orders(postgres, 2, first=6)  # the adapter goes on polling
        wait_for(lambda: drained(7), "the rows added after the failure")
    finally:
        sa.event.remove(sa.pool.Pool, "checkin", checkin)
    assert given_back >= 2
    assert published == [1, 2, 3, 4, 5, 6, 7]  # the committed batch was not published again
    # a batch's messages are stored before its rows' marks commit (on the db-commit thread)
    wait_for(lambda: postgres.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(0,)],
             "every row marked processed")
    [report] = [r for r in caplog.records if "server closed the connection" in r.getMessage()]
    assert report.exc_info is None and "\n" not in report.getMessage()  # one line, no traceback
    assert "adapters[orders-in].options.poll" in report.getMessage()
    assert "committed" in report.getMessage()  # the batch is done: not a failed poll
    # a batch's rows are counted by the poll thread once its commit (on db-commit) has returned
    wait_for(lambda: a.describe()["inbound"]["rows"] >= 7, "the rows of every batch counted")
    assert (a.describe()["inbound"]["rows"], a.describe()["inbound"]["messages"]) == (7, 7)  # counted once


def test_a_fetch_whose_connection_is_not_given_back_answers_with_the_rows_it_committed(
        bus: EmbeddedBus, db: Database, caplog: pytest.LogCaptureFixture) -> None:
    import sqlalchemy as sa

    make_orders(db, 3)
    a = poll_adapter(bus, db, status_column="processed_at")
    armed = [True]

    def checkin(dbapi_connection: Any, record: Any) -> None:
        if armed.pop() if armed else False:  # the first connection given back after the fetch began
            raise RuntimeError("the pool is closed")

    assert a.engine is not None
    sa.event.listen(a.engine.pool, "checkin", checkin)
    assert fetch(a)["done"] == "3"  # committed: the command answers so
    assert fetch(a)["done"] == "0"  # and the rows are not read again
    assert [json.loads(m.body)["id"] for m in bus.published("orders")] == [1, 2, 3]
    [report] = [r for r in caplog.records if "the pool is closed" in r.getMessage()]
    assert report.exc_info is None and report.getMessage().startswith("adapters[orders-in].options.poll: 3 rows of ")


def test_one_by_one_when_the_context_cannot_publish_a_batch(bus: EmbeddedBus, db: Database) -> None:
    make_orders(db, 3)
    a = poll_adapter(bus, db, status_column="processed_at")
    a.context.publish_many = None  # type: ignore[union-attr]  # a context of an older bus
    fetch(a)
    assert [json.loads(m.body)["id"] for m in bus.published("orders")] == [1, 2, 3]


def listening_adapter(bus: EmbeddedBus, postgres: Database, channel: str) -> tuple[DatabaseAdapter, list[Any]]:
    """An inbound adapter on ``orders`` polling every 300 s and listening on ``channel``, once
    it has published the first row and its connection LISTENs (a NOTIFY before that is lost);
    the rows published so far."""
    a = bus.adapter(DatabaseAdapter, "orders-in", postgres.options(poll={
        "table": "orders", "status_column": "processed_at", "interval": 300, "max_interval": 300,
        "listen": channel}), direction="inbound", channel="orders")
    got: list[Any] = []
    wait_for(lambda: got.extend(bus.published("orders")) or len(got) >= 1, "the first row")
    wait_for(lambda: postgres.sql("SELECT count(*) FROM pg_stat_activity WHERE query = %s",
                                  (f'LISTEN "{channel}"',)) == [(1,)], "the adapter listening")
    return a, got


def test_listen_notify_wakes_the_poll(bus: EmbeddedBus, postgres: Database) -> None:
    make_orders(postgres, 1)
    channel = f"{postgres.schema}_orders"
    # a NOTIFY before the adapter's LISTEN is lost (the row still comes, from the poll LISTEN
    # wakes): wait until its connection listens, not for a poll
    a, got = listening_adapter(bus, postgres, channel)
    make_orders(postgres, 1, first=2)
    postgres.sql(f"NOTIFY {channel}")  # the interval (300 s) is far beyond the wait below
    wait_for(lambda: got.extend(bus.published("orders")) or len(got) >= 2, "the notified row", timeout=60)
    assert [json.loads(m.body)["id"] for m in got] == [1, 2]
    assert a.health()["notifications"] >= 1


def test_the_guides_notify_trigger_wakes_the_poll(bus: EmbeddedBus, postgres: Database) -> None:
    """docs/adapters/database.md's trigger, as written (in this test's schema, on a channel of
    its own): an INSERT wakes the poll at once (its interval is 300 s)."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[3] / "docs" / "adapters" / "database.md").read_text()
    [sql] = re.findall(r"```sql\n(.*?)```", page, re.S)
    channel = f"{postgres.schema}_new"
    make_orders(postgres, 1)
    postgres.sql(sql.replace("sales.orders", f"{postgres.schema}.orders").replace("'orders_new'", f"'{channel}'"))
    a, got = listening_adapter(bus, postgres, channel)
    make_orders(postgres, 2, first=2)  # the trigger notifies at each INSERT statement
    wait_for(lambda: got.extend(bus.published("orders")) or len(got) >= 3, "the rows the trigger announced", timeout=60)
    assert [json.loads(m.body)["id"] for m in got] == [1, 2, 3]
    assert a.health()["notifications"] >= 1


def test_options_are_checked_at_start(bus: EmbeddedBus, db: Database) -> None:
    from coupler.bus.api import OptionsError
    from coupler.canonical.errors import CouplerError

    make_orders(db, 1)
    with pytest.raises(OptionsError, match="exactly one of status_column"):
        poll_adapter(bus, db)
    with pytest.raises(CouplerError, match="no column 'done_at'"):
        poll_adapter(bus, db, status_column="done_at")
    with pytest.raises(CouplerError, match="no table"):
        poll_adapter(bus, db, table="nothere", status_column="processed_at")


def test_message_ids_are_rfc4122_uuid5_of_the_adapter_table_and_key() -> None:
    from coupler.adapters.database.inbound import _NAMESPACE
    from coupler.canonical.envelope import name_id
    from coupler.canonical.tracecontext import header_for_key

    for name in ("orders-in|public.orders|1", "a|s.t|1|x..9|y", "ü|ß|€"):
        assert name_id(_NAMESPACE.bytes, name) == str(uuid.uuid5(_NAMESPACE, name))  # the same ids as before, across upgrades
        assert header_for_key(name) == TraceContext.for_key(name).header  # and the same traces


@pytest.mark.parametrize("batch", ["committed", "rolled-back"])
def test_a_connection_whose_check_in_raises_gives_its_slot_back_to_the_pool(
        bus: EmbeddedBus, db: Database, caplog: pytest.LogCaptureFixture, batch: str) -> None:
    import sqlalchemy as sa

    make_orders(db, 3)
    a = bus.adapter(DatabaseAdapter, "orders-in", db.options(pool_size=1, poll={
        "table": "orders", "autopoll": False, "status_column": "processed_at"}), direction="inbound", channel="orders")
    assert a.engine is not None and a.poller is not None and a.context is not None
    pool = a.engine.pool
    armed = [True]

    def checkin(dbapi_connection: Any, record: Any) -> None:
        if armed.pop() if armed else False:
            raise RuntimeError("the pool is closed")

    if batch == "rolled-back":
        publish_many = a.context.publish_many  # type: ignore[attr-defined]

        def failing(envelopes, channel=None, **kw):  # type: ignore[no-untyped-def]
            a.context.publish_many = publish_many  # type: ignore[union-attr]  # once
            raise OSError("disk full")

        a.context.publish_many = failing  # type: ignore[attr-defined]
    sa.event.listen(pool, "checkin", checkin)
    if batch == "rolled-back":
        with pytest.raises(OSError, match="disk full"):
            a.poller.poll()
    assert fetch(a)["done"] == "3"
    assert not armed  # the check-in did raise
    assert a.engine.pool.checkedout() == 0  # its slot is back: not one connection fewer until a restart
    held = [a.engine.connect() for _ in range(2)]  # pool_size 1 + overflow 1: both open at once
    try:
        assert all(c.execute(sa.text("SELECT 1")).scalar() == 1 for c in held)
    finally:
        for c in held:
            c.close()
    assert [json.loads(m.body)["id"] for m in bus.published("orders")] == [1, 2, 3]
    if batch == "committed":
        [report] = [r for r in caplog.records if "the pool is closed" in r.getMessage()]
        assert "the pool was renewed, it opens new connections when next needed" in report.getMessage()
        assert "\n" not in report.getMessage() and report.exc_info is None


@pytest.mark.parametrize("progress", ["status_column", "watermark_column"])
def test_a_bad_row_of_a_batch_read_again_after_a_rollback_is_in_the_invalid_channel_once(
        bus: EmbeddedBus, db: Database, progress: str) -> None:
    make_orders(db, 4)
    db.sql(f"UPDATE orders SET weight = {db.p} WHERE id = 2", (float("inf"),))
    column = {"status_column": "processed_at"} if progress == "status_column" else {"watermark_column": "id"}
    a = poll_adapter(bus, db, **column)
    assert a.context is not None and a.poller is not None
    publish_many = a.context.publish_many  # type: ignore[attr-defined]

    def failing(envelopes, channel=None, **kw):  # type: ignore[no-untyped-def]
        a.context.publish_many = publish_many  # type: ignore[union-attr]  # once
        raise OSError("disk full")  # after the bad row went to the Invalid Message Channel

    a.context.publish_many = failing  # type: ignore[attr-defined]
    with pytest.raises(OSError, match="disk full"):
        a.poller.poll()  # rolled back (or the watermark not kept): the batch is read again
    assert len(bus.invalid()) == 1
    details = fetch(a)
    assert (details["messages"], details["invalid"]) == ("3", "1")  # the row is still invalid ...
    (bad,) = bus.invalid()  # ... and in the Invalid Message Channel once
    assert "row 2 of" in bad.reason and bad.envelope is not None and json.loads(bad.envelope.body)["id"] == "2"
    assert [json.loads(m.body)["id"] for m in bus.published("orders")] == [1, 3, 4]  # no good row lost
    assert fetch(a)["done"] == "0"  # and the bad row is not read again forever
    assert a.describe()["inbound"]["invalid"] == 1


def test_a_bad_row_of_a_pipelined_batch_that_failed_is_in_the_invalid_channel_once(
        bus: EmbeddedBus, postgres: Database) -> None:
    make_orders(postgres, 9)
    postgres.sql("UPDATE orders SET weight = 'NaN' WHERE id = 5")
    a = poll_adapter(bus, postgres, status_column="processed_at", batch_size=3)
    assert a.poller is not None
    fail_publish_on(a, 2)  # the second batch, whose row 5 is in the Invalid Message Channel
    with pytest.raises(OSError, match="disk full"):
        a.poller.poll(batches=8)
    assert a.poller.poll(batches=8).done == 6
    assert [json.loads(m.body)["id"] for m in bus.published("orders")] == [1, 2, 3, 4, 6, 7, 8, 9]
    assert [json.loads(d.envelope.body)["id"] for d in bus.invalid() if d.envelope is not None] == ["5"]
    assert postgres.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(0,)]


def test_a_listen_whose_connection_fails_says_so_once_and_when_it_is_back(
        bus: EmbeddedBus, postgres: Database, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    import psycopg

    from tests.bus.transport.amqp.broker import PG_DSN

    caplog.set_level(logging.INFO, logger="coupler.adapter.orders-in")
    make_orders(postgres, 1)
    channel = f"{postgres.schema}_orders"
    a = bus.adapter(DatabaseAdapter, "orders-in", postgres.options(poll={
        "table": "orders", "status_column": "processed_at", "interval": 300, "max_interval": 300,
        "listen": channel}), direction="inbound", channel="orders")
    assert a.engine is not None and a.listener is not None
    wait_for(lambda: len(bus.published("orders")) == 1, "the first row")
    raw_connection, refused = a.engine.raw_connection, [0]

    def refusing():  # type: ignore[no-untyped-def]
        if refused[0] < 3:  # the database away for three more tries
            refused[0] += 1
            raise psycopg.OperationalError("connection refused\n\tIs the server running?")
        return raw_connection()

    with psycopg.connect(PG_DSN, autocommit=True) as admin:  # the listening connection ends
        def listening() -> int:
            return int(admin.execute("SELECT count(*) FROM pg_stat_activity WHERE query = %s",
                                     (f'LISTEN "{channel}"',)).fetchone()[0])

        wait_for(listening, "the adapter listening")
        a.engine.raw_connection = refusing  # type: ignore[method-assign]
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = %s",
                      (f'LISTEN "{channel}"',))
    back = f"adapters[orders-in].options.poll.listen: listening on {channel} again"
    wait_for(lambda: refused[0] == 3 and any(r.getMessage() == back for r in caplog.records), "LISTEN back",
             timeout=30)
    mine = [r for r in caplog.records if r.name == "coupler.adapter.orders-in" and "LISTEN" in r.getMessage()]
    [warning] = [r for r in mine if r.levelno == logging.WARNING]  # one for the outage, not one per try
    assert warning.getMessage().startswith(f"adapters[orders-in].options.poll.listen: LISTEN {channel} failed: ")
    assert "\n" not in warning.getMessage() and warning.exc_info is None
    make_orders(postgres, 1, first=2)
    postgres.sql(f"NOTIFY {channel}")  # and it wakes the poll again (the interval is 300 s)
    wait_for(lambda: postgres.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(0,)],
             "the notified row", timeout=60)
