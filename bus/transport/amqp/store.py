"""Shared state of a multi-node site in PostgreSQL.

When several daemons (on several hosts) run one site on a broker, the state they must agree
on cannot live in one host's SQLite file. :class:`PgStore` keeps it in PostgreSQL, in the
tables the embedded store has for the same purpose (see ``coupler.bus.transport.sqlite.transport``):

* ``channels`` / ``subscriptions`` — channel configurations and durable subscriptions,
* ``journal`` — the Message Store (every state change of every message),
* ``counters`` — per-channel statistics,
* ``seen`` — the Idempotent Receiver's keys,
* ``identities`` — the Application Repository (:class:`PgIdentityRepository`),
* ``files`` — the seen-state of polling adapters
  (:class:`~coupler.bus.transport.amqp.file_state.PgFileState`),
* the sequence ``dead_letter_ids`` — site-wide ids of dead letters,
* ``claims`` / ``claim_chunks`` / ``claim_refs`` — claim-checked bodies (Claim Check), in
  chunks, with the number of message copies in each queue that refer to them,
* ``state`` — the keyed state of stateful steps (aggregation groups, resequencer buffers,
  process instances; :class:`StateTx`),
* ``returns`` — how often the transport itself returned a message to its queue without an
  attempt (a browse, a selector's skip, a consumer's unused prefetch): subtracted from the
  broker's ``x-delivery-count`` so that attempts are counted exactly.

All tables live in one PostgreSQL schema (``coupler`` by default), so that several sites (or
test runs) can share a database. Each thread gets its own connection (autocommit; explicit
transactions where several statements must agree).

``synchronous_commit`` applies to journal and counter writes, which are the bulk of the
traffic: ``off`` (the default) lets PostgreSQL acknowledge them before its WAL is flushed —
a PostgreSQL crash may lose the last fraction of a second of journal entries, never a
message (messages live in the broker). Idempotency keys, configurations and identities are
always committed with ``synchronous_commit = on``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from coupler.bus.model.identities import Identity, IdentityError, IdentityRepository, Registration
from coupler.bus.transport.base import (
    ChannelConfig,
    ClaimOutcome,
    JournalEntry,
    JournalQuery,
    TransportError,
)
from coupler.bus.transport.ddl import file_state, metadata, postgres
from coupler.bus.transport.policy import COUNTERS, IDENTITY_REGISTERED
from coupler.bus.transport.sql_filters import (
    journal_entries,
    journal_query,
    state_delete,
    state_select,
    state_upsert,
)

try:  # psycopg is a dependency of the broker transport only
    import psycopg
except ImportError:  # pragma: no cover - reported when a PgStore is opened
    psycopg = None  # type: ignore[assignment]

log = logging.getLogger(__name__)
#: the keyed-state scope of the outputs of transactions that changed step state (see StateTx)
OUTBOX = "outbox"
#: an outbox entry of a process that still runs is published by another only when it is this
#: old (its owner failed to publish it and has not yet published it again itself)
LIVE_OWNER_GRACE = 60.0
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

#: what only the shared state has, beside the metadata tables of :mod:`coupler.bus.transport.ddl`
_OWN_DDL = """
CREATE SEQUENCE IF NOT EXISTS {s}.dead_letter_ids;
CREATE TABLE IF NOT EXISTS {s}.claims (
    ref TEXT PRIMARY KEY,
    size BIGINT NOT NULL,
    created DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.claim_chunks (
    ref TEXT NOT NULL,
    seq INTEGER NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (ref, seq)
);
CREATE TABLE IF NOT EXISTS {s}.claim_refs (
    ref TEXT NOT NULL,
    queue TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (ref, queue)
);
CREATE TABLE IF NOT EXISTS {s}.returns (
    queue TEXT NOT NULL,
    message_id TEXT NOT NULL,
    n INTEGER NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (queue, message_id)
);
CREATE TABLE IF NOT EXISTS {s}.broker_objects (
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    PRIMARY KEY (name, kind)
)
"""


def _ddl(schema: str) -> list[str]:
    """Every statement creating the tables of a site's shared state in ``schema``."""
    dialect = postgres(schema)
    own = [st for st in _OWN_DDL.format(s=schema).split(";") if st.strip()]
    return [f"CREATE SCHEMA IF NOT EXISTS {schema}", *metadata(dialect), *file_state(dialect, shared=True), *own]


class PgStoreError(TransportError):
    """PostgreSQL cannot be reached or refused a statement."""


def dsn_place(dsn: str) -> str:
    """Where ``dsn`` (a URL or ``key=value`` words) leads, as errors name it:
    ``host:port/database``, never its user or password (the defaults libpq applies filled in)."""
    import os

    try:
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(dsn)
    except Exception:  # noqa: BLE001 - not a DSN: connecting says why
        return "an unreadable DSN"
    host = str(info.get("host") or info.get("hostaddr") or os.environ.get("PGHOST") or "localhost")
    port = str(info.get("port") or os.environ.get("PGPORT") or "5432")
    database = str(info.get("dbname") or os.environ.get("PGDATABASE") or info.get("user") or "the user's database")
    return f"{host}:{port}/{database}"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


#: what a connection of :meth:`PgStore.state_tx` is for, as an error names it
_USES = {"state": "step state", "seen": "idempotency keys"}


class PgStore:
    """The shared state of a site in schema ``schema`` of the PostgreSQL database ``dsn``."""

    def __init__(
        self, dsn: str, *, schema: str = "coupler", synchronous_commit: bool = False,
        keys: tuple[str, str] = ("store.amqp.postgres", "store.amqp.postgres_schema"),
    ):
        #: the site's keys of the DSN and the schema (named in errors)
        self.keys = keys
        if psycopg is None:  # pragma: no cover
            raise PgStoreError(
                "the PostgreSQL store needs psycopg", hint="pip install 'psycopg[binary]'"
            )
        if not _SCHEMA_NAME.match(schema):
            raise PgStoreError(
                f"bad PostgreSQL schema name {schema!r}",
                where=keys[1],
                hint="lower-case letters, digits and _, starting with a letter",
            )
        self.dsn = dsn
        self.schema = schema
        self.synchronous_commit = synchronous_commit
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[Any] = []
        #: the thread of each thread's own connection (by ``id``): closed once the thread ended
        self._owners: dict[int, threading.Thread] = {}
        self._journal_writer: _JournalWriter | None = None
        #: connections holding session advisory locks (:meth:`hold_lock`)
        self._locks: dict[str, Any] = {}
        self._held: set[str] = set()
        #: names this process's outbox entries (:meth:`StateTx.outbox`); it holds the lock
        #: ``owner-<owner>`` from its first entry on, so that another daemon tells its entries
        #: from a dead process's (should that connection break, another daemon may publish a
        #: copy of an entry: the same message ids, dropped by an Idempotent Receiver)
        self.owner = uuid.uuid4().hex[:16]
        self._owner_held = False

    def __repr__(self) -> str:
        return f"PgStore(schema={self.schema!r})"

    # -- connections -----------------------------------------------------------------------

    def open(self) -> PgStore:
        """Create what is missing of the schema; a failure closes this thread's connection (a
        caller trying again, with a new store each time, does not pile up connections)."""
        try:
            self._create()
        except BaseException:
            conn = getattr(self._local, "conn", None)
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()
            raise
        return self

    def _create(self) -> None:
        self.ensure_ddl("store", _ddl(self.schema))
        with self.conn() as c:
            # a schema written before the file adapters' delivered ids moved to ``seen`` (looked
            # for at every start: a daemon of before may still have written it)
            if c.execute("SELECT to_regclass(%s)", (f"{self.schema}.files_delivered",), prepare=False).fetchone()[0]:
                c.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"coupler-ddl-{self.schema}",), prepare=False)
                if c.execute("SELECT to_regclass(%s)", (f"{self.schema}.files_delivered",),
                             prepare=False).fetchone()[0]:
                    c.execute(
                        f"INSERT INTO {self.schema}.seen (consumer, key, seen_at) "
                        f"SELECT 'files:' || adapter, 'id:' || message_id, at FROM {self.schema}.files_delivered "
                        "ON CONFLICT DO NOTHING", prepare=False,
                    )
                    c.execute(f"DROP TABLE {self.schema}.files_delivered", prepare=False)

    def ensure_ddl(self, name: str, statements: list[str]) -> None:
        """Run ``statements`` (``CREATE ... IF NOT EXISTS``, ``ALTER ... IF NOT EXISTS``) in one
        transaction under the schema's DDL advisory lock (two daemons starting at once would race
        on them), unless this very list was applied to the schema before (``ddl_applied`` holds
        its digest). So a daemon starting beside running ones takes no table lock: ``ALTER TABLE``
        and ``CREATE INDEX`` lock their table even when there is nothing to do, and one waiting
        for a running daemon's transaction that waits for a table it already locked is a
        deadlock. PostgreSQL ending one (a schema being created while an older daemon works) is
        tried again, up to four times. Not prepared: setup statements are no hot path, and
        counted among a connection's statements they would shift which ones psycopg prepares."""
        marker = f"{name}:" + hashlib.sha256("\x1f".join(statements).encode()).hexdigest()
        applied = f"{self.schema}.ddl_applied"
        for attempt in range(5):
            try:
                with self.conn() as c:
                    if c.execute("SELECT to_regclass(%s)", (applied,), prepare=False).fetchone()[0] and c.execute(
                            f"SELECT 1 FROM {applied} WHERE digest = %s", (marker,), prepare=False).fetchone():
                        return
                    c.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"coupler-ddl-{self.schema}",),
                              prepare=False)
                    for statement in statements:
                        c.execute(statement, prepare=False)
                    c.execute(f"CREATE TABLE IF NOT EXISTS {applied} (digest TEXT PRIMARY KEY, "
                              "applied_at DOUBLE PRECISION NOT NULL)", prepare=False)
                    c.execute(f"INSERT INTO {applied} (digest, applied_at) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                              (marker, time.time()), prepare=False)
                return
            except PgStoreError as exc:
                if attempt == 4 or not isinstance(exc.__cause__, psycopg.errors.DeadlockDetected):
                    raise
                log.info("schema %s: creating its tables met a deadlock with another process; trying again",
                         self.schema)

    def hold_lock(self, name: str) -> bool:
        """Whether this process holds the site-wide lock ``name`` (a PostgreSQL session
        advisory lock on a connection of its own, taken when free): one daemon of the site
        holds it at a time; when it exits, the next caller takes it over."""
        with self._lock:
            conn = self._locks.get(name)
            try:
                if conn is None or conn.closed:
                    self._held.discard(name)
                    conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=10)
                    self._locks[name] = conn
                    for ended in self._keep(conn):
                        with contextlib.suppress(Exception):
                            ended.close()
                row = conn.execute(
                    "SELECT pg_try_advisory_lock(hashtext(%s))", (self.lock_text(name),)
                ).fetchone()
            except psycopg.Error:
                return False
            if row and row[0]:
                # held for the life of the connection; a session lock counts acquisitions:
                # release the extra one taken by asking again
                if name in self._held:
                    conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (self.lock_text(name),))
                self._held.add(name)
                return True
            return False

    def close(self) -> None:
        with self._lock:
            for conn in self._locks.values():  # released now, not when the server sees the connection go
                with contextlib.suppress(Exception):
                    conn.execute("SELECT pg_advisory_unlock_all()")
            self._locks.clear()
            self._held.clear()
            self._owner_held = False
        with self._lock:
            writer, self._journal_writer = self._journal_writer, None
        if writer is not None:
            writer.stop()
        with self._lock:
            conns, self._connections = self._connections, []
            self._owners.clear()
        for conn in conns:
            with contextlib.suppress(Exception):
                conn.close()
        self._local = threading.local()

    def _connection(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is not None and not conn.closed:
            return conn
        try:
            conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise PgStoreError(
                f"cannot connect to PostgreSQL at {dsn_place(self.dsn)}: {_one_line(exc)}",
                where=self.keys[0],
                hint="check the DSN, the password and that the server runs and accepts connections from this host",
            ) from None
        if not self.synchronous_commit:
            try:
                conn.execute("SET synchronous_commit = off")
            except psycopg.Error as exc:  # the connection dropped at once, a server that refuses it
                with contextlib.suppress(Exception):
                    conn.close()  # not kept: the next use connects again
                raise PgStoreError(
                    f"cannot set up the connection to PostgreSQL at {dsn_place(self.dsn)} "
                    f"(SET synchronous_commit = off): {_one_line(exc)}",
                    where=self.keys[0],
                    hint="it is tried again at the next use; if it goes on, check the server's log",
                ) from None
        self._local.conn = conn
        with self._lock:
            ended = self._keep(conn, threading.current_thread())
        for old in ended:
            with contextlib.suppress(Exception):
                old.close()
        return conn

    def _keep(self, conn: Any, owner: threading.Thread | None = None) -> list[Any]:
        """``conn`` (``owner``'s own) among the connections :meth:`close` closes, instead of
        those found closed (broken, replaced by reconnecting) and of threads that ended (the
        control endpoint answers each request on a thread of its own): the list, and the
        server's connections, do not grow with each outage or request. With ``_lock`` held;
        the connections of threads that ended, for the caller to close."""
        kept, ended = [], []
        for c in self._connections:
            thread = self._owners.get(id(c))
            if c.closed or (thread is not None and not thread.is_alive()):
                self._owners.pop(id(c), None)
                if not c.closed:
                    ended.append(c)
            else:
                kept.append(c)
        kept.append(conn)
        if owner is not None:
            self._owners[id(conn)] = owner
        self._connections = kept
        return ended

    @contextlib.contextmanager
    def conn(self, *, durable: bool = False) -> Iterator[Any]:
        """A connection inside one transaction (``durable``: commit waits for the WAL flush)."""
        conn = self._connection()
        with self.reporting(conn), conn.transaction():
            if durable and not self.synchronous_commit:
                conn.execute("SET LOCAL synchronous_commit = on")
            yield conn

    @contextlib.contextmanager
    def pipelined(self, *, durable: bool = False) -> Iterator[Any]:
        """:meth:`conn` in one round trip: the transaction's ``BEGIN``, the statements of the
        block and its ``COMMIT`` go out together when the block ends (pipeline mode); their
        results are read after it. A statement that fails rolls it all back (:meth:`pipeline`)."""
        conn = self._connection()
        with self.reporting(conn), self.pipeline(conn):
            conn.execute("BEGIN")
            if durable and not self.synchronous_commit:
                conn.execute("SET LOCAL synchronous_commit = on")
            yield conn
            conn.execute("COMMIT")

    @staticmethod
    @contextlib.contextmanager
    def pipeline(conn: Any) -> Iterator[None]:
        """``conn.pipeline()`` in a transaction begun with ``BEGIN`` (in it or before it). When it
        fails, the transaction is rolled back with ``conn.rollback()``, which also makes psycopg
        forget the statements it prepared on ``conn`` and deallocate them (``DEALLOCATE ALL``);
        should that fail, ``conn`` is closed (the next use connects again).

        psycopg prepares a statement at its sixth execution on a connection
        (``prepare_threshold``); in a pipeline it records the statement as prepared when it
        queues its ``Parse``, and checks that only for a statement it had not counted before. When
        a statement before it in the pipeline failed (an acknowledgement whose lease was lost
        divides by zero on purpose), PostgreSQL skipped that ``Parse``, and every later execution
        of the statement on ``conn`` failed: ``prepared statement "_pg3_N" does not exist`` (the
        ``COMMIT``: every transaction). A ``ROLLBACK`` statement does not mend it: psycopg
        forgets its prepared statements after one only the first time it runs on a connection."""
        try:
            with conn.pipeline():
                yield
        except BaseException:
            if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                try:
                    conn.rollback()
                except psycopg.Error:
                    with contextlib.suppress(Exception):
                        conn.close()
            raise

    @contextlib.contextmanager
    def reporting(self, conn: Any) -> Iterator[None]:
        """psycopg's errors on ``conn`` as :class:`PgStoreError` naming the site's DSN key (the
        connection broken: closed) or the schema."""
        try:
            yield
        except psycopg.OperationalError as exc:
            with contextlib.suppress(Exception):
                conn.close()
            raise PgStoreError(f"PostgreSQL: {str(exc).strip()}", where=self.keys[0]) from exc
        except psycopg.Error as exc:
            raise PgStoreError(f"PostgreSQL: {str(exc).strip()}", where=f"schema {self.schema}") from exc

    def drop(self) -> None:
        """Delete the schema and everything in it (tests, decommissioning a site)."""
        with self.conn() as c:
            c.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")

    # -- channels and subscriptions --------------------------------------------------------

    def save_channel(self, name: str, cfg: ChannelConfig) -> None:
        with self.conn(durable=True) as c:
            c.execute(
                f"INSERT INTO {self.schema}.channels (name, kind, config, created_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (name) DO UPDATE "
                "SET kind = excluded.kind, config = excluded.config",
                (name, cfg.kind, json.dumps(cfg.to_dict()), time.time()),
            )

    def channel(self, name: str) -> ChannelConfig | None:
        with self.conn() as c:
            row = c.execute(
                f"SELECT config FROM {self.schema}.channels WHERE name = %s", (name,)
            ).fetchone()
        return ChannelConfig.from_dict(json.loads(row[0])) if row else None

    def channel_names(self) -> list[str]:
        with self.conn() as c:
            rows = c.execute(
                f"SELECT name FROM {self.schema}.channels UNION SELECT channel FROM "
                f"{self.schema}.counters ORDER BY 1"
            ).fetchall()
        return [r[0] for r in rows]

    def kinds(self) -> dict[str, str]:
        with self.conn() as c:
            return dict(c.execute(f"SELECT name, kind FROM {self.schema}.channels").fetchall())

    def add_subscription(self, topic: str, name: str, channel: str, selector: str | None) -> None:
        with self.conn(durable=True) as c:
            row = c.execute(
                f"SELECT kind FROM {self.schema}.channels WHERE name = %s", (topic,)
            ).fetchone()
            if row is None:
                c.execute(
                    f"INSERT INTO {self.schema}.channels (name, kind, config, created_at) "
                    "VALUES (%s, 'topic', %s, %s) ON CONFLICT (name) DO NOTHING",
                    (topic, json.dumps(ChannelConfig(kind="topic").to_dict()), time.time()),
                )
            elif row[0] != "topic":
                raise TransportError(
                    f"channel {topic} is a queue, not a topic",
                    hint="declare it with kind='topic' before subscribing, or subscribe to another name",
                )
            c.execute(
                f"INSERT INTO {self.schema}.subscriptions (topic, name, channel, selector, created_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (topic, name) DO UPDATE "
                "SET selector = excluded.selector",
                (topic, name, channel, selector, time.time()),
            )

    def remove_subscription(self, topic: str, name: str) -> None:
        with self.conn(durable=True) as c:
            c.execute(
                f"DELETE FROM {self.schema}.subscriptions WHERE topic = %s AND name = %s", (topic, name)
            )

    def subscriptions(self, topic: str | None = None) -> list[tuple[str, str, str, str | None]]:
        """``(topic, name, channel, selector)`` of one topic's subscriptions, or of all."""
        where, args = ("WHERE topic = %s", (topic,)) if topic else ("", ())
        with self.conn() as c:
            return c.execute(
                f"SELECT topic, name, channel, selector FROM {self.schema}.subscriptions {where} "
                "ORDER BY topic, name",
                args,
            ).fetchall()

    # -- journal and counters --------------------------------------------------------------

    def record(
        self,
        journal: Iterable[tuple[Any, ...]] = (),
        counts: dict[tuple[str, str], int] | None = None,
    ) -> None:
        """Append journal entries ``(channel, message_id, event, detail[, trace_id, keys])``
        and add to counters.

        They are written by a writer thread, in batches, in the order they were recorded
        (one round trip to PostgreSQL per batch instead of one per operation); queries of
        this process (:meth:`journal`, :meth:`counters`) wait until what it recorded before
        is written. Another process sees them at most ``_JournalWriter.LINGER`` (0.1 s) plus a write later.
        """
        now = time.time()
        rows = [(now, *entry, *(None,) * (6 - len(entry))) for entry in journal]
        if not rows and not counts:
            return
        self._writer().add(rows, counts or {})

    def flush(self, timeout: float = 30.0) -> None:
        """Wait until every journal entry and counter recorded so far is written."""
        writer = self._journal_writer
        if writer is not None:
            writer.flush(timeout)

    def _writer(self) -> _JournalWriter:
        with self._lock:
            if self._journal_writer is None:
                self._journal_writer = _JournalWriter(self)
            return self._journal_writer

    def write(self, rows: list[tuple[Any, ...]], counts: dict[tuple[str, str], int]) -> None:
        """Write journal rows and counter increments now, in one transaction: the counts in
        one statement whatever their channels and counters (:meth:`_add_counts`), a
        transaction of its own when there are no rows (one round trip)."""
        added = self._counts_by_channel(counts) if counts else None
        if not rows:
            if added is not None:
                conn = self._connection()
                with self.reporting(conn):
                    self._add_counts(conn, added)
            return
        with self.conn() as c:
            with c.cursor() as cur, cur.copy(
                f"COPY {self.schema}.journal (at, channel, message_id, event, detail, trace_id, keys) FROM STDIN"
            ) as copy:
                for row in rows:
                    copy.write_row(row)
            if added is not None:
                self._add_counts(c, added)

    @staticmethod
    def _counts_by_channel(counts: dict[tuple[str, str], int]) -> list[list[Any]]:
        """``counts`` as the columns of :meth:`_add_counts`: the channels in order, then one
        list a counter of :data:`COUNTERS` (0 where a channel has none)."""
        by_channel: dict[str, list[int]] = {}
        for (channel, counter), n in counts.items():
            try:
                i = COUNTERS.index(counter)
            except ValueError:
                raise ValueError(counter) from None
            by_channel.setdefault(channel, [0] * len(COUNTERS))[i] += n
        channels = sorted(by_channel)  # rows locked in one order: two daemons' flushes never deadlock
        return [channels, *([by_channel[ch][i] for ch in channels] for i in range(len(COUNTERS)))]

    def _add_counts(self, conn: Any, columns: list[list[Any]]) -> None:
        """One ``INSERT ... SELECT FROM unnest(...) ON CONFLICT DO UPDATE``: a row a channel,
        every counter added (an upsert a channel and counter cost a round trip each)."""
        s = self.schema
        conn.execute(
            f"INSERT INTO {s}.counters (channel, {', '.join(COUNTERS)}) "
            f"SELECT * FROM unnest(%s::text[]{', %s::bigint[]' * len(COUNTERS)}) ORDER BY 1 "
            "ON CONFLICT (channel) DO UPDATE SET " + ", ".join(f"{c} = {s}.counters.{c} + excluded.{c}" for c in COUNTERS),
            columns,
        )

    def journal(self, query: JournalQuery) -> list[JournalEntry]:
        # several processes write batches: the time each entry was recorded orders them
        sql, args = journal_query(f"{self.schema}.journal", "%s", query, order="at, id")
        self.flush()
        with self.conn() as c:
            return journal_entries(c.execute(sql, args).fetchall())

    def counters(self, channel: str | None = None) -> dict[str, dict[str, int]]:
        where, args = ("WHERE channel = %s", (channel,)) if channel else ("", ())
        self.flush()
        with self.conn() as c:
            rows = c.execute(
                f"SELECT channel, {', '.join(COUNTERS)} FROM {self.schema}.counters {where}", args
            ).fetchall()
        return {r[0]: dict(zip(COUNTERS, (int(v) for v in r[1:]), strict=True)) for r in rows}

    def purge_older(self, journal_before: float, seen_before: float) -> dict[str, int]:
        self.flush()  # what this process recorded before is purged too, not written after
        with self.conn() as c:
            j = c.execute(f"DELETE FROM {self.schema}.journal WHERE at < %s", (journal_before,)).rowcount
            s = c.execute(f"DELETE FROM {self.schema}.seen WHERE seen_at < %s", (seen_before,)).rowcount
            # a return record whose message is long gone (acknowledged by a process that died)
            c.execute(f"DELETE FROM {self.schema}.returns WHERE at < %s", (seen_before,))
        return {"journal": j, "seen": s}

    # -- idempotency -----------------------------------------------------------------------

    def seen(self, consumer: str, keys: Iterable[str]) -> set[str]:
        keys = list(keys)
        if not keys:
            return set()
        conn = self._connection()
        with self.reporting(conn):  # one read: no BEGIN and COMMIT around it
            rows = conn.execute(
                f"SELECT key FROM {self.schema}.seen WHERE consumer = %s AND key = ANY(%s)",
                (consumer, keys),
            ).fetchall()
        return {r[0] for r in rows}

    def remember(self, scope: str, key: str, ttl: float) -> bool:
        """Record ``key`` unless it was recorded within ``ttl`` s (one statement: atomic
        between daemons); see :meth:`coupler.bus.transport.base.Transport.remember`."""
        now = time.time()
        with self.conn(durable=True) as c:
            cursor = c.execute(
                f"INSERT INTO {self.schema}.seen (consumer, key, seen_at) VALUES (%s, %s, %s) "
                f"ON CONFLICT (consumer, key) DO UPDATE SET seen_at = excluded.seen_at "
                f"WHERE {self.schema}.seen.seen_at < %s",
                (scope, key, now, now - ttl),
            )
            return cursor.rowcount == 1

    def claim(self, scope: str, keys: Iterable[str], until: float) -> bool:
        """Claim ``keys`` of ``scope`` until ``until``, all or none (see
        :meth:`coupler.bus.transport.base.Transport.claim`): one upsert of the keys absent or
        expired in the state table; a concurrent one of the same key waits for this short
        transaction, then finds it."""
        keys = sorted(set(keys))
        if not keys:
            return True
        try:
            with self.conn() as c:
                rows = c.execute(*state_upsert(f"{self.schema}.state", f"claim:{scope}", dict.fromkeys(keys, b""),
                                               until, time.time())).fetchall()
                if len(rows) < len(keys):
                    raise _Claimed
        except _Claimed:
            return False
        return True

    def unclaim(self, scope: str, keys: Iterable[str]) -> None:
        keys = list(keys)
        if keys:
            with self.conn() as c:
                c.execute(*state_delete(f"{self.schema}.state", f"claim:{scope}", keys))

    def claim_fresh(self, scope: str, keys: Iterable[str], until: float) -> ClaimOutcome:
        """:meth:`claim` of ``keys`` in ``scope``, then :meth:`seen` of them for consumer
        ``scope`` (see :meth:`coupler.bus.transport.base.Transport.claim_fresh`), in one
        round trip: :func:`claim_then_look` in the table ``seen``."""
        keys = sorted(set(keys))
        if not keys:
            return "claimed"
        with self.pipelined() as c:
            claimed, recorded = claim_then_look(
                c, f"{self.schema}.state", f"claim:{scope}", keys, until, time.time(),
                f"SELECT key FROM {self.schema}.seen WHERE consumer = %s AND key = ANY(%s)", [scope, keys])
        return claim_outcome(keys, claimed, recorded)

    def mark_seen(self, consumer: str, keys: Iterable[str], *, unclaim: str | None = None) -> None:
        """Record ``keys`` of ``consumer``, durably, in one round trip; ``unclaim``: and end
        the claims of them in that scope (:meth:`claim`) in the same transaction, so that a
        copy claiming them afterwards finds them recorded."""
        keys = sorted(set(keys))
        if not keys:
            return
        with self.pipelined(durable=True) as c:
            c.execute(
                f"INSERT INTO {self.schema}.seen (consumer, key, seen_at) SELECT %s, k, %s FROM unnest(%s::text[]) AS k "
                "ORDER BY k ON CONFLICT (consumer, key) DO UPDATE SET seen_at = excluded.seen_at",
                (consumer, time.time(), keys),
            )
            if unclaim is not None:
                c.execute(*state_delete(f"{self.schema}.state", f"claim:{unclaim}", keys))

    # -- keyed state of stateful steps ----------------------------------------------------

    def state_tx(self, use: str = "state") -> StateTx:
        """A PostgreSQL transaction of step state on a connection of this thread's own (beside
        the autocommit one), ended by :meth:`StateTx.commit` or :meth:`StateTx.rollback`.
        ``use`` names the connection: a transaction that commits at another moment than the
        step state's (``"seen"``: the keys of :meth:`StateTx.mark_new`) has one of its own."""
        conn = getattr(self._local, f"{use}_conn", None)
        if conn is None or conn.closed:
            try:
                conn = psycopg.connect(self.dsn, autocommit=False, connect_timeout=10)
            except psycopg.Error as exc:
                raise PgStoreError(
                    f"cannot connect to PostgreSQL at {dsn_place(self.dsn)} (for {_USES.get(use, use)}): {_one_line(exc)}",
                    where=self.keys[0],
                    hint="check the DSN, the password and that the server runs and accepts connections from this host",
                ) from None
            setattr(self._local, f"{use}_conn", conn)
            with self._lock:
                self._connections.append(conn)
        return StateTx(self, conn)

    def lock_text(self, name: str) -> str:
        """The key (hashed) of the site-wide advisory lock ``name``."""
        return f"coupler-{name}-{self.schema}"

    @contextlib.contextmanager
    def stale_outbox(self, older_than: float) -> Iterator[list[tuple[str, bytes]]]:
        """The outbox entries (:meth:`StateTx.outbox`) whose transaction died before it
        published them, locked (another daemon skips them); deleted when the block ends without
        an error. Stale are: the entries of a process that no longer runs (its lock is free),
        whatever their age; this process's written before ``older_than`` (epoch seconds); and
        a running process's only after :data:`LIVE_OWNER_GRACE` (it is publishing them now:
        taking them would publish a copy of each)."""
        with self.conn(durable=True) as c:
            rows = c.execute(
                f"SELECT key, value FROM {self.schema}.state WHERE scope = %s FOR UPDATE SKIP LOCKED", (OUTBOX,)
            ).fetchall()
            running: dict[str, bool] = {}
            stale = []
            for key, value in rows:
                owner = key.split(".", 1)[0] if "." in key else None
                deadline = older_than
                if owner is not None and owner != self.owner:
                    if owner not in running:  # free: the owner's connection (and process) is gone
                        running[owner] = not c.execute("SELECT pg_try_advisory_xact_lock(hashtext(%s))",
                                                       (self.lock_text(f"owner-{owner}"),)).fetchone()[0]
                    deadline = time.time() - LIVE_OWNER_GRACE if running[owner] else float("inf")
                if json.loads(bytes(value))["at"] < deadline:
                    stale.append((key, bytes(value)))
            yield stale
            if stale:
                c.execute(f"DELETE FROM {self.schema}.state WHERE scope = %s AND key = ANY(%s)",
                          (OUTBOX, [k for k, _ in stale]))

    def outbox_done(self, key: str) -> None:
        """The outputs of outbox entry ``key`` are published: forget it."""
        with self.conn() as c:
            c.execute(f"DELETE FROM {self.schema}.state WHERE scope = %s AND key = %s", (OUTBOX, key))

    def forget_state(self) -> int:
        """Delete expired step state; returns how many values."""
        with self.conn() as c:
            return int(c.execute(f"DELETE FROM {self.schema}.state WHERE expires_at <= %s", (time.time(),)).rowcount)

    # -- broker objects (so that a site can be taken down completely) ---------------------

    def add_broker_object(self, name: str, kind: str) -> None:
        with self.conn() as c:
            c.execute(
                f"INSERT INTO {self.schema}.broker_objects (name, kind) VALUES (%s, %s) "
                "ON CONFLICT (name, kind) DO NOTHING",
                (name, kind),
            )

    def broker_objects(self) -> list[tuple[str, str]]:
        """``(name, kind)`` of every queue and exchange the site declared on the broker."""
        with self.conn() as c:
            return c.execute(f"SELECT name, kind FROM {self.schema}.broker_objects ORDER BY 1").fetchall()

    # -- claim check -----------------------------------------------------------------------

    CHUNK = 1 << 20

    def put_claim(self, body: bytes, refs: dict[str, int]) -> str:
        """Store ``body`` in chunks, referred to by ``refs[queue]`` message copies per queue;
        returns its reference. Committed durably before the message is published."""
        ref = uuid.uuid4().hex
        view = memoryview(body)
        with self.conn(durable=True) as c:
            c.execute(f"INSERT INTO {self.schema}.claims (ref, size, created) VALUES (%s, %s, %s)",
                      (ref, len(body), time.time()))
            with c.cursor() as cur, cur.copy(
                f"COPY {self.schema}.claim_chunks (ref, seq, data) FROM STDIN"
            ) as copy:
                for seq, start in enumerate(range(0, len(body), self.CHUNK)):
                    copy.write_row((ref, seq, bytes(view[start:start + self.CHUNK])))
            self._add_refs(c, ref, refs)
        return ref

    def _add_refs(self, c: Any, ref: str, refs: dict[str, int]) -> None:
        for queue, n in refs.items():
            c.execute(
                f"INSERT INTO {self.schema}.claim_refs (ref, queue, n) VALUES (%s, %s, %s) "
                f"ON CONFLICT (ref, queue) DO UPDATE SET n = {self.schema}.claim_refs.n + excluded.n",
                (ref, queue, n),
            )

    def get_claim(self, ref: str) -> bytes:
        """The body stored under ``ref``, read chunk by chunk; :class:`PgStoreError` when gone."""
        parts: list[bytes] = []
        with self.conn() as c, c.cursor(name=f"claim_{ref}") as cur:
            cur.itersize = 4
            cur.execute(f"SELECT data FROM {self.schema}.claim_chunks WHERE ref = %s ORDER BY seq", (ref,))
            for (data,) in cur:
                parts.append(bytes(data))
            size = c.execute(f"SELECT size FROM {self.schema}.claims WHERE ref = %s", (ref,)).fetchone()
        if size is None or sum(len(p) for p in parts) != size[0]:
            raise PgStoreError(
                f"claim-checked body {ref} is missing", where=f"{self.schema}.claims",
                hint="it was removed while a message still referred to it; dead-letter the message",
            )
        return b"".join(parts)

    def move_claim(self, ref: str, source: str | None, target: str | None, n: int = 1) -> None:
        """``n`` message copies referring to ``ref`` left ``source`` (None: none) and arrived in
        ``target`` (None: gone); the body is deleted when no copy refers to it any more."""
        with self.conn(durable=True) as c:
            if target is not None:
                self._add_refs(c, ref, {target: n})
            if source is not None:
                c.execute(f"UPDATE {self.schema}.claim_refs SET n = n - %s WHERE ref = %s AND queue = %s",
                          (n, ref, source))
                c.execute(f"DELETE FROM {self.schema}.claim_refs WHERE ref = %s AND n <= 0", (ref,))
            self._drop_unreferenced(c, [ref])

    def drop_queue_claims(self, queue: str) -> None:
        """Every message of ``queue`` is gone (purged, deleted): so are its references."""
        with self.conn(durable=True) as c:
            refs = [r[0] for r in c.execute(
                f"DELETE FROM {self.schema}.claim_refs WHERE queue = %s RETURNING ref", (queue,)
            ).fetchall()]
            self._drop_unreferenced(c, refs)

    def _drop_unreferenced(self, c: Any, refs: list[str]) -> None:
        if not refs:
            return
        gone = [r[0] for r in c.execute(
            f"DELETE FROM {self.schema}.claims WHERE ref = ANY(%s) AND NOT EXISTS "
            f"(SELECT 1 FROM {self.schema}.claim_refs r WHERE r.ref = claims.ref) RETURNING ref",
            (refs,),
        ).fetchall()]
        if gone:
            c.execute(f"DELETE FROM {self.schema}.claim_chunks WHERE ref = ANY(%s)", (gone,))

    def claim_refs(self) -> list[str]:
        """References of the claim-checked bodies stored now."""
        with self.conn() as c:
            return [r[0] for r in c.execute(f"SELECT ref FROM {self.schema}.claims ORDER BY ref").fetchall()]

    # -- exact attempt counts --------------------------------------------------------------

    def add_returns(self, queue: str, message_ids: Iterable[str]) -> None:
        """Record that the transport returned these messages to ``queue`` without an attempt
        (before it returns them: whoever gets them next reads this)."""
        rows = Counter(m for m in message_ids if m)
        if not rows:
            return
        now = time.time()
        with self.conn(durable=True) as c, c.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {self.schema}.returns (queue, message_id, n, at) VALUES (%s, %s, %s, %s) "
                f"ON CONFLICT (queue, message_id) DO UPDATE SET n = {self.schema}.returns.n + excluded.n, "
                "at = excluded.at",
                [(queue, m, n, now) for m, n in rows.items()],
            )

    def returns(self, queue: str, message_ids: Iterable[str]) -> dict[str, int]:
        """How often each message was returned to ``queue`` without an attempt."""
        ids = list(message_ids)
        if not ids:
            return {}
        with self.conn() as c:
            rows = c.execute(
                f"SELECT message_id, n FROM {self.schema}.returns WHERE queue = %s AND message_id = ANY(%s)",
                (queue, ids),
            ).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def forget_returns(self, queue: str, message_ids: Iterable[str]) -> None:
        """The messages left ``queue`` for good (acknowledged, dead, republished)."""
        ids = list(message_ids)
        if ids:
            with self.conn() as c:
                c.execute(f"DELETE FROM {self.schema}.returns WHERE queue = %s AND message_id = ANY(%s)",
                          (queue, ids))

    # -- dead letter ids -------------------------------------------------------------------

    def next_dead_letter_id(self) -> int:
        with self.conn() as c:
            return int(c.execute(f"SELECT nextval('{self.schema}.dead_letter_ids')").fetchone()[0])


class _Claimed(Exception):
    """A key of :meth:`PgStore.claim` is claimed already: its transaction rolls back."""


def claim_then_look(conn: Any, table: str, scope: str, keys: list[str], until: float, now: float,
                    look: str, look_args: list[Any]) -> tuple[Any, Any]:
    """Two statements of the transaction open on ``conn`` (in pipeline mode: sent together):
    the claim of ``keys`` (sorted, distinct) under ``scope`` of the keyed-state ``table`` until
    ``until`` (the upsert of those absent or expired at ``now``, each with this call's own
    value), then ``look`` (``SELECT key`` of the keys recorded, with ``look_args``), which
    also deletes this call's claims when a key is recorded or when not every key was claimed
    (all or none). The look is a statement of its own, after the upsert: under READ COMMITTED
    it sees every transaction the upsert waited for (one that recorded the keys and ended
    its claim), which a look in the upsert's own statement, of the snapshot taken before the
    wait, would miss. Returns the two statements' cursors, for :func:`claim_outcome` once
    the pipeline is synced."""
    mine = uuid.uuid4().bytes
    claimed = conn.execute(*state_upsert(table, scope, dict.fromkeys(keys, mine), until, now))
    recorded = conn.execute(
        f"WITH r AS ({look}), "
        f"d AS (DELETE FROM {table} WHERE scope = %s AND key = ANY(%s) AND value = %s AND "
        f"(EXISTS (SELECT 1 FROM r) OR (SELECT count(*) FROM {table} WHERE scope = %s AND key = ANY(%s) "
        "AND value = %s) < %s)) SELECT key FROM r",
        [*look_args, scope, keys, mine, scope, keys, mine, len(keys)],
    )
    return claimed, recorded


def claim_outcome(keys: list[str], claimed: Any, recorded: Any) -> ClaimOutcome:
    """What :func:`claim_then_look`'s cursors say, once its pipeline is synced."""
    if recorded.fetchall():
        return "recorded"
    return "claimed" if len(claimed.fetchall()) == len(keys) else "busy"


class StateTx:
    """One PostgreSQL transaction of step state (see :meth:`PgStore.state_tx`).

    ``lock=True`` takes a transaction-level advisory lock per key (sorted, so two daemons
    locking several keys never deadlock): it holds for keys that do not exist yet too (a new
    group), which ``SELECT ... FOR UPDATE`` cannot do. The locks go with the commit.
    """

    def __init__(self, store: PgStore, conn: Any):
        self.store = store
        self.conn = conn
        self.s = store.schema

    def _run(self, sql: str, args: Any) -> Any:
        with self.store.reporting(self.conn):
            return self.conn.execute(sql, args)

    def get(self, scope: str, keys: Iterable[str] | None, lock: bool) -> dict[str, bytes]:
        keys = None if keys is None else sorted(set(keys))
        if lock:
            for name in [scope] if keys is None else [f"{scope}\x1f{k}" for k in keys]:
                self._run("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{self.s}\x1f{name}",))
        if keys == []:
            return {}
        return {k: bytes(v) for k, v in self._run(*state_select(f"{self.s}.state", scope, keys, time.time())).fetchall()}

    def put(self, scope: str, values: dict[str, bytes | None], expires_at: float | None) -> None:
        gone = [k for k, v in values.items() if v is None]
        if gone:
            self._run(*state_delete(f"{self.s}.state", scope, gone))
        kept = {k: v for k, v in values.items() if v is not None}
        if kept:
            self._run(*state_upsert(f"{self.s}.state", scope, kept, expires_at))

    def mark_new(self, consumer: str, keys: Iterable[str]) -> set[str]:
        """Record the keys of ``consumer`` not in ``seen`` yet; returns them (see
        :meth:`coupler.bus.transport.base.TransactionOps.mark_new`). Each new row is locked
        until this transaction ends: another transaction inserting the same key waits on the
        unique index, then finds it (or inserts it, if this one rolled back)."""
        keys = sorted(set(keys))  # one order: two transactions of several keys never deadlock
        if not keys:
            return set()
        self._run("SET LOCAL synchronous_commit = on", None)  # idempotency keys are durable on commit
        rows = self._run(
            f"INSERT INTO {self.s}.seen (consumer, key, seen_at) SELECT %s, k, %s FROM unnest(%s::text[]) AS k "
            "ORDER BY k ON CONFLICT (consumer, key) DO NOTHING RETURNING key",
            (consumer, time.time(), keys),
        ).fetchall()
        return {r[0] for r in rows}

    def outbox(self, value: bytes) -> str:
        """Keep the outputs of this transaction (``value``: JSON ``{"at": time, ...}``) with its
        state change, so that a process that dies after the commit and before it published them
        does not lose them: :meth:`PgStore.stale_outbox` finds them. Returns the entry's key."""
        store = self.store
        if not store._owner_held:  # from now on, while this process runs (see stale_outbox)
            store._owner_held = store.hold_lock(f"owner-{store.owner}")
        key = f"{store.owner}.{uuid.uuid4().hex}"
        self._run(f"INSERT INTO {self.s}.state (scope, key, value) VALUES (%s, %s, %s)", (OUTBOX, key, value))
        return key

    def commit(self) -> None:
        try:
            self.conn.commit()
        except psycopg.Error as exc:
            with contextlib.suppress(Exception):
                self.conn.rollback()
            raise PgStoreError(f"PostgreSQL: state commit failed: {str(exc).strip()}", where=f"schema {self.s}") from exc

    def rollback(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.rollback()


class _JournalWriter:
    """The thread that writes a store's journal entries and counters in batches.

    A batch collects what is recorded during ``LINGER`` seconds after its first entry (or
    until someone waits for it: :meth:`flush`), so that a busy process writes a few times a
    second, not once per message.
    """

    LINGER = 0.1

    def __init__(self, store: PgStore):
        self.store = store
        self.cond = threading.Condition()
        self.rows: list[tuple[Any, ...]] = []
        self.counts: Counter[tuple[str, str]] = Counter()
        self.queued = 0  # batches added
        self.written = 0  # batches written
        self.error: str | None = None
        self.stopping = False
        self.urgent = False  # someone waits in flush(): write now
        self.thread = threading.Thread(target=self.run, name=f"journal-{store.schema}", daemon=True)
        self.thread.start()

    def add(self, rows: list[tuple[Any, ...]], counts: dict[tuple[str, str], int]) -> None:
        with self.cond:
            idle = not self.rows and not self.counts
            self.rows.extend(rows)
            self.counts.update(counts)
            self.queued += 1
            if idle:  # the writer waits for a first entry; while it lingers, let it sleep
                self.cond.notify_all()

    def flush(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self.cond:
            target = self.queued
            if self.written < target:
                self.urgent = True
                self.cond.notify_all()
            while self.written < target and self.thread.is_alive():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PgStoreError(
                        f"the journal could not be written to PostgreSQL within {timeout:g} s: "
                        f"{self.error or 'no answer'}", where=self.store.keys[0],
                    )
                self.cond.wait(min(left, 0.1))

    def stop(self) -> None:
        with contextlib.suppress(PgStoreError):
            self.flush(10.0)
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        self.thread.join(timeout=10)

    def run(self) -> None:
        while True:
            with self.cond:
                while not self.rows and not self.counts and not self.stopping:
                    self.cond.wait()
                if self.stopping and not self.rows and not self.counts:
                    return
                until = time.monotonic() + self.LINGER
                while not self.urgent and not self.stopping:
                    left = until - time.monotonic()
                    if left <= 0:
                        break
                    self.cond.wait(left)
                self.urgent = False
                rows, counts, upto = self.rows, dict(self.counts), self.queued
                self.rows, self.counts = [], Counter()
            try:
                self.store.write(rows, counts)
            except Exception as exc:  # noqa: BLE001 - kept, logged, and tried again
                log.warning("journal: cannot write %d entries to PostgreSQL: %s; retrying", len(rows), exc)
                with self.cond:
                    self.error = str(exc)
                    self.rows[:0] = rows
                    self.counts.update(counts)
                    if self.stopping:
                        return
                    self.cond.wait(1.0)
                continue
            with self.cond:
                self.error = None
                self.written = upto
                self.cond.notify_all()


class PgIdentityRepository(IdentityRepository):
    """The Application Repository in PostgreSQL: every daemon of the site sees every identity.

    Matching and resolution are those of :class:`IdentityRepository`; only storage differs.
    """

    def __init__(self, store: PgStore):
        self._store = store

    def register(self, identity: Identity | str, channel: str, *, adapter: str | None = None) -> Registration:
        ident = Identity.parse(identity) if isinstance(identity, str) else identity
        if ident.cls is None:
            raise IdentityError("an application identity needs at least its class", where=str(ident))
        s = self._store.schema
        now = time.time()
        with self._store.conn(durable=True) as c:
            c.execute(
                f"DELETE FROM {s}.identities WHERE class = %s AND provider IS NOT DISTINCT FROM %s "
                "AND name IS NOT DISTINCT FROM %s AND version IS NOT DISTINCT FROM %s AND channel = %s",
                (ident.cls, ident.provider, ident.name, ident.version, channel),
            )
            row = c.execute(
                f"INSERT INTO {s}.identities (class, provider, name, version, channel, adapter, "
                "registered_at) VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (ident.cls, ident.provider, ident.name, ident.version, channel, adapter, now),
            ).fetchone()
        self._store.record([(channel, None, IDENTITY_REGISTERED, str(ident))])
        return Registration(int(row[0]), ident, channel, adapter, now)

    def unregister(self, *, adapter: str | None = None, identity: Identity | str | None = None) -> int:
        clauses: list[str] = []
        args: list[Any] = []
        if adapter is not None:
            clauses.append("adapter = %s")
            args.append(adapter)
        if identity is not None:
            ident = Identity.parse(identity) if isinstance(identity, str) else identity
            clauses.append(
                "class = %s AND provider IS NOT DISTINCT FROM %s AND name IS NOT DISTINCT FROM %s "
                "AND version IS NOT DISTINCT FROM %s"
            )
            args += [ident.cls, ident.provider, ident.name, ident.version]
        if not clauses:
            raise IdentityError("unregister needs an adapter or an identity")
        with self._store.conn(durable=True) as c:
            return c.execute(
                f"DELETE FROM {self._store.schema}.identities WHERE {' AND '.join(clauses)}", args
            ).rowcount

    def list(self) -> list[Registration]:
        with self._store.conn() as c:
            rows = c.execute(
                "SELECT id, class, provider, name, version, channel, adapter, registered_at "
                f"FROM {self._store.schema}.identities ORDER BY class, provider, name, version, id"
            ).fetchall()
        return [Registration(r[0], Identity(r[1], r[2], r[3], r[4]), r[5], r[6], r[7]) for r in rows]


__all__ = ["PgIdentityRepository", "PgStore", "PgStoreError", "StateTx"]
