"""Content Enricher: data a message lacks, fetched from another system or a reference file and
merged into its body.

From a system, by request-reply over the common command set (any adapter serving ``request``:
a socket, SOAP or database system)::

    [[routes.steps]]
    type = "enrich"
    target = "pricing"               # the adapter asked (command `request`)
    operation = "price"
    into = "price"                   # the answer's record goes into body.price
    key = "body.sku"                 # with cache_ttl_seconds: answers cached per key
    cache_ttl_seconds = 300
    timeout_seconds = 10
    max_attempts = 3

From a reference file (CSV with a header line, a JSON array of objects, or JSON lines)::

    [[routes.steps]]
    type = "enrich"
    reference = "ref/customers.csv"
    key = "body.customer_id"
    key_column = "id"
    fields = { customer_name = "name", region = "region" }

The request is sent in the route's transaction and the message waits in the transport's store
(not in memory) for its answer, which the step's timer takes off its reply channel: a crash
neither loses the waiting message nor answers it twice. A request unanswered after
``timeout_seconds`` is sent again; after ``max_attempts`` the message goes to ``failed_to``
(or, by default, the Invalid Message Channel) with the cause. A fault answer (the system said
no) sends it there at once. ``fields`` maps body fields to fields of the answer; ``into`` puts
the whole answer in one field. JSON bodies, and Avro bodies through the schema registry (with
``format``, the enriched body is written in another version that has the new fields).
"""

from __future__ import annotations

import base64
import csv
import json
import threading
import time
from typing import Any

from pydantic import model_validator

from coupler.bus.config.models import Channel
from coupler.bus.model.commands import Document, command_envelope, parse_reply
from coupler.bus.model.selectors import Expression, SelectorError
from coupler.bus.transport.base import TransactionOps
from coupler.bus.transport.codec import decode, encode
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError
from coupler.canonical.options import Int, Num, OptionsModel, Str, option

from .base import Step, StepContext, StepError, StepSetup
from .outcomes import Continue, Outcome
from .state import StepState


class EnrichOptions(OptionsModel):
    target: Str | None = option("The adapter asked with the `request` command (request-reply).", default=None)
    operation: Str = option("The `request` command's operation.", default="")
    commands_channel: Channel = option("The command dispatcher's channel (`[commands] channel`).",
                                       default="coupler.commands")
    reply_channel: Channel | None = option("Where the answers come back (default: `enrich.ROUTE.STEP`).", default=None)
    reference: Str | None = option("A reference file (CSV with a header, JSON array of objects, JSON lines), "
                                   "relative to site.toml; read again when it changes.", default=None)
    key: Str | None = option("The lookup key (reference file) or cache key (request-reply): an expression.",
                             default=None, example='key = "body.customer_id"')
    key_column: Str = option("The reference file's field matched against `key`.", default="id")
    into: Str | None = option("The body field that gets the whole answer (a record).", default=None)
    fields: dict[str, Str] = option("Body field -> field of the answer (`a.b` for a nested one).", default_factory=dict)
    format: Str | None = option("The format of the enriched message (default: unchanged).", default=None)
    missing: str = option("A key the reference file lacks: `invalid` (Invalid Message Channel) or `continue` "
                          "(unchanged).", default="invalid", pattern="^(invalid|continue)$")
    timeout_seconds: Num = option("How long an answer is waited for before the request is sent again.",
                                  default=30.0, gt=0)
    max_attempts: Int = option("Requests sent before the message is given up.", default=3, ge=1)
    failed_to: Channel | None = option("Where a message without an answer goes (default: the Invalid Message "
                                       "Channel, with the cause).", default=None)
    cache_ttl_seconds: Num | None = option("Keep answers per `key` this long in the store (request-reply).",
                                           default=None, gt=0)

    @model_validator(mode="after")
    def _source(self) -> EnrichOptions:
        if bool(self.target) == bool(self.reference):
            raise ValueError("set exactly one of target (an adapter asked) and reference (a file)")
        if self.reference and not self.key:
            raise ValueError("a reference file needs `key`")
        if self.cache_ttl_seconds and not self.key:
            raise ValueError("cache_ttl_seconds needs `key` (what answers are cached by)")
        if not self.into and not self.fields:
            raise ValueError("set `into` or `fields`: where the answer goes in the body")
        return self


def _path(record: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(record, dict):
            return None
        record = record.get(part)
    return record


class Enricher(Step):
    """Content Enricher: merges into the body (`into` / `fields`) the answer of an adapter asked with the
    `request` command (the message waits in the store; time-outs retried, then `failed_to`; answers
    cached per `key` for `cache_ttl_seconds`) or the row of a `reference` file. See
    docs/stateful-patterns.md."""

    type_name = "enrich"
    options_model = EnrichOptions
    stateful = True

    def __init__(self, options: EnrichOptions, setup: StepSetup):
        super().__init__(options, setup)
        o = options
        self.key: Expression | None = setup.expression(o.key, "key") if o.key else None
        self.state = StepState(setup.state_scope)
        self.reply_channel = o.reply_channel or f"enrich.{setup.route}.{setup.name}".replace("_", "-")
        self.timer_seconds = 0.0 if o.reference else min(o.timeout_seconds / 4, 0.5)
        self._reference: tuple[float, dict[str, Any]] | None = None
        self._lock = threading.Lock()
        if o.reference:
            self.reference_path = (setup.site_dir / o.reference).resolve()
            if not self.reference_path.is_file():
                raise setup.problem("reference", f"no file {self.reference_path}")
            try:
                self._table()
            except CouplerError as exc:
                raise setup.problem("reference", str(exc)) from None
        if o.format:
            try:
                FormatIndicator.parse(o.format)
            except CouplerError as exc:
                raise setup.problem("format", str(exc)) from None

    def describe(self) -> str:
        return f"enrich from {self.options.target or self.options.reference}"

    # -- the reference file -----------------------------------------------------------------

    def _table(self) -> dict[str, Any]:
        path = self.reference_path
        mtime = path.stat().st_mtime
        with self._lock:
            if self._reference is not None and self._reference[0] == mtime:
                return self._reference[1]
            text = path.read_text(encoding="utf-8")
            try:
                if path.suffix.lower() == ".csv":
                    rows: list[Any] = list(csv.DictReader(text.splitlines()))
                elif text.lstrip().startswith("["):
                    rows = json.loads(text)
                else:
                    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
            except (ValueError, csv.Error) as exc:
                raise CouplerError(f"{path}: not CSV or JSON: {exc}") from None
            column = self.options.key_column
            table = {str(r[column]): r for r in rows if isinstance(r, dict) and r.get(column) is not None}
            self._reference = (mtime, table)
            return table

    # -- merging ----------------------------------------------------------------------------

    def body_record(self, e: Envelope) -> Any:
        ct = e.format.content_type
        try:
            if ct == "avro/binary":
                return self.setup.registry().decode(e.body, e.format)
            if ct == "application/json" or ct.endswith("+json"):
                return json.loads(e.body)
        except Exception as exc:
            raise StepError(f"message {e.message_id}: its body is not {e.format.ref}: {exc}") from None
        if ct.startswith("text/"):
            return e.body.decode("utf-8", "replace")
        raise StepError(f"message {e.message_id}: cannot enrich a {ct} body (JSON or Avro)")

    def merge(self, message: Envelope, answer: Any) -> Envelope:
        body = self.body_record(message)
        if not isinstance(body, dict):
            raise StepError(f"message {message.message_id}: its body is not a record")
        if self.options.into:
            body[self.options.into] = answer
        for field, source in self.options.fields.items():
            body[field] = _path(answer, source)
        fmt = FormatIndicator.parse(self.options.format) if self.options.format else message.format
        try:
            data = self.setup.registry().encode(body, fmt) if fmt.content_type == "avro/binary" else json.dumps(body).encode()
        except Exception as exc:
            raise StepError(f"the enriched body does not fit {fmt.ref}: {exc}") from None
        return message.replace(body=data, format=fmt)

    def _key_of(self, message: Envelope) -> str | None:
        if self.key is None:
            return None
        try:
            key = self.key.text_of(message)
        except SelectorError as exc:
            raise StepError(f"no key: {exc}") from None
        if key is None:
            raise StepError(f"message {message.message_id} has no {self.key.text}")
        return key

    # -- one message ------------------------------------------------------------------------

    def process(self, message: Envelope, ctx: StepContext) -> Outcome:
        key = self._key_of(message)
        o = self.options
        if o.reference:
            assert key is not None
            row = self._table().get(key)
            if row is None:
                if o.missing == "continue":
                    return Continue.one(message, f"{key} not in {o.reference}")
                raise StepError(f"{key} is not in {o.reference}")
            return Continue.one(self.merge(message, row), f"enriched from {o.reference}")
        if ctx.test:
            return Continue((), f"would ask {o.target}")
        tx = ctx.tx
        if o.cache_ttl_seconds and key is not None:
            cached = self.state.get(tx, "cache", [key]).get(key)
            if cached is not None:
                return Continue.one(self.merge(message, json.loads(cached)), f"enriched from the cache ({key})")
        if not self.state.first_time(tx, message):
            return Continue((), "asked before (redelivered)")
        self._ask(tx, message, key, 1)
        return Continue((), f"waiting for {o.target}")

    def _ask(self, tx: TransactionOps, message: Envelope, key: str | None, attempt: int) -> None:
        o = self.options
        assert o.target is not None
        request = command_envelope("request", o.target, document=Document.from_envelope(message), operation=o.operation,
                                   timeout=o.timeout_seconds, return_address=self.reply_channel,
                                   correlation_id=message.message_id)
        self.state.put_json(tx, "waiting", request.message_id, {
            "message": base64.b64encode(encode(message)).decode("ascii"), "sent": time.time(), "attempt": attempt,
            "key": key})
        tx.send(o.commands_channel, request, component=f"route:{self.setup.route}")

    # -- answers and time-outs ----------------------------------------------------------------

    def on_timer(self, ctx: StepContext) -> Outcome | None:
        tx = ctx.tx
        o = self.options
        out: list[Envelope] = []
        for d in tx.receive(self.reply_channel, f"route:{self.setup.route}", max=200):
            tx.ack(d)
            request_id = d.envelope.correlation_id or ""
            waiting = self.state.get_json(tx, "waiting", request_id, lock=True)
            if waiting is None:  # answered before, or given up
                continue
            self.state.put_json(tx, "waiting", request_id, None)
            message = decode(base64.b64decode(waiting["message"]))
            try:
                reply = parse_reply(d.envelope)
                if not reply.ok:
                    raise StepError(f"{o.target} answered {reply.code}: {reply.reason}")
                if not reply.documents:
                    raise StepError(f"{o.target} answered without a document")
                answer = self.body_record(reply.documents[0].to_envelope())
                enriched = self.merge(message, answer)
            except CouplerError as exc:
                self._give_up(tx, message, str(exc))
                continue
            if o.cache_ttl_seconds and waiting["key"] is not None:
                self.state.put(tx, "cache", {waiting["key"]: json.dumps(answer).encode()}, ttl=o.cache_ttl_seconds)
            out.append(enriched)
        now = time.time()
        for request_id, waiting in self.state.all_json(tx, "waiting").items():
            if now < waiting["sent"] + o.timeout_seconds:
                continue
            waiting = self.state.get_json(tx, "waiting", request_id, lock=True)
            if waiting is None:
                continue
            self.state.put_json(tx, "waiting", request_id, None)
            message = decode(base64.b64decode(waiting["message"]))
            if waiting["attempt"] >= o.max_attempts:
                self._give_up(tx, message, f"no answer from {o.target} to {waiting['attempt']} request(s) within "
                                           f"{o.timeout_seconds:g} s each")
            else:
                self._ask(tx, message, waiting["key"], waiting["attempt"] + 1)
        return Continue(out, f"enriched by {o.target}") if out else None

    def _give_up(self, tx: TransactionOps, message: Envelope, cause: str) -> None:
        where = f"route:{self.setup.route}"
        if self.options.failed_to:
            tx.send(self.options.failed_to, message.replace(properties={**message.properties, "enrich.failed": cause}),
                    component=where)
        else:
            tx.invalid_later(message, f"{self.label}: {cause}", where)  # the id not wanted: sent with the commit

    def waiting(self, tx: TransactionOps) -> list[dict[str, Any]]:
        """The messages waiting for an answer: request id, attempt, age (console)."""
        now = time.time()
        return [{"key": k, "size": 1, "attempt": w["attempt"], "age_seconds": round(now - w["sent"], 3)}
                for k, w in sorted(self.state.all_json(tx, "waiting").items())]


__all__ = ["EnrichOptions", "Enricher"]
