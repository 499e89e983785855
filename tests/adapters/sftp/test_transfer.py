"""SFTP inbound and outbound against a real OpenSSH sshd."""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from coupler.adapters.common.errors import RemoteError
from coupler.adapters.sftp import SftpAdapter
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError
from tests.bus.site_helpers import wait_for

from ..filebus import Bus, adapter
from .sshd import PASSPHRASE, Sshd


def options(sshd: Sshd, remote: Path, **extra) -> dict:
    return {
        "host": "127.0.0.1", "port": sshd.port, "username": "root",
        "private_key": str(sshd.keys["ed25519"]), "passphrase": PASSPHRASE,
        "known_hosts": str(sshd.known_hosts), "remote_directory": str(remote),
        "stable_seconds": 0, "autopoll": False, "connect_timeout": 5, "read_timeout": 10,
        "reconnect_delay": 0.1, **extra,
    }


def inbound(bus: Bus, sshd: Sshd, remote: Path, **extra) -> SftpAdapter:
    a = adapter(SftpAdapter, "sftp-in", options(sshd, remote, **extra), bus.context("sftp-in"),
                format=FormatIndicator.parse("acme.File@1"), direction="inbound")
    a.start()
    return a


def test_fetch_then_move_remote_to_archive(bus: Bus, sshd: Sshd, remote: Path) -> None:
    (remote / "a.txt").write_bytes(b"alpha\nbeta\n")
    (remote / ".part-upload").write_bytes(b"hidden")
    a = inbound(bus, sshd, remote, payload="lines", archive_dir="done")
    try:
        result = a.pipeline.poll()
        assert (result.done, result.messages) == (1, 2)
        msgs = bus.drain()
        assert [m.body for m in msgs] == [b"alpha", b"beta"]
        assert msgs[0].properties["file.source"] == f"sftp://root@127.0.0.1:{sshd.port}{remote}"
        assert (remote / "done" / "a.txt").read_bytes() == b"alpha\nbeta\n"
        assert not (remote / "a.txt").exists() and (remote / ".part-upload").exists()
        assert list((a.data_dir / "staging").iterdir()) == []  # the staged copy is gone
        assert a.pipeline.poll().taken == 0
    finally:
        a.stop()


def test_delete_remote_after_success_and_done_files(bus: Bus, sshd: Sshd, remote: Path) -> None:
    (remote / "x.dat").write_bytes(b"x")
    a = inbound(bus, sshd, remote, after="delete", done_suffix=".ok")
    try:
        assert a.pipeline.poll().taken == 0  # no done file yet
        (remote / "x.dat.ok").touch()
        assert a.pipeline.poll().done == 1
        assert [m.body for m in bus.drain()] == [b"x"]
        assert sorted(p.name for p in remote.iterdir()) == []
    finally:
        a.stop()


def test_remote_readiness_waits_for_a_stable_file(bus: Bus, sshd: Sshd, remote: Path) -> None:
    (remote / "growing.dat").write_bytes(b"1")
    a = inbound(bus, sshd, remote, stable_seconds=1.5)
    try:
        assert a.pipeline.poll().taken == 0
        with open(remote / "growing.dat", "ab") as f:
            f.write(b"2")
        os.utime(remote / "growing.dat", (time.time() + 5, time.time() + 5))  # mtime moves on
        changed = time.monotonic()  # the poll below sees the change: its clock starts after this
        assert a.pipeline.poll().taken == 0  # changed: the clock restarts
        wait_for(lambda: a.pipeline.poll().done == 1, "the file to be taken once stable", timeout=10)
        assert time.monotonic() - changed >= 1.5  # not before it stayed unchanged for stable_seconds
        assert [m.body for m in bus.drain()] == [b"12"]
    finally:
        a.stop()


def test_large_directory_is_listed_page_by_page_and_limited_per_poll(bus: Bus, sshd: Sshd, remote: Path) -> None:
    for i in range(120):
        (remote / f"f{i:04d}.txt").write_bytes(b"%d" % i)
    a = inbound(bus, sshd, remote, list_page_size=16, max_files_per_poll=50, after="delete")
    try:
        assert [a.pipeline.poll().done for _ in range(3)] == [50, 50, 20]
        bodies = [m.body for m in bus.drain()]
        assert bodies == [b"%d" % i for i in range(120)]
    finally:
        a.stop()


def test_outbound_upload_temp_then_rename_mkdirs_chmod_policy(bus: Bus, sshd: Sshd, remote: Path) -> None:
    opts = options(sshd, remote, file_name="{prop.dir}/{prop.name}", chmod="0604",
                   file_exists="unique", done_file_suffix=".done")
    a = adapter(SftpAdapter, "sftp-out", opts, bus.context("sftp-out", channel="out"), direction="outbound")
    a.start()
    try:
        fmt = FormatIndicator.parse("acme.Doc@1;application/json")
        for body in (b"one", b"two"):
            a.deliver(Envelope(format=fmt, body=body, properties={"dir": "in/deep", "name": "doc.json"}))
        folder = remote / "in" / "deep"
        assert sorted(p.name for p in folder.iterdir()) == ["doc-1.json", "doc-1.json.done", "doc.json", "doc.json.done"]
        assert (folder / "doc.json").read_bytes() == b"one" and (folder / "doc-1.json").read_bytes() == b"two"
        assert stat.S_IMODE((folder / "doc.json").stat().st_mode) == 0o604
        from coupler.bus.api import CommandFault

        with pytest.raises(CommandFault, match="path traversal"):
            a.deliver(Envelope(format=fmt, body=b"evil", properties={"dir": "../..", "name": "x"}))
    finally:
        a.stop()


def test_200_mb_file_streams_with_flat_memory(bus: Bus, sshd: Sshd, remote: Path) -> None:
    block = os.urandom(1 << 20)
    digest = hashlib.sha256()
    with open(remote / "big.bin", "wb") as f:
        for i in range(200):
            chunk = i.to_bytes(4, "big") + block[4:]
            f.write(chunk)
            digest.update(chunk)
    a = inbound(bus, sshd, remote, claim_check_bytes=1 << 20)
    try:
        tracemalloc.start()
        try:
            result = a.pipeline.poll()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert result.done == 1
        assert peak < 48 << 20, f"peak Python memory {peak / 2**20:.1f} MiB while streaming 200 MiB"
        [msg] = bus.drain()
        claimed = Path(msg.properties["coupler.claim-file"])
        assert msg.body == b"" and msg.properties["coupler.claim-size"] == str(200 << 20)
        h = hashlib.sha256()
        with open(claimed, "rb") as f:
            while data := f.read(1 << 20):
                h.update(data)
        assert h.hexdigest() == digest.hexdigest()
    finally:
        a.stop()


# paramiko's read-ahead thread fails with "Socket is closed" when the server dies under it:
# that is the situation under test, not a fault of the adapter
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_server_killed_mid_transfer_delivers_once_and_never_a_partial_file(bus: Bus, tmp_path: Path, remote: Path) -> None:
    server = Sshd(tmp_path / "sshd-kill").start()
    data = os.urandom(1 << 20) * 80  # 80 MiB
    (remote / "payload.bin").write_bytes(data)
    a = inbound(bus, server, remote, claim_check_bytes=1 << 20, read_timeout=5)
    staging = a.data_dir / "staging"
    errors: list[BaseException] = []
    try:
        def poll() -> None:
            try:
                a.pipeline.poll()
            except BaseException as exc:  # noqa: BLE001 - the test inspects it
                errors.append(exc)

        t = threading.Thread(target=poll)
        t.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            parts = list(staging.glob("*.part"))
            if parts and parts[0].stat().st_size > 8 << 20:
                break
            time.sleep(0.01)
        server.kill()
        t.join(30)
        assert len(errors) == 1 and isinstance(errors[0], RemoteError), errors
        assert bus.drain() == []  # nothing published from a partial download
        partial = list(staging.glob("*.part"))[0].stat().st_size
        assert 0 < partial < len(data)
        health = a.health()  # down, and when it tries again (0: at the next operation)
        assert health["status"] == "down" and health["connection"]["next_attempt_in"] is not None, health
        server.start()
        wait_for(lambda: a.health()["connection"]["next_attempt_in"] == 0, "the reconnect delay to pass")
        result = a.pipeline.poll()
        assert result.done == 1
        assert a.pipeline.local.resumed_bytes >= partial  # resumed, not downloaded again
        [msg] = bus.drain()
        assert Path(msg.properties["coupler.claim-file"]).read_bytes() == data
        assert a.pipeline.poll().taken == 0
        assert bus.drain() == []
        assert (remote / "archive" / "payload.bin").exists()
    finally:
        a.stop()
        server.stop()


def write_raw(directory: Path, name: bytes, data: bytes) -> bytes:
    """A file named by bytes (a name that need not be UTF-8), beside the sshd's other files."""
    path = os.path.join(os.fsencode(directory), name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return path


def reports(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


MUELLER = "RECHNUNG_MÜLLER.DAT".encode("cp1252")  # b"RECHNUNG_M\xdcLLER.DAT": not UTF-8


def test_a_file_whose_name_is_not_utf8_is_taken_beside_the_others_and_reported_once(
        bus: Bus, sshd: Sshd, remote: Path, caplog: pytest.LogCaptureFixture) -> None:
    """paramiko reads SFTP names only as UTF-8 and raises at a cp1252 one, which stopped the
    whole directory; the adapter lists names as bytes: the good files and the cp1252 one are
    taken, the latter named with its other bytes as \\xNN and archived under its own bytes;
    the name is reported once, in one line, not at every poll."""
    write_raw(remote, MUELLER, b"mueller")
    (remote / "good1.dat").write_bytes(b"good1")
    (remote / "good2.dat").write_bytes(b"good2")
    folder = os.path.join(os.fsencode(remote), b"ABLAGE_\xc4")  # a cp1252 "Ä": not UTF-8 either
    os.mkdir(folder)
    write_raw(Path(os.fsdecode(folder)), b"inner.dat", b"inner")
    caplog.set_level(logging.WARNING)
    a = inbound(bus, sshd, remote, after="keep", recursive=True)
    try:
        result = a.pipeline.poll()
        assert (result.done, result.failed, result.errors) == (4, 0, 0)
        got = {m.properties["file.path"]: m.body for m in bus.drain()}
        assert got == {"RECHNUNG_M\\xdcLLER.DAT": b"mueller", "good1.dat": b"good1", "good2.dat": b"good2",
                       "ABLAGE_\\xc4/inner.dat": b"inner"}
        assert a.pipeline.poll().taken == 0 and a.pipeline.poll().taken == 0  # recorded, kept, listed again
        [line] = reports(caplog, "RECHNUNG")
        assert "\n" not in line and "b'RECHNUNG_M\\xdcLLER.DAT'" in line and str(remote) in line
        assert "is not utf-8" in line and "filename_encoding" in line
        # the line docs/adapters/sftp.md shows, on this server's address and folder
        page = (Path(__file__).resolve().parents[3] / "docs" / "adapters" / "sftp.md").read_text()
        said = page.split("not at every poll:\n\n```\n", 1)[1].split("\n```", 1)[0]
        assert line == said.replace("sftp://coupler@mainframe.example:22/outbox",
                                    f"sftp://root@127.0.0.1:{sshd.port}{remote}"), (line, said)
        assert len(reports(caplog, "ABLAGE_")) == 1
    finally:
        a.stop()


def test_filename_encoding_reads_the_names_as_text_and_the_file_is_moved_under_its_own_bytes(
        bus: Bus, sshd: Sshd, remote: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_raw(remote, MUELLER, b"mueller")
    (remote / "good.dat").write_bytes(b"good")
    caplog.set_level(logging.WARNING)
    a = inbound(bus, sshd, remote, filename_encoding="cp1252", archive_dir="Ablage-Müller")
    try:
        assert a.pipeline.poll().done == 2
        names = sorted(m.properties["file.name"] for m in bus.drain())
        assert names == ["RECHNUNG_MÜLLER.DAT", "good.dat"]
        archive = os.path.join(os.fsencode(remote), "Ablage-Müller".encode("cp1252"))
        assert sorted(os.listdir(archive)) == [MUELLER, b"good.dat"]
        assert os.listdir(os.fsencode(remote)) == [os.path.basename(archive)]
        assert reports(caplog, "RECHNUNG") == []  # valid cp1252: nothing to report
    finally:
        a.stop()


def test_a_file_whose_name_is_not_utf8_fails_like_any_file_into_the_error_directory(
        bus: Bus, sshd: Sshd, remote: Path) -> None:
    """Its content is not the UTF-8 the site expects: it goes to error/ under its own bytes,
    with a .reason file; the good file beside it is taken and deleted."""
    write_raw(remote, MUELLER, b"M\xfcller\n")
    (remote / "good.dat").write_bytes(b"good\n")
    a = inbound(bus, sshd, remote, after="delete", payload="lines", encoding="utf-8")
    try:
        result = a.pipeline.poll()
        assert (result.done, result.failed) == (1, 1)
        assert [m.body for m in bus.drain()] == [b"good"]
        error = os.path.join(os.fsencode(remote), b"error")
        assert sorted(os.listdir(error)) == [MUELLER, MUELLER + b".reason"]
        reason = Path(os.path.join(error, MUELLER + b".reason").decode("utf-8", "surrogateescape")).read_text()
        assert f"file: sftp://root@127.0.0.1:{sshd.port}{remote}/RECHNUNG_M\\xdcLLER.DAT\n" in reason
        assert sorted(os.listdir(os.fsencode(remote))) == [b"error"]
        assert a.pipeline.poll().taken == 0
    finally:
        a.stop()


def test_names_are_given_back_to_the_server_byte_for_byte() -> None:
    from coupler.adapters.sftp.remote import decode_name

    for raw, encoding, text in [(MUELLER, "utf-8", "RECHNUNG_M\udcdcLLER.DAT"), (MUELLER, "cp1252", "RECHNUNG_MÜLLER.DAT"),
                                (b"\x81x", "cp1252", "\udc81x"),  # not a cp1252 character
                                ("≒.dat".encode("cp932"), "cp932", "≒.dat"),
                                (b"\x87\x90.dat", "cp932", "\udc87\udc90.dat")]:  # NEC's ≒: encoded back as \x81\xe0
        assert decode_name(raw, encoding) == text
        assert text.encode(encoding, "surrogateescape") == raw


@pytest.mark.parametrize(("value", "message"), [
    ("klingon", "unknown encoding 'klingon'"),
    ("utf-16", "does not keep ASCII as it is"),
])
def test_filename_encoding_is_checked_at_load(bus: Bus, sshd: Sshd, remote: Path, value: str, message: str) -> None:
    from coupler.bus.api import OptionsError

    with pytest.raises((CouplerError, OptionsError), match=message) as refused:
        adapter(SftpAdapter, "sftp-in", options(sshd, remote, filename_encoding=value), bus.context("sftp-in"),
                direction="inbound")
    assert "filename_encoding" in str(refused.value) and "\n" not in str(refused.value)


def test_outbound_names_are_written_in_filename_encoding_and_one_it_cannot_hold_is_refused(
        bus: Bus, sshd: Sshd, remote: Path) -> None:
    from coupler.bus.api import CommandFault

    opts = options(sshd, remote, file_name="{prop.name}", filename_encoding="cp1252")
    a = adapter(SftpAdapter, "sftp-out", opts, bus.context("sftp-out", channel="out"), direction="outbound")
    a.start()
    try:
        fmt = FormatIndicator.parse("acme.Doc@1;text/plain")
        a.deliver(Envelope(format=fmt, body=b"one", properties={"name": "Müller.txt"}))
        assert os.listdir(os.fsencode(remote)) == ["Müller.txt".encode("cp1252")]
        with pytest.raises(CommandFault) as refused:
            a.deliver(Envelope(format=fmt, body=b"two", properties={"name": "Ωmega.txt"}))
        message = str(refused.value)
        assert "\n" not in message and "'Ωmega.txt' cannot be written in the server's file-name encoding cp1252" in message
        assert os.listdir(os.fsencode(remote)) == ["Müller.txt".encode("cp1252")]  # no temporary left
    finally:
        a.stop()
