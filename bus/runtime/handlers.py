"""What the daemon's workers do with one message: the command dispatcher (Message Dispatcher of
the common command set), an adapter's commands, an outbound adapter's deliveries, and a route's
pipeline (bus/runtime/steps/)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from coupler.bus.model.commands import (
    REPLY_COUNT,
    CommandFault,
    command_name,
    fault_envelope,
    parse_command,
    reply_envelope,
)
from coupler.bus.runtime.adapters import RunningAdapter, adapter_queue
from coupler.bus.runtime.consumers import ConsumerPatterns
from coupler.bus.runtime.router import Route
from coupler.bus.runtime.trace import note
from coupler.bus.transport.base import Delivery

if TYPE_CHECKING:
    from coupler.bus.runtime.daemon import Daemon

log = logging.getLogger("coupler.daemon")
#: handles a batch of deliveries in one transaction (``around(d)`` entered while ``d`` is
#: handled); True when it committed, False when it was rolled back
BatchHandler = Callable[[list[Delivery], Callable[[Delivery], AbstractContextManager[object]]], bool]


class Handlers:
    """The handlers of one daemon's workers."""

    def __init__(self, daemon: Daemon):
        self.d = daemon

    def dispatch(self, d: Delivery) -> None:
        assert self.d.transport is not None
        env = d.envelope
        try:
            cmd = parse_command(env)
        except CommandFault as exc:
            self.refuse(d, "invalid", str(exc), invalid=True)
            return
        recipients = self.d.dispatcher.recipients(cmd.name, cmd.target)
        if not recipients:
            self.refuse(d, "unserved", self.d.dispatcher.unserved_reason(cmd.name, cmd.target))
            return
        count = str(len(recipients))
        with self.d.transport.transaction() as tx:
            for name in recipients:
                refused = self.unavailable(name)
                if refused is not None:  # answered at once, not left to time out
                    if env.return_address:
                        fault = fault_envelope(env, *refused, adapter=name, count=len(recipients))
                        tx.send(env.return_address, fault, component="dispatcher")
                    continue
                copy = env.replace(properties={**env.properties, REPLY_COUNT: count})
                tx.send(adapter_queue(name), copy, component="dispatcher")
            tx.ack(d)
        log.debug("command %s %s -> %s", cmd.name, cmd.target, ", ".join(recipients))

    def unavailable(self, name: str) -> tuple[str, str] | None:
        """(fault code, reason) when adapter ``name`` cannot take a command now: it failed to
        start, or it is paused; None when it can."""
        ra = self.d.adapters[name]
        if not ra.started:
            error = self.d.statistics.adapters[name].error or "not running"
            return "failed", f"adapter {name!r} is not running: {error}"
        if ra.paused.is_set():
            return "paused", f"adapter {name!r} is paused (`coupler ctl resume {name}` resumes it)"
        return None

    def refuse(self, d: Delivery, code: str, reason: str, *, invalid: bool = False) -> None:
        """Answer a command with a fault; without a return address, dead-letter it instead."""
        assert self.d.transport is not None
        env = d.envelope
        log.warning("command %s refused (%s): %s", env.message_id, code, reason, extra={"code": code})
        if invalid:
            with self.d.transport.transaction() as tx:
                if env.return_address:
                    tx.send(env.return_address, fault_envelope(env, code, reason), component="dispatcher")
                # the id not wanted: the move may go with the commit (one round trip, PostgreSQL)
                tx.invalid_later(env, reason, "dispatcher", channel=d.channel, delivery=d)
            return
        if not env.return_address:
            self.d.transport.nack(d, f"{code}: {reason} (and no return address to reply to)", "dispatcher", dead=True)
            return
        with self.d.transport.transaction() as tx:
            tx.send(env.return_address, fault_envelope(env, code, reason), component="dispatcher")
            tx.ack(d)

    def command_handler(self, ra: RunningAdapter) -> Callable[[Delivery], None]:
        def handle(d: Delivery) -> None:
            assert self.d.transport is not None
            env = d.envelope
            count = int(env.properties.get(REPLY_COUNT, "1") or 1)
            self.d.statistics.count(ra.name, "received")
            try:
                cmd = parse_command(env)
                if cmd.document is not None:
                    cmd.document = ra.outbound_document(cmd.document, env)
                reply = reply_envelope(cmd, ra.adapter.handle(cmd), ra.name, count=count)
            except CommandFault as exc:
                self.d.statistics.count(ra.name, "failed")
                reply = fault_envelope(env, exc.code, str(exc), adapter=ra.name, count=count)
            except Exception as exc:  # an adapter bug is still answered, never silence
                log.exception("adapter %s failed on %s", ra.name, command_name(env), extra={"adapter": ra.name})
                self.d.statistics.count(ra.name, "failed")
                reply = fault_envelope(env, "failed", f"{type(exc).__name__}: {exc}", adapter=ra.name, count=count)
            with self.d.transport.transaction() as tx:
                if env.return_address:
                    tx.send(env.return_address, reply, component=f"adapter:{ra.name}")
                tx.ack(d)
            self.d.statistics.count(ra.name, "sent")

        return handle

    def delivery_handler(self, ra: RunningAdapter, patterns: ConsumerPatterns) -> Callable[[Delivery], None]:
        def handle(d: Delivery) -> None:
            assert self.d.transport is not None
            self.d.statistics.count(ra.name, "received")
            if not patterns.claim(self.d.transport, d, f"adapter:{ra.name}"):
                return  # a duplicate, or a copy being delivered elsewhere: settled
            try:
                went = ra.adapter.deliver(ra.outbound_envelope(d.envelope))
            except CommandFault as exc:
                self.d.statistics.count(ra.name, "failed")
                patterns.unclaim(self.d.transport, d)
                if exc.code == "invalid":
                    self.d.transport.invalid(d.envelope, str(exc), f"adapter:{ra.name}", channel=d.channel, delivery=d)
                else:
                    outcome = self.d.transport.nack(d, exc, f"adapter:{ra.name}", dead=exc.code == "unsupported")
                    log.warning("adapter %s could not deliver %s (%s): %s", ra.name, d.message_id, outcome, exc, extra={"adapter": ra.name})
                return
            except Exception as exc:
                self.d.statistics.count(ra.name, "failed")
                patterns.unclaim(self.d.transport, d)
                outcome = self.d.transport.nack(d, exc, f"adapter:{ra.name}")
                log.warning("adapter %s could not deliver %s (%s): %s", ra.name, d.message_id, outcome, exc, extra={"adapter": ra.name})
                return
            except BaseException:  # kills the worker; the supervisor gives the message back
                patterns.unclaim(self.d.transport, d)
                raise
            # journaled with the acknowledgement: the trace shows the mapping and where it went
            mapping = ra.translation.mapping_name if ra.translation is not None and ra.translation.mapped(d.envelope) else None
            d.note = note(mapping=mapping, to=went if isinstance(went, str) else None)
            with self.d.transport.transaction() as tx:
                # after the delivery, which no transaction holds (claimed before it); the claim
                # ends with this commit, or after it (a store keeping its claims apart)
                unclaimed = patterns.record(tx, d)
                patterns.settle(tx, d)
            if not unclaimed:
                patterns.unclaim(self.d.transport, d)  # the keys are recorded: a copy now finds them
            self.d.statistics.count(ra.name, "sent")  # out: delivered to its legacy system

        return handle

    def route_handler(self, route: Route, patterns: ConsumerPatterns) -> Callable[[Delivery], None]:
        pipeline = self.d.pipelines[route.name]

        def handle(d: Delivery) -> None:
            assert self.d.transport is not None
            pipeline.handle(self.d.transport, d, patterns.settle, patterns.screen)

        return handle

    def route_batch_handler(self, route: Route, patterns: ConsumerPatterns) -> BatchHandler:
        """A batch of a route's deliveries in one transaction; True when it committed, False
        when it was rolled back (the worker then handles each alone)."""
        pipeline = self.d.pipelines[route.name]

        def handle_many(ds: list[Delivery], around: Callable[[Delivery], AbstractContextManager[object]]) -> bool:
            assert self.d.transport is not None
            return pipeline.handle_many(self.d.transport, ds, patterns.settle_many, around, patterns.screen)

        return handle_many
