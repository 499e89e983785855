"""The seen-state of polling adapters shared by the daemons of a multi-node site.

:class:`PgFileState` implements :class:`~coupler.bus.api.FileState` on the ``files`` and
``seen`` tables of a :class:`~coupler.bus.transport.amqp.store.PgStore`, so that several
daemons (on several hosts) can poll one drop directory or SFTP server.

Taking a file is a **claim**: :meth:`PgFileState.begin` inserts the file's row (state
``PROCESSING``) or takes an existing one over, in one ``INSERT ... ON CONFLICT DO UPDATE
... WHERE`` statement, only when nobody holds it, its holder is this claimant (a restarted
daemon resumes its own files at once), or its holder's lease ran out. Every
:meth:`~PgFileState.progress` and :meth:`~PgFileState.set_state` renews the lease and is
conditional on still holding the claim; a daemon whose claim was taken over gets
:class:`~coupler.bus.api.FileClaimLost` and leaves the file to the new holder. Times are
PostgreSQL's clock, so the hosts' clocks need not agree.

A daemon that dies in the middle of a file leaves its row ``PROCESSING`` with ``published``
messages recorded: after ``lease_seconds`` another daemon takes it over and resumes after
the last recorded message, as a restarted single daemon does (the one message that may be
published twice carries the same message id). The claimant name is the host and the
adapter's data directory: one daemon per data directory (its lock), so a restarted daemon
is the same claimant and does not wait for its own lease.
"""

from __future__ import annotations

from collections.abc import Iterable

from coupler.bus.model.files import FINAL_STATES, PROCESSING, FileClaimLost, FileKey, FileRecord
from coupler.bus.transport.amqp.store import PgStore
from coupler.bus.transport.sqlite.file_state import file_record

_NOW = "extract(epoch from clock_timestamp())"
_COLUMNS = "path, size, mtime_ns, checksum, state, published, detail, updated"
_KEY = "adapter = %s AND path = %s AND size = %s AND mtime_ns = %s AND checksum = %s"


class PgFileState:
    """The seen-state of adapter ``adapter`` in ``store``, claims made as ``owner``."""

    def __init__(self, store: PgStore, adapter: str, owner: str, *, lease_seconds: float = 300.0,
                 lease_key: str = "store.amqp.file_lease_seconds"):
        if lease_seconds <= 0:
            raise ValueError("lease_seconds must be positive")
        self.store = store
        self.adapter = adapter
        self.owner = owner
        self.lease_seconds = lease_seconds
        #: the site's key setting ``lease_seconds`` (named when a claim is lost)
        self.lease_key = lease_key
        self._t = f"{store.schema}.files"

    def __repr__(self) -> str:
        return f"PgFileState({self.store!r}, adapter={self.adapter!r}, owner={self.owner!r})"

    def _key(self, key: FileKey) -> tuple[str, str, int, int, str]:
        return (self.adapter, key.path, key.size, key.mtime_ns, key.checksum)

    def close(self) -> None:
        """Nothing to release: the connections belong to the store (the transport's)."""

    def get(self, key: FileKey) -> FileRecord | None:
        with self.store.conn() as c:
            row = c.execute(f"SELECT {_COLUMNS} FROM {self._t} WHERE {_KEY}", self._key(key)).fetchone()
        return file_record(row) if row else None

    def find(self, path: str, size: int, mtime_ns: int) -> list[FileRecord]:
        with self.store.conn() as c:
            rows = c.execute(
                f"SELECT {_COLUMNS} FROM {self._t} WHERE adapter = %s AND path = %s AND size = %s "
                "AND mtime_ns = %s ORDER BY updated DESC",
                (self.adapter, path, size, mtime_ns),
            ).fetchall()
        return [file_record(r) for r in rows]

    def begin(self, key: FileKey) -> FileRecord | None:
        """Claim the file (see the module documentation); None when another live daemon holds it."""
        with self.store.conn(durable=True) as c:
            row = c.execute(
                f"INSERT INTO {self._t} AS f (adapter, path, size, mtime_ns, checksum, state, published, "
                f"owner, lease_until, created, updated) VALUES (%s, %s, %s, %s, %s, %s, 0, %s, "
                f"{_NOW} + %s, {_NOW}, {_NOW}) "
                "ON CONFLICT (adapter, path, size, mtime_ns, checksum) DO UPDATE "
                "SET owner = excluded.owner, lease_until = excluded.lease_until "
                "WHERE f.owner = excluded.owner OR f.lease_until < excluded.created "
                f"RETURNING {', '.join('f.' + c for c in _COLUMNS.split(', '))}",
                (*self._key(key), PROCESSING, self.owner, self.lease_seconds),
            ).fetchone()
        return file_record(row) if row else None

    def progress(self, key: FileKey, published: int) -> None:
        self._update(key, "published = %s", (published,))

    def set_state(self, key: FileKey, state: str, detail: str | None = None) -> None:
        self._update(key, "state = %s, detail = %s", (state, detail))

    def _update(self, key: FileKey, assignments: str, values: tuple) -> None:
        with self.store.conn(durable=True) as c:
            n = c.execute(
                f"UPDATE {self._t} SET {assignments}, lease_until = {_NOW} + %s, updated = {_NOW} "
                f"WHERE {_KEY} AND owner = %s",
                (*values, self.lease_seconds, *self._key(key), self.owner),
            ).rowcount
        if n == 0:
            raise FileClaimLost(
                f"adapter {self.adapter}: {key} is no longer claimed by {self.owner}",
                where=f"PostgreSQL {self._t}",
                hint=f"another daemon took the file over after this one made no progress for "
                f"{self.lease_key}; it finishes the file",
            )

    def counts(self) -> dict[str, int]:
        with self.store.conn() as c:
            rows = c.execute(
                f"SELECT state, COUNT(*) FROM {self._t} WHERE adapter = %s GROUP BY state", (self.adapter,)
            ).fetchall()
        return {state: int(n) for state, n in rows}

    def prune(self, older_than_seconds: float) -> int:
        with self.store.conn() as c:
            n = c.execute(
                f"DELETE FROM {self._t} WHERE adapter = %s AND state = ANY(%s) AND updated < {_NOW} - %s",
                (self.adapter, list(FINAL_STATES), older_than_seconds),
            ).rowcount
        return n

    def seen(self, consumer: str, keys: Iterable[str]) -> set[str]:
        """Keys in the store's ``seen`` (kept for the site's idempotency window, shared by
        every daemon), the consumer named after this adapter: ``CONSUMER:ADAPTER``."""
        return self.store.seen(f"{consumer}:{self.adapter}", keys)

    def mark_seen(self, consumer: str, keys: Iterable[str]) -> None:
        self.store.mark_seen(f"{consumer}:{self.adapter}", keys)


__all__ = ["PgFileState"]
