"""Host-key verification and authentication against a real OpenSSH sshd."""

from __future__ import annotations

import logging
import re
import secrets
import shutil
import tempfile
from pathlib import Path

import pytest

from coupler.adapters.common.errors import AdapterConfigError, HostKeyError, RemoteError
from coupler.adapters.sftp import SftpAdapter
from coupler.adapters.sftp.connection import ConnectionSettings, SftpConnection
from coupler.bus.api import CommandFault

from ..filebus import Bus, adapter
from .sshd import PASSPHRASE, Sshd, create_password_user, free_port, keygen, remove_password_user
from .test_transfer import options


def settings(sshd: Sshd, **overrides) -> ConnectionSettings:
    base = dict(host="127.0.0.1", port=sshd.port, username="root", private_key=sshd.keys["ed25519"],
                passphrase=PASSPHRASE, known_hosts=sshd.known_hosts, connect_timeout=5, read_timeout=5)
    return ConnectionSettings(**{**base, **overrides})


def listing(conn: SftpConnection, path: Path) -> list[str]:
    try:
        return sorted(conn.call("list", lambda sftp: sftp.listdir(str(path))))
    finally:
        conn.close()


def test_unknown_host_key_is_refused_showing_its_fingerprint(sshd: Sshd, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    conn = SftpConnection(settings(sshd, known_hosts=empty))
    with pytest.raises(HostKeyError, match="unknown host key ssh-ed25519") as info:
        conn.sftp()
    assert sshd.fingerprint in str(info.value)
    assert empty.read_text() == ""  # nothing trusted behind the user's back


def test_changed_host_key_is_refused(sshd: Sshd, tmp_path: Path) -> None:
    other = keygen(tmp_path / "other", "ed25519")
    kind, b64 = Path(f"{other}.pub").read_text().split()[:2]
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd.port} {kind} {b64}\n")
    with pytest.raises(HostKeyError, match="host key CHANGED") as info:
        SftpConnection(settings(sshd, known_hosts=known)).sftp()
    assert sshd.fingerprint in str(info.value)


def test_pinned_fingerprint(sshd: Sshd, tmp_path: Path) -> None:
    assert listing(SftpConnection(settings(sshd, known_hosts=None, host_key_fingerprint=sshd.fingerprint)), sshd.root)
    wrong = "SHA256:" + "A" * 43
    with pytest.raises(HostKeyError, match="does not match the pinned fingerprint") as info:
        SftpConnection(settings(sshd, known_hosts=None, host_key_fingerprint=wrong)).sftp()
    assert sshd.fingerprint in str(info.value)


def test_trust_on_first_use_records_the_key_and_logs(sshd: Sshd, tmp_path: Path, caplog) -> None:
    known = tmp_path / "tofu_known_hosts"
    with caplog.at_level(logging.WARNING):
        assert listing(SftpConnection(settings(sshd, known_hosts=known, trust_on_first_use=True)), sshd.root)
    assert f"[127.0.0.1]:{sshd.port} ssh-ed25519" in known.read_text()
    assert any("trust on first use" in r.getMessage() and sshd.fingerprint in r.getMessage() for r in caplog.records)
    assert listing(SftpConnection(settings(sshd, known_hosts=known)), sshd.root)  # known from now on


@pytest.mark.parametrize("kind", ["ed25519", "rsa", "ecdsa"])
def test_key_authentication(sshd: Sshd, kind: str) -> None:
    conn = SftpConnection(settings(sshd, private_key=sshd.keys[kind], passphrase=PASSPHRASE if kind == "ed25519" else None))
    assert "authorized_keys" in listing(conn, sshd.root)


def test_wrong_passphrase_and_unauthorised_key(sshd: Sshd, tmp_path: Path) -> None:
    with pytest.raises(AdapterConfigError, match="wrong passphrase|cannot load"):
        SftpConnection(settings(sshd, passphrase="nope"))
    stranger = keygen(tmp_path / "stranger", "ed25519")
    with pytest.raises(RemoteError, match="login of 'root' refused"):
        SftpConnection(settings(sshd, private_key=stranger, passphrase=None)).sftp()


def test_password_authentication(sshd: Sshd, tmp_path: Path) -> None:
    password = secrets.token_urlsafe(12)
    home = Path(tempfile.mkdtemp(prefix="coupler-sftp-home-"))  # outside pytest's 0700 temp root
    user = create_password_user(home, password)
    if user is None:
        pytest.skip("cannot create a local user for password authentication (not root)")
    try:
        (home / "hello.txt").write_text("hi")
        conn = SftpConnection(settings(sshd, username=user, private_key=None, passphrase=None, password=password))
        assert listing(conn, home) == ["hello.txt"]
        bad = SftpConnection(settings(sshd, username=user, private_key=None, passphrase=None, password="wrong"))
        with pytest.raises(RemoteError, match="refused"):
            bad.sftp()
    finally:
        remove_password_user()
        shutil.rmtree(home, ignore_errors=True)


def test_unreachable_server_and_reconnect_backoff(tmp_path: Path) -> None:
    known = tmp_path / "kh"
    known.write_text("")
    conn = SftpConnection(ConnectionSettings(
        host="127.0.0.1", port=free_port(), username="root", password="x", known_hosts=known,
        connect_timeout=2, reconnect_delay=30,
    ))
    with pytest.raises(RemoteError, match="cannot connect"):
        conn.sftp()
    with pytest.raises(RemoteError, match="next reconnection attempt in"):
        conn.sftp()  # within the backoff delay: no new attempt
    assert conn.health()["connect_failures"] == 1
    assert 25 < conn.health()["next_attempt_in"] <= 30


def test_health_shows_the_next_attempt_due_only_once_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``next_attempt_in`` was rounded to the millisecond: it read 0 while up to 0.5 ms of the
    backoff remained, and a caller that waited for 0 (the attack tests do, then poll) was
    refused "next reconnection attempt in 0.0 s". It is 0 now only when an attempt is due."""
    from coupler.adapters.sftp import connection

    known = tmp_path / "kh"
    known.write_text("")
    conn = SftpConnection(ConnectionSettings(
        host="127.0.0.1", port=free_port(), username="root", password="x", known_hosts=known,
        connect_timeout=2, reconnect_delay=30,
    ))
    now = [1000.0]
    monkeypatch.setattr(connection.time, "monotonic", lambda: now[0])
    with pytest.raises(RemoteError, match="cannot connect"):
        conn.sftp()
    now[0] = 1030 - 0.0004  # 0.4 ms of the backoff left
    assert conn.health()["next_attempt_in"] > 0
    with pytest.raises(RemoteError, match="next reconnection attempt in"):
        conn.sftp()
    now[0] = 1030
    assert conn.health()["next_attempt_in"] == 0
    with pytest.raises(RemoteError, match="cannot connect"):  # tried again
        conn.sftp()
    assert conn.health()["connect_failures"] == 2


def test_health_shows_when_the_next_connection_attempt_is_due(bus: Bus, sshd: Sshd, tmp_path: Path) -> None:
    """``ctl status`` and the console show the problem line; ``--json`` the seconds as a number."""
    port = free_port()
    a = adapter(SftpAdapter, "sftp-out", options(sshd, tmp_path, port=port, reconnect_delay=30),
                bus.context("sftp-out", channel="out"), direction="outbound")
    assert a.health()["status"] == "ok"  # not tried yet
    with pytest.raises(CommandFault, match="cannot connect"):
        a.check()
    health = a.health()
    assert health["status"] == "down" and 25 < health["connection"]["next_attempt_in"] <= 30
    [problem] = health["problems"]
    assert problem.startswith(f"disconnected from sftp://root@127.0.0.1:{port}: cannot connect"), problem
    assert problem.count("sftp://") == 1, problem  # the server named once
    assert re.search(r"; next attempt in (2[5-9]|30)\.\d s$", problem), problem
    assert "\n" not in problem


def test_a_connection_lost_with_an_empty_error_still_shows_down(sshd: Sshd) -> None:
    """paramiko raises ``EOFError()`` (no text) when the server goes away under a read: the
    health still names the loss, so the adapter shows ``down`` and not ``ok``."""
    conn = SftpConnection(settings(sshd, reconnect_delay=30))

    def gone(sftp: object) -> None:
        raise EOFError()

    with pytest.raises(RemoteError, match="read x: connection lost: EOFError"):
        conn.call("read x", gone)
    health = conn.health()
    assert health["connected"] is False and health["last_connect_error"] == "read x: connection lost: EOFError"
    assert 25 < health["next_attempt_in"] <= 30
