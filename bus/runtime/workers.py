"""The worker loop: one thread (or ``throttle.concurrency`` threads) per consumer, receiving
messages under a lease -- one at a time, or a route's batch (``ConsumerPatterns.batch_size``)
handled in one transaction of the store -- and running each through its chain: the receive middlewares
(Message Sequence reassembly, Idempotent Receiver, Datatype Channel conversion, Selective
Consumer), the handle middlewares (Message Throttle, trace context, metrics) and the handler
(a route's pipeline, an adapter's delivery or command)."""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from coupler.bus.config.loader import AdapterConfig, RouteConfig
from coupler.bus.model.selectors import BodyReader
from coupler.bus.runtime.adapters import RunningAdapter, adapter_queue
from coupler.bus.runtime.consumers import ConsumerPatterns, Receiver
from coupler.bus.runtime.handlers import BatchHandler
from coupler.bus.transport.base import Delivery
from coupler.canonical.errors import CouplerError
from coupler.canonical.tracecontext import handling

if TYPE_CHECKING:
    from coupler.bus.runtime.daemon import Daemon

log = logging.getLogger("coupler.daemon")
#: how long one receive waits for a message (the stop flag is looked at in between)
_RECEIVE_WAIT = 0.2


class Workers:
    """The consumers of one daemon and their threads."""

    def __init__(self, daemon: Daemon):
        self.d = daemon

    def start(self) -> None:
        datatypes = self.d.datatypes
        assert datatypes is not None  # checked when the transport opened
        self.spawn("dispatcher", self.d.site.command_channel, "dispatcher", self.d.handlers.dispatch)
        for ra in self.d.adapters.values():
            self.start_adapter(ra)
        assert self.d.transport is not None
        for route, config in zip(self.d.router.routes, self.d.site.routes, strict=True):
            consumer = f"route:{route.name}"
            source = self.source(route.source, consumer)
            patterns = self.patterns(consumer, route.source, source, config)
            batch = patterns.batch_size(self.d.transport)
            self.spawn(consumer, source, consumer, self.d.handlers.route_handler(route, patterns),
                       receive=datatypes.for_route(route.name, consumer, source, config.select, max=batch),
                       patterns=patterns, select=config.select, batch=batch,
                       handle_many=self.d.handlers.route_batch_handler(route, patterns) if batch > 1 else None)
        t = threading.Thread(target=self.d.supervisor.run, args=("monitor", None, self.d.monitor.run), name="monitor",
                             daemon=True)
        t.start()
        self.d._threads.append(t)

    def start_adapter(self, ra: RunningAdapter) -> None:
        """The workers of one started adapter: its commands, and its channel's documents when
        it is outbound."""
        if not ra.started:
            return
        self.spawn(f"commands:{ra.name}", adapter_queue(ra.name), ra.name, self.d.handlers.command_handler(ra), ra.paused)
        if ra.config.channel and ra.flows("outbound"):
            assert self.d.datatypes is not None
            source = self.source(ra.config.channel, ra.name)
            patterns = self.patterns(ra.name, ra.config.channel, source, ra.config)
            patterns.claims = True  # the delivery handler claims the keys (and looks for them then)
            self.spawn(
                f"deliver:{ra.name}", source, ra.name, self.d.handlers.delivery_handler(ra, patterns), ra.paused,
                receive=self.d.datatypes.for_adapter(ra.name, source, ra.config.select), patterns=patterns,
                select=ra.config.select,
            )

    def source(self, channel: str, consumer: str) -> str:
        """The queue to receive ``channel`` from: itself, or a durable subscription of a topic."""
        assert self.d.transport is not None
        if self.d.transport.channel_config(channel).kind == "topic":
            return self.d.transport.subscribe(channel, consumer)
        return channel

    def patterns(self, consumer: str, channel: str, source: str, config: AdapterConfig | RouteConfig) -> ConsumerPatterns:
        """The Idempotent Receiver, Message Throttle and sequence reassembly ``consumer``
        declared (reading ``channel`` from queue ``source``)."""
        assert self.d.transport is not None
        patterns = ConsumerPatterns.declared(
            self.d.transport, consumer, source, channel=self.d.site.channel(channel),
            idempotent_key=config.idempotent_key, throttle=config.throttle, where=config.key_path,
            body=BodyReader(self.d.registry),
        )
        if patterns.assembler is not None:
            self.d._consumer_patterns.append(patterns)
        return patterns

    def spawn(
        self,
        name: str,
        channel: str,
        consumer: str,
        handle: Callable[[Delivery], None],
        paused: threading.Event | None = None,
        *,
        receive: Receiver | None = None,
        patterns: ConsumerPatterns | None = None,
        select: str | None = None,
        batch: int = 1,
        handle_many: BatchHandler | None = None,
    ) -> None:
        assert self.d.transport is not None
        transport = self.d.transport
        if receive is None:
            def receive(wait: float) -> list[Delivery]:
                return transport.receive_wait(channel, consumer, max=batch, wait=wait, selector=select)

        # the chain: receive middlewares (reassembly, Idempotent Receiver; Datatype Channel and
        # Selective Consumer in ``receive``), then the Message Throttle, tracing and metrics, then the handler
        workers = 1
        if patterns is not None:
            receive, handle, workers = patterns.receiver(transport, receive), patterns.handler(handle), patterns.concurrency
        adapter = consumer if consumer in self.d.adapters else None
        for i in range(workers):
            thread_name = name if workers == 1 else f"{name}#{i + 1}"
            # run by the supervisor: a loop that dies is reported and restarted (supervision.py)
            chain = self.d.supervisor.guard(thread_name, self.observed(thread_name, handle))
            many = None if handle_many is None else self.observed_many(thread_name, handle_many)
            loop = functools.partial(self.worker, thread_name, channel, receive, chain, paused, many)
            t = threading.Thread(target=self.d.supervisor.run, args=(thread_name, adapter, loop), name=thread_name,
                                 daemon=True)
            t.start()
            self.d._threads.append(t)

    def observed(self, name: str, handle: Callable[[Delivery], None]) -> Callable[[Delivery], None]:
        """The tracing and metrics middleware: the message's W3C trace context is the thread's
        while it is handled (what the handler sends joins its trace), and its handling is timed
        (:class:`~coupler.bus.runtime.console.metrics.Observer`)."""
        observer = self.d.observer

        def traced(d: Delivery) -> None:
            with handling(d.envelope), observer.handled(name, d):
                handle(d)

        return traced

    def observed_many(self, name: str, handle_many: BatchHandler) -> Callable[[list[Delivery]], bool]:
        """A batch handler with the tracing and metrics middleware around each message of it
        (and the supervisor told which message is being handled)."""
        observer, supervisor = self.d.observer, self.d.supervisor

        @contextlib.contextmanager
        def around(d: Delivery) -> Iterator[None]:
            with supervisor.handling(name, d), handling(d.envelope), observer.handled(name, d):
                yield

        return lambda ds: handle_many(ds, around)

    def worker(
        self,
        name: str,
        channel: str,
        receive: Receiver,
        handle: Callable[[Delivery], None],
        paused: threading.Event | None,
        handle_many: Callable[[list[Delivery]], bool] | None = None,
    ) -> None:
        assert self.d.transport is not None
        while not self.d.stopping.is_set():
            if paused is not None and paused.is_set():
                self.d.stopping.wait(0.1)
                continue
            try:
                deliveries = receive(_RECEIVE_WAIT)
            except CouplerError as exc:
                log.error("%s: cannot receive from %s: %s", name, channel, exc, extra={"worker": name})
                self.d.stopping.wait(1.0)
                continue
            if paused is not None and deliveries and paused.is_set():
                # paused while this receive was waiting: hold the message until resumed; on a
                # stop it is left to its lease and delivered again after the restart
                while paused.is_set() and not self.d.stopping.is_set():
                    self.d.stopping.wait(0.05)
                if paused.is_set():
                    return
            if handle_many is not None and len(deliveries) > 1 and handle_many(deliveries):
                continue  # the batch committed in one transaction
            # one at a time (a batch rolled back comes here: each delivery alone, so that only
            # a bad one goes to the Invalid Message Channel or the dead letters)
            for d in deliveries:  # finished even when a stop arrives meanwhile: that is the drain
                try:
                    handle(d)
                except Exception as exc:
                    log.exception("%s: message %s failed", name, d.message_id, extra={"worker": name})
                    try:
                        self.d.transport.nack(d, exc, name)
                    except CouplerError:
                        log.exception("%s: cannot nack %s", name, d.message_id)
