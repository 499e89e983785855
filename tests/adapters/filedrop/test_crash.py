"""SIGKILL of the process polling a drop directory: nothing lost, nothing published twice."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from coupler.adapters.common.fs import LocalFS
from coupler.adapters.common.outbound import FileWriter, OutboundSettings
from coupler.adapters.common.state import FileState, FileStateStore
from coupler.canonical import Envelope, FormatIndicator

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


def test_append_cut_by_a_crash_before_or_after_its_record_is_in_the_file_once(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    fmt = FormatIndicator.parse("test.Line@1;text/plain")
    a, b, c = (Envelope(format=fmt, body=body) for body in (b"a\n", b"b\n", b"c\n"))

    def writer() -> tuple[FileState, FileWriter]:
        state = FileStateStore(tmp_path / "writer.db")
        settings = OutboundSettings(file_name="all.txt", file_exists="append")
        return state, FileWriter("out", LocalFS(out), settings, state, logging.getLogger("test"))

    state, w = writer()
    w.deliver(a)

    def killed(*args: object) -> None:  # the process dies after the append, before its record
        raise SystemExit("killed")

    w.receiver.mark = killed  # type: ignore[method-assign,union-attr]
    with pytest.raises(SystemExit):
        w.deliver(b)
    assert (out / "all.txt").read_bytes() == b"a\nb\n"
    state.close()
    state, w = writer()  # restarted: the unrecorded append is cut back, the redelivery appends it once
    w.recover()
    assert (out / "all.txt").read_bytes() == b"a\n"
    w.deliver(b)
    size = (out / "all.txt").stat().st_size
    w.deliver(c)
    # killed after the record of c, before its marker was removed: the marker is left
    (out / f".all.txt.{w.tag}-{c.message_id}.append").write_text(str(size))
    state.close()
    state, w = writer()
    w.recover()  # recorded: only the marker goes
    assert w.deliver(c) is None  # the redelivery is a duplicate
    state.close()
    assert (out / "all.txt").read_bytes() == b"a\nb\nc\n"
    assert not list(out.glob(".*"))
