"""The embedded default transport: one SQLite database (WAL) in the site's data directory.

Schema (:mod:`coupler.bus.transport.sqlite.schema`, version 3): ``messages`` holds the state of every
message waiting on a channel, one row per channel copy, found through the index
``(channel, visible_at)``; its serialised envelope is in ``bodies`` under the same rowid,
written once. A row is *ready* when ``visible_at <= now``, *leased* while ``lease_token`` is
set and ``visible_at`` (then the lease expiry) is in the future, *delayed* when a nack pushed
``visible_at`` forward. Ack deletes both rows. ``dead_letters`` keeps dead and invalid
messages, ``journal`` every state change (the Message Store), ``seen`` the keys of the
Idempotent Receiver, ``counters`` the per-channel statistics, ``identities`` the Application
Repository. The write transaction and the hot paths are in :mod:`coupler.bus.transport.sqlite.ops`.

Every process and every thread has its own connection. Coupler's writers queue on an
exclusive ``flock`` of ``coupler.db-writer`` before they take SQLite's write lock
(``BEGIN IMMEDIATE``): the kernel wakes the next writer the moment the lock is released,
where SQLite's busy handler (and a retry loop) would sleep. Writers that are not Coupler's
(the ``sqlite3`` shell) still meet SQLite's own lock and are retried with short sleeps.

Group commit (``synchronous=FULL``): a transaction is committed without an fsync inside the
write lock; after releasing it the committing call waits until an fsync of the WAL that
started after its commit has finished, running one itself unless another process's fsync
already covered it (:mod:`coupler.bus.transport.sqlite.group_commit`). A send (and, with ``sync_acks``, an
acknowledgement) therefore still returns only once its commit is on disk, but the other
process commits while this one waits for the disk, and one fsync can serve both. As with a broker
that delivers a persistent message before its publisher confirm, a consumer may see a
message whose send has not returned yet; a power failure in that window can lose the send
that never returned (its producer retries it), never one that did.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import random
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from coupler.bus.model.identities import IdentityRepository
from coupler.bus.model.selectors import Selector, as_selector
from coupler.bus.transport.base import (
    ChannelConfig,
    ChannelStats,
    DeadKind,
    DeadLetter,
    Delivery,
    JournalEntry,
    JournalQuery,
    TransactionOps,
    Transport,
    TransportError,
    check_channel_name,
    check_subscription_name,
    declared_config,
    durable_already,
    envelope_list,
    not_replayable,
    purged_dead_letters_detail,
    replacement,
    unknown_dead_letter,
)
from coupler.bus.transport.codec import decode
from coupler.bus.transport.policy import (
    COUNTERS,
    DEAD_LETTERS_PURGED,
    ERROR_EXPIRED,
    REASON_EXPIRED,
    REPLAYED,
    SUBSCRIBED,
    TRANSPORT,
    UNSUBSCRIBED,
)
from coupler.bus.transport.private import private_dir, private_file
from coupler.bus.transport.sql_filters import dead_letter_where, journal_entries, journal_query
from coupler.bus.transport.sqlite.group_commit import GroupCommit
from coupler.bus.transport.sqlite.identities import SqliteIdentityRepository
from coupler.bus.transport.sqlite.ops import CLAIM_PROPERTY, FILE_CLAIM, Leased, StoreTx, prepare
from coupler.bus.transport.sqlite.schema import SCHEMA_VERSION, StoreVersionError, ensure_schema
from coupler.canonical import Envelope
from coupler.canonical.claimcheck import CLAIM_PROPERTY as FILE_CLAIM_PROPERTY
from coupler.canonical.claimcheck import CLAIM_SIZE_PROPERTY

log = logging.getLogger(__name__)

DB_FILENAME = "coupler.db"
_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


_pid = os.getpid()


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


def _process() -> int:
    """This process's id, without a system call on every store operation."""
    return _pid


def _ts(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


class SqliteTransport(Transport):
    """Durable channels in ``DATA_DIR/coupler.db`` (SQLite, WAL).

    ``synchronous`` is ``FULL`` (every commit that adds a message -- send, publish, replay --
    is fsync'd before the call returns, by group commit: see the module's notes), ``EXTRA``
    (every commit fsync'd by SQLite itself inside the write lock) or ``NORMAL`` (the WAL is
    fsync'd at checkpoints only: a power failure may lose the last commits, a process crash
    loses nothing). Lease grants are committed without an fsync of their own: losing one only
    makes a message visible again early. So are acknowledgements and negative ones, and the
    transactions (``transaction()``) that add no message (a route's discard, an aggregator's
    member), unless ``sync_acks``: they reach the disk with the next fsync'd commit or background checkpoint
    (``checkpoint_interval``), so a power failure may deliver again a message acknowledged
    in that last interval -- the at-least-once delivery every consumer already handles
    (a crash between its work and its ack does the same) -- and never loses one.
    ``claim_threshold`` is the body size (bytes) above which a body is stored as a file in
    ``DATA_DIR/claims`` (Claim Check). ``clock`` gives the time in seconds (tests pass a
    controllable clock). ``checkpoint_interval`` is how often (seconds) a background thread
    copies the WAL into the database file (a passive checkpoint): sends and acknowledgements
    then never wait for a checkpoint's copying and fsyncs themselves; 0 leaves checkpoints
    to SQLite's automatic ones in the committing calls.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        synchronous: str = "FULL",
        sync_acks: bool = False,
        busy_timeout: float = 30.0,
        filename: str = DB_FILENAME,
        checkpoint_interval: float = 1.0,
        **settings: Any,
    ):
        super().__init__()
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
        self.keep_policy(**settings)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._descriptors: list[int] = []
        #: each thread's connection and descriptors: those of a thread that has ended are closed
        #: when another thread opens its own (a server with a thread per request, the control
        #: endpoint, kept one connection per request it had served: thousands of descriptors)
        self._threads: list[tuple[threading.Thread, sqlite3.Connection, list[int]]] = []
        self._group_commit = self.synchronous == "FULL"
        self.sync_acks = sync_acks
        self._group: GroupCommit | None = None
        # statistics counted by committed transactions, not yet in the counters table
        self._counts: dict[tuple[str, str], int] = {}
        self._counts_lock = threading.Lock()
        self._counts_written = time.monotonic()
        self._opened = False
        self._pid = _process()
        self._rng = random.Random()
        self._identities = SqliteIdentityRepository(self)
        self._configs: dict[str, ChannelConfig] = {}
        self.checkpoint_interval = checkpoint_interval
        self._checkpointer: _Checkpointer | None = None
        self._arrivals = _Arrivals()

    def __repr__(self) -> str:
        return f"SqliteTransport({str(self.data_dir)!r}, synchronous={self.synchronous})"

    # -- connections -----------------------------------------------------------------------

    def open(self) -> SqliteTransport:
        if self._opened:
            return self
        try:
            private_dir(self.data_dir)
            private_dir(self.claims_dir)
            private_file(self.path)
        except OSError as exc:
            raise TransportError(
                f"cannot create the data directory: {exc.strerror}", where=str(self.data_dir)
            ) from exc
        if self._group_commit:
            try:
                self._group = GroupCommit(self._beside(_SYNC_SUFFIX))
            except OSError as exc:
                raise TransportError(
                    f"cannot open the group-commit counters: {exc.strerror}", where=str(self.path)
                ) from exc
        self._opened = True
        conn = self._conn()
        self._retry(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone())
        try:
            with self.transaction() as tx:
                assert isinstance(tx, StoreTx)
                migrated = ensure_schema(tx.conn, str(self.path))
        except StoreVersionError:
            self.close()
            raise
        except (sqlite3.Error, TransportError) as exc:
            self.close()
            raise TransportError(
                f"cannot create or migrate the store's schema: {exc}", where=str(self.path),
                hint="restore the data directory from a backup or use a new one",
            ) from exc
        if migrated is not None:
            log.info("store %s migrated from schema version %d to %d", self.path, migrated, SCHEMA_VERSION)
        if self.checkpoint_interval > 0:
            self._checkpointer = _Checkpointer(
                self.path, self.synchronous, self.checkpoint_interval, self._write_counts_if_due
            )
        return self

    def close(self) -> None:
        if self._opened and self._counts and _process() == self._pid:
            try:
                self.write_counts()
            except TransportError as exc:
                log.warning("statistics of %s not written at close: %s", self.path, exc)
        checkpointer, self._checkpointer = self._checkpointer, None
        if checkpointer is not None and _process() == self._pid:
            checkpointer.stop()
        with self._lock:
            conns, self._connections = self._connections, []
            self._threads = []
        for conn in conns:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        with self._lock:
            fds, self._descriptors = self._descriptors, []
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        if self._group is not None:
            self._group.close()
            self._group = None
        self._local = threading.local()
        self._opened = False

    def _conn(self) -> sqlite3.Connection:
        if _process() != self._pid:  # forked: the parent's connections must not be used
            self._pid = _process()
            self._local = threading.local()
            self._connections = []
            self._descriptors = []  # the parent's: a child must take its own locks
            self._threads = []
            self._checkpointer = None
            self._counts = {}  # the parent's to write
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if not self._opened:
            raise TransportError(f"transport {self.data_dir} is not open", hint="call open() first")
        self._close_ended_threads()
        try:
            conn = sqlite3.connect(
                self.path, timeout=0, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise TransportError(f"cannot open the store: {exc}", where=str(self.path)) from exc

        def setup() -> None:
            # with group commit SQLite commits without its own fsync (NORMAL, which in WAL
            # mode still fsyncs checkpoints) and transaction() fsyncs the WAL after the lock
            conn.execute(f"PRAGMA synchronous={'NORMAL' if self._group_commit else self.synchronous}")
            conn.execute("PRAGMA foreign_keys=OFF")
            conn.execute("PRAGMA cache_size=-32000")
            # checkpoints run in the background (_checkpointer); this is only the safety net
            # should that thread fall behind (or be missing in a forked child)
            conn.execute(f"PRAGMA wal_autocheckpoint={_SAFETY_CHECKPOINT_PAGES}")

        self._retry(setup)
        try:
            # this connection's own descriptors: a flock is held per open file, so two
            # threads sharing one descriptor would not exclude each other
            self._local.writer = os.open(self._beside(_WRITER_SUFFIX), os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            conn.close()
            raise TransportError(f"cannot open the writer lock: {exc.strerror}", where=str(self.path)) from exc
        self._local.wal = None
        self._local.sync_lock = self._group.lock_descriptor() if self._group is not None else None
        self._local.conn = conn
        self._local.fds = fds = [self._local.writer]
        if self._local.sync_lock is not None:
            fds.append(self._local.sync_lock)
        with self._lock:
            self._connections.append(conn)
            self._descriptors.extend(fds)
            self._threads.append((threading.current_thread(), conn, fds))
        return conn

    def _close_ended_threads(self) -> None:
        """Close the connections and descriptors of the threads that have ended (nothing can
        use them again: each thread has its own)."""
        with self._lock:
            ended = [t for t in self._threads if not t[0].is_alive()]
            if not ended:
                return
            self._threads = [t for t in self._threads if t[0].is_alive()]
            closed = {id(conn) for _, conn, _ in ended}
            self._connections = [c for c in self._connections if id(c) not in closed]
            fds = {fd for _, _, thread_fds in ended for fd in thread_fds}
            self._descriptors = [fd for fd in self._descriptors if fd not in fds]
        for _, conn, _ in ended:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _beside(self, suffix: str) -> Path:
        """A file beside the database, named after it (``coupler.db-wal``, ``coupler.db-writer``)."""
        return self.path.with_name(self.path.name + suffix)

    def _sync_wal(self) -> None:
        """fsync the WAL (group commit): opened on first use, when the WAL surely exists;
        it stays the same file while this connection is open (SQLite deletes the WAL only
        when the last connection closes)."""
        fd = self._local.wal
        if fd is None:
            fd = self._local.wal = os.open(self._beside("-wal"), os.O_RDWR)
            with self._lock:
                self._descriptors.append(fd)
                self._local.fds.append(fd)
        os.fdatasync(fd)

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
        # fsync'd when it adds a message (``insert``), else as an acknowledgement is: a
        # consume-and-produce transaction that only acknowledges and keeps step state (a
        # filter's discard, an aggregator's member) loses, on a power failure, its state
        # change together with its acknowledgement (the WAL keeps commits in order), so the
        # message is delivered again and counted once
        with self._write(durable=self.sync_acks) as tx:
            yield tx

    @contextmanager
    def _write(self, *, durable: bool) -> Iterator[StoreTx]:
        """One write transaction, or the one this thread already has open. ``durable=False``
        (a lease grant, an acknowledgement) skips the group commit's fsync unless the
        transaction adds a message."""
        current = getattr(self._local, "tx", None)
        if current is not None and _process() == self._pid:
            if durable:
                current.durable = True
            yield current
            return
        conn = self._conn()
        writer = self._local.writer
        fcntl.flock(writer, fcntl.LOCK_EX)
        try:
            self._retry(lambda: conn.execute("BEGIN IMMEDIATE"))
            tx = StoreTx(self, conn, durable=durable)
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
            written = self._take_counts(tx, force=tx.write_all_counts)
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise TransportError(f"commit failed: {exc}", where=str(self.path)) from exc
            seq = self._group.committed() if tx.durable and self._group is not None else 0
        finally:
            fcntl.flock(writer, fcntl.LOCK_UN)
        self._counted(tx.counts, written)
        if tx.arrived:
            self._arrivals.announce(tx.arrived)
        if seq:
            assert self._group is not None
            deferred = getattr(self._local, "deferred", None)
            if deferred is not None:  # durable_later(): the caller waits for the disk
                deferred.append(seq)
            else:
                self._group.make_durable(seq, self._local.sync_lock, self._sync_wal)
        for ref in tx.unreferenced_claims:
            with contextlib.suppress(OSError):
                self._claim_path(ref).unlink()

    @contextmanager
    def durable_later(self) -> Iterator[Callable[[], None]]:
        """Sends of this thread inside the block return once committed; the function yielded
        returns once the last of their commits is on disk (the group commit: an fsync that
        another process or thread ran meanwhile may have covered it already). Without group
        commit (``synchronous`` not FULL) nothing is deferred."""
        if self._group is None or getattr(self._local, "deferred", None) is not None:
            yield durable_already
            return
        seqs: list[int] = []
        self._local.deferred = seqs
        try:
            yield lambda: self._durable(max(seqs)) if seqs else None
        finally:
            self._local.deferred = None

    def _durable(self, seq: int) -> None:
        """Return once commit ``seq`` is on disk; from any thread (descriptors of its own)."""
        group = self._group
        if group is None:
            raise TransportError("the store was closed before its messages were on disk", where=str(self.path))
        lock = group.lock_descriptor()
        wal: int | None = None

        def sync() -> None:
            nonlocal wal
            wal = os.open(self._beside("-wal"), os.O_RDWR)
            os.fdatasync(wal)

        try:
            group.make_durable(seq, lock, sync)
        finally:
            os.close(lock)
            if wal is not None:
                os.close(wal)

    # -- statistics ------------------------------------------------------------------------
    # Channel counters are kept in memory when a transaction commits and added to the
    # counters table by a later transaction at most COUNTS_INTERVAL seconds later (or by the
    # checkpoint thread, or when statistics are read or the transport closes): a send, lease
    # or ack then writes no counters page of its own. A killed process loses at most its last
    # COUNTS_INTERVAL of statistics; messages and the journal are never behind.

    def _take_counts(self, tx: StoreTx, force: bool = False) -> dict[tuple[str, str], int]:
        """Write the pending counts in ``tx`` when they are due; returns what it wrote."""
        if not self._counts or not (force or time.monotonic() - self._counts_written >= COUNTS_INTERVAL):
            return {}
        with self._counts_lock:
            pending = dict(self._counts)
        tx.write_counts(pending)
        return pending

    def _counted(self, counts: dict[tuple[str, str], int], written: dict[tuple[str, str], int]) -> None:
        """After a commit: keep what it counted, forget what it wrote."""
        if not counts and not written:
            return
        with self._counts_lock:
            pending = self._counts
            for key, n in written.items():
                left = pending.get(key, 0) - n
                if left:
                    pending[key] = left
                else:
                    pending.pop(key, None)
            for key, n in counts.items():
                pending[key] = pending.get(key, 0) + n
            if written:
                self._counts_written = time.monotonic()

    def write_counts(self) -> None:
        """Write every pending statistic to the store now."""
        if not self._counts:
            return
        with self._write(durable=False) as tx:
            tx.write_all_counts = True

    def _write_counts_if_due(self) -> None:
        if self._counts and time.monotonic() - self._counts_written >= COUNTS_INTERVAL:
            self.write_counts()

    # -- TransactionOps on the transport itself --------------------------------------------

    def send(self, channel: str, envelopes: Envelope | Iterable[Envelope], *, component: str = "bus") -> list[str]:
        if getattr(self._local, "tx", None) is not None:
            with self.transaction() as tx:
                return tx.send(channel, envelopes, component=component)
        check_channel_name(channel)
        envs = envelope_list(channel, envelopes)
        # serialise before taking the write lock: the lock is held for the SQL only
        prepared, paths = prepare(self, channel, envs, component)
        try:
            with self.transaction() as tx:
                assert isinstance(tx, StoreTx)
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
        relax = self.synchronous == "EXTRA"
        if relax:
            conn.execute("PRAGMA synchronous=NORMAL")
        try:
            with self._write(durable=False) as tx:
                leased = tx.lease(channel, consumer, max=max, lease_seconds=lease_seconds, selector=sel)
        finally:
            if relax:
                conn.execute(f"PRAGMA synchronous={self.synchronous}")
        if not isinstance(leased, Leased):
            return leased or []  # nothing, or deliveries already decoded to match the selector
        # decoded after the commit: the write lock is not held while Python works
        got, bad = leased.deliveries(self)
        if bad:
            with self.transaction() as tx:
                assert isinstance(tx, StoreTx)
                tx.dead_undecodable(channel, leased.token, bad)
        return got

    def ack(self, deliveries: Delivery | Iterable[Delivery]) -> None:
        with self._write(durable=self.sync_acks) as tx:
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
        # a lost nack or dead-lettering leaves the message in its channel: nothing is lost
        with self._write(durable=self.sync_acks) as tx:
            return tx.nack(delivery, error, component, delay=delay, dead=dead)

    def seen(self, consumer: str, keys: Iterable[str]) -> set[str]:
        current = getattr(self._local, "tx", None)
        if current is not None and _process() == self._pid:
            return set(current.seen(consumer, keys))
        # a read: no write lock (a WAL reader sees the last commit)
        conn = self._conn()
        keys = list(keys)
        return set(self._retry(lambda: StoreTx(self, conn, durable=False).seen(consumer, keys)))

    def remember(self, scope: str, key: str, ttl: float) -> bool:
        with self.transaction() as tx:
            assert isinstance(tx, StoreTx)
            return tx.remember(scope, key, ttl)

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
        pause = 0.001
        while True:
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            arrived = self._arrivals.count(channel)
            got = self.receive(channel, consumer, max=max, lease_seconds=lease_seconds, selector=sel)
            if got or time.monotonic() >= deadline:
                return got
            # wait until a message arrives on the channel: woken at once by a commit of this
            # process that made one ready there (``_Arrivals``); another process's commit is
            # seen by the data_version, looked at after 1 ms, then less often, at least every
            # 20 ms; and at most 50 ms (leases that expire, backoff delays that end). Idle
            # workers then cost little CPU while the others commit (they used to look at the
            # data_version every 0.1-1 ms, and woke at every commit of the process). The pause
            # starts again at 1 ms only after something changed, not at every recheck
            recheck = min(deadline, time.monotonic() + 0.05)
            while (left := recheck - time.monotonic()) > 0:
                if self._arrivals.wait(channel, arrived, min(pause, left)):
                    pause = 0.001
                    break
                if conn.execute("PRAGMA data_version").fetchone()[0] != version:
                    pause = 0.001
                    break
                pause = min(pause * 2, 0.02)

    # -- channels --------------------------------------------------------------------------

    def declare(self, channel: str, config: ChannelConfig | None = None, **settings: Any) -> ChannelConfig:
        cfg = declared_config(channel, config, settings)
        with self.transaction() as tx:
            assert isinstance(tx, StoreTx)
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
                cfg = self._parse_config(row[0])
                return ChannelConfig(**{**cfg.__dict__, "kind": "queue"})
        return self._parse_config(row[0]) if row else ChannelConfig()

    def _parse_config(self, text: str) -> ChannelConfig:
        """The stored JSON of a channel's config, parsed once per distinct text."""
        cfg = self._configs.get(text)
        if cfg is None:
            if len(self._configs) > 1000:
                self._configs.clear()
            cfg = self._configs[text] = ChannelConfig.from_dict(json.loads(text))
        return cfg

    def _kind(self, channel: str) -> str | None:
        row = self._conn().execute("SELECT kind FROM channels WHERE name = ?", (channel,)).fetchone()
        return row[0] if row else None

    def channels(self) -> list[str]:
        self.write_counts()
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
        check_subscription_name(subscription)
        if selector is not None:
            Selector.parse(selector)
        channel = self.subscription_channel(topic, subscription)
        with self.transaction() as tx:
            assert isinstance(tx, StoreTx)
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
            tx.journal(topic, None, SUBSCRIBED, subscription)
        return channel

    def unsubscribe(self, topic: str, subscription: str) -> None:
        channel = self.subscription_channel(topic, subscription)
        with self.transaction() as tx:
            assert isinstance(tx, StoreTx)
            tx.conn.execute(
                "DELETE FROM subscriptions WHERE topic = ? AND name = ?", (topic, subscription)
            )
            tx.purge(channel)
            tx.journal(topic, None, UNSUBSCRIBED, subscription)

    def stats(self, channel: str | None = None) -> list[ChannelStats]:
        self.write_counts()
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
            c = count.get(name, (0,) * len(COUNTERS))
            result.append(
                ChannelStats(
                    channel=name,
                    kind=kind_of.get(name, "queue"),
                    depth=d[1] if d else 0,
                    ready=int(d[2] or 0) if d else 0,
                    in_flight=int(d[3] or 0) if d else 0,
                    oldest_age=max(0.0, now - d[4]) if d else None,
                    **dict(zip(COUNTERS, c, strict=True)),
                    subscriptions=tuple(subs_of.get(name, ())),
                )
            )
        return result

    def peek(self, channel: str, max: int = 10) -> list[Envelope]:
        conn = self._conn()
        rows = self._retry(
            lambda: conn.execute(
                "SELECT m.attempt, m.claim, b.envelope FROM messages m JOIN bodies b ON b.id = m.id "
                "WHERE m.channel = ? ORDER BY m.visible_at, m.id LIMIT ?",
                (channel, max),
            ).fetchall()
        )
        out = []
        for attempt, claim, blob in rows:
            env = decode(blob)
            env.attempt = attempt
            out.append(self._restore_claim(env, claim))
        return out

    def purge(self, channel: str) -> int:
        with self.transaction() as tx:
            assert isinstance(tx, StoreTx)
            return tx.purge(channel)

    # -- dead letters ----------------------------------------------------------------------

    def dead_letters(
        self, queue: str | None = None, *, kind: DeadKind | None = None, limit: int = 100
    ) -> list[DeadLetter]:
        where, args = dead_letter_where(queue, kind, "?")
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
            raise unknown_dead_letter(id)
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

    def replay(self, id: int, channel: str | None = None, *, body: bytes | None = None,
               envelope: Envelope | None = None) -> str:
        with self.transaction() as tx:
            assert isinstance(tx, StoreTx)
            row = tx.conn.execute(
                "SELECT channel, claim, envelope FROM dead_letters WHERE id = ?", (id,)
            ).fetchone()
            if row is None:
                raise unknown_dead_letter(id)
            original, claim, blob = row
            target = channel or original
            if blob is None or target is None:
                raise not_replayable(id, has_envelope=blob is not None)
            env = Envelope.from_bytes(blob)
            if envelope is not None:  # another message in its place (same id)
                env = replacement(id, env, envelope)
            env.attempt = 0
            env.record_hop("dead-letter", f"replay {id}")
            if body is not None or envelope is not None:  # edited: the new body replaces the stored (or claim-checked) one
                for prop in (CLAIM_PROPERTY, FILE_CLAIM_PROPERTY, CLAIM_SIZE_PROPERTY):
                    env.properties.pop(prop, None)
                if body is not None:
                    env.body = body
                prepared, paths = prepare(self, target, [env], "dead-letter")
                tx.written_claims.extend(paths)
                tx.insert(target, prepared)
            else:
                tx.insert(target, [(env, env.to_bytes(), claim)])
            tx.conn.execute("DELETE FROM dead_letters WHERE id = ?", (id,))
            if (body is not None or envelope is not None) and claim is not None:
                tx.release_claims([claim])
            tx.journal_sent(target, [env], REPLAYED, f"dead letter {id}")
            return env.message_id

    def purge_dead_letters(self, queue: str | None = None, *, kind: DeadKind | None = None) -> int:
        where, args = dead_letter_where(queue, kind, "?")
        with self.transaction() as tx:
            assert isinstance(tx, StoreTx)
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
            tx.journal(queue, None, DEAD_LETTERS_PURGED, purged_dead_letters_detail(n, kind))
            return n

    # -- message store ---------------------------------------------------------------------

    def query_journal(self, query: JournalQuery) -> list[JournalEntry]:
        sql, args = journal_query("journal", "?", query, trace_buckets=True)
        conn = self._conn()
        return journal_entries(self._retry(lambda: conn.execute(sql, args).fetchall()))

    def maintain(self) -> dict[str, int]:
        now = self.clock()
        counts: dict[str, int] = {}
        with self.transaction() as tx:
            assert isinstance(tx, StoreTx)
            rows = tx.rows("m.expires_at IS NOT NULL AND m.expires_at <= ?", (now,))
            for row in rows:
                tx.dead(row, "dead", REASON_EXPIRED, ERROR_EXPIRED, TRANSPORT)
            counts["expired"] = len(rows)
            counts["journal"] = tx.conn.execute(
                "DELETE FROM journal WHERE at < ?", (now - self.journal_retention,)
            ).rowcount
            counts["seen"] = tx.conn.execute(
                "DELETE FROM seen WHERE seen_at < ?", (now - self.idempotency_retention,)
            ).rowcount
            counts["state"] = tx.conn.execute("DELETE FROM state WHERE expires_at <= ?", (now,)).rowcount
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

    def _claim_path(self, claim: str) -> Path:
        """The file of a claim: the store's own, or a claimed file of the site (``file:``)."""
        if claim.startswith(FILE_CLAIM):
            return self.data_dir / claim[len(FILE_CLAIM):]
        return self.claims_dir / claim

    def _restore_claim(self, env: Envelope, claim: str | None) -> Envelope:
        if claim is None:
            return env
        if claim.startswith(FILE_CLAIM):  # a claimed file stays a file (streamed), where it is now
            env.properties[FILE_CLAIM_PROPERTY] = str(self._claim_path(claim))  # (a restored backup moved it)
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


#: seconds a process keeps channel statistics in memory before adding them to ``counters``
COUNTS_INTERVAL = 0.2

#: beside the database: Coupler's writers queue on an exclusive flock of this file
_WRITER_SUFFIX = "-writer"
#: beside the database: the group commit's shared counters (:mod:`coupler.bus.transport.sqlite.group_commit`)
_SYNC_SUFFIX = "-sync"

_DL_COLUMNS = (
    "id, kind, queue, channel, reason, error, component, attempts, dead_at, claim, envelope, raw"
)


#: WAL pages after which a committing connection checkpoints itself (the background thread
#: normally checkpoints long before; this bounds the WAL should it not)
_SAFETY_CHECKPOINT_PAGES = 20000


class _Arrivals:
    """Per channel, how many commits of this process made a message ready there; receivers
    waiting in ``receive_wait`` sleep on it and wake when the count moves."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conds: dict[str, threading.Condition] = {}  # per channel: only its receivers wake
        self._counts: dict[str, int] = {}

    def count(self, channel: str) -> int:
        return self._counts.get(channel, 0)

    def _cond(self, channel: str) -> threading.Condition:
        cond = self._conds.get(channel)
        if cond is None:
            cond = self._conds.setdefault(channel, threading.Condition(self._lock))
        return cond

    def announce(self, channels: Iterable[str]) -> None:
        with self._lock:
            for channel in channels:
                self._counts[channel] = self._counts.get(channel, 0) + 1
                cond = self._conds.get(channel)
                if cond is not None:
                    cond.notify_all()

    def wait(self, channel: str, seen: int, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for an arrival on ``channel`` after count ``seen``;
        whether one came."""
        with self._lock:
            return self._cond(channel).wait_for(lambda: self._counts.get(channel, 0) != seen, timeout)


class _Checkpointer:
    """A thread that runs passive WAL checkpoints every ``interval`` seconds on its own
    connection, so that no send, lease or acknowledgement pays for one (a checkpoint copies
    pages into the database file and fsyncs it: milliseconds on a busy disk, which showed as
    the p99 latency). Passive checkpoints never block writers; several processes may each run
    one (a checkpoint already running elsewhere is simply skipped). ``tick`` runs after each
    checkpoint (the transport writes its pending statistics)."""

    def __init__(self, path: Path, synchronous: str, interval: float, tick: Callable[[], None]):
        self._path = path
        self._tick = tick
        self._synchronous = synchronous
        self._interval = interval
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"checkpoint {path.name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self._path, timeout=0, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            return  # the committing connections' automatic checkpoints remain
        try:
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
            while not self._stopping.wait(self._interval):
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                try:
                    self._tick()
                except TransportError as exc:
                    log.warning("statistics of %s not written: %s", self._path, exc)
        except sqlite3.Error as exc:
            log.warning("background checkpoints of %s stopped: %s", self._path, exc)
        finally:
            conn.close()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)
