"""A route as one chain: its steps, then its end (``to`` channels or rules), run on one
delivery inside one transaction of the transport."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from coupler.bus.config.loader import ConfigError, RouteConfig
from coupler.bus.runtime.router import Route
from coupler.bus.transport.base import Delivery, TransactionOps, Transport
from coupler.canonical import Envelope
from coupler.canonical.envelope import utc_now
from coupler.canonical.errors import CouplerError, describe_exception
from coupler.canonical.options import problems as options_problems

from .base import Step, StepContext, StepError, StepSetup, Switches
from .outcomes import FAILURES, Continue, DeadLetter, Deliver, Discard, Invalid, Outcome, Retry

log = logging.getLogger("coupler.daemon")


class Stopped(Exception):
    """A step stopped the whole delivery (its transaction is rolled back)."""

    def __init__(self, outcome: Outcome, where: str):
        super().__init__(where)
        self.outcome = outcome
        self.where = where


@dataclass
class StepRecord:
    """What one step did with one message (``coupler ctl test``)."""

    step: str
    message_id: str
    outcome: str
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {"step": self.step, "message_id": self.message_id, "outcome": self.outcome, "detail": self.detail}


@dataclass
class Pipeline:
    """The chain of one route."""

    name: str
    steps: list[Step]
    end: Route
    #: Message Expiration: messages the route sends expire this many seconds later (None: never)
    ttl: float | None = None
    #: channel -> its ``ttl_seconds`` (``[[channels]]``)
    channel_ttls: dict[str, float] = field(default_factory=dict)
    #: ``(step label, counter)`` -> count: discarded, expired, ... (``/metrics``)
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def component(self) -> str:
        return f"route:{self.name}"

    # -- one delivery ----------------------------------------------------------------------

    def handle(self, transport: Transport, d: Delivery, settle: Callable[[TransactionOps, Delivery], None]) -> str:
        """Run the chain on ``d`` and settle it; returns what happened (``done`` or the outcome)."""
        try:
            with transport.transaction() as tx:
                self.run(StepContext(tx, self.name, d), d.envelope)
                settle(tx, d)
            return "done"
        except Stopped as stop:
            return self._fail(transport, d, stop)

    def _fail(self, transport: Transport, d: Delivery, stop: Stopped) -> str:
        outcome = stop.outcome
        where = self.component

        def said(text: str) -> str:  # the reason names the step that stopped the delivery
            return text if stop.where == "rules" or text.startswith(stop.where) else f"{stop.where}: {text}"

        if isinstance(outcome, Invalid):
            transport.invalid(d.envelope, said(outcome.reason), where, channel=d.channel, delivery=d)
            return "invalid"
        if isinstance(outcome, DeadLetter):
            transport.nack(d, said(outcome.cause), where, dead=True)
            return "dead"
        assert isinstance(outcome, Retry)
        result = transport.nack(d, said(outcome.reason), where, delay=outcome.delay)
        log.warning("%s: message %s %s: %s", where, d.message_id, "will be retried" if result == "retry" else "dead-lettered",
                    outcome.reason, extra={"route": self.name})
        return result

    def run(self, ctx: StepContext, message: Envelope, start: int = 0, trace: list[StepRecord] | None = None) -> None:
        """Pass ``message`` through the steps from ``start`` on, then the end; raises
        :class:`Stopped` when a step fails the delivery."""
        steps = self.steps
        if start >= len(steps):
            self._finish(ctx, message, trace)
            return
        step = steps[start]
        outcome = self._process(step, ctx, message)
        if trace is not None:
            trace.append(self._record(step.label, message, outcome))
        if isinstance(outcome, Continue):
            action = f"{step.label}: {outcome.note}" if outcome.note else step.label
            for out in self._each(step, outcome):
                out.record_hop(self.component, action)
                self.run(ctx, out, start + 1, trace)
        elif isinstance(outcome, Deliver):
            for channel, out in outcome.sends:
                self._send(ctx, channel, out.record_hop(self.component, f"{step.label}: {outcome.note or 'to ' + channel}"))
        elif isinstance(outcome, Discard):
            if not ctx.test:
                with self._lock:
                    self.counts[(step.label, outcome.counter)] += 1
            log.debug("%s %s: message %s %s: %s", self.component, step.label, message.message_id, outcome.counter,
                      outcome.reason, extra={"route": self.name})
        elif isinstance(outcome, FAILURES):
            raise Stopped(outcome, step.label)
        else:
            raise Stopped(Retry(f"{step.label} returned {outcome!r}, not an outcome"), step.label)

    def _each(self, step: Step, outcome: Continue) -> Iterator[Envelope]:
        """The messages of ``outcome``; a streaming step's failure half-way stops the delivery."""
        it = iter(outcome.messages)
        while True:
            try:
                out = next(it)
            except StopIteration:
                return
            except CouplerError as exc:
                raise Stopped(Invalid(f"{step.label}: {exc}"), step.label) from None
            except Exception as exc:
                log.exception("%s %s failed", self.component, step.label, extra={"route": self.name})
                raise Stopped(Retry(f"{step.label}: {describe_exception(exc)}"), step.label) from None
            yield out

    def _process(self, step: Step, ctx: StepContext, message: Envelope) -> Outcome:
        try:
            return step.process(message, ctx)
        except Stopped:
            raise
        except StepError as exc:
            return Invalid(f"{step.label}: {exc}")
        except CouplerError as exc:  # a body that cannot be read by an expression
            return Invalid(f"{step.label}: {exc}")
        except Exception as exc:  # a step's bug: the delivery is retried, then dead-lettered
            log.exception("%s %s failed on %s", self.component, step.label, message.message_id, extra={"route": self.name})
            return Retry(f"{step.label}: {describe_exception(exc)}")

    def _finish(self, ctx: StepContext, message: Envelope, trace: list[StepRecord] | None) -> None:
        try:
            destinations = self.end.destinations(message)
        except CouplerError as exc:
            raise Stopped(Invalid(f"rules: {exc}"), "rules") from None
        if not destinations:
            raise Stopped(DeadLetter("unroutable: no rule of route matched and it has no `otherwise`"), "rules")
        if trace is not None:
            trace.append(StepRecord("to", message.message_id, "sent", ", ".join(destinations)))
        for channel in destinations:
            self._send(ctx, channel, message)

    def _send(self, ctx: StepContext, channel: str, message: Envelope) -> None:
        ttl = min((t for t in (self.ttl, self.channel_ttls.get(channel)) if t is not None), default=None)
        if ttl is not None:
            expires = utc_now() + timedelta(seconds=ttl)
            if message.expires_at is None or expires < message.expires_at:
                message = message.replace(expires_at=expires)
        ctx.tx.send(channel, message, component=self.component)

    @staticmethod
    def _record(label: str, message: Envelope, outcome: Outcome) -> StepRecord:
        if isinstance(outcome, Continue):
            return StepRecord(label, message.message_id, "continue", outcome.note)
        if isinstance(outcome, Deliver):
            return StepRecord(label, message.message_id, "deliver", ", ".join(c for c, _ in outcome.sends))
        if isinstance(outcome, Discard):
            return StepRecord(label, message.message_id, outcome.counter, outcome.reason)
        detail = getattr(outcome, "reason", None) or getattr(outcome, "cause", "")
        return StepRecord(label, message.message_id, type(outcome).__name__.lower(), str(detail))

    # -- test message, timers ---------------------------------------------------------------

    def test(self, message: Envelope) -> dict[str, Any]:
        """Test Message: run ``message`` through the chain without storing or delivering
        anything; what each step did and what would have been sent."""
        tx = RecordingTx()
        trace: list[StepRecord] = []
        result = "done"
        try:
            self.run(StepContext(tx, self.name, None, test=True), message, trace=trace)
        except Stopped as stop:
            result = f"{type(stop.outcome).__name__.lower()} at {stop.where}"
        return {
            "route": self.name,
            "result": result,
            "steps": [r.to_json() for r in trace],
            "sent": [{"channel": c, "message_id": e.message_id, "format": str(e.format), "properties": e.properties,
                      "body_size": len(e.body)} for c, e in tx.sent],
        }

    def timers(self) -> list[tuple[int, Step]]:
        return [(i, s) for i, s in enumerate(self.steps) if s.timer_seconds > 0]

    def tick(self, transport: Transport, due: dict[int, float]) -> None:
        """Call ``on_timer`` of the steps whose time came (``due``: index -> next monotonic time)."""
        now = time.monotonic()
        for i, step in self.timers():
            if due.get(i, 0.0) > now:
                continue
            due[i] = now + step.timer_seconds
            try:
                with transport.transaction() as tx:
                    ctx = StepContext(tx, self.name)
                    outcome = step.on_timer(ctx)
                    if isinstance(outcome, Continue):
                        for out in outcome.messages:
                            self.run(ctx, out.record_hop(self.component, f"{step.label}: {outcome.note or 'timer'}"), i + 1)
            except Stopped as stop:
                log.error("%s %s: timer output failed at %s: %s", self.component, step.label, stop.where, stop.outcome)


def build_pipeline(
    config: RouteConfig,
    route: Route,
    types: dict[str, type[Step]],
    *,
    site_dir: Path,
    registry: Callable[[], Any],
    transport: Transport | None,
    switches: Switches,
    plugins: Any = None,
    channel_ttls: dict[str, float] | None = None,
) -> Pipeline:
    """The pipeline of one ``[[routes]]`` entry; :class:`ConfigError` with every step's problems."""
    steps: list[Step] = []
    problems: list[str] = []
    for i, sc in enumerate(config.steps):
        where = f"{config.key_path}.steps[{i}]"
        cls = types.get(sc.type)
        if cls is None:
            problems.append(f"{where}.type: no installed plugin provides step type {sc.type!r} "
                            f"(installed: {', '.join(sorted(types))})")
            continue
        setup = StepSetup(route.name, i, where, site_dir, registry, transport, switches, sc.name or f"{sc.type}-{i}", plugins)
        try:
            options = cls.options_model.model_validate(sc.options)
            steps.append(cls(options, setup))
        except ValidationError as exc:
            problems.extend(f"{where}.{p}" if p.path else f"{where}: {p.message}" for p in options_problems(exc, cls.options_model, sc.options))
        except ConfigError as exc:
            problems.extend(str(p) for p in exc.problems)
        except CouplerError as exc:
            problems.append(f"{where}: {exc}")
    if problems:
        raise ConfigError(problems)
    return Pipeline(route.name, steps, route, ttl=config.ttl_seconds, channel_ttls=dict(channel_ttls or {}))


class RecordingTx(TransactionOps):
    """A transaction that stores nothing: what a Test Message run would have sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Envelope]] = []

    def send(self, channel: str, envelopes: Any, *, component: str = "bus") -> list[str]:
        items = [envelopes] if isinstance(envelopes, Envelope) else list(envelopes)
        self.sent.extend((channel, e) for e in items)
        return [e.message_id for e in items]

    def receive(self, *args: Any, **kwargs: Any) -> list[Delivery]:
        return []

    def ack(self, deliveries: Any) -> None:
        return None

    def nack(self, *args: Any, **kwargs: Any) -> Any:
        return "retry"

    def invalid(self, *args: Any, **kwargs: Any) -> int:
        return 0

    def seen(self, consumer: str, keys: Any) -> set[str]:
        return set()

    def mark_seen(self, consumer: str, keys: Any) -> None:
        return None


__all__ = ["Pipeline", "RecordingTx", "StepRecord", "Stopped", "build_pipeline"]
