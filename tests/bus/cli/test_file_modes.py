"""The data directory holds every message body: whatever creates it or a file in it (``coupler
init``, ``channel put``, the daemon, ``store backup``) makes directories 0700 and files 0600,
under the usual umask 022; the daemon tightens a looser existing one with a warning."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

from coupler.bus.config.loader import load_site
from tests.bus.site_helpers import REPO, coupler_env, wait_for, write_site

SITE = """
[site]
name = "private"
data_dir = "data"

[[adapters]]
name = "drop"
type = "filedrop"
direction = "inbound"
channel = "in"
[adapters.options]
directory = "inbox"
stable_seconds = 0
poll_interval = 0.05
"""


def _umask_022() -> None:
    os.umask(0o022)


def coupler(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI, run as a user with the common umask 022 would."""
    return subprocess.run([sys.executable, "-m", "coupler.bus.cli", *args], cwd=REPO, env=coupler_env(),
                          capture_output=True, text=True, timeout=120, preexec_fn=_umask_022)


def modes(root: Path) -> dict[str, int]:
    """Permission bits of ``root`` and every directory and regular file below it."""
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        st = path.lstat()
        if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
            found[str(path.relative_to(root))] = stat.S_IMODE(st.st_mode)
    return found


def assert_private(root: Path) -> dict[str, int]:
    found = modes(root)
    loose = {p: oct(m) for p, m in found.items()
             if m != (0o700 if (root / p).is_dir() else 0o600)}
    assert loose == {}, f"not private under {root}: {loose}"
    return found


def test_init_makes_the_data_directory_private(tmp_path: Path) -> None:
    done = coupler("init", str(tmp_path / "site"))
    assert done.returncode == 0, done.stderr
    assert_private(load_site(tmp_path / "site" / "site.toml").data_dir)


def test_channel_put_on_a_new_site_creates_a_private_store(tmp_path: Path) -> None:
    site = write_site(tmp_path, SITE)
    (tmp_path / "order.json").write_text('{"id": 1}')
    done = coupler("channel", "put", "--site", str(site), "orders", str(tmp_path / "order.json"))
    assert done.returncode == 0, done.stderr
    found = assert_private(tmp_path / "data")
    assert "coupler.db" in found and "claims" in found  # the store itself, not just the folder


def test_the_daemon_creates_a_private_data_directory_and_adapter_state(tmp_path: Path) -> None:
    site = write_site(tmp_path, SITE)
    (tmp_path / "inbox").mkdir()
    (tmp_path / "inbox" / "a.txt").write_text("hello")
    with open(tmp_path / "daemon.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "coupler.bus.cli", "daemon", "--site", str(site)], cwd=REPO,
                                env=coupler_env(), stdout=subprocess.DEVNULL, stderr=log, preexec_fn=_umask_022)
    try:
        wait_for(lambda: (tmp_path / "inbox" / "archive" / "a.txt").exists(), "the file taken", timeout=60)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    found = assert_private(tmp_path / "data")
    assert "adapters/drop/files.db" in found and "coupler.db" in found


def test_the_daemon_tightens_a_loose_data_directory_with_a_warning(tmp_path: Path) -> None:
    site = write_site(tmp_path, SITE)
    (tmp_path / "order.json").write_text('{"id": 1}')
    assert coupler("channel", "put", "--site", str(site), "orders", str(tmp_path / "order.json")).returncode == 0
    data = tmp_path / "data"
    os.chmod(data, 0o755)  # as another tool (or an older version) left it
    os.chmod(data / "coupler.db", 0o644)
    done = coupler("daemon", "--site", str(site), "--check")  # starts (paused) and stops
    assert done.returncode == 0, done.stdout + done.stderr
    assert "was readable by other users (., coupler.db): made it private" in done.stderr
    assert_private(data)


def test_store_backup_is_private(tmp_path: Path) -> None:
    site = write_site(tmp_path, SITE)
    (tmp_path / "order.json").write_text('{"id": 1}')
    assert coupler("channel", "put", "--site", str(site), "orders", str(tmp_path / "order.json")).returncode == 0
    done = coupler("store", "backup", "--site", str(site), str(tmp_path / "backup"))
    assert done.returncode == 0, done.stderr
    found = assert_private(tmp_path / "backup")
    assert "coupler.db" in found
