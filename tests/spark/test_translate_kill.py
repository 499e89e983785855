"""SIGKILL during ``coupler batch translate``, then a rerun (issue 29 item 8): the output a
previous run wrote stays whole until the rerun replaces it, and the rerun writes every record
exactly once (the Spark ingestion job's kill-and-rerun is in test_batch_ingest.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from coupler.bus.batch.jobs import LEAN_JVM_OPTIONS
from coupler.bus.cli import main as cli

from .test_batch_translate import _accounts

REPO = Path(__file__).resolve().parents[2]
#: a JVM of its own for the killed job: about 3 minutes on a loaded 2-core machine (load 14)
pytestmark = pytest.mark.timeout(600)


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for f in sorted(out.glob("part-*.json")) for line in f.read_text().splitlines()]


def args(cpy: Path, data: Path, out: Path) -> list[str]:
    return ["batch", "translate", "--from", f"copybook:{cpy}", "--to", "jsonl", "-o", "encoding=ascii",
            "-o", "input_split_size_mb=1", str(data), "--output", str(out)]


def translate(cpy: Path, data: Path, out: Path) -> subprocess.Popen[bytes]:
    """``coupler batch translate`` in a process of its own (to be killed)."""
    return subprocess.Popen(
        [sys.executable, "-m", "coupler.bus.cli.main", *args(cpy, data, out), "--master", "local[2]",
         "--conf", f"spark.driver.defaultJavaOptions={LEAN_JVM_OPTIONS}"],  # a JVM living seconds: C1 only
        env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )


def test_a_killed_translate_leaves_the_old_output_whole_and_the_rerun_writes_each_record_once(
        spark: Any, tmp_path: Path) -> None:
    cpy, _mapping, small = _accounts(tmp_path, 10)
    out = tmp_path / "out"
    assert cli.main(args(cpy, small, out)) == 0  # the output of an earlier run (in this session's Spark)
    assert len(records(out)) == 10

    unit = small.read_bytes()
    big = tmp_path / "big.dat"
    copies = 500  # 5,000 records: the kill lands while a task writes
    with open(big, "wb") as f:
        for _ in range(copies):
            f.write(unit)
    proc = translate(cpy, big, out)
    staging = tmp_path / ".out.staging"
    try:
        deadline = time.monotonic() + 180
        while not any(p.name.startswith("part-") for p in staging.rglob("*")):
            assert proc.poll() is None, f"the job ended before it could be killed: {proc.stderr.read()!r}"  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the job did not start writing"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stderr.close()  # type: ignore[union-attr]
    assert sorted(r["ACCT_ID"] for r in records(out)) == list(range(10)), "the old output was torn"

    assert cli.main(args(cpy, big, out)) == 0  # the rerun
    got = records(out)
    assert len(got) == 10 * copies
    assert sum(r["ACCT_ID"] for r in got) == copies * sum(range(10))
    assert not list(staging.glob("*")), "the killed job's staging was left"
