"""What every fuzz test shares: the seed of its random run, its time budget, and the bound of
one case (time and memory).

- :data:`SEED` (``COUPLER_FUZZ_SEED=N`` replays a run) and :data:`BUDGET` (seconds of a random
  run, ``COUPLER_FUZZ_SECONDS``, 3 by default: a few seconds in ``make test``; set it to minutes
  for a long run);
- :func:`cases` the case numbers of a run that lasts :data:`BUDGET` (and at least ``least``);
- :func:`bounded` one case within ``seconds`` and ``memory`` bytes (tracemalloc's peak).

The time bound is an interval timer (``SIGALRM``), which is also pytest-timeout's (its
default ``signal`` method): a case's timer is armed for the sooner of the case's end and the
test's own time-out, and when the case ends the test's timer is armed again for what is left
of it, with its handler. A test whose time-out comes during a case still fails by
pytest-timeout. A timer cannot interrupt a hang inside C code (lxml, ``int()`` of a billion
digits): ``watchdog`` ends the process with the case's Python stack after a few periods.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import random
import signal
import threading
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

SEED = int(os.environ.get("COUPLER_FUZZ_SEED", random.randrange(2**32)))
BUDGET = float(os.environ.get("COUPLER_FUZZ_SECONDS", "3"))
#: the most one case may take before it counts as a hang
CASE_SECONDS = 5.0
MB = 1024 * 1024


class Hang(BaseException):
    """A case that did not end in its time. A ``BaseException``, as ``KeyboardInterrupt``: the
    code under test that turns any ``Exception`` into its own error does not hide it."""


def cases(least: int = 1, budget: float | None = None) -> Iterator[int]:
    """0, 1, 2, ... for ``budget`` seconds (:data:`BUDGET` by default), at least ``least``."""
    deadline = time.monotonic() + (BUDGET if budget is None else budget)
    count = 0
    while count < least or time.monotonic() < deadline:
        yield count
        count += 1


@contextlib.contextmanager
def deadline(label: str, seconds: float = CASE_SECONDS) -> Iterator[None]:
    """Raise :class:`Hang` in the case if it runs longer than ``seconds``; the interval timer
    that was armed (pytest-timeout's) is honoured during the case and re-armed after it."""
    if threading.current_thread() is not threading.main_thread():  # no signals: checked after
        started = time.monotonic()
        yield
        if time.monotonic() - started > seconds:
            raise Hang(f"{label}: no end after {seconds} s (COUPLER_FUZZ_SEED={SEED} replays it)")
        return
    started = time.monotonic()
    previous = signal.getsignal(signal.SIGALRM)
    outer, interval = signal.getitimer(signal.ITIMER_REAL)
    outer_end = started + outer if outer else None

    def fired(signum: int, frame: Any) -> None:
        if outer_end is not None and time.monotonic() >= outer_end - 0.001 and callable(previous):
            signal.signal(signal.SIGALRM, previous)  # the test's own time-out: its handler decides
            previous(signum, frame)
            return
        raise Hang(f"{label}: no end after {seconds} s (COUPLER_FUZZ_SEED={SEED} replays it)")

    signal.signal(signal.SIGALRM, fired)
    signal.setitimer(signal.ITIMER_REAL, min(seconds, outer) if outer else seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_end is not None:
            signal.setitimer(signal.ITIMER_REAL, max(outer_end - time.monotonic(), 0.001), interval)


@contextlib.contextmanager
def bounded(label: str, *, seconds: float = CASE_SECONDS, memory: int | None = None,
            watchdog: bool = False) -> Iterator[None]:
    """One case: at most ``seconds`` (:func:`deadline`) and, when ``memory`` is given, at most
    that many bytes allocated at its peak (nothing allocated from a size the input claims).
    ``watchdog``: a hang in C code ends the process with the stacks after 6 ``seconds``."""
    if watchdog:
        faulthandler.dump_traceback_later(6 * seconds, exit=True)
    tracing = memory is not None and not tracemalloc.is_tracing()
    if tracing:
        tracemalloc.start()
    try:
        with deadline(label, seconds):
            yield
        if tracing:
            peak = tracemalloc.get_traced_memory()[1]
            assert peak < memory, f"{label}: {peak} bytes allocated, more than {memory} (COUPLER_FUZZ_SEED={SEED})"
    finally:
        if tracing:
            tracemalloc.stop()
        if watchdog:
            faulthandler.cancel_dump_traceback_later()
