"""SIGKILL during ``coupler batch translate``, then a rerun (issue 29 item 8): the output a
previous run wrote stays whole until the rerun replaces it, and the rerun writes every record
exactly once (the Spark ingestion job's kill-and-rerun is in test_batch_ingest.py). SIGTERM
and a full disk: one line naming what happened (the output, for a full disk), the old output
whole, neither the job's staging nor its ``OUT.errors`` left."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from coupler.bus.batch.jobs import LEAN_JVM_OPTIONS
from coupler.bus.cli import main as cli
from tests.terminal import terminate

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


COPYBOOK = """       01  REC.
           05  ID    PIC 9(6).
           05  NAME  PIC X(20).
"""


def _records_with_a_bad_one(tmp_path: Path, count: int) -> tuple[Path, Path]:
    """A copybook of 26-byte ASCII records and ``count`` of them, the tenth with an ID that is
    not a number (a bad record: ``OUT.errors`` is written)."""
    cpy = tmp_path / "rec.cpy"
    cpy.write_text(COPYBOOK)
    unit = b"".join(b"%06d%-20s" % (i, b"NAME%d" % (i * 7919 % 100003)) for i in range(100_000))
    data = tmp_path / "records.dat"
    with open(data, "wb") as fh:
        fh.write(unit[: 26 * 9] + b"ABCDEF" + unit[26 * 9 + 6 :])
        for _ in range(count // 100_000 - 1):
            fh.write(unit)
    return cpy, data


def _translate_to_parquet(cpy: Path, data: Path, out: Path, **popen: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "coupler.bus.cli", "batch", "translate", "--from", f"copybook:{cpy}", "--to", "parquet",
         "-o", "encoding=ascii", "-o", "input_split_size_mb=4", str(data), "--output", str(out), "--master", "local[2]",
         "--conf", f"spark.driver.defaultJavaOptions={LEAN_JVM_OPTIONS}"],
        env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True, **popen,
    )


def _earlier_output(out: Path) -> None:
    out.mkdir()
    (out / "part-00000.parquet").write_text("the output of an earlier run")


@pytest.mark.parametrize("group", [False, True], ids=["to the command", "to its process group"])
def test_sigterm_stops_a_translate_as_ctrl_c_does(tmp_path: Path, group: bool) -> None:
    """``kill PID``; systemd stopping a unit signals its every process, the JVM too."""
    cpy, data = _records_with_a_bad_one(tmp_path, 2_000_000)
    out = tmp_path / "out"
    _earlier_output(out)
    proc = _translate_to_parquet(cpy, data, out)
    deadline = time.monotonic() + 300
    while not any(p.name.startswith("part-") for p in (tmp_path / ".out.staging").rglob("*")):  # a task writes
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()  # type: ignore[union-attr]
        time.sleep(0.05)
    terminate(proc, group=group, timeout=120)
    assert [p.name for p in out.iterdir()] == ["part-00000.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "rec.cpy", "records.dat"]  # no staging, no errors


def test_a_full_disk_names_the_output_and_leaves_neither_staging_nor_errors(tmp_path: Path) -> None:
    """A file size limit (``ulimit -f``) stands for a full disk, as in tests/bus/cli/test_cli_outputs.py
    (large enough for the JVM's own files, not for the Parquet file of 300,000 records)."""
    cpy, data = _records_with_a_bad_one(tmp_path, 300_000)
    out = tmp_path / "out"
    _earlier_output(out)

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (512 * 1024, 512 * 1024))

    proc = _translate_to_parquet(cpy, data, out, preexec_fn=limited)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 1
    assert stderr == (
        f"coupler: error: {out}: cannot write the --output folder: File too large; nothing was written"
        " (a limit refuses a file this large (ulimit -f): raise it or choose another --output)\n"
    )
    assert [p.name for p in out.iterdir()] == ["part-00000.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "rec.cpy", "records.dat"]  # no staging, no out.errors
