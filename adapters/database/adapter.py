"""The database Channel Adapter (Shared Database): poll a table, write a table, run declared queries.

Inbound (``[adapters.options.poll]``): new rows of a table are published on the adapter's
channel, progress kept in a status column updated in the same transaction (committed after
the bus accepted the messages) or in a watermark kept by the adapter; see :mod:`.inbound`.
Outbound (``[adapters.options.write]``): the records of each document of its channel are
inserted, updated or upserted (or passed to a stored procedure), once each; see
:mod:`.outbound`. Commands: ``fetch`` polls (or runs a declared query), ``request`` runs the
declared query named by its operation with the document's fields as parameters and answers
with the rows, ``send`` writes its document.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from coupler.adapters.common.lazy import lazy_module
from coupler.bus.api import (
    Adapter,
    AdapterContext,
    Command,
    CommandFault,
    Document,
    Reply,
    site_registry,
)
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError
from coupler.canonical.textformats import json_loads

from .options import DatabaseOptions

if TYPE_CHECKING:
    import sqlalchemy as sa
    from sqlalchemy.engine import Engine

    from .inbound import Listener, RowPoller
    from .outbound import TableWriter
else:  # imported when an adapter starts: every coupler command loads the plugins
    sa = lazy_module("sqlalchemy")

ROWS_FORMAT = "db.Rows@1;application/json"
_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


class DatabaseAdapter(Adapter):
    """Channel Adapter for a relational database (site.toml ``type = "database"``)."""

    type_name: ClassVar[str] = "database"
    commands: ClassVar[tuple[str, ...]] = ("send", "fetch", "request", "ping", "describe")
    directions: ClassVar[tuple[str, ...]] = ("inbound", "outbound")
    path_options: ClassVar[tuple[str, ...]] = ("password_file",)
    options_model = DatabaseOptions

    def __init__(self, name: str, options: dict[str, Any], context: AdapterContext | None = None):
        super().__init__(name, options, context)
        self.settings: DatabaseOptions = self.parse_options(name, self.options)
        self.where = f"adapters[{name}].options"
        self.engine: Engine | None = None
        self.poller: RowPoller | None = None
        self.writer: TableWriter | None = None
        self.listener: Listener | None = None
        self._thread: Any = None

    @property
    def log(self) -> logging.Logger:
        return self.context.logger if self.context is not None else logging.getLogger(f"coupler.adapter.{self.name}")

    def supported_directions(self) -> tuple[str, ...]:
        s = self.settings
        have = tuple(d for d, o in (("inbound", s.poll), ("outbound", s.write)) if o is not None)
        return have or ("inbound", "outbound")  # queries only: any direction, commands serve it

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Connect, check the options against the database, start polling; a start that
        fails leaves nothing running and no connection open (the daemon keeps the adapter,
        reported failed)."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        from coupler.adapters.common.poller import Poller

        from .connection import DatabaseError, connected, describe_error, make_engine, shown
        from .inbound import PIPELINE, Listener, RowPoller
        from .outbound import TableWriter

        s = self.settings
        site_dir = Path(self.context.site_dir) if self.context is not None else Path.cwd()
        self.engine = make_engine(s, site_dir, self.where)
        try:
            with connected(self.engine) as conn:
                conn.execute(sa.text("SELECT 1"))
        except sa.exc.DBAPIError as exc:
            raise DatabaseError(f"cannot connect to {shown(self.engine.url)}: {describe_error(exc)}",
                                where=f"{self.where}.url", hint="check the URL, the password and that the "
                                "database accepts connections from this host") from None
        self._check_queries()
        direction = self.direction
        if direction in ("outbound", "both") and s.write is not None:
            self.writer = TableWriter(name=self.name, engine=self.engine, opts=s.write, schema=s.schema_,
                                      fmt=self.format, logger=self.log, where=f"{self.where}.write",
                                      registry=site_registry(self.context))
        if direction in ("inbound", "both") and s.poll is not None:
            if self.context is None:
                raise DatabaseError(f"database adapter {self.name!r} polls but runs without a bus context")
            channel = self.channel or getattr(self.context, "channel", None)
            if not channel:
                raise DatabaseError("an inbound adapter needs a channel to publish to",
                                    where=f"adapters[{self.name}].channel")
            if s.poll.listen and self.engine.dialect.name != "postgresql":
                raise DatabaseError("poll.listen needs PostgreSQL (LISTEN/NOTIFY)", where=f"{self.where}.poll.listen")
            fmt = self.format or FormatIndicator.parse(f"db.{s.poll.table.replace('.', '_')}@1;application/json")
            data_dir = Path(self.context.data_dir)
            data_dir.mkdir(parents=True, exist_ok=True)
            self.poller = RowPoller(name=self.name, engine=self.engine, opts=s.poll, schema=s.schema_,
                                    context=self.context, fmt=fmt, channel=channel, data_dir=data_dir,
                                    logger=self.log, where=f"{self.where}.poll")
            if s.poll.autopoll:
                poll = functools.partial(self.poller.poll, batches=PIPELINE)
                self._thread = Poller(self.name, poll, interval=s.poll.interval,
                                      max_interval=s.poll.max_interval, idle_backoff=s.poll.idle_backoff,
                                      heartbeat=self.context.heartbeat, logger=self.log)
                self._thread.start()
                if s.poll.listen:
                    self.listener = Listener(self.engine, s.poll.listen, self._thread.trigger, self.log,
                                             where=f"{self.where}.poll.listen")
                    self.listener.start()

    def stop(self) -> None:
        if self.listener is not None:
            self.listener.stop()
            self.listener = None
        if self._thread is not None:
            self._thread.stop()
            self._thread = None
        if self.engine is not None:
            self.engine.dispose()
            self.engine = None

    def _check_queries(self) -> None:
        """Every declared query compiles against the database (nothing is run)."""
        for name in self.settings.queries:
            self._statement(name)

    def _statement(self, name: str) -> Any:
        q = self.settings.queries[name]
        return sa.text(q.sql)

    # -- outbound -------------------------------------------------------------------------------

    def deliver(self, envelope: Envelope) -> None:
        if self.writer is None:
            raise CommandFault(f"adapter {self.name!r} writes no table (no [adapters.options.write])",
                               code="unsupported")
        self.writer.deliver(envelope)

    def on_send(self, command: Command) -> Reply:
        if self.writer is None:
            raise CommandFault(f"adapter {self.name!r} writes no table", code="unsupported")
        if command.document is None:
            raise CommandFault("send without a document", code="invalid")
        envelope = command.document.to_envelope(origin=command.envelope.origin)
        envelope = envelope.replace(message_id=command.envelope.message_id)  # a resent command: written once
        written = self.writer.deliver(envelope)
        return Reply(details={"status": "written" if written else "duplicate"})

    # -- commands -------------------------------------------------------------------------------

    def run_query(self, name: str, params: dict[str, Any], limit: int | None = None) -> list[dict[str, Any]]:
        """The rows of declared query ``name`` with ``params`` bound as parameters."""
        from .connection import connected, describe_error
        from .records import RowError, row_record

        if name not in self.settings.queries:
            known = ", ".join(sorted(self.settings.queries)) or "none declared"
            raise CommandFault(f"no query {name!r} (queries: {known})", code="unsupported")
        q = self.settings.queries[name]
        stmt = self._statement(name)
        wanted = set(_PARAM.findall(q.sql))
        missing = sorted(wanted - set(params))
        if missing:
            raise CommandFault(f"query {name} needs the parameter(s) {', '.join(missing)}", code="invalid")
        limit = min(limit or q.max_rows, q.max_rows)
        assert self.engine is not None
        try:
            with connected(self.engine) as conn:
                result = conn.execute(stmt, {k: params[k] for k in wanted})
                rows = [dict(r._mapping) for r in result.fetchmany(limit)] if result.returns_rows else []
                conn.commit()
        except sa.exc.DBAPIError as exc:
            raise CommandFault(f"query {name} failed: {describe_error(exc)}", code="failed",
                               where=f"{self.where}.queries.{name}") from None
        try:
            return [row_record(r) for r in rows]
        except RowError as exc:
            raise CommandFault(f"query {name}: {exc.message}", code="failed", where=f"{self.where}.queries.{name}") from None

    def _rows_document(self, name: str, rows: list[dict[str, Any]]) -> Document:
        fmt = FormatIndicator.parse(self.settings.queries[name].format or ROWS_FORMAT, "application/json")
        return Document(fmt, json.dumps(rows, separators=(",", ":")).encode(), {"db.query": name, "db.rows": str(len(rows))})

    def on_request(self, command: Command) -> Reply:
        name = command.operation or (next(iter(self.settings.queries)) if len(self.settings.queries) == 1 else "")
        if not name:
            raise CommandFault("request needs an operation naming a declared query", code="invalid")
        params: dict[str, Any] = {}
        if command.document is not None and command.document.body.strip():
            try:
                params = json_loads(command.document.body)
            except (ValueError, UnicodeDecodeError) as exc:
                raise CommandFault(f"the request document is not JSON: {exc}", code="invalid") from None
            if not isinstance(params, dict):
                raise CommandFault("the request document must be a JSON object of parameters", code="invalid")
        rows = self.run_query(name, params)
        return Reply(documents=[self._rows_document(name, rows)], details={"status": "answered", "rows": str(len(rows))})

    def on_fetch(self, command: Command) -> Reply:
        query = dict(command.query)
        name = command.operation or query.pop("query", "")
        if name:
            rows = self.run_query(name, query, command.max)
            return Reply(documents=[self._rows_document(name, rows)], details={"status": "fetched", "rows": str(len(rows))})
        if self.poller is None:
            raise CommandFault(f"adapter {self.name!r} polls no table; name a declared query (query=NAME)",
                               code="unsupported")
        try:
            result = self.poller.poll(command.max)
        except CouplerError as exc:  # the fault names the place (adapters[NAME].options.poll)
            raise CommandFault(exc.message, code="failed", where=exc.where, hint=exc.hint) from None
        return Reply(details={"status": "polled", **{k: str(v) for k, v in result.to_json().items()}})

    def on_ping(self, command: Command) -> Reply:
        from .connection import connected, describe_error, shown

        if self.engine is None:
            raise CommandFault(f"adapter {self.name!r} is not started", code="failed")
        try:
            with connected(self.engine) as conn:
                conn.execute(sa.text("SELECT 1"))
        except sa.exc.DBAPIError as exc:
            raise CommandFault(f"{shown(self.engine.url)} is not reachable: {describe_error(exc)}", code="failed") from None
        return Reply(details={"status": "ok", "payload": command.payload, "database": shown(self.engine.url)})

    def health(self) -> dict[str, Any]:
        health = super().health()
        if self._thread is not None:
            poll = self._thread.health()
            health["poll"] = poll
            if poll.get("last_error"):
                health["problems"].append(f"last poll failed: {poll['last_error']}")
                health["status"] = "degraded"
        if self.listener is not None:
            health["notifications"] = self.listener.notified
        return health

    def describe(self) -> dict[str, Any]:
        from .connection import shown

        info = super().describe()
        if self.engine is not None:
            info["database"] = shown(self.engine.url)
        if self.poller is not None:
            info["inbound"] = self.poller.describe()
        if self.writer is not None:
            info["outbound"] = self.writer.describe()
        info["queries"] = sorted(self.settings.queries)
        return json.loads(json.dumps(info, default=str))
