"""The embedded SQLite transport: durability settings, leases and backoff on a controlled clock,
claim check, retention, errors."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time

import pytest

from coupler.bus.model.backoff import BackoffPolicy
from coupler.bus.transport.base import TransportError
from coupler.bus.transport.sqlite.schema import SCHEMA_VERSION, StoreVersionError
from coupler.bus.transport.sqlite.transport import CLAIM_PROPERTY, SqliteTransport
from coupler.canonical.errors import CouplerError
from tests.bus.site_helpers import wait_for
from tests.bus.transport.contract.support import FakeClock, bodies, doc


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def transport(tmp_path, clock):
    t = SqliteTransport(
        tmp_path,
        clock=clock,
        backoff=BackoffPolicy(initial_delay=1, multiplier=3, max_delay=5, max_attempts=4, jitter=0),
        claim_threshold=1000,
    ).open()
    yield t
    t.close()


def _pragma(t: SqliteTransport, name: str) -> int | str:
    return t._conn().execute(f"PRAGMA {name}").fetchone()[0]


def test_full_synchronous_by_default_and_wal(tmp_path) -> None:
    with SqliteTransport(tmp_path) as t:
        assert t.synchronous == "FULL"
        assert _pragma(t, "journal_mode") == "wal"


def _fsync_spy(tmp_path, monkeypatch) -> list[tuple[str, bool]]:
    """Record every fdatasync: the file, and whether the writer lock was free meanwhile."""
    synced: list[tuple[str, bool]] = []
    real = os.fdatasync

    def spy(fd: int) -> None:
        probe = os.open(tmp_path / "coupler.db-writer", os.O_RDWR)
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if still held
            fcntl.flock(probe, fcntl.LOCK_UN)
            free = True
        except BlockingIOError:
            free = False
        finally:
            os.close(probe)
        synced.append((os.readlink(f"/proc/self/fd/{fd}"), free))
        real(fd)

    monkeypatch.setattr(os, "fdatasync", spy)
    return synced


def test_full_fsyncs_a_send_after_releasing_the_write_lock(tmp_path, monkeypatch) -> None:
    """Group commit: a send returns only after an fsync of the WAL, taken outside the
    writer lock so that the other process can commit meanwhile; a lease grant and an
    acknowledgement are not fsync'd on their own (the next send's fsync takes them along)."""
    with SqliteTransport(tmp_path, checkpoint_interval=0) as t:
        synced = _fsync_spy(tmp_path, monkeypatch)
        t.send("q", doc(b"x"))
        assert synced == [(str(tmp_path / "coupler.db-wal"), True)]
        [d] = t.receive("q", "c")
        t.ack(d)
        t.send("q", doc(b"y"))
        [d] = t.receive("q", "c")
        assert t.nack(d, "failed", "c") == "retry"
        assert len(synced) == 2
        t.send("q", doc(b"z"))
        with t.transaction() as tx:  # Transactional Client: one fsync for the whole
            got = tx.receive("q", "c", max=5)
            tx.send("r", doc(b"out"))
            tx.ack(got)
        assert len(synced) == 4
        assert all(free for _, free in synced)


def test_durable_later_returns_sends_before_their_fsync_and_waits_for_it_on_request(tmp_path, monkeypatch) -> None:
    """``durable_later``: the sends of the block are committed (visible) when they return and
    on disk once the function it yields returns, whichever thread calls it; a commit an fsync
    already covered costs none."""
    with SqliteTransport(tmp_path, checkpoint_interval=0) as t:
        synced = _fsync_spy(tmp_path, monkeypatch)
        with t.durable_later() as durable:
            t.send("q", doc(b"a"))
            t.send("q", doc(b"b"))
        assert synced == []
        other = sqlite3.connect(t.path)  # committed: an independent reader sees them
        try:
            assert other.execute("SELECT count(*) FROM messages").fetchone() == (2,)
        finally:
            other.close()
        waiter = threading.Thread(target=durable)
        waiter.start()
        waiter.join(10)
        assert synced == [(str(tmp_path / "coupler.db-wal"), True)]
        durable()  # covered already: no second fsync
        assert len(synced) == 1
        t.send("q", doc(b"c"))  # outside the block: durable when it returns, as always
        assert len(synced) == 2
        with t.durable_later() as nothing_sent:
            pass
        nothing_sent()
        assert len(synced) == 2


def test_durable_later_defers_nothing_without_group_commit(tmp_path, monkeypatch) -> None:
    with SqliteTransport(tmp_path, synchronous="NORMAL", checkpoint_interval=0) as t:
        with t.durable_later() as durable:
            t.send("q", doc(b"x"))
        durable()
        assert t.receive("q", "c")[0].envelope.body == b"x"


def test_sync_acks_fsyncs_acks_and_nacks_too(tmp_path, monkeypatch) -> None:
    with SqliteTransport(tmp_path, sync_acks=True, checkpoint_interval=0) as t:
        synced = _fsync_spy(tmp_path, monkeypatch)
        t.send("q", doc(b"x"))
        t.send("q", doc(b"y"))
        [a, b] = t.receive("q", "c", max=2)
        assert len(synced) == 2  # still none for the lease grant
        t.ack(a)
        assert len(synced) == 3
        t.nack(b, "failed", "c")
        assert len(synced) == 4


def test_one_fsync_covers_the_commits_made_while_the_previous_one_ran(tmp_path) -> None:
    """The group commit counters: an fsync publishes every commit counted before it began."""
    from coupler.bus.transport.sqlite.group_commit import GroupCommit

    group = GroupCommit(tmp_path / "sync")
    lock = group.lock_descriptor()
    fsyncs: list[int] = []
    try:
        first, second = group.committed(), group.committed()
        assert group.make_durable(first, lock, lambda: fsyncs.append(1)) is True
        assert group.make_durable(second, lock, lambda: fsyncs.append(2)) is False  # covered
        third = group.committed()
        assert group.make_durable(third, lock, lambda: fsyncs.append(3)) is True
        assert fsyncs == [1, 3]
        # the counters are shared through the file: another opening sees them
        other = GroupCommit(tmp_path / "sync")
        assert other.committed() == 4
        assert other.make_durable(3, lock, lambda: fsyncs.append(4)) is False
        other.close()
    finally:
        os.close(lock)
        group.close()


def test_normal_never_fsyncs_a_commit(tmp_path, monkeypatch) -> None:
    calls: list[int] = []
    with SqliteTransport(tmp_path, synchronous="NORMAL", checkpoint_interval=0) as t:
        monkeypatch.setattr(os, "fdatasync", calls.append)
        t.send("q", doc(b"x"))
        t.ack(t.receive("q", "c"))
    assert calls == []


def _flock_waiters(path) -> int:
    """How many lock requests wait on ``path`` (the ``->`` lines of /proc/locks for its inode)."""
    inode = f":{os.stat(path).st_ino} "
    with open("/proc/locks") as locks:
        return sum(1 for line in locks if " -> " in line and inode in line)


def test_a_writer_waits_for_the_one_holding_the_lock(tmp_path) -> None:
    """Writers queue on the writer lock (no busy error, no lost write) and are let in when it
    is released, not after the busy timeout."""
    with SqliteTransport(tmp_path) as t:
        entered, release = threading.Event(), threading.Event()
        done: list[float] = []

        def hold() -> None:
            with t.transaction() as tx:
                tx.send("q", doc(b"first"))
                entered.set()
                release.wait(5)

        def send() -> None:
            entered.wait(5)
            t.send("q", doc(b"second"))
            done.append(time.monotonic())

        holder, sender = threading.Thread(target=hold), threading.Thread(target=send)
        holder.start(), sender.start()
        entered.wait(5)
        # the sender is queued on the writers' flock (the kernel lists it as a waiter)
        writer_lock = next(tmp_path.glob("*.db-writer"))
        deadline = time.monotonic() + 10
        while not _flock_waiters(writer_lock):
            assert time.monotonic() < deadline, "the sender never queued on the writer lock"
            time.sleep(0.01)
        assert done == []  # still queued behind the open transaction
        release.set()
        holder.join(5), sender.join(5)
        # in as the lock is released: within the join, far below the store's 30 s busy timeout
        # (no stopwatch: a loaded machine may take a tenth of a second to schedule the thread)
        assert done
        assert sorted(bodies(t.receive("q", "c", max=10))) == [b"first", b"second"]


def test_normal_synchronous_is_configurable(tmp_path) -> None:
    with SqliteTransport(tmp_path, synchronous="normal") as t:
        assert _pragma(t, "synchronous") == 1


def test_unknown_synchronous_setting_is_refused(tmp_path) -> None:
    with pytest.raises(TransportError, match="synchronous"):
        SqliteTransport(tmp_path, synchronous="sometimes")


def test_the_connections_of_ended_threads_are_closed(transport: SqliteTransport) -> None:
    """Each thread has its own connection, with its lock descriptors; they were closed only
    with the transport, so a server with a thread per request (the control endpoint) kept one
    per request it had served: found by a 60 s run of test_control_fuzz.py
    (``COUPLER_FUZZ_SEED=9301``), whose daemon ran out of descriptors ("cannot open the
    store: unable to open database file"), 3,000 left open after 17,000 requests. A thread
    opening its connection now closes those of the threads that have ended."""
    transport.send("orders", doc(b"x"))
    transport._conn()  # this thread's own, kept

    def descriptors() -> int:
        return len(os.listdir("/proc/self/fd"))

    def one_request() -> None:
        transport.stats()
        transport.send("orders", doc(b"y"))  # a write: the writer lock, the sync lock, the WAL's

    def serve(n: int) -> None:
        for _ in range(n):
            thread = threading.Thread(target=one_request)
            thread.start()
            thread.join()

    serve(5)
    before = descriptors()
    serve(100)
    assert descriptors() <= before  # before: 5 or so more per thread
    assert len(transport.receive("orders", "c", max=200)) == 106  # every send committed
    assert transport._conn() is transport._conn()  # and this thread's connection is still open


def test_send_returns_after_commit(transport: SqliteTransport) -> None:
    [mid] = transport.send("q", doc(b"x"))
    other = sqlite3.connect(transport.path)  # an independent reader sees it at once
    try:
        assert other.execute("SELECT message_id FROM messages").fetchall() == [(mid,)]
    finally:
        other.close()


def test_a_batch_of_several_multi_row_statements_is_stored_in_order_with_its_journal(transport: SqliteTransport) -> None:
    from coupler.canonical import Envelope
    from coupler.canonical.tracecontext import BUSINESS_KEY, TRACEPARENT, header_for_key

    transport.send("q", doc(b"before"))
    envs = Envelope.many("test.Row@1", [f"row {i}".encode() for i in range(250)], origin="db-in",
                         properties=[{BUSINESS_KEY: f"t:{i}", TRACEPARENT: header_for_key(str(i))} for i in range(250)])
    envs[7] = doc(b"x" * 2000)  # a claim-checked body among them (over the threshold)
    ids = transport.send("q", envs, component="adapter:db-in")
    got = transport.receive("q", "c", max=300)
    assert [d.envelope.body for d in got] == [b"before", *[e.body for e in envs]]
    assert [d.message_id for d in got[1:]] == ids == [e.message_id for e in envs]
    assert got[9].envelope.properties == envs[8].properties and got[9].envelope.origin == "db-in"
    sent = {e.message_id: e for e in transport.journal(event="sent", channel="q", limit=1000)}
    assert sent[ids[3]].trace_id == header_for_key("3")[3:35] and sent[ids[3]].detail == "adapter:db-in"
    assert len(transport.journal(key="t:249")) == 1 and len(sent) == 251


def test_lease_expiry_on_the_clock(transport: SqliteTransport, clock: FakeClock) -> None:
    transport.send("q", doc(b"x"))
    [d] = transport.receive("q", "a", lease_seconds=10)
    clock.advance(9.9)
    assert transport.receive("q", "b") == []
    clock.advance(0.2)
    [again] = transport.receive("q", "b")
    assert again.attempt == 2


def test_backoff_delays_grow_and_cap(transport: SqliteTransport, clock: FakeClock) -> None:
    transport.send("q", doc(b"x"))
    waits = []
    for _ in range(3):
        [d] = transport.receive("q", "c")
        transport.nack(d, "fail", "c")
        start = clock.now
        while not transport._anything_ready("q"):
            clock.advance(0.25)
        waits.append(round(clock.now - start, 2))
    assert waits == [1.0, 3.0, 5.0]  # 1, 1*3, min(9, 5)
    [d] = transport.receive("q", "c")
    assert d.attempt == 4
    assert transport.nack(d, "fail", "c") == "dead"


def test_channel_backoff_overrides_the_default(transport: SqliteTransport) -> None:
    transport.declare("strict", backoff={"max_attempts": 1})
    transport.send("strict", doc())
    [d] = transport.receive("strict", "c")
    assert transport.nack(d, "fail", "c") == "dead"
    assert transport.channel_config("strict").backoff == BackoffPolicy(max_attempts=1)


def test_lease_expired_after_the_last_attempt_dead_letters(transport: SqliteTransport, clock: FakeClock) -> None:
    transport.declare("q", backoff={"max_attempts": 2})
    transport.send("q", doc(b"crashy"))
    for _ in range(2):  # the consumer dies holding it, twice
        assert transport.receive("q", "c", lease_seconds=1)
        clock.advance(2)
    assert transport.receive("q", "c") == []
    [dead] = transport.dead_letters()
    assert dead.reason == "lease expired" and dead.attempts == 2


def test_expired_messages_are_swept_by_maintenance(transport: SqliteTransport, clock: FakeClock) -> None:
    from datetime import UTC, datetime, timedelta

    soon = datetime.fromtimestamp(clock.now, UTC) + timedelta(seconds=5)
    transport.send("q", doc(b"short-lived", expires_at=soon))
    clock.advance(6)
    assert transport.maintain()["expired"] == 1
    assert transport.stats("q")[0].expired == 1
    assert transport.dead_letters()[0].reason == "expired"


def test_claim_check_stores_large_bodies_as_files(transport: SqliteTransport) -> None:
    big = bytes(range(256)) * 20  # 5120 bytes > threshold 1000
    transport.send("q", [doc(big), doc(b"small")])
    [ref] = transport.claim_files()
    stored = transport._conn().execute(
        "SELECT m.claim, b.envelope FROM messages m JOIN bodies b ON b.id = m.id ORDER BY m.id"
    ).fetchall()
    assert stored[0][0] == ref and len(stored[0][1]) < 1000  # the row holds only the reference
    assert stored[1][0] is None
    got = transport.receive("q", "c", max=2)
    assert bodies(got) == [big, b"small"]
    assert CLAIM_PROPERTY not in got[0].envelope.properties
    transport.ack(got)
    assert transport.claim_files() == []


def test_claim_check_file_lives_until_no_message_refers_to_it(transport: SqliteTransport) -> None:
    transport.declare("t", kind="topic")
    a = transport.subscribe("t", "a")
    b = transport.subscribe("t", "b")
    transport.send("t", doc(b"z" * 5000))
    assert len(transport.claim_files()) == 1
    transport.ack(transport.receive(a, "c"))
    assert len(transport.claim_files()) == 1  # b still holds it
    [d] = transport.receive(b, "c")
    transport.nack(d, "no", "c", dead=True)
    assert len(transport.claim_files()) == 1  # the dead letter holds it
    assert transport.dead_letters()[0].envelope.body == b"z" * 5000
    transport.purge_dead_letters()
    assert transport.claim_files() == []


def test_claim_file_of_a_rolled_back_send_is_removed(transport: SqliteTransport) -> None:
    with pytest.raises(RuntimeError), transport.transaction() as tx:
        tx.send("q", doc(b"y" * 5000))
        raise RuntimeError
    assert transport.claim_files() == []


def test_journal_and_idempotency_records_are_purged_by_retention(tmp_path, clock: FakeClock) -> None:
    with SqliteTransport(tmp_path, clock=clock, journal_retention=100, idempotency_retention=50) as t:
        t.send("q", doc())
        t.mark_seen("c", ["k"])
        clock.advance(60)
        assert t.maintain()["seen"] == 1 and t.seen("c", ["k"]) == set()
        assert len(t.journal()) == 1
        clock.advance(60)
        assert t.maintain()["journal"] == 1
        assert t.journal() == []


def test_journal_is_queryable_by_channel_and_event(transport: SqliteTransport) -> None:
    transport.send("a", doc())
    transport.send("b", [doc(), doc()])
    assert len(transport.journal(channel="b", event="sent")) == 2
    assert transport.journal(channel="a", event="acked") == []


def test_undecodable_row_goes_to_the_invalid_channel(transport: SqliteTransport) -> None:
    transport.send("q", doc())
    with transport.transaction() as tx:
        tx.conn.execute("UPDATE bodies SET envelope = x'09ff'")
    assert transport.receive("q", "c") == []
    [bad] = transport.dead_letters(kind="invalid")
    assert bad.reason == "undecodable envelope" and bad.raw == b"\x09\xff"


def test_bad_channel_name_is_refused(transport: SqliteTransport) -> None:
    with pytest.raises(TransportError, match="bad channel name 'has space'"):
        transport.send("has space", doc())


def test_subscribing_to_a_queue_is_refused(transport: SqliteTransport) -> None:
    transport.declare("plain")
    with pytest.raises(TransportError, match="is a queue, not a topic"):
        transport.subscribe("plain", "s")


def test_backoff_policy_validation_and_jitter() -> None:
    with pytest.raises(CouplerError, match="multiplier"):
        BackoffPolicy(multiplier=0.5)
    import random

    policy = BackoffPolicy(initial_delay=10, multiplier=2, max_delay=100, jitter=0.2)
    rng = random.Random(1)
    delays = [policy.delay(2, rng) for _ in range(200)]
    assert all(16 <= d <= 24 for d in delays) and len(set(delays)) > 100
    with pytest.raises(CouplerError, match="unknown backoff setting"):
        BackoffPolicy.from_dict({"retries": 3})


def test_stats_report_depth_in_flight_and_oldest_age(transport: SqliteTransport, clock: FakeClock) -> None:
    transport.send("q", [doc(), doc(), doc()])
    clock.advance(30)
    transport.receive("q", "c")
    [st] = transport.stats("q")
    assert (st.depth, st.ready, st.in_flight, st.received) == (3, 2, 1, 1)
    assert st.oldest_age == pytest.approx(30)


# -- schema versions ---------------------------------------------------------------------------

#: the tables of a store written by schema version 1 (before envelopes had their own table)
_V1_MESSAGES = """
CREATE TABLE messages (
    id INTEGER PRIMARY KEY, channel TEXT NOT NULL, message_id TEXT NOT NULL,
    visible_at REAL NOT NULL, enqueued_at REAL NOT NULL, expires_at REAL,
    attempt INTEGER NOT NULL DEFAULT 0, lease_token INTEGER, lease_owner TEXT, claim TEXT,
    envelope BLOB NOT NULL
);
CREATE INDEX messages_ready ON messages (channel, visible_at);
CREATE TABLE counters (channel TEXT PRIMARY KEY, sent INTEGER NOT NULL DEFAULT 0,
    received INTEGER NOT NULL DEFAULT 0, acked INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0, dead INTEGER NOT NULL DEFAULT 0,
    invalid INTEGER NOT NULL DEFAULT 0, expired INTEGER NOT NULL DEFAULT 0);
"""


def test_a_version_1_store_is_migrated_with_its_messages(tmp_path, caplog) -> None:
    old = sqlite3.connect(tmp_path / "coupler.db")
    old.executescript(_V1_MESSAGES)
    waiting = [doc(b"first"), doc(b"second")]
    old.executemany(
        "INSERT INTO messages (channel, message_id, visible_at, enqueued_at, envelope) VALUES (?, ?, 0, 0, ?)",
        [("q", e.message_id, e.to_bytes()) for e in waiting],
    )
    old.commit()
    old.close()
    with caplog.at_level("INFO", logger="coupler.bus.transport.sqlite.transport"), SqliteTransport(tmp_path) as t:
        assert f"migrated from schema version 1 to {SCHEMA_VERSION}" in caplog.text
        assert _pragma(t, "user_version") == SCHEMA_VERSION
        got = t.receive("q", "c", max=10)
        assert [d.envelope.body for d in got] == [b"first", b"second"]
        assert [d.message_id for d in got] == [e.message_id for e in waiting]
        t.ack(got)
        t.send("q", doc(b"new"))
        assert bodies(t.receive("q", "c")) == [b"new"]
    with SqliteTransport(tmp_path) as t:  # opening again migrates nothing
        assert _pragma(t, "user_version") == SCHEMA_VERSION


def _traced(n: int) -> list:
    """``n`` messages in traces of three messages each (a file's records, say)."""
    from coupler.canonical import Envelope
    from coupler.canonical.tracecontext import TRACEPARENT, header_for_key

    return Envelope.many("test.Row@1", [f"row {i}".encode() for i in range(n)], origin="db-in",
                         properties=[{TRACEPARENT: header_for_key(f"trace {i // 3}")} for i in range(n)])


def _by_trace(t: SqliteTransport, trace_ids: list[str]) -> tuple[list[dict], list[dict]]:
    """What a trace search finds, and the same found by reading the whole journal."""
    every = t.journal(limit=100_000)
    return [e.to_json() for e in t.journal(trace_ids=trace_ids, limit=100_000)], [
        e.to_json() for e in every if e.trace_id in trace_ids]


def test_a_trace_search_reads_the_bucketed_trace_index(transport: SqliteTransport) -> None:
    envs = _traced(600)
    transport.send("q", envs[:300], component="adapter:db-in")
    transport.send("other", envs[300:], component="adapter:db-in")
    transport.ack(transport.receive("q", "c", max=10))  # entries without a trace id between them
    sent = transport.journal(event="sent", limit=1000)
    traces = sorted({e.trace_id for e in sent if e.trace_id})
    assert len(traces) == 200 and len({t[0] for t in traces}) == 16  # every bucket has some
    for wanted in ([traces[0]], [traces[5], traces[99], traces[150]], [t for t in traces if t[0] == traces[7][0]]):
        found, scanned = _by_trace(transport, wanted)
        assert found == scanned and len(found) == 3 * len(wanted)
    assert _by_trace(transport, ["0" * 31 + "1"]) == ([], []) and transport.journal(trace_ids=[]) == []
    conn = transport._conn()
    statements: list[str] = []
    conn.set_trace_callback(statements.append)  # the statement the search runs, its values in it
    try:
        transport.journal(trace_ids=traces[:1])  # one trace, and two of different digits
        transport.journal(trace_ids=[traces[0], traces[-1]])
    finally:
        conn.set_trace_callback(None)
    searches = [s for s in statements if "FROM journal" in s]
    assert len(searches) == 2
    for sql in searches:  # a search of the trace ids' digits, not a walk of the whole index
        plan = " ".join(r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert "SEARCH journal USING INDEX journal_trace_bucket" in plan, plan
    indexes = {r[0] for r in transport._conn().execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "journal_trace" not in indexes


def test_a_version_4_store_gets_the_bucketed_trace_index(tmp_path, caplog) -> None:
    with SqliteTransport(tmp_path) as t:
        t.send("q", _traced(90), component="adapter:db-in")
        traces = sorted({e.trace_id for e in t.journal(event="sent") if e.trace_id})
        before = [e.to_json() for e in t.journal(trace_ids=traces[:4])]
    conn = sqlite3.connect(tmp_path / "coupler.db")  # the store as version 4 left it
    conn.executescript("DROP INDEX journal_trace_bucket; "
                       "CREATE INDEX journal_trace ON journal (trace_id) WHERE trace_id IS NOT NULL; "
                       "PRAGMA user_version = 4")
    conn.close()
    with caplog.at_level("INFO", logger="coupler.bus.transport.sqlite.transport"), SqliteTransport(tmp_path) as t:
        assert f"migrated from schema version 4 to {SCHEMA_VERSION}" in caplog.text
        indexes = {r[0] for r in t._conn().execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert "journal_trace_bucket" in indexes and "journal_trace" not in indexes
        assert [e.to_json() for e in t.journal(trace_ids=traces[:4])] == before and len(before) == 12
        assert len(t.receive("q", "c", max=100)) == 90


def test_a_store_of_a_newer_schema_is_refused(tmp_path) -> None:
    with SqliteTransport(tmp_path) as t:
        t.send("q", doc())
    conn = sqlite3.connect(tmp_path / "coupler.db")
    conn.execute("PRAGMA user_version = 9")
    conn.close()
    with pytest.raises(StoreVersionError, match=f"schema version 9, this Coupler reads versions up to {SCHEMA_VERSION}"):
        SqliteTransport(tmp_path).open()


def test_invalid_message_log_line_gives_the_reason_once(transport: SqliteTransport, caplog) -> None:
    transport.send("in", doc())
    [d] = transport.receive("in", "translator")
    with caplog.at_level("WARNING", logger="coupler.bus.transport.sqlite.transport"):
        transport.invalid(d.envelope, "field 'amount': not a number", "translator", delivery=d)
    [line] = [r.getMessage() for r in caplog.records]
    assert line.count("not a number") == 1, line
    [entry] = transport.journal(event="invalid")
    assert entry.detail is not None and entry.detail.count("not a number") == 1


def test_background_checkpoints_copy_the_wal_and_stop_with_the_transport(tmp_path) -> None:
    import os
    import threading
    import time

    t = SqliteTransport(tmp_path, checkpoint_interval=0.02).open()
    t.send("q", [doc(bytes(1024)) for _ in range(100)])
    deadline = time.monotonic() + 30
    while os.path.getsize(t.path) < 100 * 1024 and time.monotonic() < deadline:
        time.sleep(0.02)  # only a checkpoint writes pages into the database file
    assert os.path.getsize(t.path) >= 100 * 1024
    t.close()
    assert not [th for th in threading.enumerate() if th.name == "checkpoint coupler.db"]
    with SqliteTransport(tmp_path, checkpoint_interval=0) as again:
        assert len(again.receive("q", "c", max=200)) == 100


def _sent(t: SqliteTransport, channel: str) -> int:
    return next((s.sent for s in t.stats(channel)), 0)


def test_statistics_of_another_process_arrive_within_a_second_and_at_close(tmp_path) -> None:
    """A transport keeps its channel counters in memory for a moment (no counters page in
    every commit); its own statistics are exact at once, another's arrive with its next
    background tick and, at the latest, when it closes."""
    reader = SqliteTransport(tmp_path, checkpoint_interval=0).open()
    writer = SqliteTransport(tmp_path, checkpoint_interval=0.1).open()
    try:
        writer.send("q", doc(b"one"))
        writer.ack(writer.receive("q", "c"))
        # each arrives with a write of the writer's counts: the sent one may come a tick before
        # the others (written by the receive's own transaction when they were due then)
        wait_for(lambda: [(s.sent, s.received, s.acked) for s in reader.stats("q")] == [(1, 1, 1)],
                 "the other transport's sent, received and acked counts", timeout=5)
        writer.send("q", doc(b"two"))
        assert _sent(writer, "q") == 2  # its own statistics: written when read
        writer.send("q", doc(b"three"))
        writer.close()
        assert _sent(reader, "q") == 3
    finally:
        writer.close()
        reader.close()


def test_a_rolled_back_transaction_counts_nothing(transport: SqliteTransport) -> None:
    with pytest.raises(RuntimeError), transport.transaction() as tx:
        tx.send("q", doc(b"x"))
        raise RuntimeError("abandoned")
    transport.send("q", doc(b"y"))
    [s] = transport.stats("q")
    assert (s.depth, s.sent) == (1, 1)
