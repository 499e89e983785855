"""The outbound side: canonical records written to a table, once each.

Every message is written in one database transaction that also records its message id in
the ledger table (``write.ledger_table``, keyed by adapter and message id): a message
delivered again after a crash between the commit and the bus's acknowledgement finds its id
there and writes nothing. The mapping of record fields to columns is checked against the
table when the adapter starts (every column exists; the key is a unique key for ``upsert``;
a column that needs a value and has no default is mapped; declared Avro field types fit the
column types), so a mistake in site.toml is reported before the first message.
"""

from __future__ import annotations

import datetime as dt
import decimal
import logging
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from coupler.bus.api import CommandFault
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError

from .connection import DatabaseError, connected, describe_error, reflect
from .options import WriteOptions
from .records import RowError, body_records

#: Avro types and the Python types of the columns that can hold them
_FITS: dict[str, tuple[type, ...]] = {
    "string": (str, dt.date, dt.datetime, dt.time, decimal.Decimal),
    "int": (int, decimal.Decimal, float),
    "long": (int, decimal.Decimal, float),
    "float": (float, decimal.Decimal),
    "double": (float, decimal.Decimal),
    "boolean": (bool, int),
    "bytes": (bytes, decimal.Decimal),
}


class TableWriter:
    """Writes the records of a message to a table, or calls a stored procedure with them."""

    def __init__(self, *, name: str, engine: Engine, opts: WriteOptions, schema: str | None,
                 fmt: FormatIndicator | None, logger: logging.Logger, where: str, registry: Any):
        self.name = name
        #: the site's schema registry (:func:`coupler.bus.api.site_registry`)
        self.registry = registry
        self.engine = engine
        self.o = opts
        self.log = logger
        self.where = where
        self.format = fmt
        self.written = 0
        self.duplicates = 0
        self.schema = schema
        self.ledger = self._ledger()
        self.table: sa.Table | None = None
        self.mapping: dict[str, str] = dict(opts.mapping)
        if opts.operation != "procedure":
            assert opts.table is not None
            self.table = reflect(engine, opts.table, schema, f"{where}.table")
            if not self.mapping:
                self.mapping = {c: c for c in self.table.c.keys()}
            self._check_table(self.table)
        self.fields = self._schema_fields()
        if self.fields is not None:
            self._check_types()

    # -- checks at start ------------------------------------------------------------------------

    def _check_table(self, table: sa.Table) -> None:
        o = self.o
        missing = [c for c in self.mapping.values() if c not in table.c]
        if missing:
            raise DatabaseError(f"table {table.fullname} has no column {', '.join(map(repr, missing))} "
                                f"(it has {', '.join(table.c.keys())})", where=f"{self.where}.mapping")
        unmapped_keys = [k for k in o.key if k not in self.mapping.values()]
        if unmapped_keys or any(k not in table.c for k in o.key):
            raise DatabaseError(f"key column(s) {', '.join(unmapped_keys or o.key)} are not mapped columns of "
                                f"{table.fullname}", where=f"{self.where}.key")
        if o.operation == "upsert" and not self._unique(table, set(o.key)):
            raise DatabaseError(
                f"upsert needs a unique key or primary key on ({', '.join(o.key)}) in {table.fullname}",
                where=f"{self.where}.key", hint=f"CREATE UNIQUE INDEX ON {table.fullname} ({', '.join(o.key)})")
        if o.operation in ("insert", "upsert"):
            needed = [c.name for c in table.columns
                      if not c.nullable and c.server_default is None and c.default is None
                      and not (c.primary_key and c.autoincrement in (True, "auto") and isinstance(c.type, sa.Integer))
                      and c.name not in self.mapping.values()]
            if needed:
                raise DatabaseError(f"column(s) {', '.join(needed)} of {table.fullname} need a value and no field "
                                    "is mapped to them", where=f"{self.where}.mapping")

    def _unique(self, table: sa.Table, key: set[str]) -> bool:
        if {c.name for c in table.primary_key.columns} == key:
            return True
        inspector = sa.inspect(self.engine)
        schema = table.schema
        for index in inspector.get_indexes(table.name, schema=schema):
            if index.get("unique") and set(index["column_names"]) == key:
                return True
        return any(set(u["column_names"]) == key for u in inspector.get_unique_constraints(table.name, schema=schema))

    def _schema_fields(self) -> dict[str, Any] | None:
        """The fields of the declared format's schema (None when it has none in the registry)."""
        if self.format is None:
            return None
        try:
            schema = self.registry.resolve(self.format).parsed
        except CouplerError:
            return None
        if not isinstance(schema, dict) or schema.get("type") != "record":
            return None
        return {f["name"]: f["type"] for f in schema.get("fields", [])}

    def _check_types(self) -> None:
        assert self.fields is not None
        problems = []
        for fld, col in self.mapping.items():
            if fld not in self.fields:
                if self.o.mapping:  # declared: a field the format lacks is a mistake
                    problems.append(f"{fld} is not a field of {self.format}")
                continue
            if self.table is None:
                continue
            avro = _base_type(self.fields[fld])
            try:
                python = self.table.c[col].type.python_type
            except NotImplementedError:
                continue
            fits = _FITS.get(avro) if isinstance(avro, str) else None
            if fits is not None and not issubclass(python, fits):
                problems.append(f"field {fld} ({avro}) does not fit column {col} ({self.table.c[col].type})")
        if problems:
            raise DatabaseError("; ".join(problems), where=f"{self.where}.mapping")

    def _ledger(self) -> sa.Table:
        md = sa.MetaData(schema=self.schema)
        ledger = sa.Table(
            self.o.ledger_table, md,
            sa.Column("adapter", sa.String(200), primary_key=True),
            sa.Column("message_id", sa.String(64), primary_key=True),
            sa.Column("written_at", sa.DateTime(timezone=True), server_default=sa.func.current_timestamp()),
        )
        try:
            md.create_all(self.engine, checkfirst=True)
        except sa.exc.DBAPIError as exc:
            if not sa.inspect(self.engine).has_table(self.o.ledger_table, schema=self.schema):
                raise DatabaseError(f"cannot create the ledger table {self.o.ledger_table}: {describe_error(exc)}",
                                    where=f"{self.where}.ledger_table",
                                    hint="create it (adapter, message_id primary key), or grant CREATE") from None
        return ledger

    # -- writing --------------------------------------------------------------------------------

    def rows(self, envelope: Envelope) -> list[dict[str, Any]]:
        try:
            records = body_records(envelope.body, envelope.format, self.registry)
        except RowError as exc:
            raise CommandFault(f"message {envelope.message_id}: {exc.message}", code="invalid", hint=exc.hint) from None
        out = []
        for record in records:
            row = {col: self._coerce(col, record[fld], envelope) for fld, col in self.mapping.items() if fld in record}
            missing = [k for k in self.o.key if k not in row]
            if missing:
                raise CommandFault(f"message {envelope.message_id}: no value for key column(s) {', '.join(missing)}",
                                   code="invalid")
            out.append(row)
        return out

    def _coerce(self, column: str, value: Any, envelope: Envelope) -> Any:
        """A JSON value as the column's Python type (an ISO date string for a DATE column, a
        decimal string for NUMERIC); a value that does not fit refuses the message."""
        if self.table is None or value is None:
            return value
        try:
            kind = self.table.c[column].type.python_type
        except NotImplementedError:
            return value
        try:
            if isinstance(value, str):
                if kind in (dt.datetime, dt.date, dt.time):
                    return kind.fromisoformat(value)
                if kind is decimal.Decimal:
                    return decimal.Decimal(value)
                if kind is bytes:
                    import base64

                    return base64.b64decode(value, validate=True)
            elif kind is decimal.Decimal and isinstance(value, int | float) and not isinstance(value, bool):
                return decimal.Decimal(str(value))
        except (ValueError, ArithmeticError) as exc:
            raise CommandFault(f"message {envelope.message_id}: {value!r} does not fit column {column} "
                               f"({self.table.c[column].type}): {exc}", code="invalid") from None
        return value

    def deliver(self, envelope: Envelope) -> bool:
        """Write ``envelope``'s records; False when its message id was written before.

        The ledger row and the records in one transaction, without a savepoint: a duplicate
        id ends it (nothing written), and a failure of the records takes the ledger row with
        it (SQLite's driver committed a savepoint begun outside a transaction: the id stayed
        in the ledger, and the message, tried again, was dropped as written before)."""
        rows = self.rows(envelope)
        try:
            with connected(self.engine) as conn:
                tx = conn.begin()
                try:
                    conn.execute(sa.insert(self.ledger).values(adapter=self.name, message_id=envelope.message_id))
                except sa.exc.IntegrityError:
                    tx.rollback()
                    self.duplicates += 1
                    self.log.info("%s: message %s was written before; not again", self.name, envelope.message_id)
                    return False
                self._write(conn, rows, envelope)
                tx.commit()
        except sa.exc.IntegrityError as exc:  # a constraint of the table refuses the record
            raise CommandFault(f"message {envelope.message_id} refused by the table: {describe_error(exc)}",
                               code="invalid") from None
        except sa.exc.StatementError as exc:
            if isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated:
                raise DatabaseError(f"database connection lost: {describe_error(exc)}", where=self.where) from None
            state = _sqlstate(exc)
            if isinstance(exc, sa.exc.OperationalError) or state in _NOT_THE_MESSAGE \
                    or (state == _NO_ROUTINE and self._procedure_gone()):
                raise DatabaseError(f"write failed: {describe_error(exc)}", where=self.where) from None
            changed = self._columns_changed() if state in _TYPE_MISMATCH else None
            if changed:
                raise DatabaseError(f"write failed: {describe_error(exc)}; {changed}", where=self.where,
                                    hint="restart the adapter once the change is done (it reads the table's "
                                    "columns when it starts), or change the column back") from None
            raise CommandFault(f"message {envelope.message_id} cannot be written: {describe_error(exc)}",
                               code="invalid") from None
        except OverflowError as exc:  # a number the driver cannot bind (SQLite: beyond 64 bits)
            raise CommandFault(f"message {envelope.message_id} cannot be written: {describe_error(exc)}",
                               code="invalid") from None
        self.written += len(rows)
        return True

    def _procedure_gone(self) -> bool:
        """Whether no routine of the procedure's name is left (PostgreSQL answered "procedure
        P(types) does not exist"): the database changed, not the message (whose values' types
        choose among a routine's overloads: ``add_stock(text, numeric)`` for a fraction where the
        procedure takes an integer is the message's). True when the catalogue cannot be read."""
        if self.o.operation != "procedure":
            return False
        try:
            with connected(self.engine) as conn:
                return not conn.execute(sa.text(
                    "SELECT EXISTS (SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace, "
                    "parse_ident(:name) AS a WHERE p.proname = a[cardinality(a)] AND CASE cardinality(a) "
                    "WHEN 1 THEN pg_function_is_visible(p.oid) ELSE n.nspname = a[cardinality(a) - 1] END)"),
                    {"name": self.o.procedure}).scalar()
        except Exception:  # noqa: BLE001 - the database away: its error, tried again
            return True

    def _columns_changed(self) -> str | None:
        """After a type mismatch (:data:`_TYPE_MISMATCH`): what changed in the types of the
        mapped columns since the adapter read the table at start (the statements bind each
        value as the column's type then: every message would fail, the database's error), or
        None when nothing did (a value of the message whose type the column cannot take:
        ``true`` for a ``numeric``, a number for a ``date``: the message's). A procedure: None
        (its parameters' types are chosen by the values). Said so when the catalogue cannot
        be read (the database's error, tried again)."""
        table = self.table
        if table is None:
            return None
        try:
            now = {c["name"]: c["type"] for c in sa.inspect(self.engine).get_columns(table.name, schema=table.schema)}
        except Exception as exc:  # noqa: BLE001 - the database away: its error, tried again
            return f"the columns of {table.fullname} cannot be read again: {describe_error(exc)}"
        dialect = self.engine.dialect
        changes = []
        for col in dict.fromkeys(self.mapping.values()):
            was = table.c[col].type.compile(dialect=dialect)
            if col not in now:
                changes.append(f"column {col} ({was}) is gone")
                continue
            is_ = now[col].compile(dialect=dialect)
            if is_ != was:
                changes.append(f"column {col} is {is_} now, {was} when the adapter started")
        return f"table {table.fullname} changed: {', '.join(changes)}" if changes else None

    def _write(self, conn: sa.Connection, rows: list[dict[str, Any]], envelope: Envelope) -> None:
        o = self.o
        if o.operation == "procedure":
            assert o.procedure is not None
            params = list(self.mapping.values())
            call = sa.text(f"CALL {o.procedure}({', '.join(':' + p for p in params)})")
            for row in rows:
                conn.execute(call, {p: row.get(p) for p in params})
            return
        table = self.table
        assert table is not None
        if o.operation == "insert":
            groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
            for row in rows:  # one executemany per set of columns (records may leave fields out)
                groups.setdefault(tuple(row), []).append(row)
            for group in groups.values():
                conn.execute(sa.insert(table), group)
        elif o.operation == "update":
            cond = sa.and_(*[table.c[k] == sa.bindparam(f"_k_{k}") for k in o.key])
            for row in rows:
                values = {c: v for c, v in row.items() if c not in o.key}
                done = conn.execute(sa.update(table).where(cond).values(values), {f"_k_{k}": row[k] for k in o.key})
                if done.rowcount == 0:
                    raise CommandFault(f"message {envelope.message_id}: no row of {table.fullname} with "
                                       + ", ".join(f"{k} = {row[k]!r}" for k in o.key), code="invalid")
        else:
            self._upsert(conn, table, rows)

    def _upsert(self, conn: sa.Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
        dialect = conn.dialect.name
        for row in rows:  # rows of one message may differ in the fields they carry
            changes = {c: v for c, v in row.items() if c not in self.o.key}
            if dialect in ("postgresql", "sqlite"):
                from sqlalchemy.dialects import postgresql, sqlite

                insert: Any = postgresql.insert if dialect == "postgresql" else sqlite.insert
                stmt = insert(table).values(row)
                stmt = (stmt.on_conflict_do_update(index_elements=list(self.o.key), set_=changes) if changes
                        else stmt.on_conflict_do_nothing(index_elements=list(self.o.key)))
                conn.execute(stmt)
                continue
            cond = sa.and_(*[table.c[k] == row[k] for k in self.o.key])  # other dialects: update, else insert
            if not changes or conn.execute(sa.update(table).where(cond).values(changes)).rowcount == 0:
                if conn.execute(sa.select(sa.func.count()).select_from(table).where(cond)).scalar() == 0:
                    conn.execute(sa.insert(table).values(row))

    def describe(self) -> dict[str, Any]:
        return {"table": self.table.fullname if self.table is not None else None, "operation": self.o.operation,
                "written": self.written, "duplicates": self.duplicates}


#: SQLSTATEs of a database that changed under the adapter (a table, a column or a schema gone,
#: a privilege revoked): its error, tried again later, not the message's (which would go to
#: the Invalid Message Channel, every one of them until it is put right)
_NOT_THE_MESSAGE = frozenset({"42P01", "42703", "42501", "3F000"})
#: no routine of that name and argument types: the procedure gone (the database's), or a
#: value of the message whose type no overload takes (the message's): :meth:`TableWriter._procedure_gone`
_NO_ROUTINE = "42883"
#: datatype_mismatch, cannot_coerce: a value whose type the column cannot take (the message's:
#: ``true`` for a ``numeric`` column, a number for a ``date``: the statements cast each value
#: to the column's type), or a column whose type changed since the adapter started (the
#: database's): :meth:`TableWriter._columns_changed` tells
_TYPE_MISMATCH = frozenset({"42804", "42846"})


def _sqlstate(exc: BaseException) -> str | None:
    return getattr(getattr(exc, "orig", None), "sqlstate", None)


def _base_type(avro: Any) -> Any:
    """The type of an Avro field without its null branch and logical type."""
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        avro = branches[0] if len(branches) == 1 else branches
    if isinstance(avro, dict):
        if avro.get("logicalType") in ("timestamp-millis", "timestamp-micros", "date", "time-millis", "time-micros"):
            return "string"  # a date or time column takes it
        return avro.get("type")
    return avro
