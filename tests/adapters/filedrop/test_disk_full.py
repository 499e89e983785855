"""``file_exists = "append"`` is record-atomic (issue 29 item 1): on a full disk, and when the
process is killed in the middle of an append, no fragment of the record stays in the file for
the next record to be appended to.

The full disk is a small tmpfs the test mounts (root only; skipped with the reason otherwise).
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from coupler.adapters.filedrop import FileDropAdapter
from coupler.canonical import Envelope, FormatIndicator

from ..filebus import Bus, adapter

FMT = FormatIndicator.parse("acme.Line@1;text/plain")


def mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root (run the suite as root to test a full disk)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (a container without CAP_SYS_ADMIN?): {done.stderr.strip()}")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    mount_tmpfs(disk, "256k")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path, leave: int) -> Path:
    """Fill ``disk`` but for about ``leave`` bytes (whole pages); returns the filler to delete."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\1" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    size = filler.stat().st_size
    os.truncate(filler, max(0, size - leave))
    return filler


def record(n: int, size: int) -> bytes:
    head = f"record {n:04d} ".encode()
    return head + b"x" * (size - len(head))


def test_a_full_disk_never_leaves_a_fragment_for_the_next_append(bus: Bus, small_disk: Path) -> None:
    out = small_disk / "out"
    out.mkdir()
    (out / "orders.txt").write_bytes(record(0, 1004) + b"\n")
    a = adapter(FileDropAdapter, "out", {"directory": str(out), "file_name": "orders.txt", "file_exists": "append",
                                         "line_terminator": "\n"}, bus.context("out"), direction="outbound")
    a.start()
    try:
        filler = fill(small_disk, 8192)
        big = Envelope(format=FMT, body=record(1, 20_000))  # more than the space left
        with pytest.raises(OSError) as info:
            a.deliver(big)
        assert info.value.errno == errno.ENOSPC
        assert (out / "orders.txt").read_bytes() == record(0, 1004) + b"\n", "a fragment of the failed record stayed"
        assert [p.name for p in out.iterdir()] == ["orders.txt"], "the append marker stayed"
        filler.unlink()  # space freed: the dead letter is replayed, then the next record comes
        a.deliver(big)
        a.deliver(Envelope(format=FMT, body=record(2, 1004)))
        lines = (out / "orders.txt").read_bytes().split(b"\n")
        assert lines == [record(0, 1004), record(1, 20_000), record(2, 1004), b""]
    finally:
        a.stop()


CHILD = r"""
import os, signal, sys
from pathlib import Path
from coupler.adapters.common.fs import LocalFS
from coupler.adapters.common.outbound import adapter_tag, delivery_key
from coupler.adapters.common.writer import write_file

def chunks():
    yield b"half of a record " * 1000  # more than a write buffer: it reaches the file
    os.kill(os.getpid(), signal.SIGKILL)  # killed in the middle of the append
    yield b"never written\n"

write_file(LocalFS(Path(sys.argv[1])), "orders.txt", chunks(), policy="append",
           tag=f"{adapter_tag('out')}-{delivery_key(sys.argv[2])}")
"""


def test_an_append_killed_half_way_is_cut_back_at_start_before_the_next_record(bus: Bus, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "orders.txt").write_bytes(b"record 0\n")
    message_id = str(uuid.uuid4())
    child = subprocess.run([sys.executable, "-c", CHILD, str(out), message_id], capture_output=True)
    assert child.returncode == -9, child.stderr
    assert (out / "orders.txt").stat().st_size > len(b"record 0\n")  # the fragment the kill left
    a = adapter(FileDropAdapter, "out", {"directory": str(out), "file_name": "orders.txt", "file_exists": "append",
                                         "line_terminator": "\n"}, bus.context("out"), direction="outbound")
    a.start()  # recovery cuts the fragment before anything is appended
    try:
        assert (out / "orders.txt").read_bytes() == b"record 0\n"
        a.deliver(Envelope(format=FMT, body=b"record 1"))
        a.deliver(Envelope(format=FMT, body=b"record 2", message_id=message_id))  # the redelivery
        assert (out / "orders.txt").read_bytes() == b"record 0\nrecord 1\nrecord 2\n"
        assert sorted(p.name for p in out.iterdir()) == ["orders.txt"]
    finally:
        a.stop()
