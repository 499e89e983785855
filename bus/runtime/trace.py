"""Message trace: one business message and everything derived from it, from the journal.

Every envelope carries a W3C ``traceparent`` (:mod:`coupler.canonical.tracecontext`); the
Message Store journal records the trace id of each message it stores. A trace search takes
a message id, a trace id (or a whole ``traceparent``), a correlation id or a business key,
finds the traces those name, and lists every journal entry of every message of those
traces (the message itself, split records, translated copies, commands and replies) in the
order they happened. The console's trace page and ``coupler ctl trace`` show this list.

The records of one file share the file's trace. A query naming one message (its id, a
correlation id) also gives ``named``, that message and those correlated to it: the console
shows their hops alone (one record of the file), with a link to the whole trace.

What a component did with a message is journaled with it, and shown as hops of their own
before the journal entry that records it:

* a message stored ``via`` something (``adapter:NAME via mapping FILE``: an inbound adapter's
  mapping made it; ``route:NAME via STEP > STEP``: a route's steps did) gives a ``mapped`` or
  ``steps`` hop;
* an acknowledgement carries the consumer's note (:attr:`Delivery.note
  <coupler.bus.transport.base.Delivery.note>`, the parts :func:`note` joins): ``mapping
  FILE`` (an outbound adapter's mapping), ``to WHERE`` (the file it wrote, where it went),
  ``discarded by STEP: REASON`` (a route's filter dropped it): ``mapped``, ``delivered`` and
  ``discarded`` hops; a discarded message's outcome is ``discarded``, not ``done``.
"""

from __future__ import annotations

import re
from typing import Any

from coupler.bus.transport.base import JournalEntry, Transport
from coupler.canonical.tracecontext import TraceContext

_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
#: at most this many messages of a trace are followed
MAX_MESSAGES = 2000

#: what each journal event means to an operator
OUTCOMES = {
    "sent": "stored", "published": "published", "received": "received", "acked": "done",
    "nacked": "failed, will retry", "dead-lettered": "dead-lettered", "invalid": "invalid",
    "expired": "expired", "replayed": "replayed",
}


#: the parts of a note (:func:`note`), each starting with its kind
_NOTE_KINDS = {"mapping": "mapped", "to": "delivered", "discarded by": "discarded", "some discarded by": "discarded"}
_NOTE_SEP = "; "


def note(*, mapping: str | None = None, to: str | None = None, discarded: tuple[str, str] | None = None,
         partly: bool = False) -> str | None:
    """What a consumer did with a message, as journaled with its acknowledgement: the
    ``mapping`` it ran, where it went (``to``: the file written), ``discarded`` by which
    step and why (``partly``: some of its parts, others went on); None when nothing."""
    parts = []
    if mapping:
        parts.append(f"mapping {_quote(mapping)}")
    if to:
        parts.append(f"to {_quote(to)}")
    if discarded:
        parts.append(f"{'some ' if partly else ''}discarded by {_quote(discarded[0])}: {_quote(discarded[1])}")
    return _NOTE_SEP.join(parts) or None


def join_notes(*notes: str | None) -> str | None:
    """Several notes of one message as one."""
    return _NOTE_SEP.join(n for n in notes if n) or None


def via(component: str, mapping: str) -> str:
    """The journal detail of what an inbound adapter stores through its ``mapping``."""
    return f"{component} via mapping {mapping}"


def note_parts(text: str) -> list[tuple[str, str]]:
    """``(hop event, what)`` of each part of a note."""
    parts: list[tuple[str, str]] = []
    for piece in text.split(_NOTE_SEP):
        kind = next((k for k in _NOTE_KINDS if piece.startswith(k + " ")), None)
        parts.append((_NOTE_KINDS[kind] if kind else "note", _unquote(piece)))
    return parts


def _quote(value: str) -> str:
    """A value in a note: its ``;`` (which separates the parts) and ``%`` escaped."""
    return value.replace("%", "%25").replace(";", "%3B")


def _unquote(value: str) -> str:
    return value.replace("%3B", ";").replace("%25", "%")


def trace_ids_of(transport: Transport, query: str) -> tuple[list[str], list[str]]:
    """The trace ids ``query`` names — itself (a trace id or ``traceparent``), the traces of
    the message with that id, or of the messages with that correlation id or business key —
    and the ids of the messages it names directly (those without a trace id are followed
    alone)."""
    query = query.strip()
    ctx = TraceContext.parse(query)
    if ctx is not None:
        return [ctx.trace_id], []
    if _TRACE_ID.match(query.lower()):
        return [query.lower()], []
    ids: list[str] = []
    named: list[str] = []
    for entry in [*transport.journal(message_id=query, limit=MAX_MESSAGES), *transport.journal(key=query, limit=MAX_MESSAGES)]:
        if entry.trace_id and entry.trace_id not in ids:
            ids.append(entry.trace_id)
        if entry.message_id and entry.message_id not in named:
            named.append(entry.message_id)
    return ids, named


def trace(transport: Transport, query: str, *, limit: int = 5000) -> dict[str, Any]:
    """The hops of the messages of every trace ``query`` names (see the module's doc)."""
    trace_ids, named = trace_ids_of(transport, query)
    stored = transport.journal(trace_ids=trace_ids, limit=limit) if trace_ids else []
    message_ids: list[str] = []
    for mid in [e.message_id for e in stored] + named:
        if mid and mid not in message_ids:
            message_ids.append(mid)
    entries = transport.journal(message_ids=message_ids[:MAX_MESSAGES], limit=limit) if message_ids else []
    traces = {e.message_id: e.trace_id for e in stored if e.trace_id}
    hops = [h for e in entries for h in _hops(e, traces)]
    messages = []
    for mid in message_ids:
        own = [h for h in hops if h["message_id"] == mid]
        if not own:
            continue
        messages.append({
            "message_id": mid,
            "trace_id": traces.get(mid),
            "first_at": own[0]["at"],
            "channels": sorted({h["channel"] for h in own if h["channel"]}),
            "outcome": own[-1]["outcome"],
        })
    return {"query": query, "trace_ids": trace_ids, "messages": messages, "hops": hops, "named": named}


def _hops(e: JournalEntry, traces: dict[str | None, str]) -> list[dict[str, Any]]:
    """The hops of one journal entry: what the component did (its mapping, the file it wrote,
    the step that discarded it), then the entry itself."""
    by, done = e.detail, ""
    extra: list[tuple[str, str]] = []
    if e.event in ("received", "acked"):
        consumer, _, done = (e.detail or "").partition(": ")
        by = _component(consumer or None)
        extra = note_parts(done) if done else []
    elif e.event in ("sent", "published") and e.detail and " via " in e.detail:
        by, _, path = e.detail.partition(" via ")
        extra = [("mapped", path)] if path.startswith("mapping ") else [("steps", f"through {path}")]
    outcome = OUTCOMES.get(e.event, e.event)
    if e.event == "acked" and any(what.startswith("discarded by ") for _, what in extra):
        outcome = "discarded"
    base = {
        "at": e.at.isoformat(timespec="milliseconds"),
        "message_id": e.message_id,
        "trace_id": e.trace_id or traces.get(e.message_id),
        "channel": e.channel,
    }
    hops = [{**base, "event": kind, "outcome": what, "by": by, "detail": what} for kind, what in extra]
    hops.append({**base, "event": e.event, "outcome": outcome, "by": by, "detail": e.detail})
    return hops


def _component(consumer: str | None) -> str | None:
    """A consumer as a component name: ``route:x`` stays, an adapter's name becomes ``adapter:NAME``."""
    if not consumer or ":" in consumer or consumer in ("cli", "control", "dispatcher"):
        return consumer
    return f"adapter:{consumer}"
