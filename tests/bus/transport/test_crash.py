"""Acceptance: SIGKILL at random instants loses nothing and duplicates nothing."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coupler.bus.transport.sqlite.transport import SqliteTransport
from tests.bus.transport.contract.support import drain
from tests.chaos import chaos_rng

REPO = Path(__file__).resolve().parents[3]
TOTAL = 10_000
KILLS = 25


def _start(data_dir: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.bus.crash_worker", str(data_dir), str(TOTAL)],
        cwd=REPO,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    return proc


@pytest.mark.slow
def test_every_message_consumed_exactly_once_despite_sigkill(tmp_path: Path) -> None:
    rng = chaos_rng("test_every_message_consumed_exactly_once_despite_sigkill")
    kills = 0
    proc = _start(tmp_path)
    try:
        while kills < KILLS:
            time.sleep(rng.uniform(0.0, 0.04))
            if proc.poll() is not None:
                break
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
            proc = _start(tmp_path)
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert kills >= 20, f"the worker finished after only {kills} kills"
    with SqliteTransport(tmp_path) as t:
        done = [int(d.envelope.body) for d in drain(t, "done")]
        assert t.dead_letters() == []
        assert t.stats("in")[0].depth == 0
    assert len(done) == TOTAL, f"{len(done)} consumed, {len(set(done))} distinct"
    assert sorted(done) == list(range(TOTAL))
