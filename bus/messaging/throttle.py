"""Message Throttle: how fast a consumer takes messages from its channel.

A :class:`Throttle` is a token bucket: at most ``rate`` messages per second on average, up to
``burst`` at once after a quiet period. The daemon gives one to every route and outbound
adapter that declares ``throttle`` in site.toml (:mod:`coupler.bus.runtime.daemon`): each of
its workers takes a token before it handles a received message, so the legacy system behind
an adapter never sees more than the rate however deep the channel is. How many messages are
handled at once is the number of those workers (``throttle.concurrency``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from coupler.canonical.errors import CouplerError


class Throttle:
    """At most ``rate`` messages/s (None: no limit), ``burst`` at once. ``clock``/``sleep``
    are injectable for tests."""

    def __init__(
        self,
        rate: float | None = None,
        *,
        burst: int = 1,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if rate is not None and rate <= 0:
            raise CouplerError(f"throttle rate must be > 0 messages/s, got {rate}", where="throttle.rate")
        if burst < 1:
            raise CouplerError(f"throttle burst must be >= 1, got {burst}", where="throttle.burst")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = clock()

    def acquire(self) -> None:
        """Block until one more message may start."""
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

    def __enter__(self) -> Throttle:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        pass


__all__ = ["Throttle"]
