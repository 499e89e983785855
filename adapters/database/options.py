"""The database adapter's options (``[adapters.options]`` of site.toml), checked on load."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, Strict, StrictStr, ValidationInfo, field_validator

from coupler.bus.api import Bool, Num, OptionsModel, Str, option

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$")


def _one_or_many(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


#: a list of column names, or one name
Columns = Annotated[list[StrictStr], BeforeValidator(_one_or_many)]
PositiveInt = Annotated[int, Strict(), Field(gt=0)]
#: a value written to or compared with a status column
StatusValue = StrictStr | Annotated[int, Strict()] | Annotated[bool, Strict()]


def _identifier(value: str | None, what: str) -> str | None:
    if value is not None and not _IDENTIFIER.match(value):
        raise ValueError(f"{value!r} is not a plain SQL name ({what}: letters, digits, _ and $, optionally schema.name)")
    return value


class PollOptions(OptionsModel):
    """``[adapters.options.poll]``: the inbound side (rows read and published)."""

    table: Str = option("The table (or view) polled; `schema.table` or a name in `schema`.")
    key: Columns = option(
        "The columns identifying a row (default: the table's primary key). Message ids are derived from "
        "them, so a row published again after a crash carries the same id.", default_factory=list)
    columns: Columns = option("The columns read (default: all).", default_factory=list)
    where: Str | None = option(
        "An extra condition on the rows read, SQL of the site's author (no values from messages ever reach "
        "it), e.g. `region = 'EU'`.", default=None)
    status_column: Str | None = option(
        "Progress kept in the table: this column is updated in the transaction that read the row, committed "
        "after the bus accepted its message (a `processed_at` timestamp or a state).", default=None)
    status_pending: StatusValue | None = option(
        "status_column: the value of rows still to read (default: NULL).", default=None)
    status_done: StatusValue | None = option(
        "status_column: the value written once published (default: the current timestamp).", default=None)
    watermark_column: Str | None = option(
        "Progress kept by the adapter: rows whose watermark (then key) is above the last one published; "
        "an ever-increasing column such as an id or `updated_at`.", default=None, validate_default=True)
    interval: Num = option("Seconds between polls.", default=5.0, gt=0)
    max_interval: Num = option("Longest interval while polls find nothing.", default=60.0, gt=0)
    idle_backoff: Num = option("The interval is multiplied by this after an empty poll.", default=2.0, ge=1)
    listen: Str | None = option(
        "PostgreSQL: the `LISTEN` channel whose `NOTIFY` wakes the poll at once (a trigger on the table "
        "notifies; the interval still applies as a safety net).", default=None)
    batch_size: PositiveInt = option("Rows read in one database transaction.", default=500)
    rows_per_message: PositiveInt = option(
        "1: one message per row (a JSON object); more: messages carrying up to this many rows (a JSON array).",
        default=1)
    autopoll: Bool = option("Poll on its own (off: only the `fetch` command polls).", default=True)

    @field_validator("table")
    @classmethod
    def _table_name(cls, value: str) -> str:
        return _identifier(value, "a table") or value

    @field_validator("watermark_column")
    @classmethod
    def _one_progress(cls, value: str | None, info: ValidationInfo) -> str | None:
        status = info.data.get("status_column")
        if (value is None) == (status is None):
            raise ValueError("set exactly one of status_column (progress in the table) and watermark_column "
                             "(progress kept by the adapter)")
        return value


class WriteOptions(OptionsModel):
    """``[adapters.options.write]``: the outbound side (records written to a table)."""

    table: Str | None = option("The table written (with `operation` insert, update or upsert).", default=None)
    operation: Literal["insert", "update", "upsert", "procedure"] = option(
        "`insert` new rows, `update` rows found by `key`, `upsert` (insert, or update on a `key` conflict), "
        "or call `procedure`.", default="insert")
    key: Columns = option("update and upsert: the columns that find the row (a unique key of the table).",
                          default_factory=list)
    mapping: dict[str, Str] = option(
        "Record field -> column (default: the fields named like the table's columns).", default_factory=dict)
    procedure: Str | None = option(
        "operation `procedure`: the stored procedure called with the mapped fields as parameters, in "
        "`mapping` order (`CALL name(...)`).", default=None, validate_default=True)
    ledger_table: Str = option(
        "The table recording the message ids written (in the same transaction as the rows, so a message "
        "delivered again after a crash is written once); created when missing.", default="coupler_delivered")

    @field_validator("table", "ledger_table")
    @classmethod
    def _table_name(cls, value: str | None) -> str | None:
        return _identifier(value, "a table")

    @field_validator("procedure")
    @classmethod
    def _what_to_write(cls, value: str | None, info: ValidationInfo) -> str | None:
        operation, table, key = info.data.get("operation"), info.data.get("table"), info.data.get("key")
        if operation == "procedure":
            if value is None:
                raise ValueError('operation = "procedure" needs procedure (its name)')
            if not info.data.get("mapping"):
                raise ValueError('operation = "procedure" needs mapping (its parameters, in order)')
            return _identifier(value, "a procedure")
        if operation is not None and table is None:
            raise ValueError(f'operation = "{operation}" needs table')
        if operation in ("update", "upsert") and not key:
            raise ValueError(f'operation = "{operation}" needs key (the columns that find the row)')
        return value


class QueryOptions(OptionsModel):
    """``[adapters.options.queries.NAME]``: a declared query for the `fetch` and `request` commands."""

    sql: Str = option(
        "The statement, its values as named parameters (`WHERE customer = :customer`): the values come from "
        "the command and are always sent as parameters, never written into the SQL.")
    max_rows: PositiveInt = option("Rows returned at most.", default=1000)
    format: Str | None = option("The format indicator of the reply document (default: `db.Rows@1;application/json`).",
                                default=None)


class DatabaseOptions(OptionsModel):
    """``[adapters.options]`` of ``type = "database"`` (docs/adapters/database.md)."""

    url: Str = option(
        "The SQLAlchemy database URL without its password: `postgresql+psycopg://app@db.example:5432/orders`, "
        "`sqlite:///orders.db` (relative to site.toml).")
    password_env: Str | None = option("The environment variable holding the password.", default=None)
    password_file: Str | None = option(
        "A file holding the password, readable by the site's user only (mode 0600 or 0400).", default=None)
    schema_: Str | None = option("The schema of the tables (default: the connection's).", default=None,
                                 alias="schema")
    connect_timeout: Num = option("Seconds to connect.", default=10.0, gt=0)
    pool_size: PositiveInt = option("Connections kept open.", default=2)
    poll: PollOptions | None = option("The inbound side: the table polled (see `poll.*`).", default=None)
    write: WriteOptions | None = option("The outbound side: the table written (see `write.*`).", default=None)
    queries: dict[str, QueryOptions] = option(
        "Declared queries the `fetch` and `request` commands run by name (see `queries.NAME.*`).",
        default_factory=dict)

    @field_validator("url")
    @classmethod
    def _no_password_in_url(cls, url: str) -> str:
        from urllib.parse import urlsplit

        if "://" not in url:
            raise ValueError(f"{url!r} is not a database URL such as postgresql+psycopg://user@host/db")
        try:
            password = urlsplit(url).password
        except ValueError:
            password = None
        if password:
            raise ValueError("the URL holds a password: put it in password_env or password_file instead "
                             "(site.toml is read by more people than the database's users)")
        return url

    @field_validator("schema_")
    @classmethod
    def _schema_name(cls, value: str | None) -> str | None:
        return _identifier(value, "a schema")

    @field_validator("password_file")
    @classmethod
    def _one_password(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and info.data.get("password_env") is not None:
            raise ValueError("set password_env or password_file, not both")
        return value
