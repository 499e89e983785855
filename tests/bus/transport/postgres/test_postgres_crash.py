"""Acceptance of the ``postgres`` transport: two competing daemons SIGKILLed at random
instants lose nothing and duplicate nothing."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coupler.bus.testing.contract import drain
from coupler.bus.transport.postgres.transport import PostgresTransport
from coupler.canonical import Envelope
from tests.bus.transport.amqp.broker import PG_DSN, servers_or_fail, unique_names
from tests.chaos import chaos_seed, crash_size

REPO = Path(__file__).resolve().parents[4]
TOTAL, KILLS = crash_size((800, 10), (2_000, 30))  # issue 26's size with COUPLER_CRASH_FULL=1


def _start(schema: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.bus.transport.postgres.crash_worker", schema],
        cwd=REPO, stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    return proc


@pytest.mark.slow
def test_two_daemons_killed_at_random_move_every_message_exactly_once() -> None:
    servers_or_fail()
    seed = chaos_seed("postgres transport crash")
    rng = random.Random(seed)
    schema = unique_names()["postgres_schema"]
    t = PostgresTransport(PG_DSN, schema=schema).open()
    workers: list[subprocess.Popen[bytes]] = []
    sent = 0

    def top_up(count: int) -> None:
        nonlocal sent
        for start in range(sent, sent + count, 500):
            t.send("in", [Envelope(format="test.Item@1", body=str(i).encode())
                          for i in range(start, min(start + 500, sent + count))])
        sent += count

    try:
        top_up(TOTAL)
        workers = [_start(schema), _start(schema)]
        kills = 0
        while kills < KILLS:
            # on a slow machine a restart can take longer than the survivor needs to finish the
            # queue: more messages keep every kill landing while messages are in hand
            if t.stats("in")[0].depth < TOTAL // 4:
                top_up(TOTAL // 4)
            time.sleep(rng.uniform(0.0, 0.08))
            victim = rng.randrange(2)
            if workers[victim].poll() is None:
                workers[victim].send_signal(signal.SIGKILL)
                workers[victim].wait()
                kills += 1
            else:  # it found the queue empty and stopped
                assert workers[victim].returncode == 0, f"a worker failed (seed {seed})"
            workers[victim] = _start(schema)
        for w in workers:
            assert w.wait(timeout=300) == 0
        done = [int(d.envelope.body) for d in drain(t, "done")]
        assert t.dead_letters() == []
        assert t.stats("in")[0].depth == 0
        assert len(done) == sent, f"{len(done)} of {sent} moved, {len(set(done))} distinct (seed {seed})"
        assert sorted(done) == list(range(sent))
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
        t.destroy()
