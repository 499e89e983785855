"""The PostgreSQL transport (``[store] type = "postgres"``): a multi-node bus on PostgreSQL alone.

Each channel is a table of its own (``q_<name>_<hash>``, listed in ``queues``), one row per
message copy, indexed by ``(visible_at, tag)``, pages half full (a lease's new row stays on
its page: WAL logs only what changed). A receive leases the oldest ready rows with
``SELECT ... FOR UPDATE SKIP LOCKED`` and one ``UPDATE``, so competing daemons on any number
of machines each get different messages without waiting for each other; acknowledging
deletes the row if its lease token is still the one granted. A send to a channel with no
ready message ends with ``pg_notify``: every process ``LISTEN``s on the schema's notification
channel and wakes its waiting receivers at once (they re-check every 0.25 s for leases and
delays that end unannounced). Every operation is one PostgreSQL transaction, so a daemon killed at any moment
leaves each message either settled or waiting for its lease to end.

What the transport shares with the RabbitMQ transport's store
(:class:`~coupler.bus.transport.amqp.store.PgStore`, the same schema layout): the journal and
counters tables, the Application Repository, the polling adapters' file seen-state, the
dead-letter id sequence and the site-wide metrics lock. Its own: the channel tables,
``dead_letters`` and the keyed ``state`` table (channel configurations, subscriptions,
idempotency keys, claim-checked bodies, step state).

Everything a transport decides (leases, backoff, expiry, dead letters, topics, claim checks)
is :class:`~coupler.bus.transport.storage.StorageTransport`'s; this module is only storage.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from coupler.bus.transport import policy, sql_filters
from coupler.bus.transport.amqp.file_state import PgFileState
from coupler.bus.transport.amqp.store import (
    PgIdentityRepository,
    PgStore,
    claim_outcome,
    claim_then_look,
    dsn_place,
)
from coupler.bus.transport.base import (
    ClaimOutcome,
    DeadKind,
    JournalEntry,
    JournalQuery,
    TransportError,
)
from coupler.bus.transport.storage import (
    CLAIMS,
    Buried,
    JournalRow,
    StorageTransaction,
    StorageTransport,
    StorageTx,
    Stored,
)

log = logging.getLogger(__name__)

_OWN_DDL = """
CREATE TABLE IF NOT EXISTS {s}.queues (name TEXT PRIMARY KEY, tab TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.dead_letters (
    id BIGINT PRIMARY KEY DEFAULT nextval('{s}.dead_letter_ids'),
    kind TEXT NOT NULL, queue TEXT NOT NULL, channel TEXT, message_id TEXT,
    reason TEXT NOT NULL, error TEXT NOT NULL, component TEXT NOT NULL, attempts INTEGER NOT NULL,
    dead_at DOUBLE PRECISION NOT NULL, blob BYTEA, raw BYTEA, claim TEXT
)
"""

_CHANNEL_DDL = """
CREATE TABLE IF NOT EXISTS {t} (
    tag BIGSERIAL PRIMARY KEY, message_id TEXT NOT NULL, blob BYTEA NOT NULL,
    enqueued_at DOUBLE PRECISION NOT NULL, visible_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION, attempts INTEGER NOT NULL DEFAULT 0, token BIGINT, claim TEXT
) WITH (fillfactor = 50);
CREATE INDEX IF NOT EXISTS {i}_ready ON {t} (visible_at, tag)
"""

#: columns of the inserting statements, with their types
_PUT = (("message_id", "text"), ("blob", "bytea"), ("enqueued_at", "float8"), ("visible_at", "float8"),
        ("expires_at", "float8"), ("attempts", "int"), ("claim", "text"))
_JOURNAL = (("at", "float8"), ("channel", "text"), ("message_id", "text"), ("event", "text"), ("detail", "text"),
            ("trace_id", "text"), ("keys", "text"))
_MESSAGE = "tag, message_id, blob, enqueued_at, visible_at, expires_at, attempts, token, claim"
_DEAD = "kind, queue, channel, message_id, reason, error, component, attempts, dead_at, blob, raw, claim, id"


class _Answer:
    """Where a kept statement whose answer is wanted (a dead letter's id) puts its cursor once sent."""

    __slots__ = ("cursor",)

    def __init__(self) -> None:
        self.cursor: psycopg.Cursor[Any] | None = None


#: a statement to send before the next: its SQL, parameters, whether they go in binary, the
#: error it raises when it is checked (see PgTx.settle_checked), and where its answer goes
_Pending = tuple[str, list[Any], bool, "Callable[[int | None], BaseException] | None", "_Answer | None"]


def _generic_plans(dsn: str) -> str:
    """``dsn`` with ``plan_cache_mode = force_generic_plan``: PostgreSQL re-planned every
    receive and acknowledgement of a deep channel (as much CPU as running them); they find
    their rows by index in any plan (``tests/bus/transport/postgres/test_postgres_plans.py``)."""
    try:
        options = conninfo_to_dict(dsn).get("options") or ""
        return make_conninfo(dsn, options=f"{options} -c plan_cache_mode=force_generic_plan".strip())
    except psycopg.Error:
        return dsn  # not a DSN: connecting reports it


@functools.lru_cache(maxsize=4096)
def table_of(channel: str) -> str:
    """The table of a channel: readable, unique (a hash of the whole name), within 63 bytes."""
    readable = re.sub(r"[^a-z0-9]+", "_", channel.lower())[:40]
    return f"q_{readable}_{hashlib.sha1(channel.encode()).hexdigest()[:10]}"


class PostgresTransport(StorageTransport):
    """Channels, dead letters and state in schema ``schema`` of the PostgreSQL database ``dsn``.

    ``synchronous_commit`` False lets PostgreSQL confirm commits before its WAL is flushed
    (a server crash may lose the last fraction of a second; a process crash never does)."""

    def __init__(self, dsn: str, *, schema: str = "coupler", synchronous_commit: bool = True,
                 file_lease_seconds: float = 300.0, **options: Any):
        super().__init__(**options)
        self.dsn = dsn
        self.file_lease_seconds = file_lease_seconds
        # checks the schema name; its connections (one a thread) are this transport's too
        self.store = PgStore(_generic_plans(dsn), schema=schema, synchronous_commit=synchronous_commit,
                             keys=("store.postgres.dsn", "store.postgres.postgres_schema"))
        self.schema = schema
        self.notify_channel = f"coupler_{schema}"
        self._lock = threading.Lock()
        self._tables: set[str] = set()
        self._pending: Counter[tuple[str, str]] = Counter()
        self._pending_since = time.monotonic()
        self._wake = threading.Condition()
        self._arrivals: Counter[str] = Counter()
        self._seen = threading.local()  # (channel, arrivals) before a thread's last look
        self._opened = False
        self._listener: threading.Thread | None = None
        self._listening = threading.Event()
        self._closing = threading.Event()
        self._identities = PgIdentityRepository(self.store)

    def __repr__(self) -> str:
        return f"PostgresTransport(schema={self.schema!r})"

    # -- connections -----------------------------------------------------------------------

    def open(self) -> PostgresTransport:
        if self._opened:
            return self
        try:
            self.store.open()
            # as the store's: none of it when this list of statements was applied before
            self.store.ensure_ddl("postgres", [st for st in _OWN_DDL.format(s=self.schema).split(";") if st.strip()])
        except BaseException:
            self.store.close()  # what it connected: a caller trying again does not pile them up
            raise
        self._closing.clear()
        self._opened = True
        return self

    def close(self) -> None:
        try:
            self._write_counts(force=True)
        except TransportError as exc:  # closing goes on: said, not silently lost
            with self._lock:
                lost = sorted({channel for channel, _ in self._pending})
            log.warning("schema %s: the last counts of %s not added to %s.counters (the channels' statistics "
                        "stay below what this process did): %s", self.schema, ", ".join(lost), self.schema, exc)
        self._closing.set()
        self._opened = False
        with self._wake:
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.join(timeout=5)
        self.store.close()

    def destroy(self) -> None:
        """Delete the schema and everything in it (tests, decommissioning a site)."""
        self.store.open().drop()
        self.close()

    def _conn(self) -> psycopg.Connection[Any]:
        return self.store._connection()

    def claim_fresh(self, consumer: str, keys: Iterable[str], until: float) -> ClaimOutcome:
        """The claim and the look of :meth:`StorageTransport.claim_fresh` with their ``BEGIN``
        and ``COMMIT`` in one round trip (:func:`~coupler.bus.transport.amqp.store.claim_then_look`)."""
        if getattr(self._local, "tx", None) is not None:  # within this thread's transaction: its statements
            return super().claim_fresh(consumer, keys, until)
        keys = sorted(set(keys))
        if not keys:
            return "claimed"
        now = self.clock()
        table = f"{self.schema}.state"
        look = f"SELECT key FROM {table} WHERE scope = %s AND key = ANY(%s) AND (expires_at IS NULL OR expires_at > %s)"
        with self.store.pipelined() as c:
            claimed, recorded = claim_then_look(c, table, f"claim:{consumer}", keys, until, now,
                                                look, [f"seen:{consumer}", keys, now])
        return claim_outcome(keys, claimed, recorded)

    @contextlib.contextmanager
    def begin(self) -> Iterator[PgTx]:
        conn = self._conn()
        tx = PgTx(self, conn)
        with self.store.reporting(conn):  # a TransportError naming store.postgres.dsn or the schema
            try:
                yield tx
                tx.commit()
            except BaseException:  # a failed pipeline is rolled back already (PgStore.pipeline)
                if tx.begun and not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    with contextlib.suppress(psycopg.Error):
                        conn.execute("ROLLBACK")
                raise
        self._tables |= tx.created
        if tx.counts:
            with self._lock:
                self._pending.update(tx.counts)
            self._flush_counts()

    def _flush_counts(self) -> None:
        """:meth:`_write_counts` when a second has passed since the last flush; a failure is
        a warning (the counts are kept for the next): what called it (a committed
        transaction, an idle wait) has not failed."""
        try:
            self._write_counts()
        except TransportError as exc:
            log.warning("schema %s: channel counts not added to %s.counters now (kept for the next "
                        "flush, in a second): %s", self.schema, self.schema, exc)

    def _write_counts(self, *, force: bool = False) -> None:
        """Add this process's counts to ``counters`` (once a second: one row per channel is
        shared by every daemon, so each commit must not lock it). Never inside a transaction
        of this thread's connection: the counts would be lost with its rollback, and the rows
        locked until its end."""
        with self._lock:
            if not self._pending or (not force and time.monotonic() - self._pending_since < 1.0):
                return
        if self._conn().info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            return
        with self._lock:
            if not self._pending:  # another thread's flush took them
                return
            pending, self._pending = self._pending, Counter()
            self._pending_since = time.monotonic()
        try:
            self.store.write([], dict(pending))
        except TransportError:
            with self._lock:
                self._pending.update(pending)
            raise

    # -- wake-ups --------------------------------------------------------------------------

    def _listen(self) -> None:
        """The listener thread: ``LISTEN`` on a connection of its own, counting announcements
        and waking the waiting receivers. When its connection fails it says so once (a
        warning naming the DSN key and the server), listens again every second, and says when
        it is back (meanwhile the receivers look every 0.25 s: messages arrive, later)."""
        conn: psycopg.Connection[Any] | None = None
        down = False  # said since it last listened: one warning per outage, not one a second
        while not self._closing.is_set():
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=10)
                    conn.execute(f'LISTEN "{self.notify_channel}"')
                    self._listening.set()
                    if down:
                        down = False
                        log.info("%s: listening for wake-ups on PostgreSQL at %s again", self.store.keys[0],
                                 dsn_place(self.dsn))
                for note in conn.notifies(timeout=0.5):
                    with self._wake:
                        self._arrivals[note.payload] += 1
                        self._wake.notify_all()
            except psycopg.Error as exc:
                self._listening.clear()
                if conn is not None:
                    with contextlib.suppress(Exception):
                        conn.close()
                conn = None
                if not down:
                    down = True
                    log.warning("%s", TransportError(
                        f"the wake-up listener of schema {self.schema} cannot LISTEN {self.notify_channel} on "
                        f"PostgreSQL at {dsn_place(self.dsn)}: {' '.join(str(exc).split())}; waiting receivers look "
                        "every 0.25 s meanwhile (messages arrive, later), it listens again every second",
                        where=self.store.keys[0],
                        hint="check that the server runs and accepts connections from this host"))
                self._closing.wait(1.0)
        self._listening.clear()
        if conn is not None:
            conn.close()

    def before_look(self, channel: str) -> None:
        with self._wake:
            self._seen.mark = (channel, self._arrivals[channel])

    def wait_for(self, channel: str, timeout: float) -> None:
        """Wait until a message is announced on ``channel`` after the count noted by
        :meth:`before_look` (or now), or ``timeout``. A process listens only once it first
        waits (a process that only sends is not woken by every message). A waiting process
        adds the counts it has not added yet to ``counters`` (they would wait for its next
        commit: other daemons and ``coupler ctl`` read them there)."""
        if self._pending:
            self._flush_counts()
        if self._listener is None:
            with self._wake:
                if self._listener is None and self._opened:
                    self._listener = threading.Thread(target=self._listen, name=f"listen {self.schema}",
                                                      daemon=True)
                    self._listener.start()
            self._listening.wait(timeout)
            return  # what was sent before it listened: the caller looks again
        mark = getattr(self._seen, "mark", None)
        with self._wake:
            before = mark[1] if mark is not None and mark[0] == channel else self._arrivals[channel]
            self._wake.wait_for(lambda: self._arrivals[channel] != before, timeout)

    def committed(self, tx: StorageTransaction) -> None:
        if tx.sent_to:
            with self._wake:
                self._arrivals.update(tx.sent_to)
                self._wake.notify_all()

    # -- what only PostgreSQL gives ---------------------------------------------------------

    def file_state(self, adapter: str, owner: str) -> PgFileState:
        return PgFileState(self.store, adapter, owner, lease_seconds=self.file_lease_seconds,
                           lease_key="store.postgres.file_lease_seconds")

    def exports_shared_figures(self) -> bool:
        return self.store.hold_lock("metrics")


class PgTx(StorageTx):
    """One PostgreSQL transaction of a :class:`PostgresTransport`.

    Statements are few, as each costs the client about as much CPU as a round trip: the
    writes nobody waits for (messages put, journal rows, ``pg_notify``) are kept and sent as
    one statement (data-modifying CTEs) with the next statement or the ``COMMIT``; a
    transaction that is only such writes (a send) is that one statement, a transaction of
    its own, with no ``BEGIN`` or ``COMMIT``. So is a standalone receive (:attr:`alone`:
    lease and journal in one statement) or acknowledgement (delete and journal). An
    acknowledgement inside a transaction waits too (:meth:`settle_checked`): it goes out with
    the next statement or the ``COMMIT``, and fails the transaction when a lease was lost, so
    an acknowledging transaction (a handled message's outputs, keys and acknowledgement) is
    one round trip: ``BEGIN``, its statements and ``COMMIT`` in one pipeline. So are a nack
    (:meth:`requeue_checked`, :meth:`bury_checked`: the dead letter made from the row deleted,
    in the statement) and the release of claim-checked bodies after an acknowledgement
    (:meth:`release`: the deliveries know their claims; nothing is read back), and so is a
    dead letter (:meth:`bury_later`, and :meth:`bury_checked`: a delivery moved to the
    Invalid Message Channel): its id is read from the statement's answer once it is sent, and
    asked for before that (inside a transaction) it sends what is kept then (a caller not
    needing it before the commit calls ``invalid_later``). A message a receive dead-letters
    (expired, out of attempts) goes with its journal entry in one statement
    (:meth:`bury_held`), after a standalone receive's lease a transaction of its own."""

    journals_receipts = True

    def __init__(self, t: PostgresTransport, c: psycopg.Connection[Any]):
        self.t = t
        self.c = c
        self.s = t.schema
        self.created: set[str] = set()
        self.counts: Counter[tuple[str, str]] = Counter()
        #: channels to notify (with the time their messages are ready), journal rows and
        #: messages (by table) to write, not sent yet
        self.notify: dict[str, float] = {}
        self.journal_rows: list[JournalRow] = []
        self.puts: dict[str, list[tuple[Any, ...]]] = {}
        self.begun = False
        #: a statement of it ran alone (:attr:`alone`), committed
        self.ran_alone = False
        #: the writes of :meth:`record_claimed` not sent yet (statements of the keyed state
        #: and their parameters), and the keys they write
        self.records: list[tuple[str, list[Any]]] = []
        self.recorded: set[tuple[str, str]] = set()
        #: statements not sent yet, in their order, before the writes kept: the checked
        #: acknowledgements of :meth:`settle_checked` (with the error a failure raises) and
        #: the writes kept before each
        self.pending: list[_Pending] = []

    def x(self, sql: str, params: Any = None, *, literal: bool = False, **options: Any) -> psycopg.Cursor[Any]:
        """Run a statement of this transaction, after what is kept so far (the writes, the
        acknowledgements of :meth:`settle_checked`; with them: one round trip, pipeline mode).
        The first one goes out with its ``BEGIN`` too, or alone in a
        transaction of its own when this transaction is :attr:`alone`. ``literal``: values
        inlined, planned for them (a journal query's time range), not generically."""
        run = psycopg.ClientCursor(self.c).execute if literal else self.c.execute
        pending = self._pending()
        if self.alone and not self.begun and not pending:
            # what follows (dead-lettering, rare) is a transaction of its own
            self.alone, self.ran_alone = False, True
            return run(sql, params, **options)
        begin, self.begun = not self.begun, True
        with self._sending(pending, begin=begin):
            return run(sql, params, **options)

    def commit(self) -> None:
        """Send what is kept and commit; nothing at all for a transaction that did nothing."""
        pending = self._pending()
        if not self.begun and len(pending) == 1 and pending[0][3] is None and pending[0][4] is None:
            statement, args, binary, _lost, _answer = pending[0]  # writes only: a transaction of its own
            self.c.execute(statement, args, binary=binary)
            return
        if not (self.begun or pending):
            return
        begin, self.begun = not self.begun, True  # a checked acknowledgement may fail it: BEGIN
        with self._sending(pending, begin=begin):
            self.c.execute("COMMIT")

    def _send_kept(self) -> None:
        """Send what is kept now (with its ``BEGIN`` when it is the first): one round trip."""
        pending = self._pending()
        if pending:
            begin, self.begun = not self.begun, True
            with self._sending(pending, begin=begin):
                pass

    def _answer_of(self, answer: _Answer, column: int) -> Callable[[], int]:
        """A function answering column ``column`` of the first row of a kept statement that
        returns ``answer`` (a dead letter's id): read once sent (with the next statement or the
        ``COMMIT``); asked for before that, what is kept is sent then."""
        got: list[int] = []

        def value() -> int:
            if not got:
                if answer.cursor is None:  # still kept: asked for within the transaction
                    self._send_kept()
                assert answer.cursor is not None  # sent, and it did not fail (that raised)
                row = answer.cursor.fetchone()
                assert row is not None  # the statement's one row
                got.append(int(row[column]))
            return got[0]

        return value

    def _pending(self) -> list[_Pending]:
        """The statements to send before the next (emptied): those of :attr:`pending`, then
        the writes kept."""
        self._seal()
        pending, self.pending = self.pending, []
        return pending

    def _seal(self) -> None:
        """The writes kept so far, as one statement of :attr:`pending` (what follows keeps its order)."""
        writes = self._writes()
        if writes is not None:
            self.pending.append((*writes, None, None))

    @contextlib.contextmanager
    def _sending(self, pending: list[_Pending], *, begin: bool) -> Iterator[None]:
        """``BEGIN`` (``begin``), ``pending`` and the statement(s) of the block in one pipeline
        (one round trip; none when there is nothing before the block's). A checked
        acknowledgement that found a message no longer held (its statement divides by zero)
        raises its error; PostgreSQL runs none of the statements after it, and the transaction
        is rolled back at once, psycopg's prepared statements with it (:meth:`PgStore.pipeline`)."""
        if not (begin or pending):
            yield
            return
        checks: list[tuple[psycopg.Cursor[Any], Callable[[int | None], BaseException]]] = []
        try:
            with self.t.store.pipeline(self.c):  # rolled back when it fails: see PgStore.pipeline
                if begin:
                    self.c.execute("BEGIN")
                for statement, args, binary, lost, answer in pending:
                    cursor = self.c.execute(statement, args, binary=binary)
                    if lost is not None:
                        checks.append((cursor, lost))
                    if answer is not None:
                        answer.cursor = cursor
                yield
        except psycopg.errors.DivisionByZero:
            failed = next((lost for cursor, lost in checks if cursor.pgresult is None), None)
            if failed is None:
                raise
            raise failed(None) from None

    def _has_writes(self) -> bool:
        return bool(self.puts or self.journal_rows or self.notify or self.records)

    def _writes(self) -> tuple[str, list[Any], bool] | None:
        """The writes kept (emptied): one statement, its parameters and whether they go in
        binary (arrays); None when there are none."""
        if not self._has_writes():
            return None
        parts: list[str] = []
        params: list[Any] = []
        binary = False
        for table, rows in self.puts.items():
            binary |= _rows(parts, params, table, _PUT, rows)
        if self.journal_rows:
            binary |= _rows(parts, params, f"{self.s}.journal", _JOURNAL, self.journal_rows)
        for part, args in self.records:
            parts.append(part)
            params.extend(args)
        # a channel is announced only when it had no ready message: a receiver waits only
        # after finding none, and one that skipped a message another was leasing at that
        # moment looks again within 0.25 s (a busy channel's consumers need no wake-ups)
        tail = ", ".join(f"(SELECT pg_notify(%s, %s) WHERE (SELECT visible_at FROM {self.s}.{table_of(c)} "
                         "WHERE visible_at <= %s ORDER BY visible_at LIMIT 1) IS NULL)"  # not EXISTS: a seq scan
                         for c in sorted(self.notify)) or "1"
        for channel, ready in sorted(self.notify.items()):
            params += [self.t.notify_channel, channel, ready]
        self.puts, self.journal_rows, self.notify = {}, [], {}
        self.records, self.recorded = [], set()
        ctes = ", ".join(f"w{i} AS ({part})" for i, part in enumerate(parts))
        return (f"WITH {ctes} SELECT {tail}" if ctes else f"SELECT {tail}"), params, binary

    def ddl(self, lock: str, statements: str) -> None:
        """Run ``statements`` (``;``-separated ``CREATE ... IF NOT EXISTS``) holding the advisory
        lock ``lock``: two processes creating the same tables at once would race."""
        self.x("SELECT pg_advisory_xact_lock(hashtext(%s))", (lock,))
        for statement in statements.split(";"):
            self.x(statement)

    def _table(self, channel: str, *, create: bool = False) -> str | None:
        table = table_of(channel)
        if table in self.t._tables or table in self.created:
            return f"{self.s}.{table}"
        exists = self.x("SELECT 1 FROM " + self.s + ".queues WHERE name = %s", (channel,)).fetchone()
        if exists is None:
            if not create:
                return None
            self.ddl(f"{self.s}.{table}", _CHANNEL_DDL.format(t=f"{self.s}.{table}", i=table))
            self.x(f"INSERT INTO {self.s}.queues (name, tab) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                           (channel, table))
        self.created.add(table)
        return f"{self.s}.{table}"

    def put(self, messages: list[Stored]) -> None:
        for m in messages:
            table = self._table(m.channel, create=True)
            assert table is not None  # created
            self.puts.setdefault(table, []).append(
                (m.message_id, m.blob, m.enqueued_at, m.visible_at, m.expires_at, m.attempts, m.claim))
            self.notify[m.channel] = max(m.visible_at, self.notify.get(m.channel, m.visible_at))

    def scan(self, channel: str, *, ready_at: float | None, after: tuple[float, int] | None = None,
             limit: int = 100) -> list[Stored]:
        table = self._table(channel)
        if table is None:
            return []
        clauses, args = [], []
        if ready_at is not None:
            clauses.append("visible_at <= %s")
            args.append(ready_at)
        if after is not None:
            clauses.append("(visible_at, tag) > (%s, %s)")
            args.extend(after)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        lock = " FOR UPDATE SKIP LOCKED" if ready_at is not None else ""
        rows = self.x(
            f"SELECT {_MESSAGE} FROM {table} {where} ORDER BY visible_at, tag LIMIT %s{lock}", [*args, limit]
        ).fetchall()
        return [_stored(channel, r) for r in rows]

    def update(self, message: Stored, *, token: int | None, visible_at: float, attempts: int) -> bool:
        table = self._table(message.channel)
        row = self.x(
            f"UPDATE {table} SET token = %s, visible_at = %s, attempts = %s "
            "WHERE tag = %s AND token IS NOT DISTINCT FROM %s RETURNING tag",
            (token, visible_at, attempts, message.tag, message.token),
        ).fetchone()
        return row is not None

    def lease(self, messages: list[Stored], *, token: int, until: float) -> list[Stored]:
        if not messages:
            return []
        # the rows were read with FOR UPDATE by this transaction: nobody else can change them
        self.x(f"UPDATE {self._table(messages[0].channel)} SET token = %s, visible_at = %s, "
                       "attempts = attempts + 1 WHERE tag = ANY(%s)", (token, until, [m.tag for m in messages]),
                       binary=True)
        return messages

    def take(self, channel: str, *, now: float, limit: int, token: int, until: float,
             consumer: str | None = None, max_attempts: int = 0) -> list[Stored]:
        # scan, lease and journal in one statement (the rows as they were before the lease)
        table = self._table(channel)
        if table is None:
            return []
        journal = ""
        args: list[Any] = [now, limit, token, until]
        if consumer is not None:
            journal = (
                f", j AS (INSERT INTO {self.s}.journal (at, channel, message_id, event, detail) "
                f"SELECT %s, %s, n.message_id, '{policy.RECEIVED}', %s FROM n JOIN c ON c.tag = n.tag "
                "WHERE (n.expires_at IS NULL OR n.expires_at > %s) AND (c.token IS NULL OR c.attempts < %s) "
                "ORDER BY c.visible_at, c.tag)"
            )
            args += [now, channel, consumer, now, max_attempts]
        # c: the rows locked, as they were (small columns); n: leased, with their blobs
        rows = self.x(
            f"WITH c AS (SELECT tag, visible_at, attempts, token FROM {table} WHERE visible_at <= %s "
            "ORDER BY visible_at, tag LIMIT %s FOR UPDATE SKIP LOCKED), "
            f"n AS (UPDATE {table} q SET token = %s, visible_at = %s, attempts = q.attempts + 1 "
            "WHERE q.tag = ANY(ARRAY(SELECT tag FROM c)) "
            f"RETURNING q.tag, q.message_id, q.blob, q.enqueued_at, q.expires_at, q.claim){journal} "
            "SELECT n.tag, n.message_id, n.blob, n.enqueued_at, c.visible_at, n.expires_at, c.attempts, c.token, "
            "n.claim FROM n JOIN c ON c.tag = n.tag ORDER BY c.visible_at, c.tag",
            args, binary=True,
        ).fetchall()
        return [_stored(channel, r) for r in rows]

    def settle(self, channel: str, tags: list[tuple[int, int | None]], rows: list[JournalRow]) -> list[Stored]:
        # one statement: lock the rows still held under their tokens; when that is all of
        # them, delete them and journal the acknowledgements (the rows' message ids are the
        # messages', their time and event the same for all: one acknowledgement)
        table = self._table(channel)
        if table is None or not tags:
            return []
        if not _one_acknowledgement(rows):
            return super().settle(channel, tags, rows)
        sql, params = self._settle(table, channel, tags, rows, "SELECT tag, message_id, claim FROM h")
        held = self.x(sql, params, binary=True).fetchall()
        return [Stored(channel, message_id, b"", 0.0, 0.0, claim=claim, tag=tag) for tag, message_id, claim in held]

    def settle_checked(self, channel: str, tags: list[tuple[int, int | None]], rows: list[JournalRow],
                       lost: Callable[[int | None], BaseException]) -> None:
        # in a transaction (not a standalone acknowledgement, one statement already): the
        # statement of settle() answering 1, or dividing by zero when a message is not held
        # (nothing deleted, the transaction failed), kept in :attr:`pending` for the next
        # statement or the COMMIT: no round trip of its own
        table = self._table(channel)
        if (table is None or not tags or not _one_acknowledgement(rows)
                or (self.alone and not self.begun and not self.pending and not self._has_writes())):
            super().settle_checked(channel, tags, rows, lost)
            return
        sql, params = self._settle(table, channel, tags, rows, "SELECT 1 / (SELECT ok FROM ok)::int")
        self._seal()  # the writes kept before it go before it
        self.pending.append((sql, list(params), True, lost, None))

    def requeue_checked(self, message: Stored, *, visible_at: float, attempts: int,
                        lost: Callable[[int | None], BaseException]) -> None:
        # the update of update(), answering 1 or dividing by zero when the lease was lost,
        # kept for the next statement or the COMMIT (see settle_checked)
        table = self._table(message.channel)
        if table is None:
            raise lost(message.tag)
        self._keep(
            f"WITH u AS (UPDATE {table} SET token = NULL, visible_at = %s, attempts = %s "
            "WHERE tag = %s AND token IS NOT DISTINCT FROM %s RETURNING 1) SELECT 1 / (SELECT count(*) FROM u)",
            [visible_at, attempts, message.tag, message.token], lost)

    def bury_checked(self, tag: int, token: int | None, dead: Buried,
                     lost: Callable[[int | None], BaseException]) -> Callable[[], int]:
        # the message deleted and its dead letter inserted from the row deleted (its id,
        # attempts, blob and claim: as bury() of what remove() returned), in one statement
        # answering 1 and the dead letter's id, or dividing by zero when the lease was lost;
        # kept (see settle_checked), the id read once sent
        assert dead.channel is not None  # a message of a channel
        table = self._table(dead.channel)
        if table is None:
            raise lost(tag)
        answer = _Answer()
        self._keep(
            f"WITH g AS (DELETE FROM {table} WHERE tag = %s AND (%s::bigint IS NULL OR token = %s) "
            "RETURNING message_id, blob, attempts, claim), "
            f"b AS (INSERT INTO {self.s}.dead_letters ({_DEAD.removesuffix(', id')}) "
            "SELECT %s, %s, %s, g.message_id, %s, %s, %s, g.attempts, %s, g.blob, %s::bytea, g.claim FROM g "
            "RETURNING id) "
            "SELECT 1 / (SELECT count(*) FROM g), (SELECT id FROM b)",
            [tag, token, token, dead.kind, dead.queue, dead.channel, dead.reason, dead.error, dead.component,
             dead.dead_at, dead.raw], lost, answer)
        return self._answer_of(answer, 1)

    def bury_held(self, m: Stored, dead: Buried, rows: list[JournalRow]) -> bool:
        # one statement: the row deleted under its token, its dead letter (its message id, blob
        # and claim from the row deleted; the attempts as read) and the journal rows made from
        # it -- nothing when it is gone -- answering whether it was there. After a standalone
        # receive's lease (a transaction of its own) it is one too: no BEGIN and COMMIT
        table = self._table(m.channel)
        if table is None:
            return False
        journal = " UNION ALL ".join(["SELECT %s::float8, %s::text, %s::text, %s::text, %s::text, %s::text, "
                                      "%s::text FROM g"] * len(rows))
        sql = (f"WITH g AS (DELETE FROM {table} WHERE tag = %s AND (%s::bigint IS NULL OR token = %s) "
               "RETURNING message_id, blob, claim), "
               f"b AS (INSERT INTO {self.s}.dead_letters ({_DEAD.removesuffix(', id')}) "
               "SELECT %s, %s, %s, g.message_id, %s, %s, %s, %s, %s, g.blob, %s::bytea, g.claim FROM g)"
               + (f", j AS (INSERT INTO {self.s}.journal ({', '.join(n for n, _ in _JOURNAL)}) {journal})"
                  if rows else "")
               + " SELECT count(*) FROM g")
        params = [m.tag, m.token, m.token, dead.kind, dead.queue, dead.channel, dead.reason, dead.error,
                  dead.component, dead.attempts, dead.dead_at, dead.raw, *(v for r in rows for v in r)]
        if self.ran_alone and not self.begun and not self.pending and not self._has_writes():
            row = self.c.execute(sql, params).fetchone()  # nothing of this transaction is open
        else:
            row = self.x(sql, params).fetchone()
        assert row is not None  # an aggregate
        return bool(row[0])

    def bury_later(self, dead: Buried) -> Callable[[], int]:
        # the insert of bury(), kept for the next statement or the COMMIT, its id read then
        answer = _Answer()
        self._keep(
            f"INSERT INTO {self.s}.dead_letters ({_DEAD.removesuffix(', id')}) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            [dead.kind, dead.queue, dead.channel, dead.message_id, dead.reason, dead.error, dead.component,
             dead.attempts, dead.dead_at, dead.blob, dead.raw, dead.claim], None, answer)
        return self._answer_of(answer, 0)

    def release(self, claims: dict[str, int]) -> None:
        # nobody waits for its answer: kept for the next statement or the COMMIT, two
        # statements. The first locks the counts (FOR UPDATE: it waits for another transaction
        # holding one, and holds them until this one ends); the second, whose snapshot comes
        # after the lock and so sees every count as committed, writes each count less its
        # references, or deletes it and its body when none is left (no count: the body too)
        if not claims:
            return
        refs = sorted(claims)
        table = f"{self.s}.state"
        keys = _array([f"{c} refs" for c in refs])
        self._keep(f"SELECT 1 FROM {table} WHERE scope = %s AND key = ANY(%s::text[]) ORDER BY key FOR UPDATE",
                   [CLAIMS, keys], None)
        self._keep(
            "WITH u AS (SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[]) AS u(claim, key, n)), "
            # the conversion only of the counts' rows (a body's is no number)
            "c AS (SELECT u.claim, u.key, convert_from(r.value, 'UTF8')::bigint - u.n AS left "
            f"FROM u LEFT JOIN {table} r ON r.scope = %s AND r.key = u.key), "
            f"w AS (UPDATE {table} s SET value = convert_to(c.left::text, 'UTF8') FROM c "
            "WHERE s.scope = %s AND s.key = c.key AND c.left > 0) "
            f"DELETE FROM {table} s USING c WHERE s.scope = %s AND s.key IN (c.key, c.claim) "
            "AND (c.left IS NULL OR c.left <= 0)",
            [_array(refs), keys, _array([claims[c] for c in refs]), CLAIMS, CLAIMS, CLAIMS], None)

    def _keep(self, sql: str, params: list[Any], lost: Callable[[int | None], BaseException] | None,
              answer: _Answer | None = None) -> None:
        """Keep statement ``sql`` for the next statement or the ``COMMIT``, after the writes
        kept before it; ``lost``: it is checked (a division by zero raises ``lost(None)``);
        ``answer``: its cursor is put there once sent."""
        self._seal()
        self.pending.append((sql, params, False, lost, answer))

    def _settle(self, table: str, channel: str, tags: list[tuple[int, int | None]], rows: list[JournalRow],
                answer: str) -> tuple[str, tuple[Any, ...]]:
        """The statement of an acknowledgement (see :meth:`settle`), ending with ``answer``
        (of CTEs ``h``: the rows held, ``ok``: whether that is all of them)."""
        tag_array = _array([t for t, _ in tags])
        details = [r.detail for r in rows]  # one for all (their consumer) or one each
        same = details.count(details[0]) == len(details)
        return (
            "WITH u AS (SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::text[]) WITH ORDINALITY "
            "AS u(tag, token, detail, n)), "
            f"l AS (SELECT tag, message_id, claim, token FROM {table} WHERE tag = ANY(%s::bigint[]) FOR UPDATE), "
            "h AS (SELECT l.tag, l.message_id, l.claim, u.detail, u.n FROM l JOIN u ON l.tag = u.tag "
            "AND (u.token IS NULL OR l.token = u.token)), "
            "ok AS (SELECT count(*) = %s AS ok FROM h), "
            f"d AS (DELETE FROM {table} WHERE tag = ANY(%s::bigint[]) AND (SELECT ok FROM ok)), "
            f"j AS (INSERT INTO {self.s}.journal (at, channel, message_id, event, detail) "
            "SELECT %s, %s, h.message_id, %s, coalesce(h.detail, %s) FROM h WHERE (SELECT ok FROM ok) ORDER BY h.n) "
            + answer,
            (tag_array, _array([k for _, k in tags]), None if same else _array(details), tag_array, len(tags),
             tag_array, rows[0].at, channel, rows[0].event, details[0] if same else None),
        )

    def remove(self, channel: str, tags: list[tuple[int, int | None]]) -> list[Stored]:
        table = self._table(channel)
        if table is None or not tags:
            return []
        rows = self.x(
            f"DELETE FROM {table} q USING unnest(%b::bigint[], %b::bigint[]) AS u(tag, token) "
            f"WHERE q.tag = ANY(%b::bigint[]) AND q.tag = u.tag AND (u.token IS NULL OR q.token = u.token) "
            f"RETURNING {', '.join('q.' + c for c in _MESSAGE.split(', '))}",
            ([t for t, _ in tags], [k for _, k in tags], [t for t, _ in tags]), binary=True,
        ).fetchall()
        return [_stored(channel, r) for r in rows]

    def channels(self) -> set[str]:
        return {r[0] for r in self.x(f"SELECT name FROM {self.s}.queues")}

    def census(self, channel: str, now: float) -> tuple[int, int, int, float | None]:
        table = self._table(channel)
        if table is None:
            return 0, 0, 0, None
        row = self.x(
            f"SELECT count(*), count(*) FILTER (WHERE visible_at <= %s), "
            f"count(*) FILTER (WHERE token IS NOT NULL AND visible_at > %s), min(enqueued_at) FROM {table}",
            (now, now),
        ).fetchone()
        assert row is not None  # an aggregate has one row
        return row[0], row[1], row[2], row[3]

    def bury(self, dead: Buried) -> int:
        row = self.x(
            f"INSERT INTO {self.s}.dead_letters ({_DEAD.removesuffix(', id')}) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (dead.kind, dead.queue, dead.channel, dead.message_id, dead.reason, dead.error, dead.component,
             dead.attempts, dead.dead_at, dead.blob, dead.raw, dead.claim),
        ).fetchone()
        assert row is not None  # INSERT ... RETURNING
        return int(row[0])

    def buried(self, *, id: int | None = None, queue: str | None = None, kind: DeadKind | None = None,
               limit: int = 100, delete: bool = False) -> list[Buried]:
        where, args = sql_filters.dead_letter_where(queue, kind, "%s")
        if id is not None:
            where, args = f"{where} AND id = %s" if where else "WHERE id = %s", [*args, id]
        table = f"{self.s}.dead_letters"
        chosen = f"SELECT {_DEAD} FROM {table} {where} ORDER BY id DESC LIMIT %s"
        if delete:
            chosen = (f"DELETE FROM {table} WHERE id = ANY(ARRAY(SELECT id FROM {table} {where} ORDER BY id DESC "
                      f"LIMIT %s)) RETURNING {_DEAD}")
        found = [_buried(r) for r in self.x(chosen, [*args, limit]).fetchall()]
        return sorted(found, key=lambda b: -b.id) if delete else found  # RETURNING keeps no order

    def append(self, rows: list[JournalRow]) -> None:
        self.journal_rows += rows  # tuples of the columns of _JOURNAL

    def count(self, counts: dict[tuple[str, str], int]) -> None:
        self.counts.update(counts)

    def query_journal(self, query: JournalQuery) -> list[JournalEntry]:
        sql, args = sql_filters.journal_query(f"{self.s}.journal", "%s", query)
        return sql_filters.journal_entries(self.x(sql, args, literal=True).fetchall())

    def counters(self) -> dict[str, dict[str, int]]:
        """The counters table, with the counts this process has not added to it yet (added
        first when this transaction has not begun)."""
        self.t._write_counts(force=True)
        counters = self.t.store.counters()
        with self.t._lock:
            pending = dict(self.t._pending)
        for (channel, counter), n in pending.items():
            row = counters.setdefault(channel, dict.fromkeys(policy.COUNTERS, 0))
            row[counter] = row.get(counter, 0) + n
        return counters

    def state(self, scope: str, keys: Iterable[str] | None = None, *, lock: bool = False) -> dict[str, bytes]:
        keys = None if keys is None else list(keys)
        if keys == []:
            return {}
        sql, args = sql_filters.state_select(f"{self.s}.state", scope, keys, self.t.clock())
        return {k: bytes(v) for k, v in self.x(sql + (" FOR UPDATE" if lock else ""), args).fetchall()}

    def put_state(self, scope: str, values: dict[str, bytes | None], *, expires_at: float | None = None,
                  only_new: bool = False) -> set[str]:
        gone = [k for k, v in values.items() if v is None]
        if gone:
            self.x(*sql_filters.state_delete(f"{self.s}.state", scope, gone))
        kept = {k: v for k, v in values.items() if v is not None}
        if not kept:
            return set(gone)
        sql, args = sql_filters.state_upsert(f"{self.s}.state", scope, kept, expires_at, self.t.clock() if only_new else None)
        return set(gone) | {r[0] for r in self.x(sql, args).fetchall()}

    def record_claimed(self, seen_scope: str, keys: list[str], expires_at: float, claim_scope: str) -> None:
        # writes nobody waits for: kept, and sent with the next statement (an acknowledgement's
        # settle: one round trip for both) or the COMMIT, as parts of the one statement of the
        # kept writes (the claims deleted, the keys upserted: rows of their own)
        rows = {(scope, k) for scope in (seen_scope, claim_scope) for k in keys}
        if rows & self.recorded:  # a row twice in one statement: the kept ones go first
            self.x("SELECT 1")
        self.records.append(sql_filters.state_delete(f"{self.s}.state", claim_scope, keys))
        self.records.append(sql_filters.state_upsert(f"{self.s}.state", seen_scope, dict.fromkeys(keys, b""),
                                                     expires_at))
        self.recorded |= rows

    def forget(self, journal_before: float) -> int:
        self.x(f"DELETE FROM {self.s}.state WHERE expires_at <= %s", (self.t.clock(),))
        row = self.x(f"WITH gone AS (DELETE FROM {self.s}.journal WHERE at < %s RETURNING 1) "
                             "SELECT count(*) FROM gone", (journal_before,), literal=True).fetchone()
        return int(row[0]) if row else 0


def _one_acknowledgement(rows: list[JournalRow]) -> bool:
    """Whether the journal rows of an acknowledgement are one statement's: the same time and
    event, no trace ids or keys."""
    return len({(r.at, r.event) for r in rows}) == 1 and not any(r.trace_id or r.keys for r in rows)


def _array(values: list[Any]) -> str:
    """A PostgreSQL array literal of integers, floats and strings (None: NULL): far cheaper
    for psycopg than adapting a list element by element."""
    if all(type(v) is int for v in values):  # tags, tokens: at once
        return "{" + ",".join(map(str, values)) + "}"
    if values and all(type(v) is str for v in values):  # strings with nothing to escape (message ids): at once
        joined = "\0".join(values)
        if '"' not in joined and "\\" not in joined and joined.count("\0") == len(values) - 1:
            return '{"' + joined.replace("\0", '","') + '"}'
    return "{" + ",".join(
        "NULL" if v is None else str(v) if isinstance(v, int) else repr(v) if isinstance(v, float)
        else '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values
    ) + "}"


def _rows(parts: list[str], params: list[Any], table: str, columns: tuple[tuple[str, str], ...],
          rows: Sequence[tuple[Any, ...]]) -> bool:
    """Add to ``parts`` and ``params`` the insert of ``rows`` in their order: one row as it
    is; several as one parameter a column: its value when the same in all rows, else an
    array (bytes in binary, the rest as one literal). True when a parameter is binary."""
    names = ", ".join(name for name, _type in columns)
    if len(rows) == 1:
        parts.append(f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(columns))})")
        params.extend(rows[0])
        return False
    select: list[str] = []
    arrays: list[str] = []
    unnested: list[str] = []
    scalars: list[Any] = []
    values_of: list[Any] = []
    for (name, sql_type), values in zip(columns, zip(*rows, strict=True), strict=True):
        if values.count(values[0]) == len(values):
            select.append(f"%s::{sql_type}")
            scalars.append(values[0])
            continue
        select.append(f"u.{name}")
        unnested.append(name)
        binary = sql_type == "bytea"
        arrays.append(f"%{'b' if binary else 's'}::{sql_type}[]")
        values_of.append(list(values) if binary else _array(list(values)))
    source = (f"unnest({', '.join(arrays)}) WITH ORDINALITY AS u({', '.join(unnested)}, n)" if arrays
              else "generate_series(1, %s) AS u(n)")
    parts.append(f"INSERT INTO {table} ({names}) SELECT {', '.join(select)} FROM {source} ORDER BY n")
    params.extend([*scalars, *(values_of if arrays else [len(rows)])])
    return "%b::bytea[]" in arrays


def _stored(channel: str, r: tuple[Any, ...]) -> Stored:
    return Stored(channel, r[1], bytes(r[2]), r[3], r[4], r[5], r[6], r[7], r[8], r[0])


def _buried(r: tuple[Any, ...]) -> Buried:
    blob, raw = (bytes(b) if b is not None else None for b in r[9:11])
    return Buried(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], blob, raw, r[11], r[12])
