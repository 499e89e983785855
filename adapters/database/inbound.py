"""The inbound side: read new rows, publish them, remember the progress (Shared Database).

One poll is one database transaction:

1. read up to ``batch_size`` rows still to publish, in key order (PostgreSQL: ``FOR UPDATE
   SKIP LOCKED``, so two daemons never take the same row);
2. turn each into a message (or ``rows_per_message`` rows into one) and publish it; a row
   that cannot be converted goes to the Invalid Message Channel with its cause, the next
   rows go on;
3. ``status_column``: update the rows just read in the same transaction (on PostgreSQL while
   step 2 runs, on a thread of its own: the wait for the server overlaps the work);
   ``watermark_column``: write the last (watermark, key) read to the adapter's state file;
4. commit, only after the bus accepted every message of the batch.

On PostgreSQL with a status column the poll thread takes up to :data:`PIPELINE` batches in a
row, each one such transaction, the next one read and made while the one before waits for
its messages to reach the disk and commits (:meth:`RowPoller._poll_batches`).

A message id is derived from the adapter, the table and the row's key: when the process dies
between the bus accepting a message and the commit, the rows are read again and published
again with the same ids, and the Idempotent Receiver of whoever consumes them (site.toml
``idempotent_key``) drops the second copy. Nothing is lost, and a row is marked processed
once (the first marking was rolled back with its transaction).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import hashlib
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from coupler.adapters.common.inbound import PollResult
from coupler.bus.api import AdapterContext, InvalidMessage, site_registry
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.envelope import name_id
from coupler.canonical.errors import CouplerError, describe_exception
from coupler.canonical.tracecontext import BUSINESS_KEY, TRACEPARENT, header_for_key

from .connection import DatabaseError, describe_error, fetch_rows, reflect, release
from .options import PollOptions
from .records import RowEncoder, Unloaded

_NAMESPACE = uuid.UUID("0d6a7c55-3c1b-4f0e-8c8e-5b1d2a9e7f28")
_NAMESPACE_BYTES = _NAMESPACE.bytes


@dataclass
class Totals:
    polls: int = 0
    rows: int = 0
    messages: int = 0
    invalid: int = 0

    def to_json(self) -> dict[str, int]:
        return dict(self.__dict__)


class WatermarkState:
    """The last (watermark, key) published, in a JSON file of the adapter's data directory
    (written to a temporary name, flushed and renamed: a crash leaves the old or the new)."""

    def __init__(self, path: Path):
        self.path = path

    def load(self) -> list[Any] | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            last = data["last"]
            for value in last:
                _untag(value)
        except FileNotFoundError:
            return None
        except (ValueError, TypeError, KeyError) as exc:  # edited by hand: say which file, not a traceback
            raise DatabaseError(f"the watermark is not (watermark, key) values the adapter wrote: "
                                f"{type(exc).__name__}: {exc}", where=str(self.path),
                                hint="correct it, or delete it to read the table from its first row") from None
        return list(last)

    def save(self, last: list[Any]) -> None:
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as out:
            json.dump({"last": last, "at": time.time()}, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path)


class RowPoller:
    """Reads the rows of one table and publishes them (see the module documentation)."""

    def __init__(self, *, name: str, engine: Engine, opts: PollOptions, schema: str | None, context: AdapterContext,
                 fmt: FormatIndicator, channel: str | None, data_dir: Path, logger: logging.Logger, where: str):
        self.name = name
        self.engine = engine
        self.o = opts
        self.context = context
        self.channel = channel
        self.log = logger
        self.where = where
        self.table = reflect(engine, opts.table, schema, f"{where}.table")
        self.key = self._columns(list(opts.key) or [c.name for c in self.table.primary_key.columns], "key")
        if not self.key:
            raise DatabaseError(f"table {self.table.fullname} has no primary key", where=f"{where}.key",
                                hint="name the columns identifying a row in poll.key")
        self.read = self._columns(list(opts.columns), "columns") if opts.columns else list(self.table.columns)
        for col in self.key:  # the key is always read: message ids and the update need it
            if col not in self.read:
                self.read.append(col)
        self.status = self._columns([opts.status_column], "status_column")[0] if opts.status_column else None
        self.watermark = self._columns([opts.watermark_column], "watermark_column")[0] if opts.watermark_column else None
        if self.watermark is not None and self.watermark not in self.read:
            self.read.append(self.watermark)
        if self.watermark is not None:
            self._check_watermark(self.watermark)
        self.state = WatermarkState(data_dir / "watermark.json") if self.watermark is not None else None
        self.encoder = RowEncoder(fmt, site_registry(context))  # [schemas] paths of the site too
        if self.encoder.avro and opts.rows_per_message > 1:  # else every row went to the Invalid Message Channel
            raise DatabaseError(f"an {fmt.content_type} body carries one row each: rows_per_message must be 1 "
                                f"with format {fmt}", where=f"{where}.rows_per_message",
                                hint="remove rows_per_message, or use a JSON format")
        self.format = fmt
        self.fullname = self.table.fullname
        self.postgres = engine.dialect.name == "postgresql"
        self.totals = Totals()
        self._lock = threading.Lock()  # one poll at a time (poll thread, fetch command)
        self._mark_sql = self._mark_statement()
        self._one_key = self.key[0].name if len(self.key) == 1 else None

    def _columns(self, names: list[str], what: str) -> list[sa.Column[Any]]:
        out = []
        for n in names:
            if n not in self.table.c:
                known = ", ".join(self.table.c.keys())
                raise DatabaseError(f"table {self.table.fullname} has no column {n!r} (it has {known})",
                                    where=f"{self.where}.{what}")
            out.append(self.table.c[n])
        return out

    def _check_watermark(self, column: sa.Column[Any]) -> None:
        """A watermark's values are kept in a JSON file (:func:`_tag`): a column whose values
        have no form there is refused now, not after each poll published its rows."""
        try:
            kind = column.type.python_type
        except NotImplementedError:  # a type SQLAlchemy cannot tell: its values are checked when kept
            return
        if not issubclass(kind, _WATERMARK_TYPES):
            raise DatabaseError(f"column {column.name} ({column.type}) of {self.table.fullname} cannot be a "
                                "watermark: its values have no form in the adapter's state file",
                                where=f"{self.where}.watermark_column",
                                hint="use a column that grows with each new row: a timestamp, a number or text, "
                                "or a status_column")

    # -- one poll -------------------------------------------------------------------------------

    def select(self, last: list[Any] | None, limit: int | None = None) -> sa.Select[Any]:
        q = sa.select(*self.read)
        if self.o.where:
            q = q.where(sa.text(self.o.where))
        order: list[sa.Column[Any]] = list(self.key)
        if self.status is not None:
            pending = self.o.status_pending
            q = q.where(self.status.is_(None) if pending is None else self.status == pending)
        else:
            assert self.watermark is not None
            order = [self.watermark, *self.key]
            if last is not None:
                # compared as the driver stores them (no type processing): SQLite keeps a
                # timestamp as the text it was given, which SQLAlchemy's type would re-format
                raw = [sa.type_coerce(c, sa.types.NullType()) for c in order]
                values = [sa.literal(_untag(v), type_=sa.types.NullType()) for v in last]
                q = q.where(sa.tuple_(*raw) > sa.tuple_(*values))
            q = q.add_columns(*[sa.type_coerce(c, sa.types.NullType()).label(f"_wm_{i}") for i, c in enumerate(order)])
        # the limit written into the statement (a number of the options): PostgreSQL's backend
        # spent ~0.5 us a row more on the same poll with a bound LIMIT (benchmarks/db_inbound.py)
        q = q.order_by(*order).limit(sa.literal_column(str(int(min(limit or self.o.batch_size, self.o.batch_size)))))
        if self.postgres and self.status is not None:
            q = q.with_for_update(skip_locked=True)
        return q

    def poll(self, limit: int | None = None, *, batches: int = 1) -> PollResult:
        """One batch (``fetch``); the poll thread asks for up to :data:`PIPELINE` batches in a
        row, which PostgreSQL with a status column reads while the one before is committed
        (:meth:`_poll_batches`; elsewhere the poll thread simply polls again at once)."""
        with self._lock:
            if batches > 1 and self.postgres and self.status is not None and limit is None:
                return self._poll_batches(batches)
            return self._poll(limit)

    def _poll(self, limit: int | None) -> PollResult:
        result = PollResult()
        self.totals.polls += 1
        last = self.state.load() if self.state is not None else None
        try:
            conn = self.engine.connect()
            try:
                with conn.begin():
                    done = self._poll_in(conn, last, limit, result)
            except BaseException:
                release(conn)  # rolled back, read again by the next poll (what the batch raised is the news)
                raise
        except sa.exc.DBAPIError as exc:
            raise DatabaseError(f"poll of {self.table.fullname} failed: {describe_error(exc)}", where=self.where) from None
        self._give_back(conn, done)
        result.done = done
        self.totals.rows += done
        return result

    def _poll_in(self, conn: sa.Connection, last: list[Any] | None, limit: int | None, result: PollResult) -> int:
        """One batch in the transaction begun on ``conn``: the rows read, published and marked
        (or the watermark saved); how many."""
        names, values = fetch_rows(conn, self.select(last, limit))
        # the watermark's columns come last (``_wm_0``...): kept apart from the record
        width = sum(1 for n in names if n.startswith("_wm_"))
        if width:
            names = names[:-width]
            rows = [dict(zip(names, r[:-width], strict=True)) for r in values]
            marks = [list(r[-width:]) for r in values]
        else:  # tuples zipped with the names: a dict per row without a mapping view
            rows = [dict(zip(names, r, strict=True)) for r in values]
        result.listed = len(rows)
        if not rows:
            return 0
        # PostgreSQL: the UPDATE runs while the messages are made and stored (the
        # network wait overlaps the work); it is in the same transaction, committed
        # only after the bus accepted the messages, so its order does not matter
        marking = Meanwhile(self._mark, conn, rows, name="db-mark") if self.status is not None and self.postgres else None
        try:
            self._publish(self._messages(rows, result), result)
        finally:
            if marking is not None:
                marking.join()  # the connection is this thread's again (commit or rollback)
        if marking is not None:
            marking.result()
        elif self.status is not None:
            self._mark(conn, rows)
        else:
            assert self.state is not None and self.watermark is not None
            self.state.save([_tag(v) for v in marks[-1]])
        return len(rows)

    def _give_back(self, conn: sa.Connection, rows: int) -> None:
        """``conn`` given back to the pool once its batch is done: its transaction committed
        (``rows`` rows read, published and marked), or nothing read. A failure now loses
        nothing (the rows are not read again), so it is reported on one line and the poll
        goes on. SQLAlchemy invalidates a connection whose reset fails without raising; what
        raises here (a pool event handler, say) would leave that connection checked out for
        good (measured: a pool of 1 then timed out): :func:`.release` replaces the pool with a
        new one, which opens its connections when next asked, which the warning says."""
        exc = release(conn)
        if exc is not None:  # the batch is committed: reported, not raised
            done = f"{rows} rows of {self.fullname} committed (published once, not read again)" if rows \
                else f"a poll of {self.fullname} that read nothing"
            self.log.warning("%s", DatabaseError(f"{done}, but its connection could not be given back to the "
                                                 f"pool: {describe_error(exc)}; the pool was renewed, it opens new "
                                                 "connections when next needed", where=self.where))

    def _poll_batches(self, batches: int) -> PollResult:
        """PostgreSQL with a status column: up to ``batches`` batches, each in a transaction
        of its own. A batch's messages are stored (committed, their disk sync deferred:
        ``context.durable_later``), then a thread (:func:`_commit` in a :class:`Meanwhile`)
        waits for them to be on disk and commits the batch's transaction (its rows marked),
        while this one reads and makes the next batch: its ``SELECT ... FOR UPDATE SKIP
        LOCKED`` reads the keys after the last one of the batch before, whose rows that one
        still holds (:meth:`_rows`). The next batch is stored only once the one before
        is committed, so the messages reach the bus in key order, and each batch keeps the
        guarantees of a single poll: its rows are marked in the transaction that read them,
        committed only once their messages are durable. When a batch fails, the one read
        after it is rolled back unpublished, and the poll raises what the batch raised."""
        result = PollResult()
        self.totals.polls += 1
        later = getattr(self.context, "durable_later", None)
        pending: Meanwhile | None = None  # the batch before, committing
        after: tuple[Any, ...] | None = None  # the key of the last row of the batch before
        try:
            for _ in range(batches):
                conn = self.engine.connect()
                marking: Meanwhile | None = None
                part = PollResult()
                try:
                    tx = conn.begin()
                    rows = self._rows(conn, after)
                    if rows:
                        marking = Meanwhile(self._mark, conn, rows, name="db-mark")
                        envelopes = self._messages(rows, part)
                    if pending is not None:
                        done, pending = pending, None
                        self._count(done.finish(), result)  # raises what the batch before raised
                    if rows:
                        with later() if later is not None else contextlib.nullcontext(_durable) as durable:
                            self._publish(envelopes, part)
                except BaseException:
                    if marking is not None:
                        marking.join()
                    release(conn)  # rolled back, read again by the next poll (what the batch raised is the news)
                    raise
                if not rows:
                    self._give_back(conn, 0)  # nothing read: rolled back
                    break
                part.listed = part.done = len(rows)
                after = tuple(rows[-1][c.name] for c in self.key)
                assert marking is not None
                pending = Meanwhile(_commit, conn, tx, marking, durable, part, self._give_back, name="db-commit")
                if len(rows) < self.o.batch_size:
                    break
        except sa.exc.DBAPIError as exc:
            raise DatabaseError(f"poll of {self.table.fullname} failed: {describe_error(exc)}", where=self.where) from None
        finally:
            if pending is not None:  # the last batch: committed before the poll returns
                try:
                    self._count(pending.finish(), result)
                except sa.exc.DBAPIError as exc:
                    raise DatabaseError(f"poll of {self.table.fullname} failed: {describe_error(exc)}",
                                        where=self.where) from None
        return result

    def _rows(self, conn: sa.Connection, after: tuple[Any, ...] | None) -> list[dict[str, Any]]:
        """The next batch of pending rows (status column), locked, as dicts; ``after``: only
        keys after it (those of the batch before, still locked while it commits, and the rows
        it passed over are not walked again; a row passed over, locked by another reader that
        gave it back since, is read by the next poll, which starts from the first key)."""
        q = self.select(None)
        if after is not None:
            q = q.where(self.key[0] > after[0] if len(self.key) == 1 else sa.tuple_(*self.key) > sa.tuple_(*after))
        names, values = fetch_rows(conn, q)
        return [dict(zip(names, r, strict=True)) for r in values]

    def _count(self, part: PollResult, result: PollResult) -> None:
        for name in ("listed", "done", "messages", "invalid"):
            setattr(result, name, getattr(result, name) + getattr(part, name))
        self.totals.rows += part.done

    def _mark_statement(self) -> str | None:
        """PostgreSQL, one key column, marked with ``CURRENT_TIMESTAMP``: the ``UPDATE ...
        WHERE key = ANY(%(_keys)s)`` compiled once, run on the driver with the keys as one
        array parameter, as a hand-written loop sends it (SQLAlchemy's statement building and
        parameter processing per poll cost half the marking's CPU)."""
        if not (self.postgres and self.status is not None and len(self.key) == 1 and self.o.status_done is None):
            return None
        from sqlalchemy.dialects.postgresql import ARRAY

        (col,) = self.key
        keys = sa.bindparam("_keys", type_=ARRAY(col.type))
        stmt = sa.update(self.table).where(col == sa.any_(keys)).values({self.status.name: sa.func.current_timestamp()})
        compiled = stmt.compile(dialect=self.engine.dialect)
        return str(compiled) if list(compiled.params) == ["_keys"] else None

    def _mark(self, conn: sa.Connection, rows: list[dict[str, Any]]) -> None:
        """One UPDATE of the rows read (``key IN (...)``), in the transaction that read them."""
        assert self.status is not None
        if self._mark_sql is not None:
            name = self.key[0].name
            conn.exec_driver_sql(self._mark_sql, {"_keys": [row[name] for row in rows]})
            return
        done: Any = sa.func.current_timestamp() if self.o.status_done is None else self.o.status_done
        if len(self.key) == 1 and self.postgres:  # one array parameter, as a hand-written loop sends it
            from sqlalchemy.dialects.postgresql import ARRAY

            (col,) = self.key
            keys = sa.bindparam("_keys", [row[col.name] for row in rows], type_=ARRAY(col.type))
            cond = col == sa.any_(keys)
        elif len(self.key) == 1:
            (col,) = self.key
            cond = col.in_([row[col.name] for row in rows])
        else:
            cond = sa.tuple_(*self.key).in_([tuple(row[c.name] for c in self.key) for row in rows])
        conn.execute(sa.update(self.table).where(cond).values({self.status.name: done}))

    # -- publishing -----------------------------------------------------------------------------

    def key_text(self, row: dict[str, Any]) -> str:
        if self._one_key is not None:
            return str(row[self._one_key])
        return "|".join(str(row[c.name]) for c in self.key)

    def message_id(self, rows: list[dict[str, Any]]) -> str:
        keys = self.key_text(rows[0]) if len(rows) == 1 else f"{self.key_text(rows[0])}..{self.key_text(rows[-1])}"
        return name_id(_NAMESPACE_BYTES, f"{self.name}|{self.fullname}|{keys}")

    def _messages(self, rows: list[dict[str, Any]], result: PollResult) -> list[Envelope]:
        """The messages of the rows read, ``rows_per_message`` rows each, in one batch (the
        headers they share made once: :meth:`Envelope.many`); rows that cannot be converted
        are in the Invalid Message Channel instead (the others of their message kept)."""
        step = self.o.rows_per_message
        single = step == 1
        encode = self.encoder.encode_rows
        table = self.fullname
        prefix = f"{self.name}|{table}|"
        one_key = self._one_key
        bodies: list[bytes] = []
        ids: list[str] = []
        props: list[dict[str, str]] = []
        for start in range(0, len(rows), step):
            group = rows[start:start + step] if not single else [rows[start]]
            try:
                body = encode(group, single)
            except Exception as exc:  # a row that has no form in the format: contained to it
                group = self._convertible(group, exc, result)
                if not group:
                    continue
                body = encode(group, single)
            key = str(group[0][one_key]) if one_key is not None else self.key_text(group[0])
            message_id = name_id(_NAMESPACE_BYTES, prefix + (key if len(group) == 1 else f"{key}..{self.key_text(group[-1])}"))
            p = {"db.table": table, "db.key": key, BUSINESS_KEY: f"{table}:{key}", TRACEPARENT: header_for_key(message_id)}
            if not single:
                p["db.rows"] = str(len(group))
            bodies.append(body)
            ids.append(message_id)
            props.append(p)
        return Envelope.many(self.format, bodies, message_ids=ids, properties=props, origin=self.name)

    def _convertible(self, rows: list[dict[str, Any]], exc: Exception, result: PollResult) -> list[dict[str, Any]]:
        """Of ``rows`` whose message could not be made (``exc``), those that convert one by
        one; the others go to the Invalid Message Channel with their cause."""
        if len(rows) == 1:
            self._invalid(rows[0], exc, result)
            return []
        good = []
        for row in rows:
            try:
                self.encoder.encode_rows([row], False)
                good.append(row)
            except Exception as one:  # noqa: BLE001
                self._invalid(row, one, result)
        return good

    def _publish(self, envelopes: list[Envelope], result: PollResult) -> None:
        """Publish the batch in one transaction of the store when the bus offers it (one disk
        sync per batch), else one by one; what the bus refuses as untranslatable is in the
        Invalid Message Channel already."""
        if not envelopes:
            return
        publish_many = getattr(self.context, "publish_many", None)
        recorded: list[bool] = []  # per refusal: whether it made its dead letter (not a read of before)
        if publish_many is not None:
            ids = publish_many(envelopes, self.channel, recorded=recorded)
        else:
            ids = []
            for envelope in envelopes:
                try:
                    ids.append(self.context.publish(envelope, self.channel))
                except InvalidMessage as exc:
                    ids.append(None)
                    recorded.append(getattr(exc, "recorded", True))
        refused = sum(1 for i in ids if i is None)
        result.invalid += refused  # invalid in this batch; in the totals once, as its dead letter
        self.totals.invalid += sum(recorded) if len(recorded) == refused else refused
        result.messages += len(ids) - refused
        self.totals.messages += len(ids) - refused

    def _invalid(self, row: dict[str, Any], exc: BaseException, result: PollResult) -> None:
        """``row`` to the Invalid Message Channel with its cause, once: the batch that read it
        may still roll back (the bus refusing the batch, the commit failing, the process
        dying) and the row be read again. Its dead letter is made with a key of the row (its
        message id and a digest of its values) in one transaction of the store, and a row
        whose key is recorded there already is not recorded again (``invalid_once``)."""
        cause = exc.message if isinstance(exc, CouplerError) else describe_exception(exc)
        reason = f"row {self.key_text(row)} of {self.table.fullname} cannot be converted to {self.format.ref}: {cause}"
        body = json.dumps({k: str(v) for k, v in row.items()}).encode()
        message_id = self.message_id([row])
        envelope = Envelope(format=self.format.with_content_type("application/json"), body=body,
                            message_id=message_id, origin=self.name,
                            properties={"db.table": self.table.fullname, "db.key": self.key_text(row)})
        once = getattr(self.context, "invalid_once", None)
        try:
            if once is not None:
                recorded = once(envelope, reason, f"{message_id}:{hashlib.sha256(body).hexdigest()[:32]}") is not None
            else:  # a context of an older bus: once per read
                self.context.invalid(envelope, reason)
                recorded = True
        except Exception as store:  # noqa: BLE001 - recording the bad row must not stop the batch
            raise CouplerError(f"cannot record an invalid row ({reason}): {store}", where=self.where) from None
        result.invalid += 1  # the row is invalid in this batch; counted in the totals once
        if recorded:
            self.totals.invalid += 1

    def describe(self) -> dict[str, Any]:
        return {"table": self.table.fullname, "key": [c.name for c in self.key],
                "progress": f"status {self.status.name}" if self.status is not None else f"watermark {self.o.watermark_column}",
                **self.totals.to_json()}


def _durable() -> None:
    """A context without ``durable_later``: its publishes were durable when they returned."""


#: batches one poll of the poll thread takes at most (it checks for a stop between polls)
PIPELINE = 8


def _commit(conn: sa.Connection, tx: sa.RootTransaction, marking: Meanwhile, durable: Callable[[], None],
            result: PollResult, give_back: Callable[[sa.Connection, int], None]) -> PollResult:
    """A batch's end (on a thread of its own, :class:`Meanwhile`): its messages awaited on disk
    (``durable``), its marking ``UPDATE`` joined, its transaction committed, its connection
    given back (``give_back``: a failure then is reported, the batch stays done; after a
    failure before: rolled back, raised); ``result``, the batch's counts."""
    try:
        try:
            durable()
        finally:
            marking.join()  # the connection is this thread's again
        marking.result()
        tx.commit()
    except BaseException:
        release(conn)  # what the batch raised is the news
        raise
    give_back(conn, result.done)
    return result


class Meanwhile(threading.Thread):
    """``fn(*args)`` on a thread of its own, while the calling thread does the next thing;
    :meth:`result` after :meth:`join` returns what it returned or raises what it raised,
    :meth:`finish` does both."""

    def __init__(self, fn: Callable[..., Any], *args: Any, name: str):
        super().__init__(name=name, daemon=True)
        self._call = (fn, args)
        self._value: Any = None
        self._error: BaseException | None = None
        self.start()

    def run(self) -> None:
        fn, args = self._call
        try:
            self._value = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            self._error = exc

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value

    def finish(self) -> Any:
        self.join()
        return self.result()


#: the Python types of the columns a watermark can be (JSON values, or tagged by :func:`_tag`)
_WATERMARK_TYPES = (int, float, str, decimal.Decimal, dt.date, dt.time, uuid.UUID)

_TAGGED: dict[str, Callable[[str], Any]] = {
    "datetime": dt.datetime.fromisoformat, "date": dt.date.fromisoformat, "time": dt.time.fromisoformat,
    "decimal": decimal.Decimal, "uuid": uuid.UUID, "text": str,
}


def _tag(value: Any) -> Any:
    """A watermark value as JSON, its Python type kept (restored by :func:`_untag`)."""
    for name, kind in (("datetime", dt.datetime), ("date", dt.date), ("time", dt.time),
                       ("decimal", decimal.Decimal), ("uuid", uuid.UUID)):
        if isinstance(value, kind):
            return {"t": name, "v": value.isoformat() if hasattr(value, "isoformat") else str(value)}
    if isinstance(value, bytes):
        raise DatabaseError("a binary column cannot be a watermark")
    if isinstance(value, Unloaded):  # ``infinity``: compared again as the database's own text
        return {"t": "text", "v": value.text}
    return value


def _untag(value: Any) -> Any:
    return _TAGGED[value["t"]](value["v"]) if isinstance(value, dict) else value


class Listener:
    """PostgreSQL ``LISTEN``: a thread waiting for ``NOTIFY`` on a channel and waking the poll.
    When its connection fails it says so once (a warning naming ``where``, the option), listens
    again every 2 s, and says when it is back (meanwhile the poll keeps its interval)."""

    def __init__(self, engine: Engine, channel: str, wake: Callable[[], None], logger: logging.Logger,
                 where: str = "poll.listen"):
        self.engine = engine
        self.channel = channel
        self.wake = wake
        self.log = logger
        self.where = where
        self.notified = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"listen:{channel}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        from psycopg import sql

        down = False  # said since it last listened: one warning per outage, not one every 2 s
        while not self._stop.is_set():
            try:
                raw = self.engine.raw_connection()
                try:
                    conn: Any = raw.driver_connection
                    conn.autocommit = True
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    if down:
                        down = False
                        self.log.info("%s: listening on %s again", self.where, self.channel)
                    self.wake()  # rows added while nobody listened
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=0.5, stop_after=1):
                            self.notified += 1
                            self.wake()
                finally:
                    raw.invalidate()  # a LISTENing connection is not given back to the pool
            except Exception as exc:  # noqa: BLE001 - the database away, the pool exhausted: never the thread's end
                if not down:
                    down = True
                    self.log.warning("%s", DatabaseError(
                        f"LISTEN {self.channel} failed: {describe_error(exc)}; the poll keeps its interval "
                        "meanwhile, listening again every 2 s", where=self.where))
                self._stop.wait(2.0)
