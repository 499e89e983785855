"""A new user's first site, from a shell: init, channel put/get, daemon, ctl status, send, stop.

Runs the installed ``coupler`` command in ``bash`` as subprocesses, nothing in-process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.bus.site_helpers import REPO, wait_for

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


def sh(script: str, cwd: Path, *, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("COUPLER_SITE", None)
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"{script!r} failed ({proc.returncode}): {proc.stderr}")
    return proc


def test_first_site_from_a_shell(tmp_path: Path) -> None:
    out = sh("coupler init acme", tmp_path).stdout
    assert "created site 'acme'" in out
    site = "acme/site.toml"

    # the channel tools work before any daemon runs (they use the store directly)
    sh(f"printf 'one\\ntwo\\nthree\\n' | coupler channel put --site {site} inbox --lines", tmp_path)
    peek = sh(f"coupler channel get --site {site} inbox --peek --max 10", tmp_path).stdout
    assert peek.splitlines() == ["one", "two", "three"]
    stopped = json.loads(sh(f"coupler ctl --site {site} status --json", tmp_path).stdout)
    assert stopped["state"] == "stopped" and {c["channel"]: c["depth"] for c in stopped["channels"]} == {"inbox": 3}
    ping = sh(f"coupler ctl --site {site} ping anyone", tmp_path, check=False)
    assert ping.returncode == 1 and "no daemon runs for site" in ping.stderr

    daemon = subprocess.Popen(
        ["bash", "-c", f"exec coupler daemon --site {site}"], cwd=tmp_path,
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while json.loads(sh(f"coupler ctl --site {site} status --json", tmp_path).stdout)["state"] != "running":
            assert daemon.poll() is None, daemon.communicate()[1]
            assert time.monotonic() < deadline, "the daemon did not come up"
            time.sleep(0.1)

        # with the daemon running the same tools go through its control endpoint
        got = sh(f"coupler channel get --site {site} inbox --max 2 --json", tmp_path).stdout
        assert [json.loads(line)["body"] for line in got.splitlines()] == ["one", "two"]
        (tmp_path / "order.json").write_text('{"id": 7}')
        refused = sh(f"coupler channel put --site {site} orders order.json --format 'acme.Order@1;application/json'",
                     tmp_path, check=False)
        assert refused.returncode == 2 and "no schema named 'acme.Order'" in refused.stderr  # formats are checked
        sh(f"coupler channel put --site {site} orders order.json --format 'acme.Order@1;application/json' --unregistered",
           tmp_path)

        status = json.loads(sh(f"coupler ctl --site {site} status --json", tmp_path).stdout)
        assert status["state"] == "running" and status["site"] == "acme" and status["adapters"] == []
        channels = {c["channel"]: c for c in status["channels"]}
        assert channels["inbox"]["depth"] == 1 and channels["orders"]["depth"] == 1
        assert channels["inbox"]["oldest_age"] >= 0

        # a command nobody serves is answered with a fault, not silence
        sent = sh(f"coupler send --site {site} --command ping --target billing", tmp_path, check=False)
        assert sent.returncode == 1
        assert sent.stdout.startswith("bus: fault unserved: no adapter serves 'ping' for target 'billing'")

        order = json.loads(sh(f"coupler channel get --site {site} orders --json", tmp_path).stdout)
        assert order["format"] == "acme.Order@1;application/json" and json.loads(order["body"]) == {"id": 7}

        assert "daemon stopped" in sh(f"coupler ctl --site {site} stop", tmp_path).stdout
        daemon.communicate(timeout=30)
        assert daemon.returncode == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.communicate()

    # what the daemon left is still there
    assert sh(f"coupler channel get --site {site} inbox", tmp_path).stdout == "three\n"


def _quick_start_commands() -> list[str]:
    """The commands of docs/quickstart.md's "site of your own" block, a line ending in ``|``
    joined with the next, comments dropped."""
    guide = (REPO / "docs" / "quickstart.md").read_text()
    found = re.search(r"in \w+ commands:\n\n```sh\n(.*?)```", guide, re.S)
    assert found, "docs/quickstart.md: no block of commands"
    block = found.group(1)
    commands, pending = [], ""
    for line in block.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        pending = f"{pending} {line}".strip()
        if pending and not pending.endswith("|"):
            commands.append(pending)
            pending = ""
    return commands


def test_the_quick_start_runs_as_written_and_prints_what_it_says(tmp_path: Path) -> None:
    """docs/quickstart.md: each command as written, in order (the daemon started with ``&`` is
    waited for before the next, as a user reads its log line first), and what "What you should
    see" says of each."""
    commands = _quick_start_commands()
    verbs = [" ".join(c.split("coupler ", 1)[1].split()[:2]) for c in commands]
    assert verbs == ["init mysite", "daemon --site", "channel put", "channel get", "ctl --site", "ctl --site"], commands
    out: dict[str, str] = {}
    daemon: subprocess.Popen[str] | None = None

    def running(process: subprocess.Popen[str]) -> bool:
        status = sh("coupler ctl --site mysite/site.toml status --json", tmp_path).stdout
        return process.poll() is not None or json.loads(status)["state"] == "running"

    try:
        for verb, command in zip(verbs, commands, strict=True):
            if command.endswith("&"):
                daemon = subprocess.Popen(["bash", "-c", f"exec {command.removesuffix('&').strip()}"], cwd=tmp_path,
                                          env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                wait_for(lambda: running(daemon), "the quick start's daemon to run")  # noqa: B023 -- called at once
                assert daemon.poll() is None, daemon.communicate()[1]
                continue
            out[verb if verb != "ctl --site" else command.split()[-1]] = sh(command, tmp_path).stdout
        assert daemon is not None
        _, daemon_err = daemon.communicate(timeout=30)
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.kill()
            daemon.communicate()
    assert daemon.returncode == 0 and "site mysite running: 0 adapter(s), 0 route(s)" in daemon_err
    guide = " ".join((REPO / "docs" / "quickstart.md").read_text().split())
    said = guide.split("What you should see:", 1)[1].split("`--format` says", 1)[0]
    printed = " ".join("\n".join(out.values()).split())
    quoted = [q for q in re.findall(r"`([^`]+)`", said) if q.startswith(("created site", "put ", "daemon stopped",
                                                                          "site mysite: running"))]
    assert len(quoted) == 4 and not [q for q in quoted if q not in printed], (quoted, printed)
    assert {"format", "body", "history"} <= set(json.loads(out["channel get"]))
    row = next(line.split() for line in out["status"].splitlines() if line.startswith("addresses "))
    assert row[-4:-2] == ["1", "1"], row  # IN 1, OUT 1
