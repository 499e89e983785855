"""W3C Trace Context (https://www.w3.org/TR/trace-context/) as the envelope carries it."""

from __future__ import annotations

import pytest

from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.tracecontext import (
    TRACEPARENT,
    TraceContext,
    child_header,
    ensure_trace,
    handling,
    search_keys,
    trace_id_of,
    trace_of,
)

SPEC_EXAMPLE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"  # the spec's own example


def test_the_specs_example_parses_and_round_trips() -> None:
    ctx = TraceContext.parse(SPEC_EXAMPLE)
    assert ctx == TraceContext("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "01")
    assert ctx.header == SPEC_EXAMPLE


@pytest.mark.parametrize("header", [
    "", "garbage",
    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # version ff is invalid
    "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # all-zero trace id
    "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  # all-zero parent id
    "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",  # upper case
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",  # version 00 has four fields
    "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",  # a short trace id
])
def test_invalid_headers_are_ignored(header: str) -> None:
    assert TraceContext.parse(header) is None
    env = Envelope(format=FormatIndicator("x.Y", 1), properties={TRACEPARENT: header})
    assert trace_of(env) is None and trace_id_of(env) is None
    assert trace_of(ensure_trace(env)) is not None  # a new trace replaces it


def test_a_later_version_may_carry_more_fields() -> None:
    header = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-will-be-like"
    assert TraceContext.parse(header) == TraceContext("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "01")


def test_hops_keep_the_trace_and_derived_messages_are_children() -> None:
    env = ensure_trace(Envelope(format=FormatIndicator("x.Y", 1), correlation_id="C-9", properties={"file.name": "A.DAT"}))
    ctx = trace_of(env)
    assert ctx is not None and trace_id_of(env) == ctx.trace_id
    reply = env.reply(b"ok", "x.Reply@1")
    assert trace_of(reply).trace_id == ctx.trace_id and trace_of(reply).span_id != ctx.span_id
    assert trace_of(env.replace(body=b"translated")) == ctx  # a hop keeps it as it is
    with handling(env):  # what a handler publishes joins the message's trace
        published = ensure_trace(Envelope(format=FormatIndicator("x.Z", 1)))
        outbound = TraceContext.parse(child_header())
    assert trace_of(published).trace_id == ctx.trace_id and outbound.trace_id == ctx.trace_id
    assert trace_of(ensure_trace(Envelope(format=FormatIndicator("x.Z", 1)))).trace_id != ctx.trace_id
    assert search_keys(env) == "|C-9|A.DAT|"


def test_a_file_is_always_the_same_trace() -> None:
    assert TraceContext.for_key("drop-in|ORDERS.DAT|100|1") == TraceContext.for_key("drop-in|ORDERS.DAT|100|1")
    assert TraceContext.for_key("a") != TraceContext.for_key("b")
