"""The PostgreSQL connections of the postgres transport and of the shared store: an open that
fails closes what it opened (a library user who retries does not pile up server connections),
and a store that reconnects after each outage keeps only the connections it uses."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from coupler.bus.transport.amqp.store import PgStore
from coupler.bus.transport.base import TransportError
from coupler.bus.transport.postgres.transport import PostgresTransport
from tests.bus.site_helpers import wait_for
from tests.bus.transport.amqp.broker import PG_DSN, servers_or_fail, unique_names


@pytest.fixture
def admin() -> Iterator[psycopg.Connection]:
    servers_or_fail()
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        yield conn


def _backends(admin: psycopg.Connection, app: str) -> int:
    return admin.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (app,)).fetchone()[0]


def _setup_refused(admin: psycopg.Connection, schema: str, where: str) -> None:
    """Make the setup statements of a transport in ``schema`` fail, in the shared store's part
    (``store``) or the transport's own (``transport``): a type has the name of a table to create."""
    admin.execute(f"CREATE SCHEMA {schema}")
    admin.execute(f"CREATE DOMAIN {schema}.{'claims' if where == 'store' else 'dead_letters'} AS int")


@pytest.mark.parametrize("where", ["store", "transport"])
def test_an_open_that_fails_leaves_no_connection_open(admin: psycopg.Connection, where: str) -> None:
    schema = unique_names()["postgres_schema"]
    app = f"coupler-test-{uuid.uuid4().hex[:8]}"
    _setup_refused(admin, schema, where)
    try:
        tried = []  # kept (a caller's attribute, a reference cycle): closed all the same
        for _ in range(3):  # a library user trying again, each time with a new transport
            t = PostgresTransport(make_conninfo(PG_DSN, application_name=app), schema=schema)
            tried.append(t)
            with pytest.raises(TransportError, match=f"schema {schema}"):
                t.open()
        assert wait_for(lambda: _backends(admin, app) == 0, "the failed opens' connections closed", timeout=10)
        assert t.store._connections == []
    finally:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")


def test_an_open_that_failed_can_be_tried_again(admin: psycopg.Connection) -> None:
    schema = unique_names()["postgres_schema"]
    _setup_refused(admin, schema, "transport")
    t = PostgresTransport(PG_DSN, schema=schema)
    with pytest.raises(TransportError):
        t.open()
    admin.execute(f"DROP DOMAIN {schema}.dead_letters")  # put right
    try:
        t.open()
        assert t.stats() == []
    finally:
        t.destroy()


def test_a_store_that_reconnects_after_outages_keeps_only_its_live_connections(admin: psycopg.Connection) -> None:
    app, schema = f"coupler-test-{uuid.uuid4().hex[:8]}", unique_names()["postgres_schema"]
    store = PgStore(make_conninfo(PG_DSN, application_name=app), schema=schema).open()
    try:
        lock_held = store.hold_lock("metrics")
        assert lock_held
        for _ in range(20):  # the server restarted, or a proxy dropped the connections, 20 times
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", (app,))
            wait_for(lambda: _backends(admin, app) == 0, "the store's connections ended")
            with pytest.raises(TransportError):
                store.channel_names()  # finds its connection broken (and closes it) ...
            assert store.channel_names() == []  # ... and connects again
            assert not store.hold_lock("metrics")  # the lock lost with its connection ...
            assert store.hold_lock("metrics")  # ... and taken again on a new one
        assert len(store._connections) == 2  # this thread's and the lock's: no closed ones kept
        assert all(not c.closed for c in store._connections)
    finally:
        store.close()
        admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")  # not on a connection the test broke


def test_the_connections_of_threads_that_ended_are_closed(admin: psycopg.Connection) -> None:
    import threading

    app = f"coupler-test-{uuid.uuid4().hex[:8]}"
    t = PostgresTransport(make_conninfo(PG_DSN, application_name=app), schema=unique_names()["postgres_schema"]).open()
    try:
        for _ in range(10):  # ten `coupler ctl channels`: the control endpoint answers each on a new thread
            request = threading.Thread(target=t.stats)
            request.start()
            request.join()
        # this thread's and the last request's: not one more a request until PostgreSQL refuses them
        assert wait_for(lambda: _backends(admin, app) <= 2, "the connections of the ended threads closed", timeout=10)
        assert t.stats() == []  # this thread's connection still serves
    finally:
        t.destroy()


def test_a_store_whose_open_fails_leaves_no_connection_open(admin: psycopg.Connection) -> None:
    """The RabbitMQ transport opens its shared store first: a site whose schema cannot be set up."""
    schema = unique_names()["postgres_schema"]
    app = f"coupler-test-{uuid.uuid4().hex[:8]}"
    _setup_refused(admin, schema, "store")
    try:
        tried = []  # kept (a caller's attribute, a reference cycle): closed all the same
        for _ in range(3):
            tried.append(PgStore(make_conninfo(PG_DSN, application_name=app), schema=schema))
            with pytest.raises(TransportError, match=f"schema {schema}"):
                tried[-1].open()
        assert wait_for(lambda: _backends(admin, app) == 0, "the failed opens' connections closed", timeout=10)
    finally:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")


def test_a_store_that_cannot_connect_says_where_without_the_password() -> None:
    store = PgStore("postgresql://coupler:s3cret@127.0.0.1:1/orders", schema=unique_names()["postgres_schema"],
                    keys=("store.postgres.dsn", "store.postgres.postgres_schema"))
    with pytest.raises(TransportError) as err:
        store.open()
    text = str(err.value)
    assert text.startswith("store.postgres.dsn: cannot connect to PostgreSQL at 127.0.0.1:1/orders: ")
    assert "s3cret" not in text and "\n" not in text and "(check the DSN" in text
    assert err.value.__cause__ is None and err.value.__suppress_context__  # no driver traceback chained
    with pytest.raises(TransportError) as err:
        store.state_tx()  # the connection of step state
    assert str(err.value).startswith("store.postgres.dsn: cannot connect to PostgreSQL at 127.0.0.1:1/orders "
                                     "(for step state): ")
    assert "s3cret" not in str(err.value) and "\n" not in str(err.value)


def test_a_store_connection_whose_setup_fails_says_where_and_is_not_kept(
        admin: psycopg.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    from coupler.bus.transport.amqp import store as store_module

    app = f"coupler-test-{uuid.uuid4().hex[:8]}"
    connect, opened = psycopg.connect, []

    class Dropping:  # a connection the server drops right after it was made
        def __init__(self, conn: psycopg.Connection) -> None:
            self.conn, self.closed = conn, False

        def execute(self, statement: str, *args: object) -> object:
            if statement.startswith("SET synchronous_commit"):
                raise psycopg.OperationalError("server closed the connection unexpectedly")
            return self.conn.execute(statement, *args)

        def close(self) -> None:
            self.closed = True
            self.conn.close()

    def dropping(*args: object, **kwargs: object) -> Dropping:
        opened.append(Dropping(connect(*args, **kwargs)))  # type: ignore[arg-type]
        return opened[-1]

    dsn = make_conninfo(PG_DSN, application_name=app, password="s3cret")
    store = PgStore(dsn, schema=unique_names()["postgres_schema"])
    monkeypatch.setattr(store_module.psycopg, "connect", dropping)
    with pytest.raises(TransportError) as err:
        store.channel_names()
    monkeypatch.undo()
    text = str(err.value)
    host = psycopg.conninfo.conninfo_to_dict(PG_DSN)
    place = f"{host.get('host', 'localhost')}:{host.get('port', 5432)}/{host['dbname']}"
    assert text.startswith(f"store.amqp.postgres: cannot set up the connection to PostgreSQL at {place} "
                           "(SET synchronous_commit = off): server closed the connection unexpectedly")
    assert "s3cret" not in text and "\n" not in text and "tried again" in text
    assert [c.closed for c in opened] == [True]  # not kept, not leaked
    assert wait_for(lambda: _backends(admin, app) == 0, "the dropped connection closed", timeout=10)
    store.close()


def test_a_listener_that_loses_its_connection_says_so_once_and_when_it_is_back(
        admin: psycopg.Connection, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import logging
    import threading

    caplog.set_level(logging.INFO, logger="coupler.bus.transport.postgres.transport")
    app = f"coupler-test-{uuid.uuid4().hex[:8]}"
    t = PostgresTransport(make_conninfo(PG_DSN, application_name=app, password="s3cret"),
                          schema=unique_names()["postgres_schema"]).open()
    try:
        t.wait_for("orders", 10)  # a receiver waiting: the listener starts
        assert wait_for(t._listening.is_set, "the listener listening")
        connect, refused = psycopg.connect, [0]

        def refusing(*args: object, **kwargs: object) -> psycopg.Connection:
            if threading.current_thread().name.startswith("listen ") and refused[0] < 3:
                refused[0] += 1  # the server away for three more tries
                raise psycopg.OperationalError("connection refused\n\tIs the server running?")
            return connect(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(psycopg, "connect", refusing)
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s "
                      "AND query LIKE 'LISTEN%%'", (app,))
        assert wait_for(lambda: refused[0] == 3 and t._listening.is_set(), "the listener back", timeout=30)
    finally:
        monkeypatch.undo()
        t.destroy()
    mine = [r for r in caplog.records if r.name == "coupler.bus.transport.postgres.transport"]
    [warning] = [r for r in mine if r.levelno == logging.WARNING]  # one for the outage, not one per try
    text = warning.getMessage()
    host = psycopg.conninfo.conninfo_to_dict(PG_DSN)
    place = f"{host.get('host', 'localhost')}:{host.get('port', 5432)}/{host['dbname']}"
    assert text.startswith(f"store.postgres.dsn: the wake-up listener of schema {t.schema} cannot LISTEN ")
    assert f"on PostgreSQL at {place}: " in text and "listens again every second" in text
    assert "\n" not in text and "s3cret" not in text and warning.exc_info is None
    [back] = [r for r in mine if r.levelno == logging.INFO and "again" in r.getMessage()]
    assert back.getMessage() == f"store.postgres.dsn: listening for wake-ups on PostgreSQL at {place} again"
    assert mine.index(warning) < mine.index(back)


def test_opening_beside_a_running_daemon_waits_for_none_of_its_transactions(admin: psycopg.Connection) -> None:
    """A daemon starting while another of the site works: its tables exist, so its open runs no
    ``ALTER TABLE`` or ``CREATE INDEX`` (which lock a table even with nothing to do). Before,
    the open waited for every transaction holding a row lock on the journal, and a running
    daemon's transaction then waiting for a table the open had locked was a deadlock
    (``store.amqp.postgres: PostgreSQL: deadlock detected`` at a daemon's start). Nor does it
    wait for the schema's DDL lock, held by another daemon creating what is missing: the
    transport's own tables are looked for as the shared store's are (``ddl_applied``)."""
    import threading

    schema = unique_names()["postgres_schema"]
    first = PostgresTransport(PG_DSN, schema=schema).open()
    try:
        with psycopg.connect(PG_DSN) as running:  # a running daemon's transaction, left open
            running.execute(f"LOCK TABLE {schema}.journal, {schema}.seen, {schema}.queues, {schema}.dead_letters "
                            "IN ROW EXCLUSIVE MODE")
            running.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"coupler-ddl-{schema}",))
            second = PostgresTransport(PG_DSN, schema=schema)
            opened = threading.Event()
            failed: list[BaseException] = []

            def start() -> None:
                try:
                    second.open()
                    opened.set()
                except BaseException as exc:  # noqa: BLE001 - reported below
                    failed.append(exc)

            thread = threading.Thread(target=start, daemon=True)
            thread.start()
            try:
                assert wait_for(lambda: opened.is_set() or bool(failed), "the second transport opened", timeout=20)
                assert not failed and opened.is_set()
            finally:
                running.rollback()  # an open still waiting goes on
                thread.join(timeout=30)
            second.close()
    finally:
        first.close()
        admin.execute(f"DROP SCHEMA {schema} CASCADE")
