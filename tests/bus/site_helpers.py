"""Helpers of the site/daemon/CLI tests: sites on disk, an in-process daemon, a daemon process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from coupler.bus.config import load_site
from coupler.bus.control import ControlClient, ControlError
from coupler.bus.daemon import Daemon
from coupler.bus.plugins import plugin_manager

from . import plugin_echo

REPO = Path(__file__).resolve().parents[2]
#: how the daemon processes of the tests find the echo plugin
PLUGIN_ENV = {"COUPLER_EXTRA_PLUGINS": "tests.bus.plugin_echo"}


def write_site(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "site.toml"
    path.write_text(text)
    return path


@contextmanager
def running_daemon(site_file: Path) -> Iterator[Daemon]:
    """A daemon in this process (no signal handlers), stopped at the end."""
    d = Daemon(load_site(site_file), pm=plugin_manager(entry_points=False, extra=(plugin_echo,)))
    d.start()
    try:
        yield d
    finally:
        d.shutdown()


def coupler_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(PLUGIN_ENV)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def start_daemon_process(site_file: Path, *extra: str) -> subprocess.Popen[str]:
    """``coupler daemon --site SITE`` as a child process; returns once its control endpoint answers."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "coupler.bus.cli", "daemon", "--site", str(site_file), *extra],
        env=coupler_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    client = ControlClient(load_site(site_file).control_socket)
    deadline = time.monotonic() + 30
    while True:
        try:
            if client.call("status")["pid"] == proc.pid:
                return proc
        except ControlError:
            pass  # not up yet, or a stale socket of a killed daemon
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, err = proc.communicate()
            raise AssertionError(f"daemon did not start (rc={proc.returncode}): {err}")
        time.sleep(0.05)
