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

from .test_batch_translate import _accounts

REPO = Path(__file__).resolve().parents[2]


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for f in sorted(out.glob("part-*.json")) for line in f.read_text().splitlines()]


def translate(cpy: Path, data: Path, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "coupler.bus.cli.main", "batch", "translate", "--from", f"copybook:{cpy}",
         "--to", "jsonl", "-o", "encoding=ascii", "-o", "input_split_size_mb=1", "--master", "local[2]",
         str(data), "--output", str(out)],
        env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )


def test_a_killed_translate_leaves_the_old_output_whole_and_the_rerun_writes_each_record_once(
        spark: Any, tmp_path: Path) -> None:
    cpy, _mapping, small = _accounts(tmp_path, 10)
    out = tmp_path / "out"
    first = translate(cpy, small, out)
    assert first.wait(timeout=300) == 0, first.stderr.read()  # type: ignore[union-attr]
    first.stderr.close()  # type: ignore[union-attr]
    assert len(records(out)) == 10

    unit = small.read_bytes()
    big = tmp_path / "big.dat"
    copies = 2000  # 20,000 records in 1 MB splits: the kill lands while tasks write
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

    rerun = translate(cpy, big, out)
    assert rerun.wait(timeout=600) == 0, rerun.stderr.read()  # type: ignore[union-attr]
    rerun.stderr.close()  # type: ignore[union-attr]
    got = records(out)
    assert len(got) == 10 * copies
    assert sum(r["ACCT_ID"] for r in got) == copies * sum(range(10))
    assert not list(staging.glob("*")), "the killed job's staging was left"
