"""Competing consumers in two real processes on one RabbitMQ queue (two daemons of a site)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from coupler.bus.transport.amqp.transport import AmqpTransport
from tests.bus.transport.amqp.broker import AMQP_URL, PG_DSN, destroy, servers_or_fail, unique_names
from tests.bus.transport.contract.support import doc

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture
def site() -> Iterator[tuple[AmqpTransport, dict[str, str]]]:
    servers_or_fail()
    names = unique_names()
    t = AmqpTransport(AMQP_URL, postgres=PG_DSN, **names).open()
    try:
        yield t, names
    finally:
        t.close()
        destroy(names)


def _worker(names: dict[str, str], channel: str, mode: str, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.bus.transport.amqp.worker", names["prefix"], names["postgres_schema"],
         channel, mode, str(out)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _all_lines(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def _lines(path: Path) -> list[list[str]]:
    """The ``message_id attempt`` lines a worker wrote (not its IDLE polls)."""
    return [x for x in _all_lines(path) if x != ["IDLE"]]


def _idle_after(path: Path, seen: int) -> bool:
    """The worker has polled and found nothing since its first ``seen`` lines."""
    return ["IDLE"] in _all_lines(path)[seen:]


def _wait_for(predicate, timeout: float) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _stop(*procs: subprocess.Popen[bytes]) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)


def test_two_processes_share_the_work_each_message_once(site, tmp_path: Path) -> None:
    t, names = site
    ids = t.send("work", [doc(str(i).encode()) for i in range(300)])
    a, b = tmp_path / "a.out", tmp_path / "b.out"
    workers = [_worker(names, "work", "consume", a), _worker(names, "work", "consume", b)]
    try:
        assert _wait_for(lambda: len(_lines(a)) + len(_lines(b)) >= 300, 60)
        # each consumer then polls and finds nothing: a message handed out twice would have
        # been there for one of them
        seen = {f: len(_all_lines(f)) for f in (a, b)}
        assert _wait_for(lambda: all(_idle_after(f, n) for f, n in seen.items()), 30)
    finally:
        _stop(*workers)
    got_a = [x[0] for x in _lines(a)]
    got_b = [x[0] for x in _lines(b)]
    assert sorted(got_a + got_b) == sorted(ids)  # every message, each exactly once
    assert got_a and got_b  # both competed for the work


def test_killed_consumer_unacknowledged_messages_go_to_the_other(site, tmp_path: Path) -> None:
    t, names = site
    ids = t.send("work", [doc(str(i).encode()) for i in range(20)])
    held_file, other_file = tmp_path / "held.out", tmp_path / "other.out"
    holder = _worker(names, "work", "hold", held_file)
    other = None
    try:
        assert _wait_for(lambda: ["HOLDING"] in _lines(held_file), 30)
        held = [x[0] for x in _lines(held_file) if len(x) == 2]
        assert sorted(held) == sorted(ids)  # it holds them all, under a 120 s lease
        other = _worker(names, "work", "consume", other_file)
        # the other consumer is up and has polled the queue: it found nothing
        assert _wait_for(lambda: _idle_after(other_file, 0), 30)
        assert _lines(other_file) == []  # leased: invisible to the other consumer
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        # long before the lease would have run out, the broker hands them to the other
        assert _wait_for(lambda: len(_lines(other_file)) >= 20, 30)
    finally:
        _stop(holder, *([other] if other else []))
    taken = _lines(other_file)
    assert sorted(x[0] for x in taken) == sorted(ids)
    assert all(int(x[1]) >= 2 for x in taken)  # the attempt count shows the redelivery
