"""The SFTP inbound side against a real OpenSSH sshd whose files change under it and whose
server stops answering: a file cut short, grown or removed between its listing and its
download, a server frozen in the middle of a download. Each poll ends within its bound; no
part of a file is ever published; the connection is dropped only when the server is at fault;
the file is taken whole, once, when it is stable. (The server killed mid-transfer, names that
are not UTF-8: test_transfer.py.)"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from coupler.adapters.common.errors import RemoteError
from coupler.adapters.common.fs import FileInfo
from coupler.adapters.sftp import SftpAdapter
from tests.bus.site_helpers import wait_for

from ..filebus import Bus, deliver_in_thread
from .sshd import Sshd, descendants
from .test_transfer import inbound


def before_first_download(a: SftpAdapter, action: Callable[[FileInfo], None]) -> None:
    """Run ``action`` on the remote file between the poll's listing and its download, once
    (the writer at work on the server)."""
    original = a.pipeline.local.fetch
    calls = []

    def fetch(info: FileInfo) -> Path:
        if not calls:
            calls.append(info)
            action(info)
        return original(info)

    a.pipeline.local.fetch = fetch


def timed_poll(a: SftpAdapter):
    started = time.monotonic()
    result = a.pipeline.poll()
    return result, time.monotonic() - started


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def connection_kept(a: SftpAdapter) -> None:
    health = a.health()
    assert health["status"] == "ok", health
    assert (health["connection"]["connects"], health["connection"]["connect_failures"]) == (1, 0), health


def test_a_file_cut_short_during_its_download_is_taken_again_without_dropping_the_connection(
        bus: Bus, sshd: Sshd, remote: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The download asked for the bytes the listing promised; past the file's new end the
    server answers "end of file", which paramiko's readv waited on until ``read_timeout``:
    then the connection was dropped as lost and the server shown ``down``. Now the poll ends
    at once, nothing is published, the connection stays, and the next poll takes the file as
    it is now."""
    data = os.urandom(4 << 20)
    (remote / "cut.dat").write_bytes(data)
    caplog.set_level(logging.INFO)
    a = inbound(bus, sshd, remote, read_timeout=10)
    before_first_download(a, lambda info: os.truncate(remote / info.path, 1000))
    try:
        result, took = timed_poll(a)
        assert (result.done, result.failed, result.errors, result.messages) == (0, 0, 0, 0), result
        assert took < 5, f"the poll took {took:.1f} s (read_timeout 10 s)"
        assert bus.drain() == []
        connection_kept(a)
        assert warnings_of(caplog) == []
        assert list((a.data_dir / "staging").iterdir()) == []  # no part of the old content kept
        assert any("cut.dat is taken again once stable: shrank while it was read (4194304 bytes listed, 1000 now)"
                   in r.getMessage() for r in caplog.records)
        assert a.pipeline.poll().done == 1
        assert [m.body for m in bus.drain()] == [data[:1000]]
        connection_kept(a)
    finally:
        a.stop()


def test_a_file_growing_during_its_download_is_published_once_whole(bus: Bus, sshd: Sshd, remote: Path) -> None:
    """The download read the size listed, published it, and only then saw the file had grown:
    the first lines went out as a message of their own, then the whole file again as
    another. Now the open file is checked after its last byte, before anything is published."""
    (remote / "orders.txt").write_bytes(b"alpha\n")
    a = inbound(bus, sshd, remote, payload="lines")

    def append(info: FileInfo) -> None:
        path = remote / info.path
        with open(path, "ab") as f:
            f.write(b"beta\n")
        os.utime(path, (time.time() + 5, time.time() + 5))

    before_first_download(a, append)
    try:
        result = a.pipeline.poll()
        assert (result.done, result.messages, result.errors) == (0, 0, 0), result
        assert bus.drain() == []
        assert list((a.data_dir / "staging").iterdir()) == []
        result = a.pipeline.poll()
        assert (result.done, result.messages) == (1, 2), result
        assert [m.body for m in bus.drain()] == [b"alpha", b"beta"]
        connection_kept(a)
    finally:
        a.stop()


def test_a_file_removed_between_listing_and_download_is_no_error(
        bus: Bus, sshd: Sshd, remote: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Another client took the file first: "could not be taken (will retry): [Errno 2] No
    such file" was a WARNING and an error of the poll; it is the race any shared directory
    has, as the file drop adapter says."""
    (remote / "gone.dat").write_bytes(b"x" * 1000)
    (remote / "stays.dat").write_bytes(b"stays")
    caplog.set_level(logging.INFO)
    a = inbound(bus, sshd, remote)
    before_first_download(a, lambda info: (remote / info.path).unlink())
    try:
        result = a.pipeline.poll()
        assert (result.done, result.errors) == (1, 0), result
        assert [m.body for m in bus.drain()] == [b"stays"]
        assert warnings_of(caplog) == []
        assert any("gone.dat is taken again once stable: removed after it was listed" in r.getMessage()
                   for r in caplog.records)
        connection_kept(a)
    finally:
        a.stop()


@pytest.mark.parametrize("replacement", ["a file", "nothing"])
def test_a_sub_directory_replaced_between_listing_and_descent_is_skipped(
        bus: Bus, sshd: Sshd, remote: Path, replacement: str, caplog: pytest.LogCaptureFixture) -> None:
    """``recursive = true``: a sub-directory listed as one and then, before the scan lists it,
    removed or replaced by a file is the listing race a file removed before its download is:
    skipped for that poll without a warning, the other files taken (the file drop adapter's
    way)."""
    import shutil

    (remote / "sub").mkdir()
    (remote / "sub" / "inside.dat").write_bytes(b"inside")
    (remote / "top.dat").write_bytes(b"top")
    caplog.set_level(logging.INFO)
    a = inbound(bus, sshd, remote, recursive=True, after="keep")
    fs = a.pipeline.fs
    raw = fs.raw
    replaced: list[str] = []

    def replace_sub(rel: str) -> bytes:  # the scan's step from listing "sub" to listing it
        if rel == "sub" and not replaced:
            replaced.append(rel)
            shutil.rmtree(remote / "sub")
            if replacement == "a file":
                (remote / "sub").write_bytes(b"now a file")
        return raw(rel)

    fs.raw = replace_sub
    try:
        result = a.pipeline.poll()
        assert replaced == ["sub"]
        assert (result.done, result.errors) == (1, 0), result
        assert [m.body for m in bus.drain()] == [b"top"]
        assert warnings_of(caplog) == []
        connection_kept(a)
    finally:
        a.stop()


# paramiko's transport thread may see the frozen session's socket closed under it
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_server_frozen_in_the_middle_of_a_download_ends_the_poll_at_read_timeout(
        bus: Bus, tmp_path: Path, remote: Path) -> None:
    """SIGSTOP on the session serving the adapter while a 64 MiB file comes: the poll fails
    with a one-line RemoteError after about ``read_timeout``, health is ``down``; once the
    server goes on, the next poll resumes the download from its ``.part`` and publishes the
    file once."""
    server = Sshd(tmp_path / "sshd-freeze").start()
    data = os.urandom(1 << 20) * 64
    (remote / "frozen.bin").write_bytes(data)
    a = inbound(bus, server, remote, claim_check_bytes=1 << 20, read_timeout=2)
    staging = a.data_dir / "staging"
    errors: list[BaseException] = []
    stopped: list[int] = []
    assert server.proc is not None
    try:
        def poll() -> None:
            try:
                a.pipeline.poll()
            except BaseException as exc:  # noqa: BLE001 - the test inspects it
                errors.append(exc)

        t = threading.Thread(target=poll)
        started = time.monotonic()
        t.start()
        wait_for(lambda: any(p.stat().st_size > 1 << 20 for p in staging.glob("*.part")) or not t.is_alive(),
                 "the download to get going", timeout=30)
        assert t.is_alive(), "the download ended before the server could be frozen"
        stopped = descendants(server.proc.pid)  # the session processes, not the listener
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        frozen = time.monotonic()
        t.join(30)
        assert not t.is_alive(), "the poll did not end while the server was frozen"
        took = time.monotonic() - frozen
        assert took < 2 + 8, f"the poll ended {took:.1f} s after the freeze (read_timeout 2 s)"
        assert len(errors) == 1 and isinstance(errors[0], RemoteError), errors
        assert "\n" not in str(errors[0]) and "connection lost" in str(errors[0]), errors[0]
        assert a.health()["status"] == "down"
        assert bus.drain() == []
        partial = max(p.stat().st_size for p in staging.glob("*.part"))
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        wait_for(lambda: a.health()["connection"]["next_attempt_in"] == 0, "the reconnect delay to pass")
        assert a.pipeline.poll().done == 1
        assert a.pipeline.local.resumed_bytes >= partial
        [msg] = bus.drain()
        assert Path(msg.properties["coupler.claim-file"]).read_bytes() == data
        assert time.monotonic() - started < 120
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        a.stop()
        server.stop()


FORGED = "x.txt\n2026-01-01 00:00:00,000 ERROR coupler.daemon: forged line"


def test_names_with_newlines_and_terminal_escapes_are_one_line_in_every_log_line_and_reason_file(
        bus: Bus, sshd: Sshd, remote: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A name holding a newline forged a log line of its own, and one holding an escape
    sequence reached the operator's terminal; a failed one split the ``.reason`` file's
    ``file:`` line. Every line now shows them as ``\\n`` and ``\\x1b``; the messages' ``file.path``
    keeps the name as it is, and the files are archived and failed under their own names."""
    (remote / FORGED).write_bytes(b"forged\n")
    (remote / "red\x1b[31m.txt").write_bytes(b"\xff not utf-8\n")  # fails: it goes to error/
    caplog.set_level(logging.INFO)
    a = inbound(bus, sshd, remote, payload="lines", encoding="utf-8")
    try:
        result = a.pipeline.poll()
        assert (result.done, result.failed) == (1, 1), result
        assert [(m.properties["file.path"], m.body) for m in bus.drain()] == [(FORGED, b"forged")]
        assert (remote / "archive" / FORGED).exists() and (remote / "error" / "red\x1b[31m.txt").exists()
        lines = [r.getMessage() for r in caplog.records if r.name.startswith("coupler")]
        assert any("x.txt\\n2026-01-01" in line for line in lines), lines
        assert any("red\\x1b[31m.txt" in line for line in lines), lines
        for line in lines:
            assert line.isprintable(), line
        reason = (remote / "error" / "red\x1b[31m.txt.reason").read_text()
        assert len(reason.splitlines()) == 6 and reason.splitlines()[0].endswith("/red\\x1b[31m.txt"), reason
    finally:
        a.stop()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_an_append_cut_by_the_server_dying_is_undone_later_and_logged_without_a_traceback(
        bus: Bus, tmp_path: Path, remote: Path, caplog: pytest.LogCaptureFixture) -> None:
    """``file_exists = "append"``, sshd killed in the middle of an append: the append cannot be
    cut back while the server is gone, which was logged with a traceback; it is one WARNING
    line now, and the redelivery cuts the fragment and appends the record once."""
    from coupler.canonical import Envelope, FormatIndicator
    from coupler.canonical.errors import CouplerError

    from ..filebus import adapter
    from .test_transfer import options

    server = Sshd(tmp_path / "sshd-append").start()
    (remote / "ledger.dat").write_bytes(b"HEAD\n")
    record = os.urandom(1 << 20) * 48
    message = Envelope(format=FormatIndicator.parse("acme.Blob@1;application/octet-stream"), body=record,
                       properties={"name": "ledger.dat"})
    a = adapter(SftpAdapter, "sftp-out", options(server, remote, file_name="{prop.name}", file_exists="append",
                                                 read_timeout=5),
                bus.context("sftp-out", channel="out"), direction="outbound")
    a.start()
    caplog.set_level(logging.INFO)
    try:
        t, errors = deliver_in_thread(a, message)
        wait_for(lambda: (remote / "ledger.dat").stat().st_size > 1 << 20 or not t.is_alive(),
                 "the append to get going", timeout=60)
        assert t.is_alive(), "the append ended before the server could be killed"
        server.kill()
        t.join(60)
        assert len(errors) == 1 and isinstance(errors[0], CouplerError), errors
        assert 5 < (remote / "ledger.dat").stat().st_size < 5 + len(record)  # the fragment: cut later
        logged = [r for r in caplog.records if r.name.startswith("coupler")]
        assert [r for r in logged if r.exc_info] == [], [r.getMessage() for r in logged if r.exc_info]
        [cut] = [r.getMessage() for r in logged if "cannot cut" in r.getMessage()]
        assert "\n" not in cut and "ledger.dat" in cut, cut
        server.start()
        wait_for(lambda: a.health()["connection"]["next_attempt_in"] == 0, "the reconnect delay to pass")
        a.deliver(message)
        assert (remote / "ledger.dat").read_bytes() == b"HEAD\n" + record
    finally:
        a.stop()
        server.stop()


def _silent(conn: socket.socket) -> None:
    conn.recv(1)  # until the client gives up


def _http(conn: socket.socket) -> None:  # the adapter pointed at a web server's port
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
    conn.recv(1)


def _junk(conn: socket.socket) -> None:  # 64 MiB without a line end
    with contextlib.suppress(OSError):
        conn.sendall(b"\x07" * (64 << 20))


def _banner_then(packet: bytes) -> Callable[[socket.socket], None]:
    def serve(conn: socket.socket) -> None:
        conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
        conn.recv(65536)
        with contextlib.suppress(OSError):
            conn.sendall(packet)
        conn.recv(1)

    return serve


@pytest.mark.parametrize("server", [
    pytest.param(_silent, id="silent"),
    pytest.param(_http, id="http"),
    pytest.param(_junk, id="64MiB-junk"),
    pytest.param(_banner_then(b"\x00\x00\xff\xff" + b"\x07" * 100_000), id="banner-then-garbage"),
    pytest.param(_banner_then(b"\xff\xff\xff\xf0"), id="banner-then-4GiB-packet"),
])
def test_a_server_that_is_not_ssh_fails_the_connection_in_one_line_without_a_traceback(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, server: Callable[[socket.socket], None]) -> None:
    """The host and port of something that is not an SSH server (a silent one, a web server,
    junk, an SSH banner then garbage or a packet claiming 4 GiB): paramiko's transport thread
    logged each attempt as ERROR lines with its traceback (the daemon lets paramiko's warnings
    and errors through), and the error said "SSH handshake failed: No existing session" or
    nothing after the colon. Now: one line, within ``connect_timeout``, no traceback."""
    from coupler.adapters.sftp.connection import ConnectionSettings, SftpConnection

    listener = socket.create_server(("127.0.0.1", 0))
    served: list[socket.socket] = []

    def quietly(conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            server(conn)

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                served.append(conn)
                threading.Thread(target=quietly, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    known = tmp_path / "known_hosts"
    known.write_text("")
    caplog.set_level(logging.INFO)
    conn = SftpConnection(ConnectionSettings(host="127.0.0.1", port=listener.getsockname()[1], username="u",
                                             password="p", known_hosts=known, connect_timeout=2, read_timeout=2))
    started = time.monotonic()
    try:
        with pytest.raises(RemoteError) as refused:
            conn.sftp()
        took = time.monotonic() - started
    finally:
        listener.close()
        for c in served:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
            c.close()
    message = str(refused.value)
    assert "\n" not in message and not message.endswith(": "), message
    assert "No existing session" not in message, message
    assert took < 2 + 3, f"{took:.1f} s (connect_timeout 2 s)"
    tracebacks = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR or "Traceback" in r.getMessage()]
    assert tracebacks == [], tracebacks


@pytest.fixture
def unprivileged(sshd: Sshd):
    """A local user logging in with a password, and a home it owns (outside pytest's 0700 temp
    root); skipped where users cannot be created (not root)."""
    import secrets
    import shutil
    import tempfile

    from .sshd import create_password_user, remove_password_user

    password = secrets.token_urlsafe(12)
    home = Path(tempfile.mkdtemp(prefix="coupler-sftp-home-"))
    user = create_password_user(home, password, name="coupler-sftp-attack")
    if user is None:
        pytest.skip("cannot create a local user (not root)")
    try:
        yield user, password, home
    finally:
        remove_password_user(user)
        shutil.rmtree(home, ignore_errors=True)


def test_what_the_login_may_not_read_is_reported_once_and_the_rest_is_taken(
        bus: Bus, sshd: Sshd, unprivileged, caplog: pytest.LogCaptureFixture) -> None:
    """A sub-directory the SFTP user may not list failed every poll with a bare "[Errno 13]
    Permission denied" naming no place: no file of the directory was taken, ever. It is now
    reported once, in one line naming it, and the readable files are taken; links and FIFOs
    are reported once too (the file drop adapter's way), and a directory polled that cannot
    be listed is a one-line error naming it."""
    import shutil

    from coupler.canonical import FormatIndicator

    from ..filebus import adapter

    user, password, home = unprivileged
    inbox = home / "inbox"
    inbox.mkdir()
    shutil.chown(inbox, user)
    (inbox / "ok.dat").write_bytes(b"ok")
    locked = inbox / "locked"
    locked.mkdir(mode=0o700)  # root's: the user may not list it
    (locked / "inside.dat").write_bytes(b"inside")
    os.symlink("ok.dat", inbox / "link.dat")
    os.mkfifo(inbox / "pipe")
    caplog.set_level(logging.INFO)

    def make(directory: Path) -> SftpAdapter:
        opts = {"host": "127.0.0.1", "port": sshd.port, "username": user, "password": password,
                "known_hosts": str(sshd.known_hosts), "remote_directory": str(directory), "stable_seconds": 0,
                "autopoll": False, "connect_timeout": 5, "read_timeout": 5, "recursive": True, "after": "keep"}
        made = adapter(SftpAdapter, f"sftp-{directory.name}", opts, bus.context(f"sftp-{directory.name}"),
                       format=FormatIndicator.parse("acme.File@1"), direction="inbound")
        made.start()
        return made

    a = make(inbox)
    try:
        result = a.pipeline.poll()
        assert (result.done, result.errors) == (1, 0), result
        assert [m.body for m in bus.drain()] == [b"ok"]
        assert a.pipeline.poll().taken == 0
        warned = warnings_of(caplog)
        [cannot] = [w for w in warned if "cannot list" in w]
        assert f"/locked: Permission denied: its files are left alone (give {user} read and search" in cannot
        assert len([w for w in warned if "'link.dat' is a symbolic link" in w]) == 1, warned
        assert len([w for w in warned if "'pipe' is a FIFO" in w]) == 1, warned
        assert all("\n" not in w for w in warned)
    finally:
        a.stop()
    b = make(locked)
    try:
        with pytest.raises(RemoteError) as refused:
            b.pipeline.poll()
        message = str(refused.value)
        assert f"cannot list {locked}: Permission denied" in message and "\n" not in message, message
    finally:
        b.stop()


def test_a_file_the_login_may_not_read_is_reported_once_and_again_only_when_it_changes(
        bus: Bus, sshd: Sshd, unprivileged, caplog: pytest.LogCaptureFixture) -> None:
    """A file the SFTP user may not read was retried with a WARNING "could not be taken (will
    retry): [Errno 13] Permission denied" at every poll. It is now reported once, in one line
    naming it and the login, while it stays as listed; again once it changed; and taken once
    it may be read. The other files are taken meanwhile."""
    import shutil

    from coupler.canonical import FormatIndicator

    from ..filebus import adapter

    user, password, home = unprivileged
    inbox = home / "inbox"
    inbox.mkdir()
    shutil.chown(inbox, user)
    (inbox / "ok.dat").write_bytes(b"ok")
    secret = inbox / "secret.dat"
    secret.write_bytes(b"secret")
    secret.chmod(0o600)  # root's: the user may list it, not read it
    caplog.set_level(logging.INFO)
    opts = {"host": "127.0.0.1", "port": sshd.port, "username": user, "password": password,
            "known_hosts": str(sshd.known_hosts), "remote_directory": str(inbox), "stable_seconds": 0,
            "autopoll": False, "connect_timeout": 5, "read_timeout": 5, "after": "keep"}
    a = adapter(SftpAdapter, "sftp-unreadable", opts, bus.context("sftp-unreadable"),
                format=FormatIndicator.parse("acme.File@1"), direction="inbound")
    a.start()

    def reports() -> list[str]:
        return [w for w in warnings_of(caplog) if "secret.dat" in w]

    try:
        first = a.pipeline.poll()
        assert (first.done, first.errors) == (1, 1), first
        assert [m.body for m in bus.drain()] == [b"ok"]
        for _ in range(3):
            again = a.pipeline.poll()
            assert (again.taken, again.errors) == (0, 0), again
        [report] = reports()
        assert report == (f"sftp-unreadable: cannot read {a.pipeline.fs.label}/secret.dat: Permission denied: "
                          f"taken once it may be read, reported again if it changes (give {user} read "
                          "permission on it)"), report
        secret.write_bytes(b"secret, longer")  # changed: reported again, once
        os.utime(secret, (1_000_000_000, 1_000_000_000))
        for _ in range(2):
            a.pipeline.poll()
        assert len(reports()) == 2, reports()
        assert not list(a.pipeline.local.directory.glob("*.part")), "an empty .part left for the unreadable file"
        secret.chmod(0o644)
        taken = a.pipeline.poll()
        assert (taken.done, taken.errors) == (1, 0), taken
        assert [m.body for m in bus.drain()] == [b"secret, longer"]
        assert len(reports()) == 2
        connection_kept(a)
    finally:
        a.stop()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_server_frozen_in_the_middle_of_an_upload_fails_the_delivery_at_read_timeout(
        bus: Bus, tmp_path: Path, remote: Path) -> None:
    """SIGSTOP on the session while a 48 MiB message is uploaded: the delivery fails in one line
    after about ``read_timeout`` (the bus retries it); once the server goes on, the redelivery
    leaves one whole file and no ``.part``."""
    from coupler.canonical import Envelope, FormatIndicator
    from coupler.canonical.errors import CouplerError

    from ..filebus import adapter
    from .test_transfer import options

    server = Sshd(tmp_path / "sshd-freeze-up").start()
    assert server.proc is not None
    data = os.urandom(1 << 20) * 48
    message = Envelope(format=FormatIndicator.parse("acme.Blob@1;application/octet-stream"), body=data,
                       properties={"name": "blob.bin"})
    a = adapter(SftpAdapter, "sftp-out", options(server, remote, file_name="{prop.name}", read_timeout=2),
                bus.context("sftp-out", channel="out"), direction="outbound")
    a.start()
    stopped: list[int] = []
    try:
        t, errors = deliver_in_thread(a, message)
        wait_for(lambda: any(p.stat().st_size > 1 << 20 for p in remote.glob(".*.part")) or not t.is_alive(),
                 "the upload to get going", timeout=60)
        assert t.is_alive(), "the upload ended before the server could be frozen"
        stopped = descendants(server.proc.pid)
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        frozen = time.monotonic()
        t.join(30)
        assert not t.is_alive(), "the delivery did not end while the server was frozen"
        took = time.monotonic() - frozen
        assert took < 2 + 8, f"the delivery ended {took:.1f} s after the freeze (read_timeout 2 s)"
        assert len(errors) == 1 and isinstance(errors[0], CouplerError), errors
        assert "\n" not in str(errors[0]), errors[0]
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        wait_for(lambda: a.health()["connection"]["next_attempt_in"] == 0, "the reconnect delay to pass")
        a.deliver(message)
        assert sorted(p.name for p in remote.iterdir()) == ["blob.bin"]
        assert (remote / "blob.bin").read_bytes() == data
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        a.stop()
        server.stop()


def test_a_file_larger_than_the_local_disk_is_left_on_the_server_and_the_disk_is_not_filled(
        tmp_path: Path, sshd: Sshd, remote: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A remote file claiming 1 GiB (sparse: it costs the server nothing) and the site's data
    directory on an 8 MiB disk: the download ran until the disk was full and kept its ``.part``
    for a resume, so the disk stayed full (the bus's store beside it could not write) and the
    small file next to it could not be taken either. Now the download is not begun when it
    would leave less than 5 % of the disk free: one WARNING line naming the file and the
    sizes; the small file is taken."""
    from coupler.canonical import FormatIndicator

    from ..filebus import Bus as FileBus
    from ..filebus import adapter
    from ..filedrop.test_disk_full import mount_tmpfs
    from .test_transfer import options

    disk = tmp_path / "disk"
    mount_tmpfs(disk, "8m")
    try:
        with open(remote / "a-huge.dat", "wb") as f:
            f.truncate(1 << 30)
        (remote / "b-small.dat").write_bytes(b"small")
        small_bus = FileBus(disk / "site")
        caplog.set_level(logging.INFO)
        a = adapter(SftpAdapter, "sftp-in", options(sshd, remote), small_bus.context("sftp-in"),
                    format=FormatIndicator.parse("acme.File@1"), direction="inbound")
        a.start()
        try:
            result, took = timed_poll(a)
            assert (result.done, result.errors) == (1, 1), result
            assert [m.body for m in small_bus.drain()] == [b"small"]
            free = os.statvfs(disk)
            assert free.f_bavail * free.f_frsize > 4 << 20, "the disk was filled"
            [line] = [w for w in warnings_of(caplog) if "a-huge.dat" in w]
            assert "1073741824 bytes" in line and "free" in line and "\n" not in line, line
            assert (remote / "a-huge.dat").exists()
        finally:
            a.stop()
            small_bus.close()
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
