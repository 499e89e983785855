"""The embedded default transport: one SQLite database (WAL) in the site's data directory.

Schema (see ``_SCHEMA``): ``messages`` holds every message waiting on a channel, one row per
channel copy, found through the index ``(channel, visible_at)``; a row is *ready* when
``visible_at <= now``, *leased* while ``lease_token`` is set and ``visible_at`` (then the
lease expiry) is in the future, *delayed* when a nack pushed ``visible_at`` forward. Ack
deletes the row. ``dead_letters`` keeps dead and invalid messages, ``journal`` every state
change (the Message Store), ``seen`` the keys of the Idempotent Receiver, ``counters`` the
per-channel statistics, ``identities`` the Application Repository.

Every process and every thread has its own connection. Writes take the write lock up front
(``BEGIN IMMEDIATE``) and retry with short sleeps while another writer holds it, so that a
busy store costs tens of microseconds, not the milliseconds of SQLite's own busy handler.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import re
import sqlite3
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from coupler.canonical import Envelope
from coupler.canonical.envelope import HistoryEntry
from coupler.canonical.errors import CouplerError

from .backoff import BackoffPolicy
from .envelope_codec import decode, encode
from .identities import IdentityRepository
from .selectors import Selector, as_selector
from .transport import (
    DEFAULT_DEAD_LETTER,
    DEFAULT_INVALID,
    ChannelConfig,
    ChannelStats,
    DeadKind,
    DeadLetter,
    Delivery,
    JournalEntry,
    LeaseLostError,
    TransactionOps,
    Transport,
    TransportError,
    UnknownDeadLetterError,
)

log = logging.getLogger(__name__)

DB_FILENAME = "coupler.db"
CLAIM_PROPERTY = "coupler.claim"
_CHANNEL_NAME = re.compile(r"^[^\s\x00-\x1f]{1,200}$")
_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS channels (
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL DEFAULT 'queue',
    config TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS subscriptions (
    topic TEXT NOT NULL,
    name TEXT NOT NULL,
    channel TEXT NOT NULL,
    selector TEXT,
    created_at REAL NOT NULL,
    PRIMARY KEY (topic, name)
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY,
    channel TEXT NOT NULL,
    message_id TEXT NOT NULL,
    visible_at REAL NOT NULL,
    enqueued_at REAL NOT NULL,
    expires_at REAL,
    attempt INTEGER NOT NULL DEFAULT 0,
    lease_token INTEGER,
    lease_owner TEXT,
    claim TEXT,
    envelope BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_ready ON messages (channel, visible_at);
CREATE INDEX IF NOT EXISTS messages_expiring ON messages (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_claim ON messages (claim) WHERE claim IS NOT NULL;
CREATE TABLE IF NOT EXISTS dead_letters (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    queue TEXT NOT NULL,
    channel TEXT,
    message_id TEXT,
    reason TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    component TEXT NOT NULL DEFAULT '',
    attempts INTEGER NOT NULL DEFAULT 0,
    dead_at REAL NOT NULL,
    claim TEXT,
    envelope BLOB,
    raw BLOB
);
CREATE INDEX IF NOT EXISTS dead_letters_queue ON dead_letters (queue, id);
CREATE INDEX IF NOT EXISTS dead_letters_claim ON dead_letters (claim) WHERE claim IS NOT NULL;
CREATE TABLE IF NOT EXISTS journal (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    channel TEXT,
    message_id TEXT,
    event TEXT NOT NULL,
    detail TEXT
);
CREATE TABLE IF NOT EXISTS counters (
    channel TEXT PRIMARY KEY,
    sent INTEGER NOT NULL DEFAULT 0,
    received INTEGER NOT NULL DEFAULT 0,
    acked INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    dead INTEGER NOT NULL DEFAULT 0,
    invalid INTEGER NOT NULL DEFAULT 0,
    expired INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS seen (
    consumer TEXT NOT NULL,
    key TEXT NOT NULL,
    seen_at REAL NOT NULL,
    PRIMARY KEY (consumer, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS seen_age ON seen (seen_at);
CREATE TABLE IF NOT EXISTS identities (
    id INTEGER PRIMARY KEY,
    class TEXT NOT NULL,
    provider TEXT,
    name TEXT,
    version TEXT,
    channel TEXT NOT NULL,
    adapter TEXT,
    registered_at REAL NOT NULL,
    UNIQUE (class, provider, name, version, channel)
);
"""
_COUNTERS = ("sent", "received", "acked", "failed", "dead", "invalid", "expired")


def _ts(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def check_channel_name(channel: str) -> str:
    if not isinstance(channel, str) or not _CHANNEL_NAME.match(channel):
        raise TransportError(
            f"bad channel name {channel!r}",
            hint="use 1 to 200 characters without spaces or control characters, e.g. orders.in",
        )
    return channel


class SqliteTransport(Transport):
    """Durable channels in ``DATA_DIR/coupler.db`` (SQLite, WAL).

    ``synchronous`` is ``FULL`` (every commit of a send, ack or nack is fsync'd) or
    ``NORMAL`` (the WAL is fsync'd at checkpoints only: a power failure may lose the last
    commits, a process crash loses nothing). Lease grants are always committed without an
    fsync of their own: losing one only makes a message visible again early.
    ``claim_threshold`` is the body size (bytes) above which a body is stored as a file in
    ``DATA_DIR/claims`` (Claim Check). ``clock`` gives the time in seconds (tests pass a
    controllable clock).
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        synchronous: str = "FULL",
        busy_timeout: float = 30.0,
        backoff: BackoffPolicy | None = None,
        lease_seconds: float = 30.0,
        claim_threshold: int = 256 * 1024,
        journal_retention: float = 7 * 86400.0,
        idempotency_retention: float = 7 * 86400.0,
        dead_letter: str = DEFAULT_DEAD_LETTER,
        invalid: str = DEFAULT_INVALID,
        clock: Callable[[], float] = time.time,
        filename: str = DB_FILENAME,
    ):
        self.data_dir = Path(data_dir)
        self.synchronous = str(synchronous).upper()
        if self.synchronous not in _SYNCHRONOUS:
            raise TransportError(
                f"bad synchronous setting {synchronous!r}", where="store.synchronous",
                hint="use FULL or NORMAL",
            )
        self.path = self.data_dir / filename
        self.claims_dir = self.data_dir / "claims"
        self.busy_timeout = busy_timeout
        self.backoff = backoff or BackoffPolicy()
        self.lease_seconds = lease_seconds
        self.claim_threshold = claim_threshold
        self.journal_retention = journal_retention
        self.idempotency_retention = idempotency_retention
        self.dead_letter_default = dead_letter
        self.invalid_default = invalid
        self.clock = clock
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._opened = False
        self._pid = os.getpid()
        self._rng = random.Random()
        self._identities = IdentityRepository(self)

    def __repr__(self) -> str:
        return f"SqliteTransport({str(self.data_dir)!r}, synchronous={self.synchronous})"

    # -- connections -----------------------------------------------------------------------

    def open(self) -> SqliteTransport:
        if self._opened:
            return self
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self.claims_dir.mkdir(exist_ok=True)
        except OSError as exc:
            raise TransportError(
                f"cannot create the data directory: {exc.strerror}", where=str(self.data_dir)
            ) from exc
        self._opened = True
        conn = self._conn()
        self._retry(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone())
        with self.transaction() as tx:
            assert isinstance(tx, _Tx)
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    tx.conn.execute(statement)
        return self

    def close(self) -> None:
        with self._lock:
            conns, self._connections = self._connections, []
        for conn in conns:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._local = threading.local()
        self._opened = False

    def _conn(self) -> sqlite3.Connection:
        if os.getpid() != self._pid:  # forked: the parent's connections must not be used
            self._pid = os.getpid()
            self._local = threading.local()
            self._connections = []
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if not self._opened:
            raise TransportError(f"transport {self.data_dir} is not open", hint="call open() first")
        try:
            conn = sqlite3.connect(
                self.path, timeout=0, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise TransportError(f"cannot open the store: {exc}", where=str(self.path)) from exc

        def setup() -> None:
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.execute("PRAGMA foreign_keys=OFF")
            conn.execute("PRAGMA cache_size=-32000")
            # checkpoint every ~40 MB of WAL: a message inserted and acknowledged within one
            # checkpoint window costs its pages once, and checkpoints (two fsyncs) are rarer
            conn.execute("PRAGMA wal_autocheckpoint=10000")

        self._retry(setup)
        self._local.conn = conn
        with self._lock:
            self._connections.append(conn)
        return conn

    def _retry(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` again while the database is busy (short sleeps, then longer ones)."""
        deadline = time.monotonic() + self.busy_timeout
        pause = 0.00005
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                text = str(exc)
                if "locked" not in text and "busy" not in text:
                    raise TransportError(f"store error: {text}", where=str(self.path)) from exc
                if time.monotonic() >= deadline:
                    raise TransportError(
                        f"the store stayed locked for {self.busy_timeout:g} s",
                        where=str(self.path),
                        hint="another process holds a long write transaction",
                    ) from exc
                time.sleep(pause)
                pause = min(pause * 2, 0.0005)

    # -- transactions ----------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[TransactionOps]:
        current = getattr(self._local, "tx", None)
        if current is not None and os.getpid() == self._pid:
            yield current
            return
        conn = self._conn()
        self._retry(lambda: conn.execute("BEGIN IMMEDIATE"))
        tx = _Tx(self, conn)
        self._local.tx = tx
        try:
            yield tx
        except BaseException:
            self._local.tx = None
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            for path in tx.written_claims:
                with contextlib.suppress(OSError):
                    path.unlink()
            raise
        self._local.tx = None
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise TransportError(f"commit failed: {exc}", where=str(self.path)) from exc
        for ref in tx.unreferenced_claims:
            with contextlib.suppress(OSError):
                (self.claims_dir / ref).unlink()

    # -- TransactionOps on the transport itself --------------------------------------------

    def send(self, channel: str, envelopes: Envelope | Iterable[Envelope], *, component: str = "bus") -> list[str]:
        if getattr(self._local, "tx", None) is not None:
            with self.transaction() as tx:
                return tx.send(channel, envelopes, component=component)
        check_channel_name(channel)
        envs = [envelopes] if isinstance(envelopes, Envelope) else list(envelopes)
        # serialise before taking the write lock: the lock is held for the SQL only
        prepared, paths = prepare(self, channel, envs, component)
        try:
            with self.transaction() as tx:
                assert isinstance(tx, _Tx)
                return tx.send_prepared(channel, envs, prepared, component)
        except BaseException:
            for path in paths:
                with contextlib.suppress(OSError):
                    path.unlink()
            raise

    def receive(
        self,
        channel: str,
        consumer: str,
        *,
        max: int = 1,
        lease_seconds: float | None = None,
        selector: Selector | str | None = None,
    ) -> list[Delivery]:
        check_channel_name(channel)
        sel = as_selector(selector)
        if getattr(self._local, "tx", None) is not None:
            with self.transaction() as tx:
                return tx.receive(channel, consumer, max=max, lease_seconds=lease_seconds, selector=sel)
        if not self._anything_ready(channel):
            return []
        # A lease grant on its own needs no fsync: losing one on power failure only makes the
        # message visible again early (its attempt count one lower); nothing is lost.
        conn = self._conn()
        relax = self.synchronous in ("FULL", "EXTRA")
        if relax:
            conn.execute("PRAGMA synchronous=NORMAL")
        try:
            with self.transaction() as tx:
                return tx.receive(channel, consumer, max=max, lease_seconds=lease_seconds, selector=sel)
        finally:
            if relax:
                conn.execute(f"PRAGMA synchronous={self.synchronous}")

    def ack(self, deliveries: Delivery | Iterable[Delivery]) -> None:
        with self.transaction() as tx:
            tx.ack(deliveries)

    def nack(
        self,
        delivery: Delivery,
        error: str | BaseException,
        component: str,
        *,
        delay: float | None = None,
        dead: bool = False,
    ) -> Literal["retry", "dead"]:
        with self.transaction() as tx:
            return tx.nack(delivery, error, component, delay=delay, dead=dead)

    def invalid(
        self,
        envelope: Envelope | bytes,
        reason: str,
        component: str,
        *,
        channel: str | None = None,
        delivery: Delivery | None = None,
    ) -> int:
        with self.transaction() as tx:
            return tx.invalid(envelope, reason, component, channel=channel, delivery=delivery)

    def seen(self, consumer: str, keys: Iterable[str]) -> set[str]:
        with self.transaction() as tx:
            return tx.seen(consumer, keys)

    def mark_seen(self, consumer: str, keys: Iterable[str]) -> None:
        with self.transaction() as tx:
            tx.mark_seen(consumer, keys)

    def _anything_ready(self, channel: str) -> bool:
        conn = self._conn()
        row = self._retry(
            lambda: conn.execute(
                "SELECT 1 FROM messages WHERE channel = ? AND visible_at <= ? LIMIT 1",
                (channel, self.clock()),
            ).fetchone()
        )
        return row is not None

    def receive_wait(
        self,
        channel: str,
        consumer: str,
        *,
        max: int = 1,
        lease_seconds: float | None = None,
        selector: Selector | str | None = None,
        wait: float = 0.0,
    ) -> list[Delivery]:
        sel = as_selector(selector)
        deadline = time.monotonic() + wait
        conn = self._conn()
        while True:
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            got = self.receive(channel, consumer, max=max, lease_seconds=lease_seconds, selector=sel)
            if got or time.monotonic() >= deadline:
                return got
            # wait until another connection commits, or 50 ms (leases and backoff delays)
            recheck = min(deadline, time.monotonic() + 0.05)
            while time.monotonic() < recheck:
                if conn.execute("PRAGMA data_version").fetchone()[0] != version:
                    break
                time.sleep(0.0002)

    # -- channels --------------------------------------------------------------------------

    def declare(self, channel: str, config: ChannelConfig | None = None, **settings: Any) -> ChannelConfig:
        check_channel_name(channel)
        if "backoff" in settings and isinstance(settings["backoff"], dict):
            settings["backoff"] = BackoffPolicy.from_dict(settings["backoff"])
        try:
            base = config or ChannelConfig()
            cfg = ChannelConfig(**{**base.__dict__, **settings})
        except TypeError as exc:
            raise TransportError(f"channel {channel}: {exc}", where=f"channels.{channel}") from exc
        if cfg.kind not in ("queue", "topic"):
            raise TransportError(
                f"channel {channel}: unknown kind {cfg.kind!r}", hint="use queue or topic"
            )
        with self.transaction() as tx:
            assert isinstance(tx, _Tx)
            tx.conn.execute(
                "INSERT INTO channels (name, kind, config, created_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, config = excluded.config",
                (channel, cfg.kind, json.dumps(cfg.to_dict()), self.clock()),
            )
        return cfg

    def channel_config(self, channel: str) -> ChannelConfig:
        conn = self._conn()
        row = self._retry(
            lambda: conn.execute("SELECT config FROM channels WHERE name = ?", (channel,)).fetchone()
        )
        if row is None and "#" in channel:  # a subscription inherits its topic's settings
            topic = channel.split("#", 1)[0]
            row = self._retry(
                lambda: conn.execute("SELECT config FROM channels WHERE name = ?", (topic,)).fetchone()
            )
            if row is not None:
                cfg = ChannelConfig.from_dict(json.loads(row[0]))
                return ChannelConfig(**{**cfg.__dict__, "kind": "queue"})
        return ChannelConfig.from_dict(json.loads(row[0])) if row else ChannelConfig()

    def channels(self) -> list[str]:
        conn = self._conn()
        rows = self._retry(
            lambda: conn.execute(
                "SELECT name FROM channels UNION SELECT channel FROM counters "
                "UNION SELECT DISTINCT channel FROM messages ORDER BY 1"
            ).fetchall()
        )
        return [r[0] for r in rows]

    def subscribe(self, topic: str, subscription: str, *, selector: str | None = None) -> str:
        check_channel_name(topic)
        if not subscription or "#" in subscription or not _CHANNEL_NAME.match(subscription):
            raise TransportError(
                f"bad subscription name {subscription!r}", hint="no spaces and no '#'"
            )
        if selector is not None:
            Selector.parse(selector)
        channel = self.subscription_channel(topic, subscription)
        with self.transaction() as tx:
            assert isinstance(tx, _Tx)
            row = tx.conn.execute("SELECT kind FROM channels WHERE name = ?", (topic,)).fetchone()
            if row is None:
                tx.conn.execute(
                    "INSERT INTO channels (name, kind, config, created_at) VALUES (?, 'topic', ?, ?)",
                    (topic, json.dumps(ChannelConfig(kind="topic").to_dict()), self.clock()),
                )
            elif row[0] != "topic":
                raise TransportError(
                    f"channel {topic} is a queue, not a topic",
                    hint="declare it with kind='topic' before subscribing, or subscribe to another name",
                )
            tx.conn.execute(
                "INSERT INTO subscriptions (topic, name, channel, selector, created_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (topic, name) DO UPDATE SET selector = excluded.selector",
                (topic, subscription, channel, selector, self.clock()),
            )
            tx.journal(topic, None, "subscribed", subscription)
        return channel

    def unsubscribe(self, topic: str, subscription: str) -> None:
        channel = self.subscription_channel(topic, subscription)
        with self.transaction() as tx:
            assert isinstance(tx, _Tx)
            tx.conn.execute(
                "DELETE FROM subscriptions WHERE topic = ? AND name = ?", (topic, subscription)
            )
            tx.purge(channel)
            tx.journal(topic, None, "unsubscribed", subscription)

    def stats(self, channel: str | None = None) -> list[ChannelStats]:
        conn = self._conn()
        now = self.clock()
        where, args = ("WHERE channel = ?", (channel,)) if channel else ("", ())

        def query() -> tuple[list[Any], list[Any], list[Any], list[Any]]:
            conn.execute("BEGIN")
            try:
                msgs = conn.execute(
                    "SELECT channel, COUNT(*), SUM(visible_at <= ?), "
                    "SUM(lease_token IS NOT NULL AND visible_at > ?), MIN(enqueued_at) "
                    f"FROM messages {where} GROUP BY channel",
                    (now, now, *args),
                ).fetchall()
                counters = conn.execute(f"SELECT * FROM counters {where}", args).fetchall()
                kinds = conn.execute("SELECT name, kind FROM channels").fetchall()
                subs = conn.execute("SELECT topic, name FROM subscriptions ORDER BY topic, name").fetchall()
            finally:
                conn.execute("COMMIT")
            return msgs, counters, kinds, subs

        msgs, counters, kinds, subs = self._retry(query)
        kind_of = dict(kinds)
        subs_of: dict[str, list[str]] = {}
        for topic, name in subs:
            subs_of.setdefault(topic, []).append(name)
        names = set()
        if channel:
            names.add(channel)
        else:
            names.update(kind_of)
            names.update(r[0] for r in msgs)
            names.update(r[0] for r in counters)
        depth = {r[0]: r for r in msgs}
        count = {r[0]: r[1:] for r in counters}
        result = []
        for name in sorted(names):
            d = depth.get(name)
            c = count.get(name, (0,) * len(_COUNTERS))
            result.append(
                ChannelStats(
                    channel=name,
                    kind=kind_of.get(name, "queue"),  # type: ignore[arg-type]
                    depth=d[1] if d else 0,
                    ready=int(d[2] or 0) if d else 0,
                    in_flight=int(d[3] or 0) if d else 0,
                    oldest_age=max(0.0, now - d[4]) if d else None,
                    **dict(zip(_COUNTERS, c, strict=True)),
                    subscriptions=tuple(subs_of.get(name, ())),
                )
            )
        return result

    def peek(self, channel: str, max: int = 10) -> list[Envelope]:
        conn = self._conn()
        rows = self._retry(
            lambda: conn.execute(
                "SELECT attempt, claim, envelope FROM messages WHERE channel = ? "
                "ORDER BY visible_at, id LIMIT ?",
                (channel, max),
            ).fetchall()
        )
        out = []
        for attempt, claim, blob in rows:
            env = Envelope.from_bytes(blob)
            env.attempt = attempt
            out.append(self._restore_claim(env, claim))
        return out

    def purge(self, channel: str) -> int:
        with self.transaction() as tx:
            assert isinstance(tx, _Tx)
            return tx.purge(channel)

    # -- dead letters ----------------------------------------------------------------------

    def dead_letters(
        self, queue: str | None = None, *, kind: DeadKind | None = None, limit: int = 100
    ) -> list[DeadLetter]:
        clauses, args = [], []
        if queue is not None:
            clauses.append("queue = ?")
            args.append(queue)
        if kind is not None:
            clauses.append("kind = ?")
            args.append(kind)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        conn = self._conn()
        rows = self._retry(
            lambda: conn.execute(
                f"SELECT {_DL_COLUMNS} FROM dead_letters {where} ORDER BY id DESC LIMIT ?",
                (*args, limit),
            ).fetchall()
        )
        return [self._dead_letter(r) for r in rows]

    def dead_letter(self, id: int) -> DeadLetter:
        conn = self._conn()
        row = self._retry(
            lambda: conn.execute(
                f"SELECT {_DL_COLUMNS} FROM dead_letters WHERE id = ?", (id,)
            ).fetchone()
        )
        if row is None:
            raise UnknownDeadLetterError(
                f"no dead letter with id {id}", hint="list them with `coupler ctl dlq list`"
            )
        return self._dead_letter(row)

    def _dead_letter(self, row: tuple[Any, ...]) -> DeadLetter:
        id_, kind, queue, channel, reason, error, component, attempts, dead_at, claim, blob, raw = row
        env = None
        if blob is not None:
            env = self._restore_claim(Envelope.from_bytes(blob), claim)
            env.attempt = attempts
        return DeadLetter(
            id=id_, kind=kind, queue=queue, channel=channel, envelope=env, raw=raw,
            reason=reason, error=error, component=component, attempts=attempts,
            dead_at=_ts(dead_at),
        )

    def replay(self, id: int, channel: str | None = None) -> str:
        with self.transaction() as tx:
            assert isinstance(tx, _Tx)
            row = tx.conn.execute(
                "SELECT channel, claim, envelope FROM dead_letters WHERE id = ?", (id,)
            ).fetchone()
            if row is None:
                raise UnknownDeadLetterError(
                    f"no dead letter with id {id}", hint="list them with `coupler ctl dlq list`"
                )
            original, claim, blob = row
            target = channel or original
            if blob is None or target is None:
                raise TransportError(
                    f"dead letter {id} cannot be replayed: "
                    + ("its bytes are not an envelope" if blob is None else "it names no channel"),
                    hint="inspect it with `coupler ctl dlq show` and purge it",
                )
            env = Envelope.from_bytes(blob)
            env.attempt = 0
            env.record_hop("dead-letter", f"replay {id}")
            tx.insert(target, [(env, env.to_bytes(), claim)])
            tx.conn.execute("DELETE FROM dead_letters WHERE id = ?", (id,))
            tx.journal(target, env.message_id, "replayed", f"dead letter {id}")
            return env.message_id

    def purge_dead_letters(self, queue: str | None = None, *, kind: DeadKind | None = None) -> int:
        clauses, args = [], []
        if queue is not None:
            clauses.append("queue = ?")
            args.append(queue)
        if kind is not None:
            clauses.append("kind = ?")
            args.append(kind)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        with self.transaction() as tx:
            assert isinstance(tx, _Tx)
            claims = [
                r[0]
                for r in tx.conn.execute(
                    f"SELECT DISTINCT claim FROM dead_letters {where} "
                    f"{'AND' if where else 'WHERE'} claim IS NOT NULL",
                    args,
                )
            ]
            n = tx.conn.execute(f"DELETE FROM dead_letters {where}", args).rowcount
            tx.release_claims(claims)
            tx.journal(queue, None, "dead-letters purged", f"{n} {kind or 'dead and invalid'}")
            return n

    # -- message store ---------------------------------------------------------------------

    def journal(
        self,
        *,
        message_id: str | None = None,
        channel: str | None = None,
        event: str | None = None,
        since: datetime | None = None,
        limit: int = 1000,
    ) -> list[JournalEntry]:
        clauses, args = [], []
        for column, value in (("message_id", message_id), ("channel", channel), ("event", event)):
            if value is not None:
                clauses.append(f"{column} = ?")
                args.append(value)
        if since is not None:
            clauses.append("at >= ?")
            args.append(since.timestamp())
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        conn = self._conn()
        rows = self._retry(
            lambda: conn.execute(
                f"SELECT id, at, channel, message_id, event, detail FROM journal {where} "
                "ORDER BY id LIMIT ?",
                (*args, limit),
            ).fetchall()
        )
        return [JournalEntry(r[0], _ts(r[1]), r[2], r[3], r[4], r[5]) for r in rows]

    def maintain(self) -> dict[str, int]:
        now = self.clock()
        counts: dict[str, int] = {}
        with self.transaction() as tx:
            assert isinstance(tx, _Tx)
            rows = tx.conn.execute(
                "SELECT id, channel, attempt, claim, envelope FROM messages "
                "WHERE expires_at IS NOT NULL AND expires_at <= ?",
                (now,),
            ).fetchall()
            for row in rows:
                tx.dead(row, "dead", "expired", "message expired before delivery", "transport")
            counts["expired"] = len(rows)
            counts["journal"] = tx.conn.execute(
                "DELETE FROM journal WHERE at < ?", (now - self.journal_retention,)
            ).rowcount
            counts["seen"] = tx.conn.execute(
                "DELETE FROM seen WHERE seen_at < ?", (now - self.idempotency_retention,)
            ).rowcount
            referenced = {
                r[0]
                for r in tx.conn.execute(
                    "SELECT claim FROM messages WHERE claim IS NOT NULL "
                    "UNION SELECT claim FROM dead_letters WHERE claim IS NOT NULL"
                )
            }
        removed = 0
        cutoff = time.time() - 60  # a file younger than this may belong to a send in progress
        for path in self.claims_dir.iterdir():
            if path.name in referenced:
                continue
            with contextlib.suppress(OSError):
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
        counts["claims"] = removed
        return counts

    def claim_files(self) -> list[str]:
        """Names of the claim-check files currently stored."""
        return sorted(p.name for p in self.claims_dir.iterdir() if not p.name.startswith("."))

    @property
    def identities(self) -> IdentityRepository:
        return self._identities

    # -- claim check -----------------------------------------------------------------------

    def _restore_claim(self, env: Envelope, claim: str | None) -> Envelope:
        if claim is None:
            return env
        try:
            env.body = (self.claims_dir / claim).read_bytes()
        except OSError as exc:
            raise TransportError(
                f"message {env.message_id}: claim-check body {claim} is missing: {exc.strerror}",
                where=str(self.claims_dir / claim),
            ) from exc
        env.properties.pop(CLAIM_PROPERTY, None)
        return env

    def _store_claim(self, body: bytes) -> tuple[str, Path]:
        ref = uuid.uuid4().hex
        path = self.claims_dir / ref
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            view = memoryview(body)
            while view:
                view = view[os.write(fd, view):]
            if self.synchronous in ("FULL", "EXTRA"):
                os.fsync(fd)
        finally:
            os.close(fd)
        if self.synchronous in ("FULL", "EXTRA"):
            dfd = os.open(self.claims_dir, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        return ref, path


_DL_COLUMNS = (
    "id, kind, queue, channel, reason, error, component, attempts, dead_at, claim, envelope, raw"
)


def prepare(
    t: SqliteTransport, channel: str, envs: list[Envelope], component: str
) -> tuple[list[tuple[Envelope, bytes, str | None]], list[Path]]:
    """Serialise envelopes for storage (with the send hop); large bodies become claim checks."""
    for env in envs:
        if not isinstance(env, Envelope):
            raise TransportError(f"send to {channel}: expected an Envelope, got {type(env).__name__}")
    hop = HistoryEntry(component, f"send {channel}")
    prepared: list[tuple[Envelope, bytes, str | None]] = []
    paths: list[Path] = []
    threshold = t.claim_threshold
    for env in envs:
        if len(env.body) > threshold:
            claim, path = t._store_claim(env.body)
            paths.append(path)
            props = {**env.properties, CLAIM_PROPERTY: claim}
            prepared.append((env, encode(env, extra_hop=hop, body=b"", properties=props), claim))
        else:
            prepared.append((env, encode(env, extra_hop=hop), None))
    return prepared, paths


class _Tx(TransactionOps):
    """One open write transaction on one connection."""

    def __init__(self, transport: SqliteTransport, conn: sqlite3.Connection):
        self.t = transport
        self.conn = conn
        self.now = transport.clock()
        self.written_claims: list[Path] = []
        self.unreferenced_claims: list[str] = []
        self._journal: list[tuple[Any, ...]] = []
        self._counts: Counter[tuple[str, str]] = Counter()

    # -- bookkeeping -----------------------------------------------------------------------

    def journal(self, channel: str | None, message_id: str | None, event: str, detail: str | None = None) -> None:
        self.conn.execute(
            "INSERT INTO journal (at, channel, message_id, event, detail) VALUES (?, ?, ?, ?, ?)",
            (self.now, channel, message_id, event, detail),
        )

    def journal_many(self, rows: list[tuple[Any, ...]]) -> None:
        self.conn.executemany(
            "INSERT INTO journal (at, channel, message_id, event, detail) VALUES (?, ?, ?, ?, ?)",
            rows,
        )

    def count(self, channel: str, counter: str, n: int = 1) -> None:
        self.conn.execute(
            f"INSERT INTO counters (channel, {counter}) VALUES (?, ?) "
            f"ON CONFLICT (channel) DO UPDATE SET {counter} = {counter} + excluded.{counter}",
            (channel, n),
        )

    def release_claims(self, claims: Iterable[str]) -> None:
        """Schedule claim files no row refers to any more for deletion after commit."""
        for ref in set(claims):
            used = self.conn.execute(
                "SELECT 1 FROM messages WHERE claim = ? UNION ALL "
                "SELECT 1 FROM dead_letters WHERE claim = ? LIMIT 1",
                (ref, ref),
            ).fetchone()
            if used is None:
                self.unreferenced_claims.append(ref)

    # -- send ------------------------------------------------------------------------------

    def send(self, channel: str, envelopes: Envelope | Iterable[Envelope], *, component: str = "bus") -> list[str]:
        check_channel_name(channel)
        envs = [envelopes] if isinstance(envelopes, Envelope) else list(envelopes)
        prepared, paths = prepare(self.t, channel, envs, component)
        self.written_claims.extend(paths)
        return self.send_prepared(channel, envs, prepared, component)

    def send_prepared(
        self,
        channel: str,
        envs: list[Envelope],
        prepared: list[tuple[Envelope, bytes, str | None]],
        component: str,
    ) -> list[str]:
        if not prepared:
            return []
        subs = self.conn.execute(
            "SELECT channel, selector FROM subscriptions WHERE topic = ?", (channel,)
        ).fetchall()
        kind = self.conn.execute("SELECT kind FROM channels WHERE name = ?", (channel,)).fetchone()
        if subs or (kind and kind[0] == "topic"):
            self.count(channel, "sent", len(prepared))
            self.journal_many([(self.now, channel, e.message_id, "published", component) for e, _, _ in prepared])
            for sub_channel, selector in subs:
                sel = Selector.parse(selector) if selector else None
                chosen = [p for p in prepared if sel is None or sel(p[0])]
                if chosen:
                    self.insert(sub_channel, chosen, event_detail=f"from {channel}")
            if not subs:
                log.info("topic %s has no subscriptions; %d message(s) dropped", channel, len(prepared))
            return [env.message_id for env in envs]
        self.insert(channel, prepared, event_detail=component)
        return [env.message_id for env in envs]

    def insert(
        self,
        channel: str,
        prepared: list[tuple[Envelope, bytes, str | None]],
        event_detail: str | None = None,
    ) -> None:
        now = self.now
        self.conn.executemany(
            "INSERT INTO messages (channel, message_id, visible_at, enqueued_at, expires_at, claim, envelope) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    channel,
                    env.message_id,
                    now,
                    now,
                    env.expires_at.timestamp() if env.expires_at else None,
                    claim,
                    blob,
                )
                for env, blob, claim in prepared
            ],
        )
        self.journal_many([(now, channel, env.message_id, "sent", event_detail) for env, _, _ in prepared])
        self.count(channel, "sent", len(prepared))

    # -- receive ---------------------------------------------------------------------------

    def receive(
        self,
        channel: str,
        consumer: str,
        *,
        max: int = 1,
        lease_seconds: float | None = None,
        selector: Selector | str | None = None,
    ) -> list[Delivery]:
        check_channel_name(channel)
        if max < 1:
            return []
        sel = as_selector(selector)
        cfg = self.t.channel_config(channel)
        lease = lease_seconds or cfg.lease_seconds or self.t.lease_seconds
        policy = cfg.backoff or self.t.backoff
        now = self.now
        token = self.t._rng.getrandbits(62)
        until = now + lease
        taken: list[Delivery] = []
        updates: list[tuple[Any, ...]] = []
        cursor: tuple[float, int] = (float("-inf"), -1)
        page = max if sel is None else 200
        while len(taken) < max:
            rows = self.conn.execute(
                "SELECT id, visible_at, attempt, expires_at, lease_token, claim, envelope, channel "
                "FROM messages WHERE channel = ? AND visible_at <= ? AND (visible_at, id) > (?, ?) "
                "ORDER BY visible_at, id LIMIT ?",
                (channel, now, cursor[0], cursor[1], page),
            ).fetchall()
            if not rows:
                break
            cursor = (rows[-1][1], rows[-1][0])
            for id_, _vis, attempt, expires_at, lease_token, claim, blob, _ch in rows:
                if expires_at is not None and expires_at <= now:
                    self.dead(
                        (id_, channel, attempt, claim, blob), "dead", "expired",
                        "message expired before delivery", "transport",
                    )
                    continue
                if lease_token is not None and policy.exhausted(attempt):
                    self.dead(
                        (id_, channel, attempt, claim, blob), "dead", "lease expired",
                        f"not acknowledged within the lease after {attempt} attempt(s)",
                        "transport",
                    )
                    continue
                try:
                    env = decode(blob)
                except CouplerError as exc:
                    self.conn.execute("DELETE FROM messages WHERE id = ?", (id_,))
                    self._dead_row(channel, None, "invalid", "undecodable envelope", str(exc),
                                   "transport", attempt, claim, None, blob)
                    continue
                if sel is not None and not sel(env):
                    continue
                env.attempt = attempt + 1
                self.t._restore_claim(env, claim)
                env.record_hop(consumer, f"receive {channel}")
                taken.append(Delivery(channel, consumer, env, id_, token, attempt + 1, until, claim))
                updates.append((until, token, consumer, id_))
                if len(taken) >= max:
                    break
        if updates:
            self.conn.executemany(
                "UPDATE messages SET visible_at = ?, attempt = attempt + 1, lease_token = ?, "
                "lease_owner = ? WHERE id = ?",
                updates,
            )
            self.journal_many([(now, channel, d.message_id, "received", consumer) for d in taken])
            self.count(channel, "received", len(taken))
        return taken

    # -- settle ----------------------------------------------------------------------------

    def ack(self, deliveries: Delivery | Iterable[Delivery]) -> None:
        ds = [deliveries] if isinstance(deliveries, Delivery) else list(deliveries)
        if not ds:
            return
        before = self.conn.total_changes
        self.conn.executemany(
            "DELETE FROM messages WHERE id = ? AND lease_token = ?", [(d.tag, d.token) for d in ds]
        )
        settled = self.conn.total_changes - before
        if settled != len(ds):
            raise LeaseLostError(
                f"cannot acknowledge {len(ds) - settled} of {len(ds)} message(s) on "
                f"{ds[0].channel}: the lease expired and another consumer took it, or it was "
                "already settled",
                hint="acknowledge within lease_seconds or use a longer lease",
            )
        by_channel = Counter(d.channel for d in ds)
        for channel, n in by_channel.items():
            self.count(channel, "acked", n)
        self.journal_many([(self.now, d.channel, d.message_id, "acked", d.consumer) for d in ds])
        refs = [d.claim for d in ds if d.claim]
        if refs:
            self.release_claims(refs)

    def nack(
        self,
        delivery: Delivery,
        error: str | BaseException,
        component: str,
        *,
        delay: float | None = None,
        dead: bool = False,
    ) -> Literal["retry", "dead"]:
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        row = self.conn.execute(
            "SELECT id, channel, attempt, claim, envelope FROM messages WHERE id = ? AND lease_token = ?",
            (delivery.tag, delivery.token),
        ).fetchone()
        if row is None:
            raise LeaseLostError(
                f"cannot reject message {delivery.message_id} on {delivery.channel}: the lease "
                "expired and another consumer took it, or it was already settled",
                hint="settle within lease_seconds or use a longer lease",
            )
        policy = self.t.channel_config(delivery.channel).backoff or self.t.backoff
        self.count(delivery.channel, "failed")
        if dead or policy.exhausted(delivery.attempt):
            reason = "rejected" if dead else f"failed {delivery.attempt} attempt(s)"
            self.dead(row, "dead", reason, text, component)
            return "dead"
        wait = policy.delay(delivery.attempt, self.t._rng) if delay is None else delay
        self.conn.execute(
            "UPDATE messages SET visible_at = ?, lease_token = NULL, lease_owner = NULL WHERE id = ?",
            (self.now + wait, delivery.tag),
        )
        self.journal(delivery.channel, delivery.message_id, "nacked",
                     f"{component}: {text} (attempt {delivery.attempt}, retry in {wait:.3f} s)")
        return "retry"

    def dead(self, row: tuple[Any, ...], kind: DeadKind, reason: str, error: str, component: str) -> None:
        """Move message row ``(id, channel, attempt, claim, envelope)`` to its dead-letter queue."""
        id_, channel, attempt, claim, blob = row
        self.conn.execute("DELETE FROM messages WHERE id = ?", (id_,))
        message_id = None
        with contextlib.suppress(CouplerError):
            message_id = Envelope.from_bytes(blob).message_id
        self._dead_row(channel, message_id, kind, reason, error, component, attempt, claim, blob, None)

    def _dead_row(
        self, channel: str | None, message_id: str | None, kind: DeadKind, reason: str,
        error: str, component: str, attempts: int, claim: str | None, blob: bytes | None,
        raw: bytes | None,
    ) -> int:
        cfg = self.t.channel_config(channel) if channel else ChannelConfig()
        if kind == "dead":
            queue = cfg.dead_letter or self.t.dead_letter_default
        else:
            queue = cfg.invalid or self.t.invalid_default
        cur = self.conn.execute(
            "INSERT INTO dead_letters (kind, queue, channel, message_id, reason, error, component, "
            "attempts, dead_at, claim, envelope, raw) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (kind, queue, channel, message_id, reason, error, component, attempts, self.now,
             claim, blob, raw),
        )
        counter = "expired" if reason == "expired" else kind
        if channel:
            self.count(channel, counter)
        self.journal(channel, message_id, counter if counter != "dead" else "dead-lettered",
                     f"{queue}: {reason}: {error} ({component})")
        log.warning(
            "message %s on %s -> %s: %s: %s (component %s, attempts %d)",
            message_id, channel, queue, reason, error, component, attempts,
        )
        return int(cur.lastrowid or 0)

    def invalid(
        self,
        envelope: Envelope | bytes,
        reason: str,
        component: str,
        *,
        channel: str | None = None,
        delivery: Delivery | None = None,
    ) -> int:
        if delivery is not None:
            row = self.conn.execute(
                "SELECT id, channel, attempt, claim, envelope FROM messages WHERE id = ? AND lease_token = ?",
                (delivery.tag, delivery.token),
            ).fetchone()
            if row is None:
                raise LeaseLostError(
                    f"cannot move message {delivery.message_id} to the invalid channel: its lease "
                    "expired and another consumer took it, or it was already settled"
                )
            self.conn.execute("DELETE FROM messages WHERE id = ?", (row[0],))
            return self._dead_row(row[1], delivery.message_id, "invalid", reason, reason,
                                  component, row[2], row[3], row[4], None)
        if isinstance(envelope, Envelope):
            return self._dead_row(channel, envelope.message_id, "invalid", reason, reason,
                                  component, envelope.attempt, None, envelope.to_bytes(), None)
        return self._dead_row(channel, None, "invalid", reason, reason, component, 0, None, None,
                              bytes(envelope))

    def purge(self, channel: str) -> int:
        claims = [
            r[0]
            for r in self.conn.execute(
                "SELECT DISTINCT claim FROM messages WHERE channel = ? AND claim IS NOT NULL", (channel,)
            )
        ]
        n = self.conn.execute("DELETE FROM messages WHERE channel = ?", (channel,)).rowcount
        self.release_claims(claims)
        self.journal(channel, None, "purged", f"{n} message(s)")
        return n

    # -- idempotency -----------------------------------------------------------------------

    def seen(self, consumer: str, keys: Iterable[str]) -> set[str]:
        keys = list(keys)
        found: set[str] = set()
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                r[0]
                for r in self.conn.execute(
                    f"SELECT key FROM seen WHERE consumer = ? AND key IN ({marks})", (consumer, *chunk)
                )
            )
        return found

    def mark_seen(self, consumer: str, keys: Iterable[str]) -> None:
        self.conn.executemany(
            "INSERT INTO seen (consumer, key, seen_at) VALUES (?, ?, ?) "
            "ON CONFLICT (consumer, key) DO UPDATE SET seen_at = excluded.seen_at",
            [(consumer, k, self.now) for k in keys],
        )
