"""SIGKILL of the process polling a drop directory: nothing lost, nothing published twice."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from coupler.adapters.common.fs import LocalFS
from coupler.adapters.common.outbound import FileWriter, OutboundSettings
from coupler.adapters.common.state import FileStateStore

from ..filebus import Bus

REPO = Path(__file__).resolve().parents[3]


def run_child(site: Path, drop: Path, kill: str) -> int:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("crash_child.py")), str(site), str(drop), kill],
        cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, capture_output=True, timeout=60,
    )
    return proc.returncode


def test_sigkill_between_publishing_and_archiving(tmp_path: Path) -> None:
    site, drop = tmp_path / "site", tmp_path / "drop"
    drop.mkdir()
    (drop / "batch.txt").write_bytes(b"r1\nr2\nr3\n")
    assert run_child(site, drop, "before-archive") == -signal.SIGKILL
    assert (drop / "batch.txt").exists()  # killed before archiving
    assert run_child(site, drop, "none") == 0
    assert not (drop / "batch.txt").exists() and (drop / "archive" / "batch.txt").exists()
    bus = Bus(site)
    try:
        msgs = bus.drain()
    finally:
        bus.close()
    assert [m.body for m in msgs] == [b"r1", b"r2", b"r3"]  # once each, none lost


def test_sigkill_in_the_middle_of_publishing(tmp_path: Path) -> None:
    site, drop, out = tmp_path / "site", tmp_path / "drop", tmp_path / "out"
    drop.mkdir()
    out.mkdir()
    lines = [b"line-%d" % i for i in range(6)]
    (drop / "f.txt").write_bytes(b"\n".join(lines) + b"\n")
    assert run_child(site, drop, "after-publish:2") == -signal.SIGKILL
    assert run_child(site, drop, "none") == 0
    bus = Bus(site)
    try:
        msgs = bus.drain()
    finally:
        bus.close()
    # the second batch (the third and fourth message) is published again (same message ids:
    # the kill came before its progress was recorded); nothing is lost, and an Idempotent
    # Receiver writes them once
    assert {m.body for m in msgs} == set(lines)
    assert len({m.message_id for m in msgs}) == len(lines)
    assert len(msgs) == len(lines) + 2
    state = FileStateStore(tmp_path / "writer.db")
    writer = FileWriter(
        "out", LocalFS(out), OutboundSettings(file_name="all.txt", file_exists="append", line_terminator="\n"),
        state, __import__("logging").getLogger("test"),
    )
    for m in msgs:
        writer.deliver(m)
    state.close()
    assert (out / "all.txt").read_bytes().splitlines() == lines
