"""``coupler store backup``: an online backup that a new site can run from."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from coupler.bus.cli.main import main
from tests.bus.site_helpers import running_daemon, write_site


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_backup_while_the_daemon_runs_restores_every_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = write_site(tmp_path / "site", "[store]\nclaim_check_bytes = 1024\n")
    big = tmp_path / "big.bin"
    big.write_bytes(bytes(range(256)) * 64)  # over the claim-check threshold: stored as a file
    small = tmp_path / "small.txt"
    small.write_text("a small document")
    with running_daemon(site):
        assert cli(capsys, "channel", "put", "--site", str(site), "q", str(small), str(big))[0] == 0
        rc, out, _ = cli(capsys, "store", "backup", "--site", str(site), str(tmp_path / "backup"), "--json")
    assert rc == 0
    report = json.loads(out)
    assert "coupler.db" in report["databases"] and report["files"] >= 1  # the claim-check body
    assert not list((tmp_path / "backup").rglob("*.sock")) and not list((tmp_path / "backup").rglob("*-wal"))

    # the original is lost; a site whose data directory is the backup has every message
    shutil.rmtree(tmp_path / "site" / "data")
    restored = write_site(tmp_path / "restored", f'[site]\ndata_dir = "{tmp_path / "backup"}"\n')
    rc, out, err = cli(capsys, "channel", "get", "--site", str(restored), "q", "--max", "5", "--json")
    assert rc == 0, err
    got = [json.loads(line) for line in out.splitlines()]
    assert got[0]["body"] == "a small document"
    import base64
    assert base64.b64decode(got[1]["body_base64"]) == big.read_bytes()


def test_backup_refuses_a_non_empty_destination(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = write_site(tmp_path / "site", "")
    assert cli(capsys, "channel", "put", "--site", str(site), "q", str(site))[0] == 0
    (tmp_path / "dest").mkdir()
    (tmp_path / "dest" / "x").write_text("keep me")
    rc, _, err = cli(capsys, "store", "backup", "--site", str(site), str(tmp_path / "dest"))
    assert rc == 1 and "is not empty" in err
    assert (tmp_path / "dest" / "x").read_text() == "keep me"


def test_a_backup_that_cannot_be_written_names_the_destination_and_leaves_nothing(tmp_path: Path,
                                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The backup's disk is full (a file size limit stands for it: the same failed write):
    the error names the destination, not the database read, and no half backup is left."""
    import resource
    import signal
    import subprocess
    import sys

    from tests.bus.site_helpers import coupler_env

    site = write_site(tmp_path / "site", "")
    assert cli(capsys, "channel", "put", "--site", str(site), "q", str(site))[0] == 0
    database = tmp_path / "site" / "data" / "coupler.db"
    limit = 40 * 1024  # above SQLite's 32 KiB shared-memory file of the source, below its database
    assert database.stat().st_size > limit

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    backup = tmp_path / "backup"
    run = subprocess.run([sys.executable, "-m", "coupler.bus.cli", "store", "backup", "--site", str(site), str(backup)],
                         env=coupler_env(), capture_output=True, text=True, preexec_fn=limited, timeout=120)
    assert run.returncode == 1
    assert run.stderr == (
        f"coupler: error: {backup}: cannot write the backup of coupler.db: disk I/O error; nothing was kept"
        " (free space on its file system (or raise `ulimit -f`) or back up elsewhere)\n"
    )
    assert not backup.exists()
