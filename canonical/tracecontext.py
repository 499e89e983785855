"""W3C Trace Context on the bus: every envelope carries a ``traceparent``.

The standard property ``traceparent`` of an envelope holds a W3C Trace Context header
(https://www.w3.org/TR/trace-context/): ``00-<trace id, 32 hex>-<parent id, 16 hex>-<flags>``.
An inbound adapter starts a trace for each unit of work it reads (a file, a request), or
continues the one its peer sent (an HTTP/SOAP ``traceparent`` header); every hop keeps the
trace id; a message derived from another (a reply, a translated copy, a command carrying a
document) is a child: same trace id, a new parent id. Outbound SOAP/HTTP calls send it as the
``traceparent`` header.

The *current* trace context (a :mod:`contextvars` variable) is the one of the message a
thread is handling; what that thread publishes without a ``traceparent`` of its own joins it.

The property ``coupler.business-key`` (and ``file.name`` of file adapters) is what an
operator can search a trace by, besides message ids and correlation ids.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .envelope import Envelope

#: the envelope property (and HTTP header) that carries the trace context
TRACEPARENT = "traceparent"
#: the envelope property naming the business key of a message (searchable in traces)
BUSINESS_KEY = "coupler.business-key"
#: properties whose values a trace can be searched by (with the correlation id)
KEY_PROPERTIES = (BUSINESS_KEY, "file.name")

_HEADER = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$")


@dataclass(frozen=True)
class TraceContext:
    """A parsed ``traceparent``: trace id, parent (span) id and flags."""

    trace_id: str
    span_id: str
    flags: str = "01"

    @classmethod
    def new(cls) -> TraceContext:
        """A new trace (random ids, sampled)."""
        return cls(_random_hex(16), _random_hex(8))

    @classmethod
    def for_key(cls, key: str) -> TraceContext:
        """A trace whose id is derived from ``key`` (the same unit of work read again, e.g.
        after a restart, is the same trace)."""
        return cls(*_key_ids(key))

    @classmethod
    def parse(cls, header: str | None) -> TraceContext | None:
        """The context of a ``traceparent`` header; None when absent or malformed (the W3C
        rule: a malformed header is ignored and a new trace starts)."""
        if not header:
            return None
        m = _HEADER.match(header.strip())  # lower-case hex only (W3C: upper case is invalid)
        if m is None:
            return None
        version, trace_id, span_id, flags, rest = m.groups()
        if version == "ff" or (version == "00" and rest) or set(trace_id) == {"0"} or set(span_id) == {"0"}:
            return None
        return cls(trace_id, span_id, flags)

    def child(self) -> TraceContext:
        """The same trace with a new parent id (a hop that derives a new message or a call)."""
        return TraceContext(self.trace_id, _random_hex(8), self.flags)

    @property
    def header(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{self.flags}"

    def __str__(self) -> str:
        return self.header


def _random_hex(n: int) -> str:
    while True:
        value = os.urandom(n).hex()
        if set(value) != {"0"}:
            return value


_current: contextvars.ContextVar[TraceContext | None] = contextvars.ContextVar("coupler_trace", default=None)


def current() -> TraceContext | None:
    """The trace context of the message this thread is handling (None outside one)."""
    return _current.get()


@contextlib.contextmanager
def handling(context: TraceContext | Envelope | None) -> Iterator[TraceContext | None]:
    """Make ``context`` (or an envelope's) the current trace context inside the block."""
    if context is not None and not isinstance(context, TraceContext):
        context = trace_of(context)
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


def _key_ids(key: str) -> tuple[str, str]:
    """The trace and span ids derived from ``key``."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
    return digest[:32], digest[32:48]


def header_for_key(key: str) -> str:
    """``TraceContext.for_key(key).header`` without the context object (a poll of a table
    derives one per row)."""
    trace_id, span_id = _key_ids(key)
    return f"00-{trace_id}-{span_id}-01"


def trace_of(envelope: Envelope) -> TraceContext | None:
    """The trace context an envelope carries (None when it has none or a malformed one)."""
    return TraceContext.parse(envelope.properties.get(TRACEPARENT))


def trace_id_of(envelope: Envelope) -> str | None:
    """The trace id of an envelope's ``traceparent`` (None when it has none or a malformed
    one): :func:`trace_of` without building the context (the store calls it on every send)."""
    header = envelope.properties.get(TRACEPARENT)
    if not header:
        return None
    m = _HEADER.match(header)
    if m is None:
        ctx = TraceContext.parse(header)  # surrounding spaces: the careful way
        return ctx.trace_id if ctx else None
    version, trace_id, span_id, _, rest = m.groups()
    if version == "ff" or (version == "00" and rest) or trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN:
        return None
    return trace_id


_ZERO_TRACE, _ZERO_SPAN = "0" * 32, "0" * 16


def ensure_trace(envelope: Envelope) -> Envelope:
    """``envelope`` with a ``traceparent``: its own, else a child of the current context,
    else a new trace. Changes the envelope's properties in place and returns it."""
    if trace_of(envelope) is None:
        parent = current()
        envelope.properties[TRACEPARENT] = (parent.child() if parent else TraceContext.new()).header
    return envelope


def child_header(envelope: Envelope | None = None) -> str:
    """The ``traceparent`` header of an outbound call made for ``envelope`` (or for the
    current message): a child of its context, or a new trace."""
    parent = (trace_of(envelope) if envelope is not None else None) or current()
    return (parent.child() if parent else TraceContext.new()).header


def search_keys(envelope: Envelope) -> str | None:
    """The values a trace of this message can be searched by, as ``|v1|v2|`` (None: none)."""
    props = envelope.properties
    values = [v for k in KEY_PROPERTIES if (v := props.get(k))]
    if envelope.correlation_id:
        values.insert(0, envelope.correlation_id)
    if not values:
        return None
    text = "|".join(values)
    if text.count("|") >= len(values):  # a value holding the separator
        text = "|".join([v.replace("|", "/") for v in values])
    return f"|{text}|"
