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

At start the soft open-files limit is raised to the hard one and checked against what the HTTP
servers may hold (bus/runtime/openfiles.py).

SIGTERM and SIGINT drain (bus/runtime/supervision.py): every inbound side stops first, the
messages in flight are finished within ``[site] drain_timeout_seconds``, the adapters are
stopped and the process exits 0; work still running then is named, abandoned (delivered again
after the restart) and the process exits 1. A worker that dies is logged, counted, restarted
and its adapter shown degraded.
"""

from __future__ import annotations

import functools
import gc
import logging
import os
import signal
import threading
import time
from datetime import UTC, datetime
from typing import Any

import pluggy

from coupler.bus.config.loader import SiteConfig
from coupler.bus.model.adapter import Adapter
from coupler.bus.model.commands import (
    COMMON_COMMANDS,
)
from coupler.bus.model.httpserver import DEFAULT_BACKLOG, ConnectionLimit, listening
from coupler.bus.model.selectors import BodyReader
from coupler.bus.plugins.manager import (
    broken_plugins,
    site_plugin_manager,
)
from coupler.bus.runtime import openfiles
from coupler.bus.runtime.adapters import AdapterRuntime, RunningAdapter
from coupler.bus.runtime.console.metrics import Observer
from coupler.bus.runtime.consumers import ConsumerPatterns
from coupler.bus.runtime.context import Statistics
from coupler.bus.runtime.datatypes import DatatypeReaders
from coupler.bus.runtime.dispatch import Dispatcher
from coupler.bus.runtime.handlers import Handlers
from coupler.bus.runtime.monitor import Monitor
from coupler.bus.runtime.router import Router
from coupler.bus.runtime.routes import RoutePipelines
from coupler.bus.runtime.site import DaemonLock
from coupler.bus.runtime.steps.base import Switches
from coupler.bus.runtime.supervision import Supervisor, abandoned_adapters, drain
from coupler.bus.runtime.workers import Workers
from coupler.bus.transport.base import Transport
from coupler.bus.transport.factory import open_transport
from coupler.bus.transport.private import private_dir, tighten
from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError

log = logging.getLogger("coupler.daemon")

class Daemon:
    """One site's runtime. ``run()`` blocks until stopped; ``start()``/``stop()`` for embedding."""

    def __init__(self, site: SiteConfig, *, pm: pluggy.PluginManager | None = None):
        self.site = site
        self.pm = pm or site_plugin_manager()
        self.stopping = threading.Event()
        self.stopped = threading.Event()
        self.statistics = Statistics()
        #: the adapters by name (bus/runtime/adapters.py), and what creates, starts and stops them
        self.adapters: dict[str, RunningAdapter] = {}
        self.adapter_runtime = AdapterRuntime(self)
        #: what the workers do with a message (bus/runtime/handlers.py), the worker threads
        #: (bus/runtime/workers.py) and the monitor (bus/runtime/monitor.py)
        self.handlers = Handlers(self)
        self.workers = Workers(self)
        self.monitor = Monitor(self)
        self.router = Router(site.routes, body=BodyReader(self.registry))
        #: route name -> its pipeline of steps (bus/runtime/steps/), built when the transport is open
        self.pipelines = RoutePipelines(self)
        #: Message Expiration: channel -> its ``ttl_seconds`` (``[[channels]]``)
        self.channel_ttls = {c.name: c.ttl_seconds for c in site.model.channels if c.ttl_seconds is not None}
        #: Detour switches, set from the Control Bus
        self.switches = Switches()
        self.started_at: float | None = None
        self.alerts: dict[str, str] = {}
        #: ``--check``: what the daemon would warn of at start about its open-files limit
        self.open_files_warning: str | None = None
        self.transport: Transport | None = None
        self._lock = DaemonLock(site.lock_path)
        self._threads: list[threading.Thread] = []
        self._control: Any = None
        self._registry: Any = None
        #: the ``[[batch]]`` jobs (bus/batch/schedule.py), when the site has any
        self.batch: Any = None
        #: the consumers reading a declared version (bus/runtime/datatypes.py), once the transport is open
        self.datatypes: DatatypeReaders | None = None
        #: consumers reassembling message sequences (their incomplete ones expire in the monitor)
        self._consumer_patterns: list[ConsumerPatterns] = []
        self.dispatcher = Dispatcher(self.adapter_runtime.servants, self.adapter_runtime.resolve_identity)
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
        # what the start made (modules, the site, adapters, connections) lives as long as the
        # process: kept out of the collector's full passes, which otherwise walk it all again
        # every few thousand objects a busy adapter keeps for a moment (3 us a row of a table)
        gc.freeze()
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
        classes = self.adapter_runtime.classes()  # every adapter type is known before anything starts
        self._private_data_dir()
        self._lock.acquire()
        # the daemon runs: every connection a server holds is a file descriptor, so the soft limit goes up to the hard one
        open_files = openfiles.raise_limit(self.site.model.site.raise_open_files_limit, self.site.name)
        try:
            self.transport = open_transport(self.site, self.pm)
            self._check_datatypes(classes)
            self.pipelines.build()
            from coupler.bus.runtime.console.spans import SpanExport

            self._spans = self.observer.spans = SpanExport.create(self.site)  # [tracing] otlp_endpoint
            self.adapter_runtime.start_all(classes)
            self.workers.start()
            self._start_batch()
            self._start_control()  # last: once the socket exists, the site is up
        except BaseException:
            self.shutdown()
            raise
        self.started_at = time.time()
        openfiles.check(open_files, listening(), self.site.name)  # the servers listen now
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
            try:
                private_dir(data_dir)
            except OSError as exc:  # the words of the embedded store's, which creates it too
                raise CouplerError(f"cannot create the data directory: {exc.strerror or exc}", where=str(data_dir),
                                   hint=f"create it, or name another in [site] data_dir of {self.site.path}") from exc
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
        self.adapter_runtime.stop_all(skip=stuck)
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

    def check(self) -> dict[str, str]:
        """``coupler daemon --check``: load the site, start every adapter paused (none takes or
        gives a document), stop; the adapters that failed to start, name -> why (empty: the
        site would run). A configuration error raises :class:`ConfigError`."""
        classes = self.adapter_runtime.classes()
        self._private_data_dir()
        self._lock.acquire()
        try:
            self.transport = open_transport(self.site, self.pm)
            self._check_datatypes(classes)
            self.pipelines.build()
            self._check_batch()
            self.adapter_runtime.start_all(classes, paused=True)
            self.open_files_warning = self._open_files_shortfall()
            return self.failed_adapters()
        finally:
            self.shutdown()

    def _open_files_shortfall(self) -> str | None:
        """What the daemon would warn of at start about its open-files limit (``--check``: the
        adapters' servers listen, paused; the console, not started, by its options)."""
        servers: list[ConnectionLimit | openfiles.Held] = list(listening())
        if self.site.http.listen:
            servers.append(openfiles.Held("console", "http.max_connections", self.site.http.max_connections,
                                          DEFAULT_BACKLOG))
        return openfiles.shortfall(openfiles.expected_limit(self.site.model.site.raise_open_files_limit), servers)

    # -- adapters (bus/runtime/adapters.py) ----------------------------------------------------

    def failed_adapters(self) -> dict[str, str]:
        """The adapters that failed to start: name -> why."""
        return self.adapter_runtime.failed()

    def pause(self, name: str) -> None:
        self.adapter_runtime.pause(name)

    def resume(self, name: str) -> None:
        self.adapter_runtime.resume(name)

    def adapter_health(self, name: str) -> dict[str, Any] | None:
        return self.adapter_runtime.health(name)

    def adapter_rows(self) -> list[dict[str, Any]]:
        return self.adapter_runtime.rows()

    def state(self) -> str:
        """``running``; ``degraded`` when an adapter failed to start; ``stopping``."""
        if self.stopping.is_set():
            return "stopping"
        return "degraded" if self.failed_adapters() else "running"

    # datatype channels ------------------------------------------------------------------

    def registry(self) -> Any:
        """The site's schema registry (built-in, plugin and ``schemas.paths`` schemas), loaded once."""
        if self._registry is None:
            from coupler.canonical.registry import SchemaRegistry

            self._registry = SchemaRegistry.default(self.site.schema_paths, pm=self.pm)
        return self._registry

    def _check_datatypes(self, classes: dict[str, type[Adapter]]) -> None:
        assert self.transport is not None
        self.datatypes = DatatypeReaders(self.site, self.transport, self.registry)
        self.datatypes.check(classes)

    # routes (bus/runtime/routes.py) ---------------------------------------------------------

    def detour(self, route: str, step: str | None, on: bool | None) -> list[dict[str, Any]]:
        return self.pipelines.detour(route, step, on)

    def test_message(self, route: str, envelope: Envelope) -> dict[str, Any]:
        return self.pipelines.test_message(route, envelope)

    # -- batch jobs --------------------------------------------------------------------------

    def _check_batch(self) -> None:
        """``--check`` of the ``[[batch]]`` jobs: what each run loads before Spark starts
        (bus/batch/schedule.py ``check_jobs``)."""
        if not self.site.batch:
            return
        from coupler.bus.batch.schedule import check_jobs

        check_jobs(self.site)

    def _start_batch(self) -> None:
        """``[[batch]]``: ``coupler batch ingest`` in child processes, on schedule or when
        files are staged (bus/batch/schedule.py)."""
        if not self.site.batch:
            return
        from coupler.bus.batch.schedule import BatchScheduler

        self.batch = BatchScheduler(self.site)
        loop = functools.partial(self.batch.run, self.stopping)
        t = threading.Thread(target=self.supervisor.run, args=("batch", None, loop), name="batch", daemon=True)
        t.start()
        self._threads.append(t)

    # -- control -----------------------------------------------------------------------------

    def _start_control(self) -> None:
        from coupler.bus.runtime.control import ControlServer, ControlService

        service = ControlService(self)
        self._control = ControlServer(self.site.control_socket, service,
                                      request_timeout=self.site.model.control.request_timeout)
        self._control.start()
        if self.site.http.listen:  # the console, API and /metrics (off unless set)
            from coupler.bus.runtime.console.server import ConsoleServer

            self._console = ConsoleServer(self, service)
            self._console.start()

    @property
    def console_url(self) -> str | None:
        """The URL the console is served at (None when ``[http] listen`` is not set)."""
        return self._console.url if self._console is not None else None

    @property
    def console_connections(self) -> dict[str, int] | None:
        """The console's connections: ``open``, ``max`` (``[http] max_connections``) and
        ``refused`` (None when it serves none)."""
        console = self._console
        return console.connections.health() if console is not None and console.connections is not None else None

    def status(self) -> dict[str, Any]:
        assert self.transport is not None
        self.monitor.check_stuck()
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


def run_site(site: SiteConfig, *, pm: pluggy.PluginManager | None = None) -> int:
    """Run the daemon of ``site`` until it is stopped; returns the exit code."""
    return Daemon(site, pm=pm).run()


__all__ = ["Daemon", "Envelope", "run_site"]
