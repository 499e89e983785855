"""The durable per-file seen-state of inbound adapters, and outbound delivery records.

The bus does not offer adapters a key-value store, so each adapter keeps a small SQLite
database (WAL, ``synchronous=FULL``) in its data directory (``context.data_dir``).

A file is identified by its path, size, modification time and, when configured, its
SHA-256 checksum. Its state goes ``PROCESSING`` (messages being published; ``published``
counts those already sent) → ``PUBLISHED`` (every message sent, post-action pending) →
``DONE``; or → ``FAILED`` (moved to the error directory); or → ``STAGED`` (handed to the
batch job). A file whose size or mtime changes is a new key, hence taken again.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PROCESSING, PUBLISHED, DONE, FAILED, STAGED = "PROCESSING", "PUBLISHED", "DONE", "FAILED", "STAGED"
FINAL_STATES = (DONE, FAILED, STAGED)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    checksum TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL,
    published INTEGER NOT NULL DEFAULT 0,
    detail TEXT,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    PRIMARY KEY (path, size, mtime_ns, checksum)
);
CREATE INDEX IF NOT EXISTS files_state ON files (state);
CREATE TABLE IF NOT EXISTS delivered (
    message_id TEXT PRIMARY KEY,
    name TEXT,
    at REAL NOT NULL
);
"""


@dataclass(frozen=True)
class FileKey:
    path: str
    size: int
    mtime_ns: int
    checksum: str = ""

    def __str__(self) -> str:
        text = f"{self.path} ({self.size} bytes, mtime {self.mtime_ns})"
        return text + (f" sha256 {self.checksum[:12]}" if self.checksum else "")


@dataclass(frozen=True)
class FileRecord:
    key: FileKey
    state: str
    published: int
    detail: str | None
    updated: float


class FileStateStore:
    """The seen-state of one adapter, in ``DATA_DIR/files.db``."""

    def __init__(self, path: Path, *, synchronous: str = "FULL"):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(f"PRAGMA synchronous={synchronous}")
        self._conn.execute("PRAGMA busy_timeout=10000")
        self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _row(self, row: tuple) -> FileRecord:
        path, size, mtime, checksum, state, published, detail, updated = row
        return FileRecord(FileKey(path, size, mtime, checksum), state, published, detail, updated)

    def get(self, key: FileKey) -> FileRecord | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT path, size, mtime_ns, checksum, state, published, detail, updated FROM files "
                "WHERE path = ? AND size = ? AND mtime_ns = ? AND checksum = ?",
                (key.path, key.size, key.mtime_ns, key.checksum),
            ).fetchone()
        return self._row(row) if row else None

    def find(self, path: str, size: int, mtime_ns: int) -> list[FileRecord]:
        """Every record of this path, size and mtime (whatever their checksum)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT path, size, mtime_ns, checksum, state, published, detail, updated FROM files "
                "WHERE path = ? AND size = ? AND mtime_ns = ? ORDER BY updated DESC",
                (path, size, mtime_ns),
            ).fetchall()
        return [self._row(r) for r in rows]

    def begin(self, key: FileKey) -> FileRecord:
        """The file's record, created in state PROCESSING when it has none."""
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
        """``published`` messages of the file are durably on the bus."""
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
        """Forget finished files not seen for ``older_than_seconds`` (and old delivery ids)."""
        limit = time.time() - older_than_seconds
        marks = ",".join("?" * len(FINAL_STATES))
        with self._lock:
            n = self._conn.execute(
                f"DELETE FROM files WHERE state IN ({marks}) AND updated < ?", (*FINAL_STATES, limit)
            ).rowcount
            self._conn.execute("DELETE FROM delivered WHERE at < ?", (limit,))
        return n

    # -- outbound: which messages were already written (Idempotent Receiver) ------------------

    def delivered(self, message_id: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT name FROM delivered WHERE message_id = ?", (message_id,)).fetchone()
        return None if row is None else (row[0] or "")

    def mark_delivered(self, message_id: str, name: str | None) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO delivered (message_id, name, at) VALUES (?, ?, ?)",
                (message_id, name, time.time()),
            )
