"""The plugin authors' starting point works: ``examples/plugin-hello`` installed into a
temporary environment, run by a real daemon, answers a ``send`` and delivers from its channel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.bus.site_helpers import REPO, start_daemon_process, wait_for, write_site


def install_into(target: Path, project: Path) -> dict[str, str]:
    """``pip install --target`` (no dependencies: Coupler is already here) and the environment
    that sees it: its entry points are found on ``PYTHONPATH`` like any installed plugin."""
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(project)],
        check=True, timeout=300,
    )
    env = {k: v for k, v in os.environ.items() if k != "COUPLER_EXTRA_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(target), str(REPO), env.get("PYTHONPATH")]))
    return env


def coupler(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coupler.bus.cli", *args], env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)


SITE = """
[site]
name = "hello-test"

[[adapters]]
name = "hi"
type = "hello"
direction = "outbound"
channel = "greetings"
options = { greeting = "Hi", directory = "out" }
"""


def test_plugin_hello_replies_to_send_and_delivers_from_its_channel(tmp_path: Path) -> None:
    env = install_into(tmp_path / "env", REPO / "examples" / "plugin-hello")
    listed = coupler(env, "plugins")
    assert "hello" in listed.stdout, listed.stderr
    site = write_site(tmp_path / "site", SITE)
    daemon = start_daemon_process(site, env=env)
    try:
        (tmp_path / "name.txt").write_text("world\n")
        sent = coupler(env, "send", "--site", str(site), "--command", "send", "--target", "hi",
                       str(tmp_path / "name.txt"))
        assert sent.returncode == 0, sent.stdout + sent.stderr
        assert "Hi, world!" in sent.stdout
        put = coupler(env, "channel", "put", "--site", str(site), "greetings", "--lines", stdin="Ada\nGrace\n")
        assert put.returncode == 0, put.stderr
        greetings = tmp_path / "site" / "out" / "greetings.txt"
        wait_for(lambda: greetings.exists() and greetings.read_text().count("\n") == 3,
                 "three greetings (one sent, two delivered from the channel)", timeout=60)
        assert sorted(greetings.read_text().splitlines()) == ["Hi, Ada!", "Hi, Grace!", "Hi, world!"]

        def counted() -> dict:
            status = json.loads(coupler(env, "ctl", "--site", str(site), "status", "--json").stdout)
            hi = next(a for a in status["adapters"] if a["name"] == "hi")
            return hi if hi["out"] == 3 else {}

        # an outbound adapter's OUT counts what it delivered (2) and the reply it sent (1)
        hi = wait_for(counted, "the deliveries to be counted")
        assert (hi["in"], hi["out"], hi["failed"]) == (3, 3, 0)
    finally:
        daemon.terminate()
        _, err = daemon.communicate(timeout=60)
    assert daemon.returncode == 0, err
