"""``coupler plugin new``: the package it writes passes its own tests, installs, and runs in a
real daemon, which delivers documents sent to it and put on its channel."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

from tests.bus.plugins.test_plugin_example import coupler, install_into
from tests.bus.site_helpers import REPO, start_daemon_process, wait_for, write_site

SITE = """
[site]
name = "plugin-new-test"

[[adapters]]
name = "notes-out"
type = "acme-notes"
direction = "outbound"
channel = "notes"
options = { directory = "out", file_mode = "0640" }
"""


def test_a_new_plugin_passes_its_own_tests_installs_and_delivers_in_a_daemon(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COUPLER_EXTRA_PLUGINS"}
    env["PYTHONPATH"] = str(REPO)
    made = coupler(env, "plugin", "new", "acme-notes", "--directory", str(tmp_path / "pkg"))
    assert made.returncode == 0, made.stderr
    pkg = tmp_path / "pkg"
    assert (pkg / "coupler_acme_notes" / "adapter.py").is_file()
    # docs/plugins.md's EmbeddedBus example "runs as it is in the generated package's tests/"
    (pkg / "tests" / "test_guide_example.py").write_text(_guide_block("Here with the scaffold's adapter"))

    # its own tests, as its author runs them
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=pkg,
                           env=env, capture_output=True, text=True, timeout=300)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert " passed" in tests.stdout and "failed" not in tests.stdout
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=pkg,
                          capture_output=True, text=True, timeout=120)
    assert lint.returncode == 0, lint.stdout  # clean under its own [tool.ruff] settings

    env = install_into(tmp_path / "env", pkg)
    listed = coupler(env, "plugins")
    assert "acme-notes" in listed.stdout, listed.stdout + listed.stderr
    _the_guide_reports_bad_options_as_the_daemon_does(tmp_path / "guide", env)
    site = write_site(tmp_path / "site", SITE)
    out = tmp_path / "site" / "out"
    daemon = start_daemon_process(site, env=env)
    try:
        (tmp_path / "note.txt").write_text("sent directly\n")
        sent = coupler(env, "send", "--site", str(site), "--command", "send", "--target", "notes-out",
                       str(tmp_path / "note.txt"))
        assert sent.returncode == 0, sent.stdout + sent.stderr
        put = coupler(env, "channel", "put", "--site", str(site), "notes", "--lines", stdin="first\nsecond\n")
        assert put.returncode == 0, put.stderr
        wait_for(lambda: out.is_dir() and len([p for p in out.iterdir() if p.suffix == ".txt"]) == 3,
                 "three files (one sent, two from the channel)", timeout=60)
        files = sorted(p for p in out.iterdir() if p.suffix == ".txt")
        assert sorted(p.read_text() for p in files) == ["first", "second", "sent directly\n"]
        # the daemon's umask is 077; the file_mode option makes them readable by the group
        assert {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o640}

        def counted() -> dict:
            status = json.loads(coupler(env, "ctl", "--site", str(site), "status", "--json").stdout)
            row = next(a for a in status["adapters"] if a["name"] == "notes-out")
            return row if row["out"] == 3 else {}

        row = wait_for(counted, "the deliveries to be counted")
        assert (row["state"], row["failed"]) == ("running", 0)
        assert row["health"]["status"] == "ok" and row["health"]["written"] == 3
    finally:
        daemon.terminate()
        _, err = daemon.communicate(timeout=60)
    assert daemon.returncode == 0, err


def _guide_block(after: str) -> str:
    """The first fenced block of docs/plugins.md after the text ``after``."""
    guide = (REPO / "docs" / "plugins.md").read_text()
    block = re.search(r"```[a-z]*\n(.*?)```", guide.split(after, 1)[1], re.S)
    assert block, after
    return block.group(1)


def _the_guide_reports_bad_options_as_the_daemon_does(folder: Path, env: dict[str, str]) -> None:
    """docs/plugins.md's error for misspelt options, as its recipe says: the scaffold's
    ``[[adapters]]`` entry appended after a blank line to ``coupler init``'s site.toml, with
    ``options = { directry = "out", file_mode = "rw" }``."""
    folder.mkdir()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "coupler.bus.cli", *args], env=env, cwd=folder,
                              capture_output=True, text=True, timeout=120)

    assert cli("init", "mysite").returncode == 0
    entry = _guide_block("A site then uses it like any adapter type:")
    entry = re.sub(r"^options = .*$", 'options = { directry = "out", file_mode = "rw" }', entry, flags=re.M)
    site = folder / "mysite" / "site.toml"
    site.write_text(site.read_text() + "\n" + entry)
    daemon = cli("daemon", "--site", "mysite/site.toml")
    assert daemon.returncode == 1
    assert daemon.stderr.strip() == _guide_block("against its type's model before anything starts").strip()


def test_plugin_new_refuses_a_bad_name_and_a_directory_in_use(tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    bad = coupler(env, "plugin", "new", "Acme_Notes", "--directory", str(tmp_path / "x"))
    assert bad.returncode != 0
    assert "'Acme_Notes' is not a plugin type name" in bad.stderr and "Traceback" not in bad.stderr
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "keep.txt").write_text("mine")
    used = coupler(env, "plugin", "new", "acme-notes", "--directory", str(tmp_path / "used"))
    assert used.returncode != 0 and "already exists and is not an empty directory" in used.stderr
    assert [p.name for p in (tmp_path / "used").iterdir()] == ["keep.txt"]
