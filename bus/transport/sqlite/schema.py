"""The schema of the embedded SQLite store and its migrations (``PRAGMA user_version``).

Version 2 (current) keeps a message in two rows written in one transaction: its *state* in
``messages`` (channel, visibility, lease, attempt: about 100 bytes, rewritten by every lease
grant and nack) and its serialised envelope in ``bodies`` (same rowid, written once, deleted
with the state row). A lease grant or an acknowledgement therefore rewrites a few small pages
instead of the pages holding the 1 KiB envelopes.

Version 1 (stores created before the split; ``user_version`` 0) kept the envelope in a column
of ``messages``; :func:`ensure_schema` migrates such a store in place, in one transaction.
Version 3 adds the trace id and search keys of sent messages to ``journal`` (message
tracing); a version 2 store gains the two columns in place. Version 4 adds the keyed
``state`` table of stateful steps (created in place in an older store). Version 5 replaces
the journal's trace index on the trace id (random keys: a page written per stored message)
by one keyed by the trace id's first hex digit and the row id
(:func:`~coupler.bus.transport.ddl.journal_trace_index`), built in place in an older store.

A store of a newer version than this code knows is refused with a clear message.
"""

from __future__ import annotations

import sqlite3

from coupler.bus.transport.base import TransportError
from coupler.bus.transport.ddl import SQLITE, journal_trace_columns, journal_trace_index, metadata

#: the schema version this code writes (``PRAGMA user_version``)
SCHEMA_VERSION = 5

#: the tables only the embedded store has; the metadata tables are in :mod:`coupler.bus.transport.ddl`
_TABLES = """
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
    claim TEXT
);
CREATE INDEX IF NOT EXISTS messages_ready ON messages (channel, visible_at);
CREATE INDEX IF NOT EXISTS messages_expiring ON messages (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_claim ON messages (claim) WHERE claim IS NOT NULL;
CREATE TABLE IF NOT EXISTS bodies (
    id INTEGER PRIMARY KEY,
    envelope BLOB NOT NULL
);
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
CREATE INDEX IF NOT EXISTS dead_letters_claim ON dead_letters (claim) WHERE claim IS NOT NULL
"""


class StoreVersionError(TransportError):
    """The store was written by a newer Coupler whose schema this version cannot read."""


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def ensure_schema(conn: sqlite3.Connection, where: str) -> int | None:
    """Create or migrate the schema; call inside a write transaction (``BEGIN IMMEDIATE``).

    Returns the version migrated from (None when the store was current or new).
    """
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise StoreVersionError(
            f"the store has schema version {version}, this Coupler reads versions up to "
            f"{SCHEMA_VERSION}",
            where=where,
            hint="run the newer Coupler that created this store, or use another data directory",
        )
    if version == SCHEMA_VERSION:
        return None
    migrated: int | None = None
    if version == 0 and "envelope" in _columns(conn, "messages"):
        # version 1 (no user_version yet): move the envelopes into their own table
        conn.execute("CREATE TABLE bodies (id INTEGER PRIMARY KEY, envelope BLOB NOT NULL)")
        conn.execute("INSERT INTO bodies (id, envelope) SELECT id, envelope FROM messages")
        conn.execute("ALTER TABLE messages DROP COLUMN envelope")
        migrated = 1
    had_state = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'state'").fetchone() is not None
    for statement in [*_TABLES.split(";"), *metadata(SQLITE)]:
        if statement.strip():
            conn.execute(statement)
    if "trace_id" not in _columns(conn, "journal"):
        # version 2: the journal gains the trace id and search keys of sent messages
        for statement in journal_trace_columns(SQLITE):
            conn.execute(statement)
        migrated = migrated or 2
    if version and not had_state:
        migrated = migrated or 3  # version 3: the step state table is new
    if version and conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'journal_trace'").fetchone():
        # version 4: the trace index on the trace id alone gives way to the bucketed one
        conn.execute("DROP INDEX journal_trace")
        migrated = migrated or 4
    conn.execute(journal_trace_index(SQLITE))
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    return migrated
