"""The metadata tables both stores keep, written once for SQLite and PostgreSQL.

The embedded store (:mod:`coupler.bus.transport.sqlite.schema`) and the shared state of the
broker and PostgreSQL transports (:mod:`coupler.bus.transport.amqp.store`) keep the same
metadata: channel configurations, durable subscriptions, the Message Store journal,
per-channel counters, the Idempotent Receiver's keys, the Application Repository and the
keyed ``state`` of stateful steps; the polling adapters' file
seen-state has the same shape in ``files.db`` (one adapter per database) and in PostgreSQL
(every adapter of the site, with claims). The statements are written here once; a
:class:`Dialect` fills in what differs (column types, the schema prefix, SQLite's
``WITHOUT ROWID``, the indexes only PostgreSQL's query load needs). What only one store has
(SQLite's ``messages``, ``bodies`` and ``dead_letters``; PostgreSQL's ``broker_objects`` and
dead-letter id sequence) stays with that store.
"""

from __future__ import annotations

from dataclasses import dataclass

from coupler.bus.transport.policy import COUNTERS


@dataclass(frozen=True)
class Dialect:
    """What the DDL of one SQL engine spells differently."""

    #: a floating-point column (epoch seconds)
    real: str
    #: a 64-bit integer column
    bigint: str
    #: a column of bytes
    blob: str
    #: an integer primary key the database assigns
    serial_key: str
    #: appended to tables keyed on their primary key only
    without_rowid: str = ""
    #: the schema the tables live in ("" for SQLite's one database)
    schema: str = ""
    #: index the journal by message id and time (queried by many daemons on PostgreSQL; the
    #: embedded store keeps its journal appends cheap instead)
    journal_indexes: bool = False

    def table(self, name: str) -> str:
        """A table's qualified name."""
        return f"{self.schema}.{name}" if self.schema else name


SQLITE = Dialect(real="REAL", bigint="INTEGER", blob="BLOB", serial_key="INTEGER PRIMARY KEY",
                 without_rowid=" WITHOUT ROWID")


def postgres(schema: str) -> Dialect:
    """PostgreSQL, the tables in ``schema`` (a checked identifier)."""
    return Dialect(real="DOUBLE PRECISION", bigint="BIGINT", blob="BYTEA", serial_key="BIGSERIAL PRIMARY KEY",
                   schema=schema, journal_indexes=True)


def metadata(d: Dialect) -> list[str]:
    """``CREATE ... IF NOT EXISTS`` of the metadata tables, one statement each."""
    t = d.table
    counters = ",\n".join(f"    {c} {d.bigint} NOT NULL DEFAULT 0" for c in COUNTERS)
    statements = [
        f"""CREATE TABLE IF NOT EXISTS {t('channels')} (
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL DEFAULT 'queue',
    config TEXT NOT NULL DEFAULT '{{}}',
    created_at {d.real} NOT NULL
)""",
        f"""CREATE TABLE IF NOT EXISTS {t('subscriptions')} (
    topic TEXT NOT NULL,
    name TEXT NOT NULL,
    channel TEXT NOT NULL,
    selector TEXT,
    created_at {d.real} NOT NULL,
    PRIMARY KEY (topic, name)
)""",
        f"""CREATE TABLE IF NOT EXISTS {t('journal')} (
    id {d.serial_key},
    at {d.real} NOT NULL,
    channel TEXT,
    message_id TEXT,
    event TEXT NOT NULL,
    detail TEXT,
    trace_id TEXT,
    keys TEXT
)""",
        f"CREATE TABLE IF NOT EXISTS {t('counters')} (\n    channel TEXT PRIMARY KEY,\n{counters}\n)",
        *_seen(d),
        f"""CREATE TABLE IF NOT EXISTS {t('identities')} (
    id {d.serial_key},
    class TEXT NOT NULL,
    provider TEXT,
    name TEXT,
    version TEXT,
    channel TEXT NOT NULL,
    adapter TEXT,
    registered_at {d.real} NOT NULL,
    UNIQUE (class, provider, name, version, channel)
)""",
        # keyed state: stateful steps (aggregation groups, resequencer buffers, process
        # instances), written in the transaction that acknowledges their message; the stores
        # of coupler.bus.transport.storage keep their own metadata here too
        f"""CREATE TABLE IF NOT EXISTS {t('state')} (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    value {d.blob} NOT NULL,
    expires_at {d.real},
    PRIMARY KEY (scope, key)
){d.without_rowid}""",
    ]
    if d.schema:  # PostgreSQL adds the trace columns to a journal of before (SQLite: its migration)
        statements += journal_trace_columns(d, if_not_exists=True)
        statements.append(journal_trace_index(d))
    if d.journal_indexes:
        # a hash index for message ids (looked up by equality: a random UUID costs a B-tree a
        # page split now and then and a comparison per level) and a BRIN index for the time
        # (rows arrive in time order): 7.2 -> 5.0 us of server CPU per journal row, three rows
        # a message. The B-trees of stores created before are replaced.
        statements += [
            f"DROP INDEX IF EXISTS {t('journal_message')}",
            f"CREATE INDEX IF NOT EXISTS journal_message_hash ON {t('journal')} USING hash (message_id)",
            f"DROP INDEX IF EXISTS {t('journal_at')}",
            f"CREATE INDEX IF NOT EXISTS journal_at_brin ON {t('journal')} USING brin (at)",
        ]
    return statements


def journal_trace_columns(d: Dialect, *, if_not_exists: bool = False) -> list[str]:
    """The journal's trace id and search keys of stored messages (message tracing; a journal
    created before them gains them)."""
    guard = " IF NOT EXISTS" if if_not_exists else ""
    return [f"ALTER TABLE {d.table('journal')} ADD COLUMN{guard} {c} TEXT" for c in ("trace_id", "keys")]


#: the embedded store's trace index (:func:`journal_trace_index`) and the expression of its
#: first column, which a trace search repeats (:func:`coupler.bus.transport.sql_filters.journal_query`)
TRACE_BUCKET_INDEX = "journal_trace_bucket"
TRACE_BUCKET = "substr(trace_id, 1, 1)"


def journal_trace_index(d: Dialect) -> str:
    """The index a trace search reads (rows of stored messages only).

    SQLite keys it by the trace id's first hex digit, then the row id (and carries the trace
    id, so that a search reads the index only): trace ids are random, and an index on the
    trace id alone puts every stored message's entry on a page of its own once the journal is
    larger than a batch, each written at the commit and again at the checkpoint (on a journal
    of 200,000 rows that index was more than half the store's CPU per message; see
    docs/performance.md, "Database inbound"). Keyed by (digit, row id) a batch appends to at
    most 16 places; a search reads the entries of its traces' digits, a sixteenth of the
    index each. PostgreSQL keeps a B-tree on the trace id.
    """
    if not d.schema:
        return (f"CREATE INDEX IF NOT EXISTS {TRACE_BUCKET_INDEX} ON {d.table('journal')} "
                f"({TRACE_BUCKET}, id, trace_id) WHERE trace_id IS NOT NULL")
    return f"CREATE INDEX IF NOT EXISTS journal_trace ON {d.table('journal')} (trace_id) WHERE trace_id IS NOT NULL"


def _seen(d: Dialect) -> list[str]:
    """The Idempotent Receiver's keys."""
    return [
        f"""CREATE TABLE IF NOT EXISTS {d.table('seen')} (
    consumer TEXT NOT NULL,
    key TEXT NOT NULL,
    seen_at {d.real} NOT NULL,
    PRIMARY KEY (consumer, key)
){d.without_rowid}""",
        f"CREATE INDEX IF NOT EXISTS seen_age ON {d.table('seen')} (seen_at)",
    ]


def file_state(d: Dialect, *, shared: bool) -> list[str]:
    """The seen-state of polling adapters: ``files``, and the written keys of their outbound
    side's Idempotent Receiver.

    ``shared`` (PostgreSQL): one table for every adapter of the site, with claims (``owner``,
    ``lease_until``); the keys are in the store's ``seen`` (:func:`metadata`). Otherwise one
    database per adapter (``files.db``) with a ``seen`` table of its own.
    """
    t = d.table
    adapter = "adapter TEXT NOT NULL,\n    " if shared else ""
    key = "adapter, " if shared else ""
    claim = f"owner TEXT NOT NULL,\n    lease_until {d.real} NOT NULL,\n    " if shared else ""
    return [
        f"""CREATE TABLE IF NOT EXISTS {t('files')} (
    {adapter}path TEXT NOT NULL,
    size {d.bigint} NOT NULL,
    mtime_ns {d.bigint} NOT NULL,
    checksum TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL,
    published {d.bigint} NOT NULL DEFAULT 0,
    detail TEXT,
    {claim}created {d.real} NOT NULL,
    updated {d.real} NOT NULL,
    PRIMARY KEY ({key}path, size, mtime_ns, checksum)
)""",
        f"CREATE INDEX IF NOT EXISTS files_state ON {t('files')} ({key}state, updated)",
        *([] if shared else _seen(d)),
    ]

__all__ = ["SQLITE", "Dialect", "file_state", "metadata", "postgres"]
