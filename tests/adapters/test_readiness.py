"""The readiness strategies of the polling file adapters, chosen by their options."""

from __future__ import annotations

from coupler.adapters.common.fs import FileInfo
from coupler.adapters.common.readiness import (
    DoneMarker,
    RenamedIntoPlace,
    StableSize,
    readiness_for,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _info(path: str, size: int, mtime_ns: int = 1) -> FileInfo:
    return FileInfo(path=path, size=size, mtime_ns=mtime_ns)


def test_the_options_choose_the_strategy() -> None:
    assert isinstance(readiness_for(2.0, ".done"), DoneMarker)  # a marker wins over the interval
    assert isinstance(readiness_for(0, None), RenamedIntoPlace)
    chosen = readiness_for(3.0, None)
    assert isinstance(chosen, StableSize) and chosen.stable_seconds == 3.0


def test_stable_size_waits_until_size_and_mtime_stop_changing() -> None:
    clock = Clock()
    check = StableSize(2.0, clock=clock)
    assert not check.ready(_info("a.dat", 10), {"a.dat"})  # first seen: the clock starts
    clock.now += 1.5
    assert not check.ready(_info("a.dat", 20), {"a.dat"})  # still growing: the clock restarts
    assert check.next_check_in() == 2.0
    clock.now += 2.0
    assert check.ready(_info("a.dat", 20), {"a.dat"})
    check.prune(set())  # gone from the directory: forgotten
    assert check.next_check_in() is None and check.companions("a.dat") == []


def test_a_done_marker_makes_a_file_ready_and_goes_with_it() -> None:
    marker = DoneMarker(".done")
    assert not marker.ready(_info("a.dat", 10), {"a.dat"})
    assert marker.ready(_info("a.dat", 10), {"a.dat", "a.dat.done"})
    assert marker.companions("a.dat") == ["a.dat.done"]


def test_a_file_renamed_into_place_is_ready_when_seen() -> None:
    assert RenamedIntoPlace().ready(_info("a.dat", 0), {"a.dat"})
