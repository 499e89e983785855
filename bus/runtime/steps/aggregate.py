"""Aggregator: messages that belong together, collected in the transport's store and sent on
as one message when their group is complete.

::

    [[routes.steps]]
    type = "aggregate"
    correlation = "body.customer.region"   # the group key (expression language)
    complete_size = 1000                   # complete at 1,000 messages ...
    timeout_seconds = 2                    # ... or 2 s after the first one came
    strategy = "lines"                     # the batch body: one line per message

Completion (any that is set; the first that holds wins, its name is the group's
``aggregate.reason``): ``complete_size`` messages, ``timeout_seconds`` after the first (or,
``timeout_from = "last"``, the last) message, every ``interval_seconds`` for every open group,
``complete_when`` a condition on the arriving message (with the properties ``group_size`` and
``group_bytes`` of its group after it), or ``complete_sequence`` when every part of a Message
Sequence is there (the group key defaults to ``sequence.id``; members in position order).

Strategies (the body of the aggregated message): ``lines`` (each body one line), ``fixed``
(fixed-length records one after the other, ``record_length`` checked), ``xml`` (each XML
document's root element inside a ``wrapper`` element), ``avro`` (an Avro object container
file of the Avro records, content type ``application/avro``), ``records`` (the records into
the array ``field`` of the registry format ``format``); for Scatter-Gather and the Composed
Message Processor ``all`` (every answer's record in a JSON array), ``first`` (the first answer;
with ``discard_late`` the later ones are dropped) and ``best`` (the answer with the lowest or
highest value of the expression ``best``); or a third party's strategy by name (hook
``coupler_aggregation_strategies``: ``{name: callable(group) -> (body, format)}``).

State (survives a crash and a restart, see :mod:`coupler.bus.runtime.steps.state`): per group
a header (``groups``: id, size, first and last arrival) and one entry per member (``members``,
the envelope without its Message History), written in the transaction that acknowledges the
member (a route worker's batch reads a group's header once and writes it, and the batch's
members, once before the commit); a completed group is deleted in the transaction that sends
its aggregate. A time-out that fell due while the daemon was down fires
at its first timer tick after start. With ``late_to``, a completed group's key is remembered
for ``late_window_seconds`` and messages arriving for it go to that channel.
"""

from __future__ import annotations

import functools
import io
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import model_validator

from coupler.bus.config.models import Channel
from coupler.bus.model.selectors import Expression, Selector, SelectorError
from coupler.bus.transport.base import TransactionOps
from coupler.bus.transport.codec import decode, encode
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError, one_line
from coupler.canonical.options import Int, Num, OptionsModel, Str, option

from .base import Step, StepContext, StepError, StepSetup
from .outcomes import Continue, Deliver, Discard, Outcome
from .state import StepState

#: message ids of aggregates: uuid5 of the step, the key and the group id (a group completed
#: again after a crash on AMQP gets the same id, which an Idempotent Receiver drops)
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "coupler:aggregate")
AVRO_CONTAINER = "application/avro"

Reason = Literal["size", "timeout", "interval", "predicate", "sequence", "forced"]
REASONS: tuple[str, ...] = ("size", "timeout", "interval", "predicate", "sequence", "forced")


class AggregateOptions(OptionsModel):
    correlation: Str | None = option(
        "The group key: an expression of the expression language (a header such as `correlation_id`, "
        "`properties.X`, `body.a.b`, `xpath('...')`). Default: `sequence.id` with `complete_sequence`, else "
        "`correlation_id`. A message without a key goes to the Invalid Message Channel.",
        default=None, example='correlation = "body.customer.region"',
    )
    complete_size: Int | None = option("Complete a group when it holds this many messages.", default=None, ge=1)
    timeout_seconds: Num | None = option(
        "Complete a group this long after its first message (or its last, `timeout_from`).", default=None, gt=0)
    timeout_from: Literal["first", "last"] = option("What the time-out counts from.", default="first")
    interval_seconds: Num | None = option("Complete every open group this often.", default=None, gt=0)
    complete_when: Str | None = option(
        "Complete the group when the arriving message matches this condition (its properties `group_size` and "
        "`group_bytes` are those of the group with it).", default=None, example='complete_when = "properties.last = \'true\'"')
    complete_sequence: bool = option(
        "Complete when every part of the Message Sequence is there (members in position order).", default=False)
    strategy: Str = option(
        "How the members become one body: `lines`, `fixed`, `xml`, `avro`, `records`, `all`, `first`, `best`, or "
        "the name of a third party's strategy (hook `coupler_aggregation_strategies`).", default="lines")
    format: Str | None = option(
        "The format of the aggregate (`name@version[;content-type]`); `records`: the registry format with the "
        "array `field`. Default: the first member's format (`xml`: application/xml, `avro`: application/avro).",
        default=None)
    field: Str | None = option("`records`: the array field of `format` the member records go into.", default=None)
    key_field: Str | None = option("`records`: a field of `format` that gets the group key.", default=None)
    wrapper: Str = option("`xml`: the root element around the members' root elements.", default="batch")
    record_length: Int | None = option("`fixed`: every member's body has this many bytes (others are invalid).",
                                       default=None, ge=1)
    late_to: Channel | None = option(
        "Where messages for a group completed less than `late_window_seconds` ago go (default: they start a "
        "new group).", default=None)
    discard_late: bool = option("Discard messages for a group completed less than `late_window_seconds` ago "
                                "(counted as `late` in /metrics): the answers after the first (`first`).",
                                default=False)
    late_window_seconds: Num = option("How long a completed group's key is remembered for `late_to` / `discard_late`.",
                                      default=3600.0, gt=0)
    best: Str | None = option("`best`: the expression whose value ranks the answers (a number).", default=None,
                              example='best = "body.price"')
    best_order: Literal["min", "max"] = option("`best`: the lowest or the highest value wins.", default="min")

    @model_validator(mode="after")
    def _completes(self) -> AggregateOptions:
        if not (self.complete_size or self.timeout_seconds or self.interval_seconds or self.complete_when
                or self.complete_sequence):
            raise ValueError("no completion: set complete_size, timeout_seconds, interval_seconds, complete_when "
                             "or complete_sequence")
        return self


def _member(message: Envelope) -> Envelope:
    """A member as the group keeps it: the envelope without its Message History (the aggregate
    starts a history of its own, and the journal keeps each member's way; half the bytes to
    encode and decode of a record that came through a file and a few steps). The headers and
    body are shared; the properties are a copy (a later change of the message's properties does
    not reach the stored member)."""
    return message.replace(history=[])


@dataclass
class _Pending:
    """What the deliveries of one transaction did to an Aggregator's state, written once before
    it commits: group headers read (None: no open group) and changed, members added."""

    heads: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)
    #: members added in this transaction, as envelopes: encoded at the flush only if their group
    #: is still open then (a group completed in the same transaction is never encoded or decoded:
    #: a split file's parts aggregated in the transaction of the file)
    members: dict[str, Envelope] = field(default_factory=dict)


@dataclass
class Group:
    """A completed group, as a strategy sees it."""

    key: str
    members: list[Envelope]
    reason: str
    options: AggregateOptions
    registry: Callable[[], Any]
    #: compiles an expression of the expression language (``best``)
    expression: Callable[[str], Expression] = lambda text: Expression.parse(text)

    def records(self) -> list[Any]:
        """The members' bodies as records (Avro through the registry, or JSON)."""
        out = []
        for m in self.members:
            if m.format.content_type == "avro/binary":
                out.append(self.registry().decode(m.body, m.format))
            else:
                out.append(json.loads(m.body))
        return out


#: a strategy: a completed group -> (body, format of the aggregate)
Strategy = Callable[[Group], tuple[bytes, FormatIndicator]]


def _format(group: Group, content_type: str | None = None) -> FormatIndicator:
    if group.options.format:
        return FormatIndicator.parse(group.options.format)
    first = group.members[0].format
    return FormatIndicator(first.name, first.version, content_type or first.content_type)


def lines(group: Group) -> tuple[bytes, FormatIndicator]:
    return b"".join(m.body.rstrip(b"\r\n") + b"\n" for m in group.members), _format(group)


def fixed(group: Group) -> tuple[bytes, FormatIndicator]:
    return b"".join(m.body for m in group.members), _format(group)


def xml(group: Group) -> tuple[bytes, FormatIndicator]:
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    root = etree.Element(group.options.wrapper)
    for m in group.members:
        root.append(etree.fromstring(m.body, parser))
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8"), _format(group, "application/xml")


def avro(group: Group) -> tuple[bytes, FormatIndicator]:
    import fastavro

    first = group.members[0].format
    schema = fastavro.parse_schema(group.registry().resolve(first).parsed)
    buf = io.BytesIO()
    fastavro.writer(buf, schema, group.records())
    return buf.getvalue(), _format(group, AVRO_CONTAINER)


def records(group: Group) -> tuple[bytes, FormatIndicator]:
    o = group.options
    assert o.format and o.field
    fmt = FormatIndicator.parse(o.format)
    record: dict[str, Any] = {o.field: group.records()}
    if o.key_field:
        record[o.key_field] = group.key
    if fmt.content_type == "avro/binary":
        return group.registry().encode(record, fmt), fmt
    return json.dumps(record).encode(), fmt


def all_(group: Group) -> tuple[bytes, FormatIndicator]:
    """Scatter-Gather ``all``: every answer's record in a JSON array."""
    return json.dumps(group.records()).encode(), _format(group, "application/json")


def first(group: Group) -> tuple[bytes, FormatIndicator]:
    """Scatter-Gather ``first``: the answer that came first, as it is."""
    return group.members[0].body, _format(group)


def best(group: Group) -> tuple[bytes, FormatIndicator]:
    """Scatter-Gather ``best``: the answer with the lowest (``best_order = "min"``) or highest
    value of the expression ``best``; answers without a number for it never win."""
    o = group.options
    assert o.best is not None
    scored = []
    for i, m in enumerate(group.members):
        try:
            scored.append((float(group.expression(o.best)(m)), i, m))
        except (TypeError, ValueError, CouplerError):
            continue
    if not scored:
        raise StepError(f"no answer of group {group.key} has a number for {o.best}")
    _, _, winner = (min if o.best_order == "min" else max)(scored, key=lambda s: (s[0], s[1]) if o.best_order == "min" else (s[0], -s[1]))
    return winner.body, FormatIndicator.parse(o.format) if o.format else winner.format


STRATEGIES: dict[str, Strategy] = {"lines": lines, "fixed": fixed, "xml": xml, "avro": avro, "records": records,
                                   "all": all_, "first": first, "best": best}


def strategies(plugins: Any) -> dict[str, Strategy]:
    """The built-in strategies and those of the plugins (``coupler_aggregation_strategies``)."""
    found = dict(STRATEGIES)
    hook = getattr(getattr(plugins, "hook", None), "coupler_aggregation_strategies", None)
    if hook is not None:
        for more in hook():
            found.update(more or {})
    return found


class Aggregator(Step):
    """Aggregator: messages with the same `correlation` key are collected in the transport's store and
    leave as one message when their group completes (size, time-out, interval, condition or complete
    Message Sequence), its body made by `strategy`; late messages go to `late_to` or are discarded.
    See docs/stateful-patterns.md."""

    type_name = "aggregate"
    options_model = AggregateOptions
    stateful = True

    def __init__(self, options: AggregateOptions, setup: StepSetup):
        super().__init__(options, setup)
        o = options
        default_key = "sequence.id" if o.complete_sequence else "correlation_id"
        self.key: Expression = setup.expression(o.correlation or default_key, "correlation")
        self.when: Selector | None = setup.condition(o.complete_when, "complete_when") if o.complete_when else None
        known = strategies(setup.plugins)
        if o.strategy not in known:
            raise setup.problem("strategy", f"unknown strategy {o.strategy!r} (known: {', '.join(sorted(known))})")
        self.strategy = known[o.strategy]
        if o.strategy == "records" and not (o.format and o.field):
            raise setup.problem("strategy", "`records` needs `format` (a registry format) and `field` (its array field)")
        if o.format:
            try:
                FormatIndicator.parse(o.format)
            except CouplerError as exc:
                raise setup.problem("format", str(exc)) from None
        if o.strategy == "best" and not o.best:
            raise setup.problem("best", "the `best` strategy needs `best`, the expression that ranks the answers")
        self._expressions: dict[str, Expression] = {}
        if o.best:
            self._expression(o.best)
        self.state = StepState(setup.state_scope)
        timed = [t for t in (o.timeout_seconds, o.interval_seconds) if t]
        self.timer_seconds = min([o.interval_seconds or 1.0, *(t / 4 for t in timed), 1.0]) if timed else 0.0
        self._next_interval = 0.0
        #: the earliest time-out (``time.time()``) of the groups this process wrote, for the
        #: monitor to tick at (:meth:`wake_at`); a hint: a rolled-back write leaves it early
        self._wake: float | None = None
        self._wake_lock = threading.Lock()
        #: completions by reason (``/metrics``)
        self.completed: dict[str, int] = dict.fromkeys(REASONS, 0)

    def describe(self) -> str:
        return f"aggregate by {self.key.text}"

    def _expression(self, text: str) -> Expression:
        if text not in self._expressions:
            self._expressions[text] = self.setup.expression(text, "best")
        return self._expressions[text]

    # -- one message ------------------------------------------------------------------------

    def process(self, message: Envelope, ctx: StepContext) -> Outcome:
        key = self._key(message)
        o = self.options
        if o.record_length is not None and len(message.body) != o.record_length:
            raise StepError(f"body of {len(message.body)} bytes, not a record of {o.record_length}")
        if o.strategy == "xml":
            self._check_xml(message)
        if ctx.test:
            return Continue((), f"would be held in group {key}")
        tx = ctx.tx
        pending = ctx.scope.kept(self.state.scope) if ctx.scope is not None else None
        if pending is None:  # the first delivery of the transaction for this step
            pending = ctx.defer(self.state.scope, _Pending, functools.partial(self._flush, tx))
        if pending is not None and key in pending.heads:
            head = pending.heads[key]  # read (and locked) by an earlier delivery of this transaction
        else:
            head = self.state.get_json(tx, "groups", key, lock=True)
            if pending is not None:
                pending.heads[key] = head
        if not self.state.first_time(tx, message):
            return Continue((), f"counted before (redelivered): group {key}")
        if head is None and (o.late_to or o.discard_late) and self.state.get(tx, "closed", [key]):
            if o.late_to:
                return Deliver(((o.late_to, message),), f"late for group {key}: to {o.late_to}")
            return Discard(f"late for group {key}", counter="late")
        now = time.time()
        if head is None:
            head = {"id": uuid.uuid4().hex, "n": 0, "first": now, "last": now, "bytes": 0, "size": None}
        seq = message.sequence
        if seq is not None and o.complete_sequence:
            size = seq.size if seq.size is not None else (seq.position + 1 if seq.end else None)
            head["size"] = size if size is not None else head["size"]
            member_key = f"{key}\x1f{seq.position:09d}"
        else:
            member_key = f"{key}\x1f{head['n']:09d}"
        head["n"] += 1
        head["last"] = now
        head["bytes"] += len(message.body)
        if pending is None:
            self.state.put(tx, "members", {member_key: encode(_member(message))})
        else:
            pending.members[member_key] = _member(message)
        reason = self._complete_now(message, head)
        if reason is None:
            if pending is None:
                self.state.put_json(tx, "groups", key, head)
                self._hint([head])
            else:
                pending.heads[key] = head
                pending.changed.add(key)
            return Continue((), f"held in group {key} ({head['n']})")
        ctx.committed.append(functools.partial(self.count_completion, reason))
        return Continue((self._complete(tx, key, head, reason, pending),), f"group {key} complete ({reason}, {head['n']})")

    def _flush(self, tx: TransactionOps, pending: _Pending) -> None:
        """The members and group headers the deliveries of one transaction left: written once,
        before it commits."""
        if pending.members:
            self.state.put(tx, "members", {k: encode(m) for k, m in pending.members.items()})
        if pending.changed:
            self.state.put(tx, "groups", {
                k: None if pending.heads[k] is None else json.dumps(pending.heads[k], separators=(",", ":")).encode()
                for k in sorted(pending.changed)})
            self._hint([h for k in pending.changed if (h := pending.heads[k]) is not None])

    def _timeout_at(self, head: dict[str, Any]) -> float | None:
        o = self.options
        return None if not o.timeout_seconds else head["first" if o.timeout_from == "first" else "last"] + o.timeout_seconds

    def _hint(self, heads: list[dict[str, Any]]) -> None:
        """Open groups written: the monitor ticks at the earliest of their time-outs."""
        at = min((t for h in heads if (t := self._timeout_at(h)) is not None), default=None)
        if at is not None:
            with self._wake_lock:
                if self._wake is None or at < self._wake:
                    self._wake = at

    def wake_at(self) -> float | None:
        return self._wake

    def _key(self, message: Envelope) -> str:
        try:
            key = self.key.text_of(message)
        except SelectorError as exc:
            raise StepError(f"no group key: {exc}") from None
        if key is None or key == "":
            raise StepError(f"message {message.message_id} has no group key {self.key.text}")
        return key

    @staticmethod
    def _check_xml(message: Envelope) -> None:
        from lxml import etree

        try:
            etree.fromstring(message.body, etree.XMLParser(resolve_entities=False, no_network=True))
        except etree.XMLSyntaxError as exc:
            raise StepError(f"body is not an XML document: {one_line(exc)}") from None

    def _complete_now(self, message: Envelope, head: dict[str, Any]) -> str | None:
        o = self.options
        if o.complete_sequence and head["size"] is not None and head["n"] >= head["size"]:
            return "sequence"
        if o.complete_size is not None and head["n"] >= o.complete_size:
            return "size"
        if self.when is not None:
            probe = message.replace(properties={**message.properties, "group_size": str(head["n"]),
                                                "group_bytes": str(head["bytes"])})
            if self.when(probe):
                return "predicate"
        return None

    def _complete(self, tx: TransactionOps, key: str, head: dict[str, Any], reason: str,
                  pending: _Pending | None = None) -> Envelope:
        """The aggregate of group ``key`` (its header ``head``); the group's state deleted
        (``pending``: with what this transaction has not written yet)."""
        stored = self._members(tx, key, head, pending)
        members = [m if isinstance(m := stored[k], Envelope) else decode(m) for k in sorted(stored)]
        if pending is None:
            self.state.put(tx, "members", dict.fromkeys(stored))
            self.state.put_json(tx, "groups", key, None)
        else:
            written = [k for k in stored if pending.members.pop(k, None) is None]
            if written:
                self.state.put(tx, "members", dict.fromkeys(written))
            pending.heads[key] = None
            pending.changed.add(key)
        if self.options.late_to or self.options.discard_late:
            self.state.put(tx, "closed", {key: head["id"].encode()}, ttl=self.options.late_window_seconds)
        return self.aggregate(key, head, members, reason)

    def count_completion(self, reason: str) -> None:
        """A completion by ``reason`` committed: counted for ``/metrics``."""
        self.completed[reason] = self.completed.get(reason, 0) + 1

    def aggregate(self, key: str, head: dict[str, Any], members: list[Envelope], reason: str) -> Envelope:
        group = Group(key, members, reason, self.options, self.setup.registry, self._expression)
        try:
            body, fmt = self.strategy(group)
        except CouplerError:
            raise
        except Exception as exc:
            raise StepError(f"strategy {self.options.strategy} failed on group {key}: {exc}") from exc
        props = dict(members[0].properties) if members else {}
        for m in members[1:]:  # what all members agree on
            if m.properties != props:
                props = {k: v for k, v in props.items() if m.properties.get(k) == v}
        props.update({"aggregate.key": key, "aggregate.size": str(len(members)), "aggregate.reason": reason})
        return Envelope(
            format=fmt, body=body, correlation_id=key, properties=props,
            message_id=str(uuid.uuid5(_NAMESPACE, f"{self.setup.state_scope}\x1f{key}\x1f{head['id']}")),
            origin=members[0].origin if members else None,
        )

    # -- time -------------------------------------------------------------------------------

    def on_timer(self, ctx: StepContext) -> Outcome | None:
        o = self.options
        now = time.time()
        interval = False
        if o.interval_seconds:
            interval = now >= self._next_interval
            if interval:
                self._next_interval = now + o.interval_seconds
        out: list[Envelope] = []
        with self._wake_lock:
            hinted = self._wake
        later: list[float] = []  # the time-outs of the groups left open
        for key, head in sorted(self.state.all_json(ctx.tx, "groups").items()):  # locks in key order
            if self._due(head, now, interval) is None:
                if (at := self._timeout_at(head)) is not None:
                    later.append(at)
                continue
            head = self.state.get_json(ctx.tx, "groups", key, lock=True)  # another daemon may have been first
            reason = None if head is None else self._due(head, now, interval)
            if head is not None and reason is not None:
                out.append(self._complete(ctx.tx, key, head, reason))
                ctx.committed.append(functools.partial(self.count_completion, reason))
        with self._wake_lock:  # the next time-out, unless a delivery wrote an earlier one meanwhile
            nxt = min(later, default=None)
            self._wake = nxt if self._wake == hinted else min(t for t in (self._wake, nxt) if t is not None)
        return Continue(out, "time-out") if out else None

    def _due(self, head: dict[str, Any], now: float, interval: bool) -> str | None:
        due = self._timeout_at(head)
        if due is not None and now >= due:
            return "timeout"
        if interval:
            return "interval"
        return None

    # -- operator (console, control bus) ------------------------------------------------------

    def open_groups(self, tx: TransactionOps) -> list[dict[str, Any]]:
        """The open groups: key, size, bytes, age in seconds."""
        now = time.time()
        return [{"key": k, "size": h["n"], "bytes": h["bytes"], "age_seconds": round(now - h["first"], 3),
                 "idle_seconds": round(now - h["last"], 3)}
                for k, h in sorted(self.state.all_json(tx, "groups").items())]

    def force(self, tx: TransactionOps, key: str) -> Envelope | None:
        """Complete group ``key`` now (reason ``forced``); None when it is not open."""
        head = self.state.get_json(tx, "groups", key, lock=True)
        return None if head is None else self._complete(tx, key, head, "forced")

    def discard(self, tx: TransactionOps, key: str) -> int:
        """Drop group ``key`` and its members; returns how many members."""
        head = self.state.get_json(tx, "groups", key, lock=True)
        if head is None:
            return 0
        stored = self._members(tx, key, head)
        self.state.put(tx, "members", dict.fromkeys(stored))
        self.state.put_json(tx, "groups", key, None)
        return len(stored)

    def _members(self, tx: TransactionOps, key: str, head: dict[str, Any],
                 pending: _Pending | None = None) -> dict[str, bytes | Envelope]:
        """The members of group ``key``: ``{member key: encoded envelope}`` as stored, and the
        envelopes ``pending`` holds for the end of this transaction."""
        n = max(head["n"], head.get("size") or 0)
        keys = [f"{key}\x1f{i:09d}" for i in range(n)]
        held: dict[str, bytes | Envelope] = {} if pending is None else {k: pending.members[k] for k in keys if k in pending.members}
        missing = [k for k in keys if k not in held]
        stored: dict[str, bytes | Envelope] = {**self.state.get(tx, "members", missing), **held} if missing else held
        if len(stored) < head["n"]:  # a sequence whose positions are not 0..n-1: look at them all
            prefix = f"{key}\x1f"
            stored = {k: v for k, v in self.state.get(tx, "members").items() if k.startswith(prefix)}
            if pending is not None:
                stored.update((k, v) for k, v in pending.members.items() if k.startswith(prefix))
        return stored


__all__ = ["AVRO_CONTAINER", "AggregateOptions", "Aggregator", "Group", "STRATEGIES", "Strategy", "strategies"]
