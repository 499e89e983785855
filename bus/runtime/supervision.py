"""Worker supervision and the drain: no worker ends without a word, no stop waits for ever.

* :class:`Supervisor` runs each worker loop (and the monitor and batch scheduler threads): one that dies for any reason (an exception
  escaping its loop, ``SystemExit`` or ``KeyboardInterrupt`` raised by an adapter's
  ``deliver()``) is logged with its adapter and the message it was handling, counted
  (``failed`` of the adapter, ``worker_deaths``), the message is given back to the store
  with the cause (its attempt counts, so a message that kills every worker ends as a dead
  letter), the adapter is shown ``degraded`` (``ctl status``, ``/healthz``, the console) for
  :data:`DEGRADED_SECONDS`, and the loop is restarted after a backoff (0.5 s doubling to 30 s).
* :func:`drain` (SIGTERM, ``ctl stop``): every inbound side stops first (``stop_inbound()`` of
  each adapter; an adapter's own threads can no longer publish: :func:`in_flight`), then the
  workers finish the messages in flight, up to ``[site] drain_timeout_seconds``; what still
  runs then is named and abandoned (its messages are delivered again after the restart,
  when their lease ends) and the daemon exits 1.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from coupler.bus.transport.base import Delivery
from coupler.canonical.errors import CouplerError

if TYPE_CHECKING:
    from coupler.bus.runtime.daemon import Daemon

log = logging.getLogger("coupler.daemon")

#: how long an adapter whose worker died is shown degraded (seconds without another death)
DEGRADED_SECONDS = 300.0
_BACKOFF_FIRST, _BACKOFF_MAX = 0.5, 30.0

_local = threading.local()


def in_flight() -> bool:
    """Whether this thread is handling a delivery (what it publishes finishes work already
    received, allowed while draining; an adapter's own poller or listener is not)."""
    return getattr(_local, "delivery", None) is not None


@dataclass
class Running:
    """The message a worker is handling, since when (monotonic)."""

    delivery: Delivery
    since: float


class Supervisor:
    """Runs the worker loops of one daemon (see the module's text)."""

    def __init__(self, daemon: Daemon):
        self.d = daemon
        #: worker name -> the message it is handling
        self.running: dict[str, Running] = {}
        #: worker name -> how many times it died
        self.deaths: dict[str, int] = {}
        self._lock = threading.Lock()

    def guard(self, worker: str, handle: Callable[[Delivery], None]) -> Callable[[Delivery], None]:
        """``handle`` recording the message ``worker`` handles (kept when the worker dies)."""

        def guarded(d: Delivery) -> None:
            with self.handling(worker, d):
                handle(d)

        return guarded

    @contextlib.contextmanager
    def handling(self, worker: str, d: Delivery) -> Iterator[None]:
        """While ``worker`` handles ``d`` (one delivery, or one of a batch): recorded, and kept
        when the worker dies of it."""
        self.running[worker] = Running(d, time.monotonic())
        _local.delivery = d
        try:
            yield
        except Exception:
            self.running.pop(worker, None)
            raise
        except BaseException:
            raise  # the worker dies: run() reports the message it was handling
        else:
            self.running.pop(worker, None)
        finally:
            _local.delivery = None

    def run(self, worker: str, adapter: str | None, loop: Callable[[], None]) -> None:
        """The thread of ``worker``: ``loop`` until the daemon stops, restarted whenever it dies."""
        backoff = _BACKOFF_FIRST
        while True:
            try:
                loop()
                return  # the daemon is stopping
            except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt too: nothing ends silently
                running = self.running.pop(worker, None)
                self._died(worker, adapter, exc, running, backoff)
            if self.d.stopping.wait(backoff):
                return
            backoff = min(backoff * 2, _BACKOFF_MAX)

    def _died(self, worker: str, adapter: str | None, exc: BaseException, running: Running | None,
              backoff: float) -> None:
        with self._lock:
            self.deaths[worker] = self.deaths.get(worker, 0) + 1
            deaths = self.deaths[worker]
        cause = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        message = running.delivery.message_id if running is not None else None
        on = f" on message {message}" if message else ""
        log.error("worker %s%s died%s: %s (death %d); restarting it in %g s", worker,
                  f" of adapter {adapter}" if adapter else "", on, cause, deaths, backoff,
                  extra={"worker": worker, "adapter": adapter, "message_id": message})
        log.debug("worker %s: the error above in full", worker, exc_info=exc)
        if running is not None and self.d.transport is not None:
            try:
                outcome = self.d.transport.nack(running.delivery, f"the worker died: {cause}", worker)
                log.warning("%s: message %s given back (%s)", worker, message, outcome, extra={"worker": worker})
            except CouplerError as nack_error:  # its lease ends and it comes back anyway
                log.error("%s: cannot give message %s back: %s", worker, message, nack_error)
        if adapter is not None and adapter in self.d.adapters:
            self.d.statistics.count(adapter, "failed")
            self.d.statistics.degrade(adapter, f"its worker {worker} died {deaths} time(s), last{on}: {cause}",
                                      DEGRADED_SECONDS)

    def still_running(self) -> dict[str, Running]:
        return dict(self.running)


def drain(daemon: Daemon, timeout: float) -> list[str]:
    """Stop every inbound side, then wait up to ``timeout`` seconds for the workers to finish
    the messages in flight. Returns the workers still running then (named in the log)."""
    daemon.stopping.set()  # workers take nothing new; adapters' own threads may not publish
    for ra in daemon.adapters.values():
        if not ra.started:
            continue
        stop_inbound: Any = getattr(ra.adapter, "stop_inbound", None)
        if stop_inbound is None:
            continue
        try:
            stop_inbound()
        except Exception:
            log.exception("adapter %s failed to stop its inbound side", ra.name, extra={"adapter": ra.name})
    deadline = time.monotonic() + timeout
    for t in daemon._threads:
        t.join(max(0.0, deadline - time.monotonic()))
    alive = [t.name for t in daemon._threads if t.is_alive()]
    if alive:
        running = daemon.supervisor.still_running()
        now = time.monotonic()
        named = []
        for name in alive:
            r = running.get(name)
            named.append(f"{name} (message {r.delivery.message_id}, for {now - r.since:.0f} s)" if r else name)
        log.error("drain: still running after %g s, abandoned (their messages are delivered again after the "
                  "restart): %s", timeout, "; ".join(named), extra={"abandoned": alive})
    return alive


def abandoned_adapters(daemon: Daemon, workers: list[str]) -> set[str]:
    """The adapters whose workers (``deliver:NAME``, ``commands:NAME``) were abandoned."""
    names = {w.split(":", 1)[1].split("#", 1)[0] for w in workers if ":" in w}
    return {n for n in names if n in daemon.adapters}


__all__ = ["DEGRADED_SECONDS", "Supervisor", "abandoned_adapters", "drain", "in_flight"]
