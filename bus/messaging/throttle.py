"""Message Throttle and an event-driven consumer that honours it.

A :class:`Throttle` caps how fast (``rate`` messages per second, token bucket with
``burst``) and how many at once (``concurrency``) a consumer processes messages.
:class:`Consumer` runs a handler over a channel with worker threads under a throttle: a
handler that returns acknowledges the message, one that raises rejects it (redelivery with
backoff, then the Dead Letter Channel).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from coupler.bus.transport.base import Delivery, Transport
from coupler.canonical.errors import CouplerError

log = logging.getLogger(__name__)


class Throttle:
    """Caps rate (messages/s) and concurrency. ``clock``/``sleep`` are injectable for tests."""

    def __init__(
        self,
        rate: float | None = None,
        concurrency: int | None = None,
        *,
        burst: int = 1,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if rate is not None and rate <= 0:
            raise CouplerError(f"throttle rate must be > 0 messages/s, got {rate}", where="throttle.rate")
        if concurrency is not None and concurrency < 1:
            raise CouplerError(
                f"throttle concurrency must be >= 1, got {concurrency}", where="throttle.concurrency"
            )
        self.rate = rate
        self.concurrency = concurrency
        self.burst = max(1, burst)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(concurrency) if concurrency else None
        self._tokens = float(self.burst)
        self._last = clock()

    def _take_token(self) -> None:
        if self.rate is None:
            return
        while True:
            with self._lock:
                now = self._clock()
                self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
                self._last = now
                if self._tokens >= 1 - 1e-9:  # float rounding of the refill
                    self._tokens = max(0.0, self._tokens - 1)
                    return
                wait = (1 - self._tokens) / self.rate
            self._sleep(wait)

    def acquire(self) -> None:
        """Block until one more message may start."""
        if self._slots is not None:
            self._slots.acquire()
        try:
            self._take_token()
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        if self._slots is not None:
            self._slots.release()

    def __enter__(self) -> Throttle:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


Handler = Callable[[Delivery], Any]


class Consumer:
    """Event-driven consumer: ``workers`` threads receive from ``channel`` and run ``handler``."""

    def __init__(
        self,
        transport: Transport,
        channel: str,
        name: str,
        handler: Handler,
        *,
        throttle: Throttle | None = None,
        workers: int = 1,
        lease_seconds: float | None = None,
        poll: float = 0.2,
    ):
        self.transport = transport
        self.channel = channel
        self.name = name
        self.handler = handler
        self.throttle = throttle or Throttle()
        self.workers = workers
        self.lease_seconds = lease_seconds
        self.poll = poll
        self.processed = 0
        self.failed = 0
        self._count_lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def handle(self, delivery: Delivery) -> bool:
        """Run the handler on one delivery and settle it; True when it succeeded."""
        try:
            self.handler(delivery)
        except Exception as exc:  # noqa: BLE001 - any handler failure is a nack
            outcome = self.transport.nack(delivery, exc, self.name)
            log.warning("%s failed on %s (%s): %s", self.name, delivery.message_id, outcome, exc)
            with self._count_lock:
                self.failed += 1
            return False
        self.transport.ack(delivery)
        with self._count_lock:
            self.processed += 1
        return True

    def _work(self) -> None:
        while not self._stop.is_set():
            self.throttle.acquire()
            try:
                got = self.transport.receive_wait(
                    self.channel, self.name, max=1, wait=self.poll, lease_seconds=self.lease_seconds
                )
                for delivery in got:
                    self.handle(delivery)
            finally:
                self.throttle.release()

    def start(self) -> Consumer:
        for i in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"{self.name}-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self, timeout: float | None = None) -> None:
        """Stop receiving and wait for in-flight messages to finish (drain)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)
        self._threads = []
