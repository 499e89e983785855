"""Resequencer: messages that arrive out of order go on in order, their buffer in the
transport's store.

::

    [[routes.steps]]
    type = "resequence"
    mode = "stream"
    sequence = "properties.seq"        # a number, 1, 2, 3, ... per stream
    correlation = "properties.partner" # one stream per partner (default: one stream)
    first = 1
    gap_timeout_seconds = 30

* ``stream``: each message goes on as soon as every number before it went on; one that comes
  early is held. When a gap stays open ``gap_timeout_seconds`` (counted from when the oldest
  held message came), the missing numbers are reported to the Invalid Message Channel (a
  ``coupler.SequenceGap`` message naming the stream and the numbers) and the stream goes on
  from the lowest held message. A number that already went on (a duplicate, or one given up
  as missing) goes to the Invalid Message Channel.
* ``batch``: messages are collected for ``window_seconds`` from the first of a batch (or until
  ``batch_size`` are held) and go on sorted by ``sequence`` (numerically when every value is a
  number, as text otherwise).

The held messages and each stream's next number are in the store (see
:mod:`coupler.bus.runtime.steps.state`): a restart neither loses a held message nor releases
one twice, unlike an in-memory resequencer (Camel's).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, Literal

from pydantic import model_validator

from coupler.bus.model.selectors import Expression, SelectorError
from coupler.bus.transport.base import TransactionOps
from coupler.bus.transport.codec import decode, encode
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.options import Int, Num, OptionsModel, Str, option

from .base import Step, StepContext, StepError, StepSetup
from .outcomes import Continue, Outcome
from .state import StepState

GAP_FORMAT = FormatIndicator.parse("coupler.SequenceGap@1;application/json")


class ResequenceOptions(OptionsModel):
    mode: Literal["stream", "batch"] = option("`stream`: release in order of the sequence number as soon as it can; "
                                              "`batch`: collect for a window, then release sorted.", default="stream")
    sequence: Str = option("The sequence number (stream) or sort key (batch): an expression of the expression language.",
                           default="sequence.position", example='sequence = "properties.seq"')
    correlation: Str | None = option("One sequence per value of this expression (default: one for the route).",
                                     default=None)
    first: Int = option("`stream`: the number a new stream starts at.", default=0)
    gap_timeout_seconds: Num = option(
        "`stream`: how long a gap may stay open before the missing numbers go to the Invalid Message Channel and "
        "the stream goes on.", default=60.0, gt=0)
    window_seconds: Num | None = option("`batch`: how long a batch collects, from its first message.", default=None, gt=0)
    batch_size: Int | None = option("`batch`: release as soon as this many are held.", default=None, ge=1)

    @model_validator(mode="after")
    def _batch(self) -> ResequenceOptions:
        if self.mode == "batch" and not (self.window_seconds or self.batch_size):
            raise ValueError("a batch resequencer needs window_seconds or batch_size")
        return self


class Resequencer(Step):
    """Resequencer: `stream` mode sends messages on in order of their `sequence` number (per
    `correlation` key), holding early ones in the store; a gap open for `gap_timeout_seconds` goes to the
    Invalid Message Channel and the stream goes on. `batch` mode collects for `window_seconds` and sorts.
    See docs/stateful-patterns.md."""

    type_name = "resequence"
    options_model = ResequenceOptions
    stateful = True

    def __init__(self, options: ResequenceOptions, setup: StepSetup):
        super().__init__(options, setup)
        self.number: Expression = setup.expression(options.sequence, "sequence")
        self.key: Expression | None = setup.expression(options.correlation, "correlation") if options.correlation else None
        self.state = StepState(setup.state_scope)
        wait = options.gap_timeout_seconds if options.mode == "stream" else (options.window_seconds or 0.0)
        self.timer_seconds = min(wait / 4, 1.0) if wait else 0.0
        #: numbers given up as missing (``/metrics``)
        self.gaps = 0

    def describe(self) -> str:
        return f"resequence ({self.options.mode}) by {self.number.text}"

    def _stream_of(self, message: Envelope) -> str:
        if self.key is None:
            return "-"
        try:
            key = self.key.text_of(message)
        except SelectorError as exc:
            raise StepError(f"no sequence key: {exc}") from None
        if not key:
            raise StepError(f"message {message.message_id} has no {self.key.text}")
        return key

    def _number(self, message: Envelope) -> int:
        try:
            value = self.number(message)
            return int(value)
        except SelectorError as exc:
            raise StepError(f"no sequence number: {exc}") from None
        except (TypeError, ValueError):
            raise StepError(f"message {message.message_id}: {self.number.text} is not a whole number") from None

    # -- one message ------------------------------------------------------------------------

    def process(self, message: Envelope, ctx: StepContext) -> Outcome:
        stream = self._stream_of(message)
        if self.options.mode == "batch":
            return self._batch(stream, message, ctx)
        number = self._number(message)
        if ctx.test:
            return Continue((message,), f"stream {stream} number {number} (test: not held)")
        tx = ctx.tx
        head = self.state.get_json(tx, "streams", stream, lock=True) or {"next": self.options.first, "held": [], "since": None}
        if not self.state.first_time(tx, message):
            return Continue((), f"counted before (redelivered): stream {stream} number {number}")
        if number < head["next"] or number in head["held"]:
            raise StepError(f"stream {stream}: number {number} came twice or after it was given up "
                            f"(the next expected is {head['next']})")
        if number > head["next"]:
            self.state.put(tx, "held", {f"{stream}\x1f{number:020d}": encode(message)})
            head["held"] = sorted([*head["held"], number])
            head["since"] = head["since"] or time.time()
            self.state.put_json(tx, "streams", stream, head)
            return Continue((), f"held: stream {stream} number {number}, waiting for {head['next']}")
        head["next"] = number + 1
        out = [message, *self._release(tx, stream, head)]
        self.state.put_json(tx, "streams", stream, head)
        return Continue(out, f"stream {stream}: {number}..{head['next'] - 1} in order")

    def _release(self, tx: TransactionOps, stream: str, head: dict[str, Any]) -> list[Envelope]:
        """The held messages that follow ``head['next']`` without a gap (removed from the store)."""
        run: list[int] = []
        while head["held"] and head["held"][0] == head["next"]:
            run.append(head["held"].pop(0))
            head["next"] += 1
        if not run:
            return []
        keys = [f"{stream}\x1f{n:020d}" for n in run]
        stored = self.state.get(tx, "held", keys)
        self.state.put(tx, "held", dict.fromkeys(keys))
        head["since"] = time.time() if head["held"] else None
        return [decode(stored[k]) for k in keys if k in stored]

    def _batch(self, stream: str, message: Envelope, ctx: StepContext) -> Outcome:
        self._sort_key(message)  # refused now if it has none
        if ctx.test:
            return Continue((message,), f"batch {stream} (test: not held)")
        tx = ctx.tx
        head = self.state.get_json(tx, "batches", stream, lock=True) or {"id": uuid.uuid4().hex, "n": 0, "first": time.time()}
        if not self.state.first_time(tx, message):
            return Continue((), f"counted before (redelivered): batch {stream}")
        self.state.put(tx, "held", {f"{stream}\x1f{head['id']}\x1f{head['n']:09d}": encode(message)})
        head["n"] += 1
        if self.options.batch_size and head["n"] >= self.options.batch_size:
            out = self._release_batch(tx, stream, head)
            return Continue(out, f"batch {stream}: {len(out)} sorted")
        self.state.put_json(tx, "batches", stream, head)
        return Continue((), f"held in batch {stream} ({head['n']})")

    def _sort_key(self, message: Envelope) -> Any:
        try:
            value = self.number(message)
        except SelectorError as exc:
            raise StepError(f"no sort key: {exc}") from None
        if value is None:
            raise StepError(f"message {message.message_id} has no {self.number.text}")
        return value

    def _release_batch(self, tx: TransactionOps, stream: str, head: dict[str, Any]) -> list[Envelope]:
        keys = [f"{stream}\x1f{head['id']}\x1f{i:09d}" for i in range(head["n"])]
        stored = self.state.get(tx, "held", keys)
        self.state.put(tx, "held", dict.fromkeys(keys))
        self.state.put_json(tx, "batches", stream, None)
        messages = [decode(stored[k]) for k in keys if k in stored]
        values = [self._sort_key(m) for m in messages]
        try:
            numbers = [float(v) for v in values]
            order = sorted(range(len(messages)), key=lambda i: numbers[i])
        except (TypeError, ValueError):
            order = sorted(range(len(messages)), key=lambda i: str(values[i]))
        return [messages[i] for i in order]

    # -- time -------------------------------------------------------------------------------

    def on_timer(self, ctx: StepContext) -> Outcome | None:
        now = time.time()
        out: list[Envelope] = []
        tx = ctx.tx
        if self.options.mode == "batch":
            window = self.options.window_seconds
            if not window:
                return None
            for stream, head in self.state.all_json(tx, "batches").items():
                if now < head["first"] + window:
                    continue
                head = self.state.get_json(tx, "batches", stream, lock=True)
                if head is not None and now >= head["first"] + window:
                    out.extend(self._release_batch(tx, stream, head))
            return Continue(out, "window closed") if out else None
        for stream, head in self.state.all_json(tx, "streams").items():
            if not head["held"] or now < head["since"] + self.options.gap_timeout_seconds:
                continue
            head = self.state.get_json(tx, "streams", stream, lock=True)
            if not head or not head["held"] or now < head["since"] + self.options.gap_timeout_seconds:
                continue
            missing = (head["next"], head["held"][0] - 1)
            gap = Envelope(format=GAP_FORMAT, correlation_id=stream, body=json.dumps(
                {"route": self.setup.route, "step": self.setup.name, "stream": stream,
                 "missing_from": missing[0], "missing_to": missing[1]}).encode())
            reason = (f"{self.label}: stream {stream}: numbers {missing[0]}..{missing[1]} missing for "
                      f"{self.options.gap_timeout_seconds:g} s; went on from {head['held'][0]}")
            tx.invalid_later(gap, reason, f"route:{self.setup.route}")  # the id not wanted: sent with the commit
            self.gaps += missing[1] - missing[0] + 1
            head["next"] = head["held"][0]
            out.extend(self._release(tx, stream, head))
            self.state.put_json(tx, "streams", stream, head)
        return Continue(out, "gap timed out") if out else None

    # -- operator ---------------------------------------------------------------------------

    def open_groups(self, tx: TransactionOps) -> list[dict[str, Any]]:
        """The streams holding messages (stream mode) or the open batches: key, size, age."""
        now = time.time()
        if self.options.mode == "batch":
            return [{"key": k, "size": h["n"], "age_seconds": round(now - h["first"], 3)}
                    for k, h in sorted(self.state.all_json(tx, "batches").items())]
        return [{"key": k, "size": len(h["held"]), "next": h["next"],
                 "age_seconds": round(now - h["since"], 3) if h["since"] else 0.0}
                for k, h in sorted(self.state.all_json(tx, "streams").items()) if h["held"]]


__all__ = ["GAP_FORMAT", "ResequenceOptions", "Resequencer"]
