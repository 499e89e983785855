"""A route as one chain: its steps, then its end (``to`` channels or rules), run on one
delivery inside one transaction of the transport, or on a batch of deliveries inside one
transaction (:meth:`Pipeline.handle_many`: the route worker's batches)."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from coupler.bus.config.loader import ConfigError, RouteConfig
from coupler.bus.runtime.context import expiring
from coupler.bus.runtime.router import Route
from coupler.bus.runtime.trace import join_notes, note
from coupler.bus.transport.base import Delivery, TransactionOps, Transport, TransportError
from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError, describe_exception
from coupler.canonical.options import problems as options_problems

from .base import Step, StepContext, StepError, StepSetup, Switches, TxScope
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
    #: step index -> when (``time.time()``) its ``on_timer`` last ran
    _ticked: dict[int, float] = field(default_factory=dict, repr=False)

    @property
    def component(self) -> str:
        return f"route:{self.name}"

    # -- one delivery ----------------------------------------------------------------------

    def handle(
        self,
        transport: Transport,
        d: Delivery,
        settle: Callable[[TransactionOps, Delivery], None],
        screen: Callable[[TransactionOps, list[Delivery]], list[Delivery]] = lambda tx, ds: ds,
    ) -> str:
        """Run the chain on ``d`` and settle it; returns what happened (``done``, ``duplicate``
        or the outcome). ``screen`` as in :meth:`handle_many`: it settles a duplicate in the
        transaction, which then ends without handling it."""
        try:
            with transport.transaction() as tx:
                if not screen(tx, [d]):
                    return "duplicate"
                scope = TxScope()
                ctx = StepContext(tx, self.name, d, scope=scope)
                self.run(ctx, d.envelope)
                d.note = discard_note(ctx)
                scope.flush()
                settle(tx, d)
        except Stopped as stop:
            return self._fail(transport, d, stop)
        self.count_committed(ctx)
        return "done"

    def handle_many(
        self,
        transport: Transport,
        deliveries: list[Delivery],
        settle_many: Callable[[TransactionOps, list[Delivery]], None],
        around: Callable[[Delivery], AbstractContextManager[object]] = lambda d: nullcontext(),
        screen: Callable[[TransactionOps, list[Delivery]], list[Delivery]] = lambda tx, ds: ds,
    ) -> bool:
        """Run the chain on every one of ``deliveries`` and settle them all (``settle_many``) in one transaction
        (one commit, one disk sync for what they send); ``around(d)`` is entered while ``d`` is
        handled (its trace context and timing); ``screen(tx, deliveries)`` first settles in the
        transaction those not to handle (duplicates) and returns the others. True when the batch committed; False when a
        message stopped its delivery or anything raised: the whole transaction was rolled
        back (nothing sent, no state changed, nothing acknowledged) and the caller handles each
        delivery alone (:meth:`handle`), so a bad message goes to the Invalid Message Channel
        or the dead letters by itself, with its cause, and the others go on."""
        ctxs: list[StepContext] = []
        try:
            with transport.transaction() as tx:
                scope = TxScope()  # shared by the batch: a step's state read once, written once
                handled = screen(tx, deliveries)
                for d in handled:
                    ctx = StepContext(tx, self.name, d, scope=scope)
                    with around(d):
                        self.run(ctx, d.envelope)
                    d.note = discard_note(ctx)  # why a discarded message ended, with its acknowledgement
                    ctxs.append(ctx)
                scope.flush()
                settle_many(tx, handled)
        except Stopped as stop:
            log.debug("%s: a batch of %d rolled back (%s at %s); each message alone", self.component, len(deliveries),
                      type(stop.outcome).__name__, stop.where, extra={"route": self.name})
            return False
        except Exception as exc:  # a lost lease, a store error, a step's bug: each alone says which
            log.info("%s: a batch of %d rolled back (%s); each message alone", self.component, len(deliveries),
                     describe_exception(exc), extra={"route": self.name})
            return False
        for ctx in ctxs:
            self.count_committed(ctx)
        return True

    def count_committed(self, ctx: StepContext) -> None:
        """What the steps dropped (and counted) in a committed transaction, into the counters of
        ``/metrics``."""
        if ctx.dropped:
            with self._lock:
                self.counts.update(ctx.dropped)
        for count in ctx.committed:
            count()

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

    def run(self, ctx: StepContext, message: Envelope, start: int = 0, trace: list[StepRecord] | None = None,
            path: tuple[str, ...] = ()) -> None:
        """Pass ``message`` through the steps from ``start`` on, then the end; raises
        :class:`Stopped` when a step fails the delivery. ``path``: the steps it came through
        (journaled with what is sent: the trace shows each message's way through the pipeline)."""
        steps = self.steps
        if start >= len(steps):
            self._finish(ctx, message, trace, path)
            return
        step = steps[start]
        outcome = self._process(step, ctx, message)
        if trace is not None:
            trace.append(self._record(step.label, message, outcome))
        if isinstance(outcome, Continue):
            action = f"{step.label}: {outcome.note}" if outcome.note else step.label
            here = (*path, step.setup.name)
            for out in self._each(step, outcome):
                out.record_hop(self.component, action)
                self.run(ctx, out, start + 1, trace, here)
        elif isinstance(outcome, Deliver):
            for channel, out in outcome.sends:
                hop = out.record_hop(self.component, f"{step.label}: {outcome.note or 'to ' + channel}")
                self._send(ctx, channel, hop, (*path, step.setup.name))
        elif isinstance(outcome, Discard):
            ctx.dropped[(step.label, outcome.counter)] += 1
            ctx.discarded.append((f"{step.setup.name} ({step.label})", outcome.reason))
            log.debug("%s %s: message %s %s: %s", self.component, step.label, message.message_id, outcome.counter,
                      outcome.reason, extra={"route": self.name})
        elif isinstance(outcome, FAILURES):
            raise Stopped(outcome, step.label)
        else:
            raise Stopped(Retry(f"{step.label} returned {outcome!r}, not an outcome"), step.label)

    def _each(self, step: Step, outcome: Continue) -> Iterable[Envelope]:
        """The messages of ``outcome``; a streaming step's failure half-way stops the delivery."""
        if isinstance(outcome.messages, (tuple, list)):  # made already (a filter's one message)
            return outcome.messages
        return self._stream(step, outcome)

    def _stream(self, step: Step, outcome: Continue) -> Iterator[Envelope]:
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
        except TransportError as exc:  # the store failed the step's state (not the message's fault): again later
            log.warning("%s %s: the store failed on %s: %s", self.component, step.label, message.message_id, exc,
                        extra={"route": self.name})
            return Retry(f"{step.label}: {exc}")
        except CouplerError as exc:  # a body that cannot be read by an expression
            return Invalid(f"{step.label}: {exc}")
        except Exception as exc:  # a step's bug: the delivery is retried, then dead-lettered
            log.exception("%s %s failed on %s", self.component, step.label, message.message_id, extra={"route": self.name})
            return Retry(f"{step.label}: {describe_exception(exc)}")

    def _finish(self, ctx: StepContext, message: Envelope, trace: list[StepRecord] | None, path: tuple[str, ...]) -> None:
        try:
            destinations = self.end.destinations(message)
        except CouplerError as exc:
            raise Stopped(Invalid(f"rules: {exc}"), "rules") from None
        if not destinations:
            raise Stopped(DeadLetter("unroutable: no rule of route matched and it has no `otherwise`"), "rules")
        if trace is not None:
            trace.append(StepRecord("to", message.message_id, "sent", ", ".join(destinations)))
        for channel in destinations:
            self._send(ctx, channel, message, path)

    def _send(self, ctx: StepContext, channel: str, message: Envelope, path: tuple[str, ...] = ()) -> None:
        message = expiring(message, min((t for t in (self.ttl, self.channel_ttls.get(channel)) if t is not None), default=None))
        ctx.tx.send(channel, message, component=f"{self.component} via {' > '.join(path)}" if path else self.component)
        ctx.sent += 1

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

    def test(self, message: Envelope, transport: Transport | None = None) -> dict[str, Any]:
        """Test Message: run ``message`` through the chain without storing or delivering
        anything; what each step did and what would have been sent. A stateful step reads its
        real state from ``transport``; what it would write is counted, never stored."""
        tx = RecordingTx(transport)
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
            "state_writes": tx.state_writes,
        }

    def timers(self) -> list[tuple[int, Step]]:
        return [(i, s) for i, s in enumerate(self.steps) if s.timer_seconds > 0]

    def next_tick(self, due: dict[int, float]) -> float:
        """When (monotonic) :meth:`tick` has work next: the earliest of the timer steps' next
        ticks and of the times they know work falls due (:meth:`Step.wake_at`, not yet ticked for)."""
        at = float("inf")
        wall = time.time() - time.monotonic()
        for i, step in self.timers():
            at = min(at, due.get(i, 0.0))
            wake = step.wake_at()
            if wake is not None and wake > self._ticked.get(i, 0.0):
                at = min(at, wake - wall)
        return at

    def tick(self, transport: Transport, due: dict[int, float]) -> None:
        """Call ``on_timer`` of the steps whose time came (``due``: index -> next monotonic time),
        or whose known work fell due (:meth:`Step.wake_at`)."""
        now = time.monotonic()
        wall = time.time()
        for i, step in self.timers():
            wake = step.wake_at()
            if due.get(i, 0.0) > now and not (wake is not None and self._ticked.get(i, 0.0) < wake <= wall):
                continue
            due[i] = now + step.timer_seconds
            self._ticked[i] = wall
            try:
                with transport.transaction() as tx:
                    ctx = StepContext(tx, self.name)
                    outcome = step.on_timer(ctx)
                    if isinstance(outcome, Continue):
                        for out in outcome.messages:
                            self.run(ctx, out.record_hop(self.component, f"{step.label}: {outcome.note or 'timer'}"), i + 1, path=(step.setup.name,))
                self.count_committed(ctx)
            except Stopped as stop:
                log.error("%s %s: timer output failed at %s: %s", self.component, step.label, stop.where, stop.outcome)
            except Exception:  # a step's bug must not stop the monitor (nor the other steps' timers)
                log.exception("%s %s: on_timer failed (its transaction was rolled back; tried again in %g s)",
                              self.component, step.label, step.timer_seconds, extra={"route": self.name})


#: at most this many discards are named in the journal entry of one delivery
_NOTED = 3


def discard_note(ctx: StepContext) -> str | None:
    """Why the steps discarded the message (or some of its parts), for the journal entry of
    its acknowledgement: the step and its reason (a filter's expression)."""
    if not ctx.discarded:
        return None
    partly = ctx.sent > 0
    distinct = list(dict.fromkeys(ctx.discarded))
    notes = [note(discarded=(step, reason + (f" ({len(ctx.discarded)} parts)" if len(distinct) == 1 and len(ctx.discarded) > 1 else "")),
                  partly=partly) for step, reason in distinct[:_NOTED]]
    if len(distinct) > _NOTED:
        notes[-1] = f"{notes[-1]} and {len(distinct) - _NOTED} more"
    return join_notes(*notes)


def build_pipeline(
    config: RouteConfig,
    route: Route,
    types: dict[str, type[Step]],
    *,
    site_dir: Path,
    schema_dirs: Sequence[Path] = (),
    registry: Callable[[], Any],
    transport: Transport | None,
    switches: Switches,
    plugins: Any = None,
    channel_ttls: dict[str, float] | None = None,
    adapter_channels: dict[str, str] | None = None,
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
        setup = StepSetup(route.name, i, where, site_dir, registry, transport, switches, sc.name or f"{sc.type}-{i}", plugins,
                          dict(adapter_channels or {}), tuple(schema_dirs))
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


def try_step(step_type: type[Step], options: dict[str, Any], message: Envelope, *,
             site_dir: Path = Path("."), registry: Callable[[], Any] = lambda: None) -> tuple[Outcome, list[tuple[str, Envelope]]]:
    """A step type's outcome for one message, without a daemon or a store (plugin authors'
    tests): ``(outcome, what it sent on the side)``; bad ``options`` raise
    :class:`~coupler.canonical.options.OptionsError` or :class:`ConfigError` as the site loader would."""
    from coupler.canonical.options import validate_options

    setup = StepSetup("test", 0, "routes[test].steps[0]", site_dir, registry, None, Switches(), f"{step_type.type_name}-0")
    step = step_type(validate_options(step_type.options_model, options, prefix="routes[test].steps[0]"), setup)
    tx = RecordingTx()
    outcome = step.process(message, StepContext(tx, "test", test=True))
    if isinstance(outcome, Continue):  # drain a stream: the caller gets the messages
        outcome = Continue(tuple(outcome.messages), outcome.note)
    return outcome, tx.sent


class RecordingTx(TransactionOps):
    """A transaction that stores nothing: what a Test Message run would have sent. Step state is
    read from ``reader`` (the real store, when given) and what would be written only counted."""

    def __init__(self, reader: Transport | None = None) -> None:
        self.sent: list[tuple[str, Envelope]] = []
        self.reader = reader
        #: scope -> keys a stateful step would have written
        self.state_writes: dict[str, int] = {}

    def get_state(self, scope: str, keys: Any = None, *, lock: bool = False) -> dict[str, bytes]:
        if self.reader is None:
            return {}
        with self.reader.transaction() as tx:
            return tx.get_state(scope, keys)

    def put_state(self, scope: str, values: dict[str, bytes | None], *, expires_at: float | None = None) -> None:
        self.state_writes[scope] = self.state_writes.get(scope, 0) + len(values)

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


__all__ = ["Pipeline", "RecordingTx", "StepRecord", "Stopped", "build_pipeline", "try_step"]
