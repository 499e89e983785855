"""SQL queries shared by the stores that keep their state in SQL.

The embedded SQLite store (:mod:`coupler.bus.transport.sqlite.transport`, ``?`` placeholders) and the
PostgreSQL store of the broker transport (:mod:`coupler.bus.transport.amqp.store`, ``%s`` placeholders)
query the Message Store journal and filter dead letters the same way; the statements are
built here once, with the placeholder style (``mark``) as a parameter. The keyed ``state``
table's statements of the two PostgreSQL stores (the ``postgres`` transport and the AMQP
transport's store) are here too.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from coupler.bus.transport.base import JournalEntry, JournalQuery
from coupler.bus.transport.ddl import TRACE_BUCKET, TRACE_BUCKET_INDEX
from coupler.canonical import Envelope
from coupler.canonical.tracecontext import search_keys, trace_id_of

#: the columns of a journal row, in the order :func:`journal_entries` reads them
JOURNAL_COLUMNS = "id, at, channel, message_id, event, detail, trace_id"


def journal_trace(envelope: Envelope) -> tuple[str | None, str | None]:
    """The ``trace_id`` and ``keys`` columns of a journal row of ``envelope`` being stored."""
    return trace_id_of(envelope), search_keys(envelope)


def journal_query(table: str, mark: str, query: JournalQuery, *, order: str = "id",
                  trace_buckets: bool = False) -> tuple[str, list[Any]]:
    """The ``SELECT`` of the journal entries ``query`` selects (oldest first), and its
    arguments (``at`` is stored in epoch seconds; ``keys`` as ``|v1|v2|``).

    ``trace_buckets``: the journal's trace index is the embedded store's, keyed by the trace
    id's first digit (:func:`coupler.bus.transport.ddl.journal_trace_index`); a search by
    trace ids names their digits too and reads that index (``INDEXED BY``: with statistics
    SQLite would rather walk the table in id order, for the ``ORDER BY ... LIMIT``). The trace
    ids are compared as ``+trace_id``: SQLite would otherwise put the value of a single
    ``trace_id = ?`` into the digit's expression, which then no longer names the index's, and
    read the whole index."""
    clauses, args = _equal(
        (("message_id", query.message_id), ("channel", query.channel), ("event", query.event)), mark
    )
    source = table
    for column, values in (("trace_id", query.trace_ids), ("message_id", query.message_ids)):
        if values is not None:
            listed = list(values) or [""]
            if column == "trace_id" and trace_buckets:
                digits = sorted({v[:1] for v in listed})
                source = f"{table} INDEXED BY {TRACE_BUCKET_INDEX}"
                clauses += [f"{TRACE_BUCKET} IN ({', '.join([mark] * len(digits))})", "trace_id IS NOT NULL"]
                args.extend(digits)
                column = "+trace_id"
            clauses.append(f"{column} IN ({', '.join([mark] * len(listed))})")
            args.extend(listed)
    pattern = query.key_pattern
    if pattern is not None:
        escaped = pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        clauses.append(f"keys LIKE {mark} ESCAPE '\\'")
        args.append(f"%{escaped}%")
    if query.since is not None:
        clauses.append(f"at >= {mark}")
        args.append(query.since.timestamp())
    sql = f"SELECT {JOURNAL_COLUMNS} FROM {source} {_where(clauses)} ORDER BY {order} LIMIT {mark}"
    return sql, [*args, query.limit]


def journal_entries(rows: Iterable[tuple[Any, ...]]) -> list[JournalEntry]:
    """The rows of a :func:`journal_query` as journal entries."""
    return [JournalEntry(r[0], datetime.fromtimestamp(r[1], UTC), r[2], r[3], r[4], r[5], r[6]) for r in rows]


def dead_letter_where(queue: str | None, kind: str | None, mark: str) -> tuple[str, list[Any]]:
    """``WHERE`` (or nothing) selecting the dead letters of one queue and/or kind, and its
    arguments."""
    clauses, args = _equal((("queue", queue), ("kind", kind)), mark)
    return _where(clauses), args


def _equal(pairs: Iterable[tuple[str, Any]], mark: str) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    args: list[Any] = []
    for column, value in pairs:
        if value is not None:
            clauses.append(f"{column} = {mark}")
            args.append(value)
    return clauses, args


def _where(clauses: list[str]) -> str:
    return f"WHERE {' AND '.join(clauses)}" if clauses else ""


# -- the keyed state table of the PostgreSQL stores (the postgres transport, the AMQP store) ---


def state_select(table: str, scope: str, keys: list[str] | None, now: float) -> tuple[str, list[Any]]:
    """The ``SELECT key, value`` of the unexpired keyed state of ``scope`` (of ``keys`` only
    when given), and its arguments."""
    sql = f"SELECT key, value FROM {table} WHERE scope = %s AND (expires_at IS NULL OR expires_at > %s)"
    return (sql, [scope, now]) if keys is None else (f"{sql} AND key = ANY(%s)", [scope, now, keys])


def state_delete(table: str, scope: str, keys: list[str]) -> tuple[str, list[Any]]:
    """The ``DELETE`` of keys of ``scope``, and its arguments."""
    return f"DELETE FROM {table} WHERE scope = %s AND key = ANY(%s)", [scope, keys]


def state_upsert(table: str, scope: str, values: dict[str, bytes], expires_at: float | None,
                 only_new_at: float | None = None) -> tuple[str, list[Any]]:
    """The upsert of ``values`` under ``scope`` (``only_new_at``: replacing only values expired
    by then), ``RETURNING`` the keys written, and its arguments."""
    condition = f" WHERE {table}.expires_at <= %s" if only_new_at is not None else ""
    return (
        f"INSERT INTO {table} (scope, key, value, expires_at) "
        "SELECT %s, k, v, %s FROM unnest(%b::text[], %b::bytea[]) AS u(k, v) "
        f"ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at{condition} "
        "RETURNING key",
        [scope, expires_at, list(values), list(values.values()), *([] if only_new_at is None else [only_new_at])],
    )
