"""The embedded :class:`~coupler.bus.api.FileState`: one SQLite file per adapter.

``DATA_DIR/adapters/NAME/files.db`` (WAL, ``synchronous=FULL``): the seen-state of a polling
adapter on a single-node site, and of adapters run without a bus. One daemon owns the data
directory (its lock), so :meth:`SqliteFileState.begin` never has to refuse a claim. The
shared implementation for multi-node sites is :mod:`coupler.bus.transport.amqp.file_state`.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from coupler.bus.model.files import FINAL_STATES, PROCESSING, FileKey, FileRecord, FileState
from coupler.bus.transport.ddl import SQLITE, file_state
from coupler.bus.transport.private import private_dir, private_file

_COLUMNS = "path, size, mtime_ns, checksum, state, published, detail, updated"


def file_record(row: tuple) -> FileRecord:
    """A record from a row of ``path, size, mtime_ns, checksum, state, published, detail, updated``."""
    path, size, mtime, checksum, state, published, detail, updated = row
    return FileRecord(FileKey(path, size, mtime, checksum), state, published, detail, updated)


class SqliteFileState:
    """The seen-state of one adapter in the SQLite database ``path``."""

    def __init__(self, path: Path, *, synchronous: str = "FULL"):
        self.path = Path(path)
        private_file(private_dir(self.path.parent) / self.path.name)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(f"PRAGMA synchronous={synchronous}")
        self._conn.execute("PRAGMA busy_timeout=10000")
        for statement in file_state(SQLITE, shared=False):
            self._conn.execute(statement)
        self._migrate_delivered()

    def __repr__(self) -> str:
        return f"SqliteFileState({str(self.path)!r})"

    def _migrate_delivered(self) -> None:
        """A state written before the outbound side's keys moved to ``seen``: its delivered
        message ids become keys of the ``files`` receiver (adapters/common/outbound.py)."""
        if self._conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'delivered'").fetchone() is None:
            return
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.execute(
                "INSERT OR IGNORE INTO seen (consumer, key, seen_at) "
                "SELECT 'files', 'id:' || message_id, at FROM delivered"
            )
            self._conn.execute("DROP TABLE delivered")
            self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def get(self, key: FileKey) -> FileRecord | None:
        with self._lock:
            row = self._conn.execute(
                f"SELECT {_COLUMNS} FROM files WHERE path = ? AND size = ? AND mtime_ns = ? AND checksum = ?",
                (key.path, key.size, key.mtime_ns, key.checksum),
            ).fetchone()
        return file_record(row) if row else None

    def find(self, path: str, size: int, mtime_ns: int) -> list[FileRecord]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_COLUMNS} FROM files WHERE path = ? AND size = ? AND mtime_ns = ? ORDER BY updated DESC",
                (path, size, mtime_ns),
            ).fetchall()
        return [file_record(r) for r in rows]

    def begin(self, key: FileKey) -> FileRecord:
        """The file's record, created in state PROCESSING when it has none (never None:
        the daemon holding the data directory is the only claimant)."""
        now = time.time()
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO files (path, size, mtime_ns, checksum, state, published, created, updated) "
                "VALUES (?, ?, ?, ?, ?, 0, ?, ?)",
                (key.path, key.size, key.mtime_ns, key.checksum, PROCESSING, now, now),
            )
        record = self.get(key)
        assert record is not None
        return record

    def progress(self, key: FileKey, published: int) -> None:
        self._update(key, "published = ?", (published,))

    def set_state(self, key: FileKey, state: str, detail: str | None = None) -> None:
        self._update(key, "state = ?, detail = ?", (state, detail))

    def _update(self, key: FileKey, assignments: str, values: tuple) -> None:
        with self._lock:
            self._conn.execute(
                f"UPDATE files SET {assignments}, updated = ? "
                "WHERE path = ? AND size = ? AND mtime_ns = ? AND checksum = ?",
                (*values, time.time(), key.path, key.size, key.mtime_ns, key.checksum),
            )

    def counts(self) -> dict[str, int]:
        with self._lock:
            rows = self._conn.execute("SELECT state, COUNT(*) FROM files GROUP BY state").fetchall()
        return {state: n for state, n in rows}

    def prune(self, older_than_seconds: float) -> int:
        limit = time.time() - older_than_seconds
        marks = ",".join("?" * len(FINAL_STATES))
        with self._lock:
            n = self._conn.execute(
                f"DELETE FROM files WHERE state IN ({marks}) AND updated < ?", (*FINAL_STATES, limit)
            ).rowcount
            self._conn.execute("DELETE FROM seen WHERE seen_at < ?", (limit,))
        return n

    def seen(self, consumer: str, keys: Iterable[str]) -> set[str]:
        keys = list(keys)
        marks = ",".join("?" * len(keys))
        with self._lock:
            rows = self._conn.execute(
                f"SELECT key FROM seen WHERE consumer = ? AND key IN ({marks})", (consumer, *keys)
            ).fetchall()
        return {r[0] for r in rows}

    def mark_seen(self, consumer: str, keys: Iterable[str]) -> None:
        now = time.time()
        with self._lock:
            self._conn.executemany(
                "INSERT OR REPLACE INTO seen (consumer, key, seen_at) VALUES (?, ?, ?)",
                [(consumer, k, now) for k in keys],
            )


__all__ = ["SqliteFileState", "file_record"]


def embedded_file_state(path: Path, *, synchronous: str = "FULL") -> FileState:
    """The embedded seen-state: a SQLite database at ``path`` (WAL), for adapters run
    without a bus context (tests, tools) and on single-node sites."""
    return SqliteFileState(path, synchronous=synchronous)
