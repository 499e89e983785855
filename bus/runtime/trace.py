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
    hops = [_hop(e, traces) for e in entries]
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


def _hop(e: JournalEntry, traces: dict[str | None, str]) -> dict[str, Any]:
    by = e.detail
    if e.event in ("received", "acked"):
        by = _component(e.detail)
    return {
        "at": e.at.isoformat(timespec="milliseconds"),
        "message_id": e.message_id,
        "trace_id": e.trace_id or traces.get(e.message_id),
        "channel": e.channel,
        "event": e.event,
        "outcome": OUTCOMES.get(e.event, e.event),
        "by": by,
        "detail": e.detail,
    }


def _component(consumer: str | None) -> str | None:
    """A consumer as a component name: ``route:x`` stays, an adapter's name becomes ``adapter:NAME``."""
    if not consumer or ":" in consumer or consumer in ("cli", "control", "dispatcher"):
        return consumer
    return f"adapter:{consumer}"
