"""The site daemon: ``coupler daemon --site site.toml``.

It takes the data directory's lock (one daemon per data directory), opens the transport,
starts the adapters the site declares (their types come from plugins), and runs one worker
thread per job, each receiving one message at a time under a lease:

* the **command dispatcher** reads the command channel and forwards each command to the
  queue ``coupler.adapter.<name>`` of every adapter serving it (or answers with a fault);
* one **command worker** per adapter calls ``adapter.handle`` and sends the reply;
* one **delivery worker** per outbound adapter with a channel calls ``adapter.deliver``;
  when the channel is a Datatype Channel (``[[channels]] format``) and the adapter declares
  the version it reads (its ``format``), it receives through
  :class:`~coupler.bus.messaging.channels.DatatypeChannel`: messages converted to that version by the
  schema registry, those that cannot be converted moved to the Invalid Message Channel;
* one **route worker** per ``[[routes]]`` entry sends messages on (Content-Based Router,
  Recipient List); a route declaring the version it reads (``format = "NAME@V"``) receives
  through a :class:`~coupler.bus.messaging.channels.DatatypeChannel` as delivery workers do;
* the **monitor** records heartbeats, flags stuck channels and runs store maintenance;
* the **batch scheduler** runs the ``[[batch]]`` ingestion jobs as child processes
  (:mod:`coupler.bus.batch.schedule`);
* the **Control Bus** endpoint answers ``coupler ctl`` on a Unix socket;
* with ``[http] listen``, the operator console, JSON API, ``/metrics`` and ``/healthz``
  (:mod:`coupler.bus.runtime.console`).

Every message a worker handles is timed (:class:`~coupler.bus.runtime.console.metrics.Observer`)
and its W3C trace context is the thread's current one while it is handled
(:mod:`coupler.canonical.tracecontext`), so what the handler sends joins its trace.

SIGTERM and SIGINT drain (bus/runtime/supervision.py): every inbound side stops first, the
messages in flight are finished within ``[site] drain_timeout_seconds``, the adapters are
stopped and the process exits 0; work still running then is named, abandoned (delivered again
after the restart) and the process exits 1. A worker that dies is logged, counted, restarted
and its adapter shown degraded.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pluggy

from coupler.bus.config.loader import AdapterConfig, ConfigError, RouteConfig, SiteConfig
from coupler.bus.messaging.channels import DatatypeChannel
from coupler.bus.model.adapter import Adapter, resolve_path_options
from coupler.bus.model.commands import (
    COMMON_COMMANDS,
    REPLY_COUNT,
    CommandFault,
    Document,
    command_name,
    fault_envelope,
    parse_command,
    reply_envelope,
)
from coupler.bus.model.identities import Identity, IdentityError
from coupler.bus.plugins.manager import (
    adapter_types,
    broken_note,
    broken_plugins,
    site_plugin_manager,
    translator_types,
)
from coupler.bus.runtime.console.metrics import Observer
from coupler.bus.runtime.consumers import ConsumerPatterns, Receiver
from coupler.bus.runtime.context import BusContext, Statistics, build_adapter
from coupler.bus.runtime.dispatch import Dispatcher, Servant
from coupler.bus.runtime.router import Route, Router
from coupler.bus.runtime.site import DaemonLock
from coupler.bus.runtime.supervision import Supervisor, abandoned_adapters, drain
from coupler.bus.transport.base import Delivery, Transport
from coupler.bus.transport.factory import open_transport
from coupler.bus.transport.private import private_dir, tighten
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError, describe_exception
from coupler.canonical.tracecontext import handling

log = logging.getLogger("coupler.daemon")

#: each adapter's own command queue
ADAPTER_QUEUE_PREFIX = "coupler.adapter."
_RECEIVE_WAIT = 0.2



def adapter_queue(name: str) -> str:
    return ADAPTER_QUEUE_PREFIX + name


class RunningAdapter:
    """An adapter instance with its configuration, context and pause switch."""

    def __init__(self, config: AdapterConfig, adapter: Adapter, context: BusContext, paused: threading.Event):
        self.config = config
        self.adapter = adapter
        self.context = context
        self.paused = paused
        self.started = False
        #: canonical -> legacy translation of the documents it is handed (bus/runtime/translation.py)
        self.translation: Any = None
        #: then the envelope wrapper chain around them (bus/runtime/stages.py)
        self.wrapping: Any = None

    @property
    def name(self) -> str:
        return self.config.name

    def outbound_envelope(self, envelope: Envelope) -> Envelope:
        """A channel message as the adapter takes it: translated, then wrapped."""
        if self.translation is not None:
            envelope = self.translation.envelope(envelope)
        if self.wrapping is not None:
            envelope = self.wrapping.envelope(envelope)
        return envelope

    def outbound_document(self, document: Document, command: Envelope) -> Document:
        """A command's document as the adapter takes it: translated, then wrapped."""
        if self.translation is not None:
            document = self.translation.document(document)
        if self.wrapping is not None:
            document = self.wrapping.document(document, command)
        return document

    def flows(self, direction: str) -> bool:
        """Whether documents flow ``direction`` (inbound/outbound) through this adapter: its
        site.toml ``direction`` says so and the adapter (in its mode) supports it."""
        return self.config.direction in (direction, "both") and direction in self.adapter.supported_directions()

    def servant(self) -> Servant:
        declared = tuple(self.adapter.commands)
        if self.config.commands is not None:
            declared = tuple(c for c in declared if c in self.config.commands)
        return Servant(self.name, declared, tuple(self.config.targets))


class Daemon:
    """One site's runtime. ``run()`` blocks until stopped; ``start()``/``stop()`` for embedding."""

    def __init__(self, site: SiteConfig, *, pm: pluggy.PluginManager | None = None):
        self.site = site
        self.pm = pm or site_plugin_manager()
        self.stopping = threading.Event()
        self.stopped = threading.Event()
        self.statistics = Statistics()
        self.adapters: dict[str, RunningAdapter] = {}
        self.router = Router(site.routes)
        self.started_at: float | None = None
        self.alerts: dict[str, str] = {}
        self.transport: Transport | None = None
        self._lock = DaemonLock(site.lock_path)
        self._threads: list[threading.Thread] = []
        self._control: Any = None
        self._registry: Any = None
        #: the ``[[batch]]`` jobs (bus/batch/schedule.py), when the site has any
        self.batch: Any = None
        #: adapter name -> (the canonical format name of its Datatype Channel, the version it reads)
        self._datatype_readers: dict[str, tuple[str, int]] = {}
        #: route name -> (the canonical format name it reads, the version)
        self._route_readers: dict[str, tuple[str, int]] = {}
        #: consumers reassembling message sequences (their incomplete ones expire in the monitor)
        self._consumer_patterns: list[ConsumerPatterns] = []
        self.dispatcher = Dispatcher(self._servants, self._resolve_identity)
        #: latency histograms and the figures of /metrics (bus/runtime/console/metrics.py)
        self.observer = Observer()
        self.observer.attach(self)
        self._console: Any = None
        self._spans: Any = None
        #: runs the worker loops, restarts a dead one (bus/runtime/supervision.py)
        self.supervisor = Supervisor(self)
        #: the workers a drain had to abandon (run() then returns 1)
        self.abandoned: list[str] = []

    # -- lifecycle ---------------------------------------------------------------------------

    def run(self) -> int:
        """Start, wait for SIGTERM/SIGINT or ``ctl stop``, drain, return the exit code (0)."""
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, self._on_signal)
        self.start()
        try:
            while not self.stopping.wait(0.5):
                pass
        finally:
            self.shutdown()
        return 1 if self.abandoned else 0

    def _on_signal(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.stopping.is_set():  # a second signal: give up draining (leases bring the work back)
            log.warning("received %s again: exiting without waiting for in-flight work", name)
            logging.shutdown()
            os._exit(1)
        log.info("received %s: draining", name)
        self.stopping.set()

    def request_stop(self) -> None:
        self.stopping.set()

    def start(self) -> None:
        classes = self._adapter_classes()  # every adapter type is known before anything starts
        self._private_data_dir()
        self._lock.acquire()
        try:
            self.transport = open_transport(self.site, self.pm)
            self._check_datatype_readers(classes)
            from coupler.bus.runtime.console.spans import SpanExport

            self._spans = self.observer.spans = SpanExport.create(self.site)  # [tracing] otlp_endpoint
            self._start_adapters(classes)
            self._start_workers()
            self._start_batch()
            self._start_control()  # last: once the socket exists, the site is up
        except BaseException:
            self.shutdown()
            raise
        self.started_at = time.time()
        failed = self.failed_adapters()
        if failed:
            log.warning(
                "site %s degraded: %d of %d adapter(s) failed to start (%s); `coupler ctl status` shows why",
                self.site.name, len(failed), len(self.adapters), ", ".join(failed), extra={"site": self.site.name},
            )
            return
        log.info(
            "site %s running: %d adapter(s), %d route(s), data directory %s",
            self.site.name, len(self.adapters), len(self.router.routes), self.site.data_dir,
            extra={"site": self.site.name},
        )

    def _private_data_dir(self) -> None:
        """The data directory holds every message: create it 0700, or tighten one other tools
        left readable by others (with a warning naming what was loose)."""
        data_dir = self.site.data_dir
        if not data_dir.is_dir():
            private_dir(data_dir)
            return
        try:
            loose = tighten(data_dir)
        except OSError as exc:
            log.warning("data directory %s: cannot make it private: %s", data_dir, exc, extra={"site": self.site.name})
            return
        if loose:
            shown = ", ".join(loose[:5]) + (f" and {len(loose) - 5} more" if len(loose) > 5 else "")
            log.warning(
                "data directory %s was readable by other users (%s): made it private (directories 0700, files 0600)",
                data_dir, shown, extra={"site": self.site.name},
            )

    def shutdown(self) -> None:
        """Drain and release everything (idempotent)."""
        if self.stopped.is_set():
            return
        self.abandoned = drain(self, self.site.model.site.drain_timeout_seconds)
        stuck = abandoned_adapters(self, self.abandoned)
        self._threads.clear()
        for ra in self.adapters.values():
            if ra.started and ra.name in stuck:  # its stop() could hang with the abandoned work
                log.error("adapter %s not stopped: its work in progress was abandoned", ra.name, extra={"adapter": ra.name})
            elif ra.started:
                try:
                    ra.adapter.stop()
                except Exception:
                    log.exception("adapter %s failed to stop", ra.name, extra={"adapter": ra.name})
                ra.started = False
                self.statistics.set_state(ra.name, "stopped")
            self._unregister_identity(ra)
        if self._console is not None:
            self._console.close()
            self._console = None
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._spans is not None:
            self._spans.close()
            self._spans = None
        if self.transport is not None:
            self.transport.close()
        self._lock.release()
        self.stopped.set()
        log.info("site %s stopped", self.site.name, extra={"site": self.site.name})

    # -- adapters ----------------------------------------------------------------------------

    def _adapter_classes(self) -> dict[str, type[Adapter]]:
        types = adapter_types(self.pm)
        problems = []
        for ad in self.site.adapters:
            if ad.enabled and ad.type not in types:
                problems.append(
                    f"{ad.key_path}.type: no installed plugin provides adapter type {ad.type!r} "
                    f"(installed types: {', '.join(sorted(types)) or 'none'}){broken_note()}"
                )
        if problems:
            raise self.site.config_error(problems, hint="`coupler plugins` lists what is installed")
        return types

    def check(self) -> dict[str, str]:
        """``coupler daemon --check``: load the site, start every adapter paused (none takes or
        gives a document), stop; the adapters that failed to start, name -> why (empty: the
        site would run). A configuration error raises :class:`ConfigError`."""
        classes = self._adapter_classes()
        self._private_data_dir()
        self._lock.acquire()
        try:
            self.transport = open_transport(self.site, self.pm)
            self._check_datatype_readers(classes)
            self._start_adapters(classes, paused=True)
            return self.failed_adapters()
        finally:
            self.shutdown()

    def _start_adapters(self, classes: dict[str, type[Adapter]], *, paused: bool = False) -> None:
        """Create every enabled adapter and check it, then start them: a configuration error is
        reported before anything started; an adapter failing to start leaves the site degraded."""
        created = [self._create_adapter(ad, classes[ad.type]) for ad in self.site.adapters if ad.enabled]
        for ra in created:
            if paused:
                ra.paused.set()
        problems = [p for ra in created if (p := self._direction_problem(ra)) is not None]
        if problems:
            raise self.site.config_error(problems, hint='give the adapter the direction it supports (or "both": whatever it supports)')
        for ra in created:
            if ra.flows("outbound"):
                self._outbound_stages(ra)
        for ra in created:
            self._start_adapter(ra)

    def _create_adapter(self, ad: AdapterConfig, cls: type[Adapter]) -> RunningAdapter:
        assert self.transport is not None
        paused = threading.Event()
        data_dir = self.site.data_dir / "adapters" / ad.name
        private_dir(data_dir)
        options = resolve_path_options(ad.options, tuple(cls.path_options), self.site.path.parent)
        inbound = self._inbound_stage(ad, cls)
        context = BusContext(
            name=ad.name,
            config=dict(options),
            data_dir=data_dir,
            transport=self.transport,
            statistics=self.statistics,
            channel=ad.channel,
            paused=paused,
            stopping=self.stopping,
            reply_timeout=self.site.reply_timeout,
            command_channel=self.site.command_channel,
            site_dir=self.site.path.parent,
            inbound=inbound,
        )
        self.statistics.add(ad.name, ad.type)
        try:
            adapter = build_adapter(
                cls, ad.name, options, context, direction=ad.direction, targets=ad.targets,
                identity=ad.identity_dict, channel=ad.channel, format=ad.format,
            )
        except CouplerError as exc:
            raise CouplerError(f"{ad.key_path}: adapter {ad.name!r} cannot be created: {exc}",
                               where=self.site.where(f"{ad.key_path}.options")) from exc
        ra = RunningAdapter(ad, adapter, context, paused)
        self.adapters[ad.name] = ra
        return ra

    @staticmethod
    def _direction_problem(ra: RunningAdapter) -> str | None:
        """An explicit direction the adapter does not support (it would start and never take
        or give a document); None when fine. ``both`` means whatever it supports."""
        ad = ra.config
        supported = tuple(ra.adapter.supported_directions())
        if ad.direction == "both" or ad.direction in supported:
            return None
        mode = ra.adapter.options.get("mode")
        kind = f"adapter type {ad.type!r}" + (f" in mode {mode!r}" if isinstance(mode, str) else "")
        can = " or ".join(supported) if supported else "neither inbound nor outbound (it serves commands only)"
        return f"{ad.key_path}.direction: {kind} cannot be {ad.direction}: it is {can}"

    def _start_adapter(self, ra: RunningAdapter) -> None:
        try:
            ra.adapter.start()
        except Exception as exc:  # one broken adapter must not take the site down: it is degraded
            reason = str(exc) if isinstance(exc, CouplerError) else describe_exception(exc)
            log.error("adapter %s failed to start: %s", ra.name, reason, extra={"adapter": ra.name})
            self.statistics.set_state(ra.name, "failed", reason)
            return
        ra.started = True
        self.statistics.set_state(ra.name, "running")
        self.statistics.beat(ra.name)
        self._register_identity(ra)

    def failed_adapters(self) -> dict[str, str]:
        """The adapters that failed to start: name -> why."""
        return {ra.name: self.statistics.adapters[ra.name].error or "failed to start"
                for ra in self.adapters.values() if not ra.started}

    def state(self) -> str:
        """``running``; ``degraded`` when an adapter failed to start; ``stopping``."""
        if self.stopping.is_set():
            return "stopping"
        return "degraded" if self.failed_adapters() else "running"

    # translation stages (bus/runtime/stages.py, bus/runtime/translation.py) ---------------------

    def _inbound_stage(self, ad: AdapterConfig, cls: type[Adapter]) -> Any:
        """Unwrap + legacy -> canonical for what an inbound adapter publishes (None: as it is)."""
        if not ("inbound" in cls.directions and ad.direction in ("inbound", "both") and (ad.mapping or ad.wrappers)):
            return None
        from coupler.bus.plugins.manager import mapping_functions
        from coupler.bus.runtime.stages import InboundTranslation

        try:
            return InboundTranslation.for_adapter(
                ad, self.registry() if ad.mapping else None, self.site.path.parent, mapping_functions(self.pm)
            )
        except ConfigError as exc:
            raise self.site.config_error(exc.problems, hint=exc.hint) from None

    def _outbound_stages(self, ra: RunningAdapter) -> None:
        """Canonical -> legacy (translation), then the wrapper chain, before an outbound adapter."""
        from coupler.bus.runtime.stages import OutboundWrapping, wrapper_chain
        from coupler.bus.runtime.translation import OutboundTranslation

        ad = ra.config
        try:
            ra.translation = OutboundTranslation.for_adapter(
                ad, self.registry(), self.site.path.parent, translator_types(self.pm)
            )
            chain = wrapper_chain(ad, self.site.path.parent)
        except ConfigError as exc:
            raise self.site.config_error(exc.problems, hint=exc.hint) from None
        ra.wrapping = OutboundWrapping(ad.name, chain) if chain is not None else None

    # datatype channels ------------------------------------------------------------------

    def registry(self) -> Any:
        """The site's schema registry (built-in, plugin and ``schemas.paths`` schemas), loaded once."""
        if self._registry is None:
            from coupler.canonical.registry import SchemaRegistry

            self._registry = SchemaRegistry.default(self.site.schema_paths, pm=self.pm)
        return self._registry

    def _check_datatype_readers(self, classes: dict[str, type[Adapter]]) -> None:
        """Outbound adapters reading a Datatype Channel: their declared version must exist."""
        assert self.transport is not None
        problems = []
        for ad in self.site.adapters:
            if not (ad.enabled and ad.channel and ad.format and ad.direction in ("outbound", "both")):
                continue
            if "outbound" not in classes[ad.type].directions:
                continue
            carried = self.transport.channel_config(ad.channel).format
            if carried is None:
                continue
            fmt = FormatIndicator.parse(ad.format)
            if fmt.name != carried:
                problems.append(
                    f"{ad.key_path}.format: the adapter reads {fmt.ref} but its channel "
                    f"{ad.channel!r} is a Datatype Channel of {carried}"
                )
                continue
            try:
                self.registry().get(fmt.name, fmt.version)
            except CouplerError as exc:
                problems.append(f"{ad.key_path}.format: {exc.message}")
                continue
            self._datatype_readers[ad.name] = (fmt.name, fmt.version)
        problems += self._check_route_readers()
        if problems:
            raise self.site.config_error(problems, hint="`coupler schema list` shows the known versions")

    def _check_route_readers(self) -> list[str]:
        """Routes declaring the version they read (``[[routes]] format``): it must exist, and
        their input channel must carry that entity (a channel without a format becomes its
        Datatype Channel)."""
        assert self.transport is not None
        problems = []
        for route in self.site.routes:
            if route.format is None:
                continue
            fmt = FormatIndicator.parse(route.format)
            carried = self.transport.channel_config(route.source).format
            if carried is not None and carried != fmt.name:
                problems.append(
                    f"{route.key_path}.format: the route reads {fmt.ref} but its channel "
                    f"{route.source!r} is a Datatype Channel of {carried}"
                )
                continue
            try:
                self.registry().get(fmt.name, fmt.version)
            except CouplerError as exc:
                problems.append(f"{route.key_path}.format: {exc.message}")
                continue
            self._route_readers[route.label] = (fmt.name, fmt.version)
        return problems

    def _datatype_receiver(self, name: str, source: str) -> Receiver | None:
        """How adapter ``name`` receives ``source`` converted to the version it reads (None: as sent)."""
        if name not in self._datatype_readers:
            return None
        return self._converting_receiver(name, source, *self._datatype_readers[name], component=f"adapter:{name}")

    def _route_receiver(self, route: Route, consumer: str, source: str) -> Receiver | None:
        """How a route receives ``source`` converted to the version it reads (None: as sent)."""
        if route.name not in self._route_readers:
            return None
        return self._converting_receiver(consumer, source, *self._route_readers[route.name], component=consumer)

    def _converting_receiver(self, consumer: str, source: str, format_name: str, version: int, *, component: str) -> Receiver:
        """Receive ``source`` through a :class:`DatatypeChannel`: converted to ``format_name@version``,
        what cannot be converted moved to the Invalid Message Channel by ``component``."""
        assert self.transport is not None
        channel = DatatypeChannel(self.transport, source, format_name, self.registry())
        log.info(
            "%s reads Datatype Channel %s as %s@%d", component, source, format_name, version,
            extra={"component": component, "channel": source},
        )
        return lambda wait: channel.receive(consumer, version, max=1, wait=wait, component=component)

    def _servants(self) -> list[Servant]:
        return [ra.servant() for ra in self.adapters.values()]

    def _resolve_identity(self, target: str) -> list[str]:
        """Application identity addressing: the adapter of the most specific match."""
        assert self.transport is not None
        try:
            pattern = Identity.parse(target)
        except IdentityError:
            return []
        for reg in self.transport.identities.matches(pattern):
            if reg.adapter in self.adapters:
                return [reg.adapter]
        return []

    def _register_identity(self, ra: RunningAdapter) -> None:
        assert self.transport is not None
        repo = self.transport.identities
        repo.unregister(adapter=ra.name)  # left over by a daemon that was killed
        if ra.config.identity:
            reg = repo.register(Identity.from_dict(ra.config.identity.as_dict()), adapter_queue(ra.name), adapter=ra.name)
            log.info("adapter %s registered identity %s", ra.name, reg.identity, extra={"adapter": ra.name})

    def _unregister_identity(self, ra: RunningAdapter) -> None:
        if self.transport is not None and ra.config.identity:
            try:
                self.transport.identities.unregister(adapter=ra.name)
            except CouplerError as exc:
                log.error("adapter %s: cannot unregister its identity: %s", ra.name, exc)

    def pause(self, name: str) -> None:
        ra = self._adapter(name)
        ra.paused.set()
        if ra.started:
            self.statistics.set_state(name, "paused")

    def resume(self, name: str) -> None:
        ra = self._adapter(name)
        ra.paused.clear()
        if ra.started:
            self.statistics.set_state(name, "running")

    def _adapter(self, name: str) -> RunningAdapter:
        if name not in self.adapters:
            raise CouplerError(
                f"no adapter named {name!r}", hint=f"adapters of this site: {', '.join(self.adapters) or 'none'}"
            )
        return self.adapters[name]

    # -- workers -----------------------------------------------------------------------------

    def _start_workers(self) -> None:
        self._spawn("dispatcher", self.site.command_channel, "dispatcher", self._dispatch)
        for ra in self.adapters.values():
            if not ra.started:
                continue
            self._spawn(f"commands:{ra.name}", adapter_queue(ra.name), ra.name, self._command_handler(ra), ra.paused)
            if ra.config.channel and ra.flows("outbound"):
                source = self._source(ra.config.channel, ra.name)
                patterns = self._patterns(ra.name, ra.config.channel, source, ra.config)
                self._spawn(
                    f"deliver:{ra.name}", source, ra.name, self._delivery_handler(ra, patterns), ra.paused,
                    receive=self._datatype_receiver(ra.name, source), patterns=patterns,
                )
        for route, config in zip(self.router.routes, self.site.routes, strict=True):
            consumer = f"route:{route.name}"
            source = self._source(route.source, consumer)
            patterns = self._patterns(consumer, route.source, source, config)
            self._spawn(consumer, source, consumer, self._route_handler(route, patterns),
                        receive=self._route_receiver(route, consumer, source), patterns=patterns)
        t = threading.Thread(target=self._monitor, name="monitor", daemon=True)
        t.start()
        self._threads.append(t)

    def _source(self, channel: str, consumer: str) -> str:
        """The queue to receive ``channel`` from: itself, or a durable subscription of a topic."""
        assert self.transport is not None
        if self.transport.channel_config(channel).kind == "topic":
            return self.transport.subscribe(channel, consumer)
        return channel

    def _patterns(self, consumer: str, channel: str, source: str, config: AdapterConfig | RouteConfig) -> ConsumerPatterns:
        """The Idempotent Receiver, Message Throttle and sequence reassembly ``consumer``
        declared (reading ``channel`` from queue ``source``)."""
        assert self.transport is not None
        patterns = ConsumerPatterns.declared(
            self.transport, consumer, source, channel=self.site.channel(channel),
            idempotent_key=config.idempotent_key, throttle=config.throttle, where=config.key_path,
        )
        if patterns.assembler is not None:
            self._consumer_patterns.append(patterns)
        return patterns

    def _spawn(
        self,
        name: str,
        channel: str,
        consumer: str,
        handle: Callable[[Delivery], None],
        paused: threading.Event | None = None,
        *,
        receive: Receiver | None = None,
        patterns: ConsumerPatterns | None = None,
    ) -> None:
        assert self.transport is not None
        transport = self.transport
        if receive is None:
            def receive(wait: float) -> list[Delivery]:
                return transport.receive_wait(channel, consumer, max=1, wait=wait)

        workers = 1
        if patterns is not None:
            receive, handle, workers = patterns.receiver(transport, receive), patterns.handler(handle), patterns.concurrency
        adapter = consumer if consumer in self.adapters else None
        for i in range(workers):
            thread_name = name if workers == 1 else f"{name}#{i + 1}"
            loop = functools.partial(self._worker, thread_name, channel, receive,
                                     self.supervisor.guard(thread_name, handle), paused)
            t = threading.Thread(target=self.supervisor.run, args=(thread_name, adapter, loop), name=thread_name,
                                 daemon=True)
            t.start()
            self._threads.append(t)

    def _worker(
        self,
        name: str,
        channel: str,
        receive: Receiver,
        handle: Callable[[Delivery], None],
        paused: threading.Event | None,
    ) -> None:
        assert self.transport is not None
        while not self.stopping.is_set():
            if paused is not None and paused.is_set():
                self.stopping.wait(0.1)
                continue
            try:
                deliveries = receive(_RECEIVE_WAIT)
            except CouplerError as exc:
                log.error("%s: cannot receive from %s: %s", name, channel, exc, extra={"worker": name})
                self.stopping.wait(1.0)
                continue
            if paused is not None and deliveries and paused.is_set():
                # paused while this receive was waiting: hold the message until resumed; on a
                # stop it is left to its lease and delivered again after the restart
                while paused.is_set() and not self.stopping.is_set():
                    self.stopping.wait(0.05)
                if paused.is_set():
                    return
            for d in deliveries:  # finished even when a stop arrives meanwhile: that is the drain
                try:
                    with handling(d.envelope), self.observer.handled(name, d):
                        handle(d)
                except Exception as exc:
                    log.exception("%s: message %s failed", name, d.message_id, extra={"worker": name})
                    try:
                        self.transport.nack(d, exc, name)
                    except CouplerError:
                        log.exception("%s: cannot nack %s", name, d.message_id)

    # command dispatcher ------------------------------------------------------------------

    def _dispatch(self, d: Delivery) -> None:
        assert self.transport is not None
        env = d.envelope
        try:
            cmd = parse_command(env)
        except CommandFault as exc:
            self._refuse(d, "invalid", str(exc), invalid=True)
            return
        recipients = self.dispatcher.recipients(cmd.name, cmd.target)
        if not recipients:
            self._refuse(d, "unserved", self.dispatcher.unserved_reason(cmd.name, cmd.target))
            return
        count = str(len(recipients))
        with self.transport.transaction() as tx:
            for name in recipients:
                refused = self._unavailable(name)
                if refused is not None:  # answered at once, not left to time out
                    if env.return_address:
                        fault = fault_envelope(env, *refused, adapter=name, count=len(recipients))
                        tx.send(env.return_address, fault, component="dispatcher")
                    continue
                copy = env.replace(properties={**env.properties, REPLY_COUNT: count})
                tx.send(adapter_queue(name), copy, component="dispatcher")
            tx.ack(d)
        log.debug("command %s %s -> %s", cmd.name, cmd.target, ", ".join(recipients))

    def _unavailable(self, name: str) -> tuple[str, str] | None:
        """(fault code, reason) when adapter ``name`` cannot take a command now: it failed to
        start, or it is paused; None when it can."""
        ra = self.adapters[name]
        if not ra.started:
            error = self.statistics.adapters[name].error or "not running"
            return "failed", f"adapter {name!r} is not running: {error}"
        if ra.paused.is_set():
            return "paused", f"adapter {name!r} is paused (`coupler ctl resume {name}` resumes it)"
        return None

    def _refuse(self, d: Delivery, code: str, reason: str, *, invalid: bool = False) -> None:
        """Answer a command with a fault; without a return address, dead-letter it instead."""
        assert self.transport is not None
        env = d.envelope
        log.warning("command %s refused (%s): %s", env.message_id, code, reason, extra={"code": code})
        if invalid:
            with self.transport.transaction() as tx:
                if env.return_address:
                    tx.send(env.return_address, fault_envelope(env, code, reason), component="dispatcher")
                tx.invalid(env, reason, "dispatcher", channel=d.channel, delivery=d)
            return
        if not env.return_address:
            self.transport.nack(d, f"{code}: {reason} (and no return address to reply to)", "dispatcher", dead=True)
            return
        with self.transport.transaction() as tx:
            tx.send(env.return_address, fault_envelope(env, code, reason), component="dispatcher")
            tx.ack(d)

    # adapter workers ---------------------------------------------------------------------

    def _command_handler(self, ra: RunningAdapter) -> Callable[[Delivery], None]:
        def handle(d: Delivery) -> None:
            assert self.transport is not None
            env = d.envelope
            count = int(env.properties.get(REPLY_COUNT, "1") or 1)
            self.statistics.count(ra.name, "received")
            try:
                cmd = parse_command(env)
                if cmd.document is not None:
                    cmd.document = ra.outbound_document(cmd.document, env)
                reply = reply_envelope(cmd, ra.adapter.handle(cmd), ra.name, count=count)
            except CommandFault as exc:
                self.statistics.count(ra.name, "failed")
                reply = fault_envelope(env, exc.code, str(exc), adapter=ra.name, count=count)
            except Exception as exc:  # an adapter bug is still answered, never silence
                log.exception("adapter %s failed on %s", ra.name, command_name(env), extra={"adapter": ra.name})
                self.statistics.count(ra.name, "failed")
                reply = fault_envelope(env, "failed", f"{type(exc).__name__}: {exc}", adapter=ra.name, count=count)
            with self.transport.transaction() as tx:
                if env.return_address:
                    tx.send(env.return_address, reply, component=f"adapter:{ra.name}")
                tx.ack(d)
            self.statistics.count(ra.name, "sent")

        return handle

    def _delivery_handler(self, ra: RunningAdapter, patterns: ConsumerPatterns) -> Callable[[Delivery], None]:
        def handle(d: Delivery) -> None:
            assert self.transport is not None
            self.statistics.count(ra.name, "received")
            try:
                ra.adapter.deliver(ra.outbound_envelope(d.envelope))
            except CommandFault as exc:
                self.statistics.count(ra.name, "failed")
                if exc.code == "invalid":
                    self.transport.invalid(d.envelope, str(exc), f"adapter:{ra.name}", channel=d.channel, delivery=d)
                else:
                    outcome = self.transport.nack(d, exc, f"adapter:{ra.name}", dead=exc.code == "unsupported")
                    log.warning("adapter %s could not deliver %s (%s): %s", ra.name, d.message_id, outcome, exc, extra={"adapter": ra.name})
                return
            except Exception as exc:
                self.statistics.count(ra.name, "failed")
                outcome = self.transport.nack(d, exc, f"adapter:{ra.name}")
                log.warning("adapter %s could not deliver %s (%s): %s", ra.name, d.message_id, outcome, exc, extra={"adapter": ra.name})
                return
            with self.transport.transaction() as tx:
                patterns.settle(tx, d)
            self.statistics.count(ra.name, "sent")  # out: delivered to its legacy system

        return handle

    # routes ------------------------------------------------------------------------------

    def _route_handler(self, route: Route, patterns: ConsumerPatterns) -> Callable[[Delivery], None]:
        component = f"route:{route.name}"

        def handle(d: Delivery) -> None:
            assert self.transport is not None
            destinations = route.destinations(d.envelope)
            if not destinations:
                self.transport.nack(d, "unroutable: no rule of route matched and it has no `otherwise`", component, dead=True)
                return
            with self.transport.transaction() as tx:
                for channel in destinations:
                    tx.send(channel, d.envelope, component=component)
                patterns.settle(tx, d)

        return handle

    # monitor -----------------------------------------------------------------------------

    def _monitor(self) -> None:
        assert self.transport is not None
        interval = self.site.monitor.interval_seconds
        last_maintenance = 0.0
        while not self.stopping.wait(interval):
            for ra in self.adapters.values():
                if ra.started and not ra.paused.is_set():
                    self.statistics.beat(ra.name)
            try:
                self._check_stuck()
                for patterns in self._consumer_patterns:
                    for seq_id in patterns.expire():
                        log.warning("%s: sequence %s incomplete after %g s: its parts went to the Invalid "
                                    "Message Channel", patterns.consumer, seq_id, patterns.sequence_timeout,
                                    extra={"consumer": patterns.consumer})
                if time.monotonic() - last_maintenance > 60:
                    last_maintenance = time.monotonic()
                    counts = self.transport.maintain()
                    if any(counts.values()):
                        log.info("store maintenance: %s", counts, extra=counts)
            except CouplerError as exc:
                log.error("monitor: %s", exc)

    def _check_stuck(self) -> None:
        assert self.transport is not None
        default = self.site.monitor.stuck_after_seconds
        for st in self.transport.stats():
            cfg = self.site.channel(st.channel)
            limit = cfg.stuck_after_seconds if cfg and cfg.stuck_after_seconds is not None else default
            if st.oldest_age is not None and limit and st.oldest_age > limit:
                if st.channel not in self.alerts:
                    log.warning(
                        "channel %s is stuck: its oldest message is %.0f s old (limit %g s, depth %d)",
                        st.channel, st.oldest_age, limit, st.depth,
                        extra={"channel": st.channel, "oldest_age": st.oldest_age},
                    )
                self.alerts[st.channel] = f"oldest message {st.oldest_age:.0f} s old (limit {limit:g} s)"
            elif st.channel in self.alerts:
                log.info("channel %s is no longer stuck", st.channel, extra={"channel": st.channel})
                del self.alerts[st.channel]

    # -- batch jobs --------------------------------------------------------------------------

    def _start_batch(self) -> None:
        """``[[batch]]``: ``coupler batch ingest`` in child processes, on schedule or when
        files are staged (bus/batch/schedule.py)."""
        if not self.site.batch:
            return
        from coupler.bus.batch.schedule import BatchScheduler

        self.batch = BatchScheduler(self.site)
        t = threading.Thread(target=self.batch.run, args=(self.stopping,), name="batch", daemon=True)
        t.start()
        self._threads.append(t)

    # -- control -----------------------------------------------------------------------------

    def _start_control(self) -> None:
        from coupler.bus.runtime.control import ControlServer, ControlService

        service = ControlService(self)
        self._control = ControlServer(self.site.control_socket, service)
        self._control.start()
        if self.site.http.listen:  # the console, API and /metrics (off unless set)
            from coupler.bus.runtime.console.server import ConsoleServer

            self._console = ConsoleServer(self, service)
            self._console.start()

    @property
    def console_url(self) -> str | None:
        """The URL the console is served at (None when ``[http] listen`` is not set)."""
        return self._console.url if self._console is not None else None

    def adapter_health(self, name: str) -> dict[str, Any] | None:
        """``adapter.health()`` of a started adapter (None when it is not running)."""
        ra = self.adapters.get(name)
        if ra is None or not ra.started:
            return None
        try:
            return ra.adapter.health()
        except Exception as exc:  # a broken health() must not break ctl status
            log.exception("adapter %s: health() failed", name, extra={"adapter": name})
            return {"status": "degraded", "problems": [f"health() failed: {type(exc).__name__}: {exc}"]}

    def adapter_rows(self) -> list[dict[str, Any]]:
        """The statistics of every adapter with its health (``ctl status``/``ctl adapters``)."""
        rows = self.statistics.snapshot()
        for row in rows:
            row["health"] = self.adapter_health(row["name"])
        return rows

    def status(self) -> dict[str, Any]:
        assert self.transport is not None
        self._check_stuck()
        adapters = self.adapter_rows()
        alerts: list[dict[str, Any]] = [{"channel": c, "alert": a} for c, a in sorted(self.alerts.items())]
        alerts += self.batch.alerts() if self.batch is not None else []
        alerts += [{"plugin": b.entry_point, "alert": b.describe()} for b in broken_plugins()]
        failed = self.failed_adapters()
        for row in adapters:
            if row["name"] in failed:
                alerts.append({"adapter": row["name"], "alert": f"failed to start: {failed[row['name']]}"})
            if row.get("degraded"):
                alerts.append({"adapter": row["name"], "alert": f"degraded: {row['degraded']}"})
            for problem in (row["health"] or {}).get("problems", []):
                alerts.append({"adapter": row["name"], "alert": problem})
        return {
            "site": self.site.name,
            "site_file": str(self.site.path),
            "data_dir": str(self.site.data_dir),
            "pid": os.getpid(),
            "state": self.state(),
            "started_at": datetime.fromtimestamp(self.started_at or time.time(), UTC).isoformat(),
            "uptime_seconds": round(time.time() - (self.started_at or time.time()), 3),
            "transport": repr(self.transport),
            "adapters": adapters,
            "routes": [r.name for r in self.router.routes],
            "command_channel": self.site.command_channel,
            "commands": list(COMMON_COMMANDS),
            "alerts": alerts,
            "batch": self.batch.status() if self.batch is not None else [],
        }


# -- logging -------------------------------------------------------------------------------

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and the structured fields."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                data[key] = value if isinstance(value, str | int | float | bool | type(None)) else str(value)
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data)


class TextFormatter(logging.Formatter):
    """``2026-01-01 12:00:00,000 INFO coupler.daemon: message [key=value ...]``."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        extra = {k: v for k, v in record.__dict__.items() if k not in _STANDARD and not k.startswith("_")}
        if extra:
            first, nl, rest = text.partition("\n")
            text = first + " [" + " ".join(f"{k}={v}" for k, v in extra.items()) + "]" + nl + rest
        return text


def configure_logging(level: str = "INFO", fmt: str = "text") -> None:
    """Log to standard error, human-readable (``text``) or as JSON lines (``json``)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level.upper())


def run_site(site: SiteConfig, *, pm: pluggy.PluginManager | None = None) -> int:
    """Run the daemon of ``site`` until it is stopped; returns the exit code."""
    return Daemon(site, pm=pm).run()


__all__ = ["Daemon", "Envelope", "configure_logging", "run_site"]
