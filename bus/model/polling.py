"""The polling helper of inbound adapters: poll interval, idle backoff, containment, health.

A poll returns what it did (anything with ``taken``, the units it took, and ``waiting``,
seconds until a unit it saw may become ready, or None: :class:`Polled`). After a poll that
took nothing the interval grows by ``idle_backoff`` up to ``max_interval``; a poll that took
something resets it and the next poll follows at once. A failing poll (server down, disk
full) is logged, counted and retried after the same growing interval. The thread wakes
early for a file whose stability interval is about to pass, for ``trigger()`` (the
``fetch`` command) and for ``stop()``. A failed poll is one log line; with a traceback only when
it raised neither an :class:`OSError` nor a :class:`~coupler.canonical.errors.CouplerError`
(which say what and where themselves).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from coupler.canonical.errors import CouplerError


class Polled(Protocol):
    """What one poll did."""

    @property
    def taken(self) -> int: ...

    @property
    def waiting(self) -> float | None: ...


class Poller:
    """The poll thread of one inbound adapter (exported by :mod:`coupler.bus.api`)."""

    def __init__(
        self,
        name: str,
        poll: Callable[[], Polled],
        *,
        interval: float = 5.0,
        max_interval: float = 60.0,
        idle_backoff: float = 2.0,
        heartbeat: Callable[[], None] | None = None,
        logger: logging.Logger | None = None,
    ):
        self.name = name
        self._poll = poll
        self.interval = interval
        self.max_interval = max(max_interval, interval)
        self.idle_backoff = idle_backoff
        self._heartbeat = heartbeat or (lambda: None)
        self.log = logger or logging.getLogger(f"coupler.adapter.{name}")
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.current_interval = interval
        self.polls = 0
        self.errors = 0
        self.last_error: str | None = None
        self.last_poll_at: float | None = None
        self.poll_started_at: float | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"poll:{self.name}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def trigger(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            wait = self.run_once()
            self._wake.wait(wait)
            self._wake.clear()

    def run_once(self) -> float:
        """Poll once; returns how long to wait before the next poll."""
        self.poll_started_at = time.time()
        try:
            result = self._poll()
        except Exception as exc:  # noqa: BLE001 - a failing poll must not end the thread
            self.errors += 1
            self.last_error = str(exc)
            # a CouplerError says what and where on its line (a database away, a table gone);
            # what nobody foresaw names its type too, its traceback only at DEBUG (one line each)
            cause = exc if isinstance(exc, OSError | CouplerError) else f"{type(exc).__name__}: {exc}"
            self.log.warning("%s: poll failed: %s", self.name, cause)
            self.log.debug("%s: the error above in full", self.name, exc_info=True)
            self.current_interval = min(self.current_interval * self.idle_backoff, self.max_interval)
            return self.current_interval
        finally:
            self.polls += 1
            self.last_poll_at = time.time()
            self.poll_started_at = None
            self._heartbeat()
        self.last_error = None
        if result.taken:
            self.current_interval = self.interval
            return 0.0  # there may be more: poll again at once
        self.current_interval = min(self.current_interval * self.idle_backoff, self.max_interval)
        wait = self.current_interval
        if result.waiting is not None:
            wait = min(wait, result.waiting + 0.05)
        return wait

    def health(self) -> dict[str, Any]:
        now = time.time()
        started = self.poll_started_at
        return {
            "polls": self.polls,
            "poll_errors": self.errors,
            "last_error": self.last_error,
            "last_poll_age": None if self.last_poll_at is None else round(now - self.last_poll_at, 3),
            "poll_running_for": None if started is None else round(now - started, 3),
            "interval": self.current_interval,
        }
