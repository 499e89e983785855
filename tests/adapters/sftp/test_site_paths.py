"""An SFTP adapter run by the daemon with its key file and known_hosts given relative to
site.toml: the daemon resolves them (``SftpAdapter.path_options``) and the adapter logs in."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from tests.bus.site_helpers import running_daemon

from .sshd import PASSPHRASE, Sshd


def test_relative_key_and_known_hosts(tmp_path: Path, sshd: Sshd, remote: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site_dir = tmp_path / "site"
    (site_dir / "keys").mkdir(parents=True)
    shutil.copy(sshd.keys["ed25519"], site_dir / "keys" / "id_ed25519")
    (site_dir / "keys" / "id_ed25519").chmod(0o600)
    shutil.copy(sshd.known_hosts, site_dir / "keys" / "known_hosts")
    (site_dir / "site.toml").write_text(f"""
[site]
data_dir = "data"

[[adapters]]
name = "sftp-in"
type = "sftp"
direction = "inbound"
channel = "files"
format = "test.File@1"
[adapters.options]
host = "127.0.0.1"
port = {sshd.port}
username = "root"
private_key = "keys/id_ed25519"
passphrase = "{PASSPHRASE}"
known_hosts = "keys/known_hosts"
remote_directory = "{remote}"
stable_seconds = 0
poll_interval = 0.1
max_poll_interval = 0.5
""")
    monkeypatch.chdir(tmp_path)  # not the site directory: the paths are relative to site.toml
    (remote / "hello.txt").write_bytes(b"hello")
    with running_daemon(site_dir / "site.toml", plugins=None) as daemon:
        adapter = daemon.adapters["sftp-in"].adapter
        assert adapter.settings.known_hosts == site_dir / "keys" / "known_hosts"
        assert adapter.settings.private_key == site_dir / "keys" / "id_ed25519"
        assert daemon.transport is not None
        deadline = time.monotonic() + 30
        while not (got := daemon.transport.peek("files", 10)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [e.body for e in got] == [b"hello"], adapter.describe()
