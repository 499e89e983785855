"""Outbound SFTP: sshd killed in the middle of an upload, then the message redelivered: one
file on the server, byte for byte, and no ``.part`` left."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from coupler.adapters.common.outbound import adapter_tag
from coupler.adapters.sftp import SftpAdapter
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError
from tests.bus.site_helpers import wait_for

from ..filebus import Bus, adapter, deliver_in_thread
from .sshd import Sshd
from .test_transfer import options


def remote_files(remote: Path) -> list[str]:
    return sorted(p.name for p in remote.iterdir())


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_sshd_killed_mid_upload_then_redelivered_leaves_one_file_and_no_part(bus: Bus, tmp_path: Path, remote: Path) -> None:
    server = Sshd(tmp_path / "sshd-kill").start()
    data = os.urandom(1 << 20) * 48  # 48 MiB: long enough to be caught in the middle
    message = Envelope(format=FormatIndicator.parse("acme.Blob@1;application/octet-stream"), body=data,
                       properties={"name": "blob.bin"})
    a = adapter(SftpAdapter, "sftp-out", options(server, remote, file_name="{prop.name}", read_timeout=5),
                bus.context("sftp-out", channel="out"), direction="outbound")
    a.start()
    try:
        t, errors = deliver_in_thread(a, message)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            parts = [p for p in remote.iterdir() if p.name.endswith(".part")]
            if parts and parts[0].stat().st_size > 4 << 20:
                break
            time.sleep(0.01)
        else:
            pytest.fail("the upload never got going")
        server.kill()
        t.join(60)
        assert len(errors) == 1 and isinstance(errors[0], CouplerError), errors
        (part,) = remote.iterdir()  # the interrupted temporary, named after the adapter and message
        assert part.name == f".blob.bin.{adapter_tag('sftp-out')}-{message.message_id}.part"
        assert 0 < part.stat().st_size < len(data)
        health = a.health()  # down, and when it tries again (0: at the next operation)
        assert health["status"] == "down" and health["connection"]["next_attempt_in"] is not None, health
        server.start()
        wait_for(lambda: a.health()["connection"]["next_attempt_in"] == 0, "the reconnect delay to pass")
        # the redelivery finishes the upload; where it went is what the trace shows
        assert a.deliver(message) == f"sftp://root@127.0.0.1:{server.port}{remote}/blob.bin"
        assert remote_files(remote) == ["blob.bin"]
        assert (remote / "blob.bin").read_bytes() == data
        assert a.deliver(message) is None  # once more, as a crash before the acknowledgement would: no copy
        assert remote_files(remote) == ["blob.bin"]
    finally:
        a.stop()
        server.stop()


def test_interrupted_upload_temporaries_are_removed_on_start(bus: Bus, sshd: Sshd, remote: Path) -> None:
    tag = adapter_tag("sftp-out")
    orphan = remote / f".doc.json.{tag}-0b7d7a2e-5a53-4d1e-9e0e-4f2b7c1d9a10.part"
    orphan.write_bytes(b"half")
    foreign = remote / ".doc.json.0123456789ab.part"
    foreign.write_bytes(b"not ours")
    a = adapter(SftpAdapter, "sftp-out", options(sshd, remote), bus.context("sftp-out", channel="out"),
                direction="outbound")
    a.start()
    try:
        assert not orphan.exists() and foreign.exists()
    finally:
        a.stop()
