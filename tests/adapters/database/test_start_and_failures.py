"""What the database adapter refuses at start (with the key to correct), what a failed start
leaves behind (nothing: no poll thread, no connection), and how a failing poll is reported
(one line naming the adapter's key, no traceback) while the adapter goes on polling."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from coupler.adapters.database import DatabaseAdapter
from coupler.bus.testing import EmbeddedBus
from coupler.canonical.errors import CouplerError
from tests.bus.site_helpers import wait_for

from .conftest import Database
from .test_inbound import make_orders, poll_adapter


def _postgres_sockets() -> int:
    """This process's open TCP connections to port 5432."""
    inodes = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        with open(table) as f:
            for line in list(f)[1:]:
                fields = line.split()
                if fields[9] in inodes and int(fields[2].rsplit(":", 1)[1], 16) == 5432 and fields[3] == "01":
                    count += 1
    return count


def test_a_watermark_column_whose_values_have_no_json_form_is_refused_at_start(bus: EmbeddedBus, db: Database) -> None:
    binary = "bytea" if db.kind == "postgresql" else "blob"
    db.sql(f"CREATE TABLE blobs (id integer PRIMARY KEY, tag {binary}, note text)")
    db.many(f"INSERT INTO blobs (id, tag, note) VALUES ({db.p}, {db.p}, {db.p})", [(i, bytes([i]), "x") for i in (1, 2)])
    with pytest.raises(CouplerError, match=r"adapters\[orders-in\]\.options\.poll\.watermark_column: column tag .* "
                                           r"cannot be a watermark"):
        poll_adapter(bus, db, table="blobs", watermark_column="tag")
    assert bus.published("orders") == []  # not published once a poll, again and again


def test_avro_bodies_of_several_rows_are_refused_at_start(bus: EmbeddedBus, db: Database) -> None:
    make_orders(db, 3)
    with pytest.raises(CouplerError, match=r"adapters\[orders-in\]\.options\.poll\.rows_per_message: .*one row each"):
        bus.adapter(DatabaseAdapter, "orders-in", db.options(poll={
            "table": "orders", "autopoll": False, "status_column": "processed_at", "rows_per_message": 10}),
            direction="inbound", channel="orders", format="acme.Customer@1;avro/binary")
    assert bus.invalid() == []  # the rows were not sent to the Invalid Message Channel one by one
    assert db.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(3,)]


def test_a_failed_start_leaves_no_poll_thread_running(bus: EmbeddedBus, sqlite: Database) -> None:
    make_orders(sqlite, 3)
    with pytest.raises(CouplerError, match=r"adapters\[orders-in\]\.options\.poll\.listen: .*needs PostgreSQL"):
        bus.adapter(DatabaseAdapter, "orders-in", sqlite.options(poll={
            "table": "orders", "status_column": "processed_at", "interval": 0.05, "listen": "orders"}),
            direction="inbound", channel="orders")
    # reported failed, the adapter must not poll (and publish) behind the site's back
    assert [t.name for t in threading.enumerate() if t.name == "poll:orders-in"] == []
    assert bus.published("orders") == []
    assert sqlite.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(3,)]


def test_a_failed_start_leaves_no_connection_open(bus: EmbeddedBus, postgres: Database) -> None:
    before = _postgres_sockets()
    for _ in range(3):  # the daemon keeps a failed adapter: its connections would stay open
        with pytest.raises(CouplerError, match="no table"):
            poll_adapter(bus, postgres, table="nothere", status_column="processed_at")
    assert _postgres_sockets() == before


def test_a_failing_poll_is_one_located_line_and_the_adapter_polls_on(
        bus: EmbeddedBus, postgres: Database, caplog: pytest.LogCaptureFixture) -> None:
    make_orders(postgres, 2)
    poll_adapter(bus, postgres, status_column="processed_at", autopoll=True, interval=0.05, max_interval=0.2)
    got: list[int] = []

    def drained(n: int) -> bool:
        got.extend(json.loads(m.body)["id"] for m in bus.published("orders"))
        return len(got) >= n

    wait_for(lambda: drained(2), "the first rows")
    postgres.sql("ALTER TABLE orders RENAME TO orders_away")  # a DBA's mistake
    wait_for(lambda: any("orders" in r.getMessage() and "failed" in r.getMessage() for r in caplog.records),
             "a failed poll")
    postgres.sql("ALTER TABLE orders_away RENAME TO orders")
    make_orders(postgres, 1, first=3)
    wait_for(lambda: drained(3), "the row added once the table is back")
    assert got == [1, 2, 3]
    failed = [r for r in caplog.records if "poll failed" in r.getMessage()]
    assert failed and all(not r.exc_info and "\n" not in r.getMessage() for r in failed)  # no traceback
    assert "adapters[orders-in].options.poll: poll of " in failed[0].getMessage()


def test_a_fetch_whose_poll_fails_answers_a_fault_naming_the_place(bus: EmbeddedBus, db: Database) -> None:
    from coupler.bus.api import CommandFault

    from .test_inbound import fetch

    make_orders(db, 3)
    db.sql(f"UPDATE orders SET weight = {db.p} WHERE id = 2", (float("inf"),))  # no JSON form: invalid
    a = poll_adapter(bus, db, status_column="processed_at")
    assert a.context is not None
    record_invalid = a.context.invalid_once

    def store_full(envelope, reason, key):  # type: ignore[no-untyped-def]
        raise OSError("disk full")

    a.context.invalid_once = store_full  # type: ignore[method-assign]
    with pytest.raises(CommandFault, match=r"adapters\[orders-in\]\.options\.poll: cannot record an invalid row "
                                           r"\(row 2 of .*\): disk full"):
        fetch(a)
    assert db.sql("SELECT count(*) FROM orders WHERE processed_at IS NULL") == [(3,)]  # rolled back
    db.sql("ALTER TABLE orders RENAME TO orders_away")
    with pytest.raises(CommandFault, match=r"adapters\[orders-in\]\.options\.poll: poll of .*orders failed"):
        fetch(a)
    db.sql("ALTER TABLE orders_away RENAME TO orders")
    a.context.invalid_once = record_invalid  # type: ignore[method-assign]
    assert fetch(a)["messages"] == "2"
    assert [json.loads(m.body)["id"] for m in bus.published("orders")] == [1, 3]
    assert len(bus.invalid()) == 1


def test_a_watermark_file_edited_wrong_is_a_fault_naming_the_file(bus: EmbeddedBus, db: Database) -> None:
    from coupler.bus.api import CommandFault

    from .test_inbound import fetch

    make_orders(db, 3)
    a = poll_adapter(bus, db, watermark_column="id")
    assert fetch(a)["messages"] == "3" and a.context is not None
    state = Path(a.context.data_dir) / "watermark.json"
    state.write_text('{"last": [2, }')  # a hand edit gone wrong
    with pytest.raises(CommandFault, match=r"watermark\.json: the watermark is not .*JSONDecodeError.*"
                                           r"\(correct it, or delete it"):
        fetch(a)
    state.write_text(json.dumps({"last": [2, 2]}))  # corrected: from row 3 on
    assert fetch(a)["messages"] == "1"


def test_the_listener_outlives_a_pool_with_no_connection_to_give(postgres: Database) -> None:
    import logging

    import sqlalchemy as sa

    from coupler.adapters.database.inbound import Listener

    engine = sa.create_engine(postgres.url)
    raw_connection, calls = engine.raw_connection, []

    def exhausted() -> object:  # the first time: every connection of the pool in use for 30 s
        calls.append(1)
        if len(calls) == 1:
            raise sa.exc.TimeoutError("QueuePool limit of size 2 overflow 2 reached, connection timed out")
        return raw_connection()

    engine.raw_connection = exhausted  # type: ignore[method-assign]
    woken: list[int] = []
    listener = Listener(engine, f"{postgres.schema}_wake", lambda: woken.append(1), logging.getLogger("test"))
    listener.start()
    try:
        wait_for(lambda: len(calls) >= 2 and woken, "the listener listening again")  # it wakes the poll once listening
        postgres.sql(f"NOTIFY {postgres.schema}_wake")
        wait_for(lambda: listener.notified >= 1, "the notification")
    finally:
        listener.stop()
        engine.dispose()
