"""The file seen-state of polling adapters: one contract over the embedded SQLite file and
the PostgreSQL table a multi-node site shares, and the claims that let two daemons poll one
directory."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coupler.bus.api import (
    DONE,
    FAILED,
    PROCESSING,
    PUBLISHED,
    STAGED,
    FileClaimLost,
    FileKey,
    FileState,
    IdempotentReceiver,
    embedded_file_state,
)
from coupler.bus.transport.amqp.file_state import PgFileState
from coupler.bus.transport.amqp.store import PgStore
from coupler.canonical import Envelope
from tests.bus.transport.amqp.broker import PG_DSN, servers_or_fail, unique_names


@pytest.fixture
def pg_store() -> Iterator[PgStore]:
    servers_or_fail()
    store = PgStore(PG_DSN, schema=unique_names()["postgres_schema"]).open()
    try:
        yield store
    finally:
        store.drop()
        store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FileState]:
    if request.param == "sqlite":
        s = embedded_file_state(tmp_path / "files.db")
        yield s
        s.close()
    else:
        store = request.getfixturevalue("pg_store")
        yield PgFileState(store, "drop", "host-a:/data/adapters/drop")


KEY = FileKey("in/orders.txt", 120, 1_700_000_000_000_000_000)


# -- the contract of FileState, both implementations ------------------------------------------


def test_begin_creates_a_processing_record_and_resumes_it(state: FileState) -> None:
    assert state.get(KEY) is None
    record = state.begin(KEY)
    assert record is not None and (record.key, record.state, record.published) == (KEY, PROCESSING, 0)
    state.progress(KEY, 3)
    again = state.begin(KEY)  # a restart: the same record, after its last published message
    assert again is not None and (again.state, again.published) == (PROCESSING, 3)
    assert state.get(KEY) == again


def test_states_and_details_are_kept(state: FileState) -> None:
    state.begin(KEY)
    state.set_state(KEY, PUBLISHED)
    assert state.get(KEY).state == PUBLISHED  # type: ignore[union-attr]
    state.set_state(KEY, FAILED, "line 3: not a number")
    record = state.get(KEY)
    assert record is not None and (record.state, record.detail) == (FAILED, "line 3: not a number")
    again = state.begin(KEY)  # a finished file is not started again
    assert again is not None and (again.state, again.detail) == (FAILED, "line 3: not a number")


def test_a_changed_file_is_a_new_key(state: FileState) -> None:
    state.begin(KEY)
    state.set_state(KEY, DONE)
    changed = FileKey(KEY.path, KEY.size + 1, KEY.mtime_ns + 5)
    record = state.begin(changed)
    assert record is not None and record.state == PROCESSING
    assert state.get(KEY).state == DONE  # type: ignore[union-attr]


def test_find_lists_every_checksum_of_a_path_size_and_mtime(state: FileState) -> None:
    a = FileKey(KEY.path, KEY.size, KEY.mtime_ns, "aa" * 32)
    b = FileKey(KEY.path, KEY.size, KEY.mtime_ns, "bb" * 32)
    other = FileKey("in/other.txt", KEY.size, KEY.mtime_ns)
    for k in (a, b, other):
        state.begin(k)
    state.set_state(b, DONE)  # updated last: listed first
    found = state.find(KEY.path, KEY.size, KEY.mtime_ns)
    assert [r.key for r in found] == [b, a]
    assert state.find(KEY.path, KEY.size + 1, KEY.mtime_ns) == []


def test_counts_and_prune_forget_only_finished_files(state: FileState) -> None:
    keys = [FileKey(f"f{i}", i, i) for i in range(5)]
    for k in keys:
        state.begin(k)
    state.set_state(keys[0], DONE)
    state.set_state(keys[1], FAILED, "bad")
    state.set_state(keys[2], STAGED, "/batch/f2")
    state.set_state(keys[3], PUBLISHED)
    assert state.counts() == {DONE: 1, FAILED: 1, STAGED: 1, PUBLISHED: 1, PROCESSING: 1}
    assert state.prune(3600) == 0  # nothing is that old
    assert state.prune(0) == 3
    assert state.counts() == {PUBLISHED: 1, PROCESSING: 1}
    assert state.get(keys[3]) is not None and state.get(keys[0]) is None


def test_seen_keys_make_an_idempotent_receiver(state: FileState) -> None:
    receiver = IdempotentReceiver("files:out")
    first, other = Envelope(format="test.Text@1", body=b"a"), Envelope(format="test.Text@1", body=b"b")
    assert not receiver.is_duplicate(state, first)
    receiver.mark(state, first)
    assert receiver.is_duplicate(state, first.replace()) and not receiver.is_duplicate(state, other)
    assert not IdempotentReceiver("files:elsewhere").is_duplicate(state, first)  # per consumer
    assert receiver.duplicates == 1


def test_delivered_ids_written_before_the_seen_keys_are_still_known(tmp_path: Path, pg_store: PgStore) -> None:
    """A seen-state of the former layout (``delivered`` / ``files_delivered`` tables): its
    written message ids are migrated into the keys of the ``files`` receiver."""
    old = Envelope(format="test.Text@1", body=b"written before the upgrade")
    with sqlite3.connect(tmp_path / "files.db") as db:
        db.execute("CREATE TABLE delivered (message_id TEXT PRIMARY KEY, name TEXT, at REAL NOT NULL)")
        db.execute("INSERT INTO delivered VALUES (?, 'out/a.txt', 1.0)", (old.message_id,))
    s = pg_store.schema
    with pg_store.conn() as c:
        c.execute(f"CREATE TABLE {s}.files_delivered (adapter TEXT NOT NULL, message_id TEXT NOT NULL, "
                  "name TEXT, at DOUBLE PRECISION NOT NULL, PRIMARY KEY (adapter, message_id))")
        c.execute(f"INSERT INTO {s}.files_delivered VALUES ('drop', %s, 'out/a.txt', 1.0)", (old.message_id,))
    pg_store.open()  # a daemon of the new version starts
    embedded = embedded_file_state(tmp_path / "files.db")
    shared = PgFileState(pg_store, "drop", "host-a:/data/adapters/drop")
    try:
        for state in (embedded, shared):
            assert IdempotentReceiver("files").is_duplicate(state, old)
            assert not IdempotentReceiver("files").is_duplicate(state, Envelope(format="test.Text@1", body=b"new"))
        assert not IdempotentReceiver("files").is_duplicate(PgFileState(pg_store, "other", "h:/o"), old)
    finally:
        embedded.close()


# -- claims (the shared PostgreSQL state) -----------------------------------------------------


def test_state_is_per_adapter(pg_store: PgStore) -> None:
    drop = PgFileState(pg_store, "drop", "host-a:/d")
    sftp = PgFileState(pg_store, "sftp", "host-a:/d")
    drop.begin(KEY)
    drop.set_state(KEY, DONE)
    assert sftp.get(KEY) is None and sftp.counts() == {}
    assert sftp.begin(KEY).state == PROCESSING  # type: ignore[union-attr]


def test_one_claimant_wins_a_file_the_others_leave_it(pg_store: PgStore) -> None:
    claimants = [PgFileState(pg_store, "drop", f"host-{i}:/data") for i in range(8)]
    barrier = threading.Barrier(len(claimants))
    won: list[str] = []

    def claim(s: PgFileState) -> None:
        barrier.wait()
        if s.begin(KEY) is not None:
            won.append(s.owner)

    threads = [threading.Thread(target=claim, args=(s,)) for s in claimants]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1
    holder = next(s for s in claimants if s.owner == won[0])
    other = next(s for s in claimants if s.owner != won[0])
    with pytest.raises(FileClaimLost):
        other.progress(KEY, 1)
    with pytest.raises(FileClaimLost):
        other.set_state(KEY, DONE)
    holder.progress(KEY, 1)
    assert other.begin(KEY) is None  # still held: the holder made progress
    assert holder.get(KEY).published == 1  # type: ignore[union-attr]


def test_a_dead_claimants_file_is_taken_over_after_its_lease(pg_store: PgStore) -> None:
    dead = PgFileState(pg_store, "drop", "host-a:/data", lease_seconds=0.5)
    dead.begin(KEY)
    dead.progress(KEY, 4)
    survivor = PgFileState(pg_store, "drop", "host-b:/data")
    assert survivor.begin(KEY) is None
    _wait_until(lambda: survivor.begin(KEY) is not None, 30)
    record = survivor.get(KEY)
    assert record is not None and (record.state, record.published) == (PROCESSING, 4)  # resumed, not restarted
    survivor.progress(KEY, 6)
    with pytest.raises(FileClaimLost):  # the old holder, should it come back, stops
        dead.progress(KEY, 5)
    survivor.set_state(KEY, DONE)
    assert survivor.get(KEY).published == 6  # type: ignore[union-attr]


def test_a_restarted_claimant_resumes_its_own_file_at_once(pg_store: PgStore) -> None:
    first = PgFileState(pg_store, "drop", "host-a:/data", lease_seconds=3600)
    first.begin(KEY)
    first.progress(KEY, 2)
    restarted = PgFileState(pg_store, "drop", "host-a:/data", lease_seconds=3600)
    record = restarted.begin(KEY)
    assert record is not None and record.published == 2


def _wait_until(predicate: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "the condition did not come true"
        time.sleep(0.05)
