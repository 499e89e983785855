"""The database connection: an SQLAlchemy engine made from the URL and a password kept apart.

The password comes from an environment variable or a file readable by the site's user only;
it is given to the driver and never written to a log, a reply or an error message (the URL
shown anywhere is rendered with the password hidden).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine, make_url

from coupler.adapters.common.secrets import secret_file, secret_from_env
from coupler.canonical.errors import CouplerError

from .options import DatabaseOptions
from .records import Unloaded


class DatabaseError(CouplerError):
    """A database that cannot be reached, a table that does not fit the options, a failed statement."""


def read_password(opts: DatabaseOptions, where: str) -> str | None:
    """The password from ``password_env`` or ``password_file``; None when neither is set."""
    if opts.password_env is not None:
        return secret_from_env(opts.password_env, f"{where}.password_env")
    if opts.password_file is not None:
        return secret_file(opts.password_file, f"{where}.password_file")
    return None


def database_url(opts: DatabaseOptions, site_dir: Path, where: str) -> URL:
    """The URL of ``opts.url``, a relative SQLite path made absolute against ``site_dir``."""
    try:
        url = make_url(opts.url)
    except Exception as exc:  # sqlalchemy.exc.ArgumentError: a malformed URL
        raise DatabaseError(f"bad database URL: {exc}", where=f"{where}.url") from None
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:" \
            and not url.database.startswith("file:") and not os.path.isabs(url.database):
        url = url.set(database=str(site_dir / url.database))
    if url.get_backend_name() == "postgresql" and url.get_driver_name() in ("psycopg2", "default", ""):
        url = url.set(drivername="postgresql+psycopg")  # psycopg 3 is the one installed
    return url


def shown(url: URL) -> str:
    """The URL as it may be shown: never with a password."""
    return url.render_as_string(hide_password=True)


def make_engine(opts: DatabaseOptions, site_dir: Path, where: str) -> Engine:
    """The engine of the adapter's database (connections open on first use)."""
    url = database_url(opts, site_dir, where)
    backend = url.get_backend_name()
    if backend == "sqlite" and (opts.password_env or opts.password_file):
        raise DatabaseError("an SQLite database has no password", where=f"{where}.password_env",
                            hint="remove password_env / password_file (protect the file with its mode instead)")
    password = read_password(opts, where)
    if password is not None:
        url = url.set(password=password)
    args: dict[str, Any] = {}
    kwargs: dict[str, Any] = {"pool_pre_ping": True}
    if backend == "postgresql":
        args["connect_timeout"] = max(1, int(opts.connect_timeout))
        args["application_name"] = "coupler"
        if opts.schema_:  # declared queries name the tables as the schema's own
            args["options"] = f"-c search_path={opts.schema_},public"
        kwargs.update(pool_size=opts.pool_size, max_overflow=opts.pool_size)
    elif backend == "sqlite":
        args["timeout"] = opts.connect_timeout
        args["check_same_thread"] = False
    # hide_parameters: a failed statement's error never carries the values (they may be personal)
    try:
        engine = sa.create_engine(url, connect_args=args, hide_parameters=True, **kwargs)
    except (sa.exc.ArgumentError, ImportError) as exc:  # a URL the dialect refuses, a driver missing
        raise DatabaseError(f"cannot use {shown(url)}: {str(exc).splitlines()[0]}", where=f"{where}.url") from None
    if backend == "postgresql" and url.get_driver_name() == "psycopg":
        sa.event.listen(engine, "connect", _checked_intervals)
    return engine


# -- values the driver cannot load ------------------------------------------------------------

#: PostgreSQL types some of whose values psycopg cannot load into Python: timestamps and dates
#: of ``infinity`` or out of years 1..9999, ``24:00:00``, JSON nested deeper than Python parses
TOLERATED = ("timestamp", "timestamptz", "date", "time", "timetz", "interval", "json", "jsonb")


def fetch_rows(conn: sa.Connection, statement: Any) -> tuple[list[str], Sequence[Any]]:
    """The column names and rows of ``statement``. psycopg raises while it loads a value Python
    cannot hold (a timestamp of ``infinity``, a date BC, JSON nested thousands deep), which
    failed the whole batch, every poll, and no row after it was ever published: then the
    statement runs again (in the same transaction) with loaders that give such a value as an
    :class:`~.records.Unloaded`, whose row alone cannot be converted (the Invalid Message
    Channel, naming the column and the reason). Rows without such values pay nothing."""
    try:
        found = conn.execute(statement)
        return list(found.keys()), found.all()
    except (sa.exc.DataError, RecursionError) as exc:
        if not _load_error(exc):
            raise
    except sa.exc.DBAPIError:
        raise
    except (ValueError, TypeError, ArithmeticError):  # SQLAlchemy's conversion of a value (SQLite: any text)
        return _fetch_unconverted(conn, statement)
    with _tolerant_loaders(conn):
        found = conn.execute(statement)
        return list(found.keys()), found.all()


def _fetch_unconverted(conn: sa.Connection, statement: Any) -> tuple[list[str], list[Any]]:
    """The rows of ``statement`` converted value by value as SQLAlchemy's column types would
    (SQLite keeps any text in a ``timestamp``, ``date`` or ``numeric`` column, which its
    conversion refuses): a value that does not convert is an :class:`~.records.Unloaded`."""
    found = conn.execute(statement)
    names = list(found.keys())
    columns = list(statement.selected_columns)
    convert = [c.type.dialect_impl(conn.dialect).result_processor(conn.dialect, None) for c in columns]
    kinds = [str(c.type) for c in columns]
    rows = []
    for raw in found.cursor.fetchall():  # the driver's values, before SQLAlchemy's conversion
        row = []
        for value, fn, kind in zip(raw, convert, kinds, strict=True):
            if fn is None or value is None:
                row.append(value)
                continue
            try:
                row.append(fn(value))
            except Exception as exc:  # noqa: BLE001 - the value, not the poll
                row.append(_unloaded(value, kind.lower(), exc))
        rows.append(tuple(row))
    found.close()
    return names, rows


def _load_error(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by the driver loading a value (the server sent the row: its
    transaction goes on), not by the server (which aborts the transaction)."""
    if isinstance(exc, RecursionError):
        return True
    orig = getattr(exc, "orig", None)
    return orig is not None and getattr(orig, "sqlstate", None) is None


@contextlib.contextmanager
def _tolerant_loaders(conn: sa.Connection) -> Iterator[None]:
    """``conn``'s psycopg loaders of the :data:`TOLERATED` types made tolerant (a value they
    cannot load is an :class:`Unloaded`), the connection's own ones given back after."""
    from psycopg import pq

    adapters = conn.connection.driver_connection.adapters  # type: ignore[union-attr]
    kept = []
    for name in TOLERATED:
        info = adapters.types.get(name)
        if info is None:
            continue
        for fmt in (pq.Format.TEXT, pq.Format.BINARY):
            base = adapters.get_loader(info.oid, fmt)
            if base is not None:
                kept.append((info.oid, base))
                adapters.register_loader(info.oid, _tolerant(base, name))
    try:
        yield
    finally:
        for oid, base in kept:
            adapters.register_loader(oid, base)


def _checked_intervals(dbapi_connection: Any, _record: Any) -> None:
    """On each new psycopg connection: intervals of years are checked (:func:`_interval_days`)."""
    from psycopg import pq

    adapters = dbapi_connection.adapters
    info = adapters.types.get("interval")
    base = adapters.get_loader(info.oid, pq.Format.TEXT) if info is not None else None
    if base is not None:
        adapters.register_loader(info.oid, _tolerant(base, "interval"))


def _tolerant(base: type, type_name: str) -> type:
    """A loader doing what ``base`` does, but giving a value it cannot load as an Unloaded."""
    from psycopg.adapt import Loader

    check = _interval_days if type_name == "interval" and base.format == 0 else None  # type: ignore[attr-defined]

    class Tolerant(Loader):
        format = base.format  # type: ignore[attr-defined]

        def __init__(self, oid: int, context: Any = None):
            super().__init__(oid, context)
            self._load = base(oid, context).load

        def load(self, data: Any) -> Any:
            try:
                value = self._load(data)
            except Exception as exc:  # noqa: BLE001 - psycopg.DataError, RecursionError: the value, not the poll
                return _unloaded(data, type_name, exc)
            if check is not None and (problem := check(data)) is not None:
                return _unloaded(data, type_name, ValueError(problem))
            return value

    Tolerant.__name__ = f"Tolerant{base.__name__}"
    return Tolerant


_INTERVAL_PART = re.compile(rb"(-?\d+) (year|mon|day)")


def _interval_days(data: Any) -> str | None:
    """Why an interval's text (``178000000 years 3 mons``) holds more days than a Python
    timedelta (999999999), None when it does not. psycopg 3.2 loads one of more than 2**31
    days as the wrong number of days (its count wraps around), silently: 178000000 years
    became 545490560 days. Only a count of years gets there (PostgreSQL writes months as years
    and months; days beyond 999999999 psycopg refuses itself)."""
    data = bytes(data)
    if b"year" not in data:
        return None
    days = 0
    for number, unit in _INTERVAL_PART.findall(data):
        days += int(number) * {b"year": 365, b"mon": 30, b"day": 1}[unit]
    if abs(days) > 999_999_999:
        return f"about {days} days; a Python timedelta holds at most 999999999"
    return None


def _unloaded(data: Any, type_name: str, exc: BaseException) -> Unloaded:
    if isinstance(data, bytes | bytearray | memoryview):
        text = bytes(data).decode("utf-8", "replace")
    else:
        text = str(data)
    reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
    return Unloaded(text, f"{type_name} value out of what Python holds ({reason})")


@contextlib.contextmanager
def connected(engine: Engine) -> Iterator[sa.Connection]:
    """``with engine.connect() as conn``, the connection given back by :func:`release`: a
    check-in that raises does not take the pool's slot with it (what it raised is raised
    after the block, as SQLAlchemy's own would be; not over what the block raised)."""
    conn = engine.connect()
    try:
        yield conn
    except BaseException:
        release(conn)
        raise
    failed = release(conn)
    if failed is not None:
        raise failed


def release(conn: sa.Connection) -> Exception | None:
    """Close ``conn``, giving its connection back to the pool; what that raised, None when it
    did not. SQLAlchemy keeps the pool's slot of a connection whose check-in raised (a pool
    event handler, a reset that failed) taken for good, so the pool would have one connection
    fewer until the engine is disposed (a pool of one then times out): the engine's pool is
    replaced by a new one of the same size (``Engine.dispose``, SQLAlchemy's public way), whose
    connections are opened when next asked; connections other threads hold stay usable and
    are closed when they are given back."""
    engine = conn.engine
    try:
        conn.close()
    except Exception as exc:  # noqa: BLE001 - the caller says what it means (a warning, an error)
        try:
            engine.dispose()
        except Exception:  # noqa: BLE001 - closing the idle connections failed too: the new pool stands
            pass
        return exc
    return None


def describe_error(exc: BaseException) -> str:
    """One line for a database error: the driver's message without the statement and values."""
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip().splitlines()
    return f"{type(orig or exc).__name__}: {text[0] if text else ''}"


def reflect(engine: Engine, table: str, schema: str | None, where: str) -> sa.Table:
    """The table as the database describes it (its columns, types and primary key)."""
    if "." in table:
        schema, table = table.split(".", 1)
    try:
        return sa.Table(table, sa.MetaData(schema=schema), autoload_with=engine)
    except sa.exc.NoSuchTableError:
        raise DatabaseError(f"no table {schema + '.' if schema else ''}{table} in the database",
                            where=where, hint="create it, or correct the name (and `schema`)") from None
    except sa.exc.DBAPIError as exc:
        raise DatabaseError(f"cannot read the table {table}: {describe_error(exc)}", where=where) from None
