"""The bound of one fuzz case (``tests/fuzzing.py``) lives with pytest-timeout's timer: the
test's time-out is still armed after a case, fires during a case that outlasts it, and a case
that hangs is ended by its own deadline."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fuzzing import Hang, bounded


class OuterTimeout(Exception):
    pass


@pytest.fixture
def outer_timer() -> Iterator[list[int]]:
    """An interval timer and handler armed before the case, as pytest-timeout arms its own."""
    fired: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        fired.append(signum)
        raise OuterTimeout("the test's time-out")

    before = signal.signal(signal.SIGALRM, handler)
    before_timer = signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        yield fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, *before_timer)
        signal.signal(signal.SIGALRM, before)


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_the_tests_timer_and_handler_are_armed_again_after_a_case(outer_timer: list[int]) -> None:
    signal.setitimer(signal.ITIMER_REAL, 30)
    handler = signal.getsignal(signal.SIGALRM)
    with bounded("a short case", seconds=2):
        _spin(0.05)
    left, _ = signal.getitimer(signal.ITIMER_REAL)
    assert 29 < left <= 30  # what was left of the test's time-out, not cancelled
    assert signal.getsignal(signal.SIGALRM) is handler


def test_a_case_that_hangs_is_ended_by_its_deadline_whatever_the_code_catches(outer_timer: list[int]) -> None:
    signal.setitimer(signal.ITIMER_REAL, 30)
    with pytest.raises(Hang, match="a hanging case: no end after 0.2 s"), bounded("a hanging case", seconds=0.2):
        try:
            _spin(10)
        except Exception:  # noqa: BLE001 - code under test turning everything into its own error
            pass
    assert not outer_timer and signal.getitimer(signal.ITIMER_REAL)[0] > 25


def test_the_tests_time_out_during_a_case_is_the_tests(outer_timer: list[int]) -> None:
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    with pytest.raises(OuterTimeout), bounded("a long case", seconds=10):
        _spin(10)
    assert outer_timer == [signal.SIGALRM]
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0  # it came once: not armed again to come twice


def test_memory_over_the_bound_fails_the_case() -> None:
    with pytest.raises(AssertionError, match="bytes allocated"), bounded("a greedy case", memory=1024 * 1024):
        _ = bytearray(4 * 1024 * 1024)
