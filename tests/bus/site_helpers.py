"""Helpers of the site/daemon/CLI tests: sites on disk, an in-process daemon, a daemon process,
waiting for a condition."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TypeVar

from coupler.bus.config.loader import load_site
from coupler.bus.plugins.manager import plugin_manager
from coupler.bus.runtime.control import ControlClient, ControlError
from coupler.bus.runtime.daemon import Daemon
from tests.bus import plugin_echo

REPO = Path(__file__).resolve().parents[2]
#: how the daemon processes of the tests find the echo plugin
PLUGIN_ENV = {"COUPLER_EXTRA_PLUGINS": "tests.bus.plugin_echo"}

#: ``test.Reading`` version 1 and 2; version 2 changed the type of ``value``, so a v1 reader
#: cannot read it (schemas of the Datatype Channel tests, see :func:`write_reading_site`)
READING_V1 = {"type": "record", "name": "Reading", "namespace": "test",
              "fields": [{"name": "meter", "type": "string"}, {"name": "value", "type": "int"}]}
READING_V2 = {"type": "record", "name": "Reading", "namespace": "test",
              "fields": [{"name": "meter", "type": "string"}, {"name": "value", "type": "string"}]}

T = TypeVar("T")


def write_site(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "site.toml"
    path.write_text(text)
    return path


def write_reading_site(directory: Path, text: str) -> Path:
    """:func:`write_site`, plus the ``test.Reading`` schemas (v1, v2) in ``directory/schemas``."""
    for version, schema in ((1, READING_V1), (2, READING_V2)):
        path = directory / "schemas" / "test" / "reading" / f"v{version}.avsc"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(schema))
    return write_site(directory, text)


def make_daemon(site_file: Path, plugins: tuple[ModuleType, ...] | None = (plugin_echo,)) -> Daemon:
    """A daemon (not started) of ``site_file`` in this process (no signal handlers).

    ``plugins`` are the plugin modules it loads (the test echo plugin by default); None loads
    the installed ones (entry points), as ``coupler daemon`` does.
    """
    pm = None if plugins is None else plugin_manager(entry_points=False, extra=plugins)
    return Daemon(load_site(site_file), pm=pm)


@contextmanager
def running_daemon(
    site_file: Path, plugins: tuple[ModuleType, ...] | None = (plugin_echo,)
) -> Iterator[Daemon]:
    """A started :func:`make_daemon`, stopped at the end."""
    d = make_daemon(site_file, plugins)
    d.start()
    try:
        yield d
    finally:
        d.shutdown()


def wait_for(check: Callable[[], T], what: str, timeout: float = 30.0) -> T:
    """The first true value ``check()`` returns (polled every 50 ms), or AssertionError naming
    ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def coupler_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(PLUGIN_ENV)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def start_daemon_process(site_file: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``coupler daemon --site SITE`` as a child process (in ``env``, default
    :func:`coupler_env`); returns once its control endpoint answers."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "coupler.bus.cli.main", "daemon", "--site", str(site_file), *extra],
        env=coupler_env() if env is None else env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    client = ControlClient(load_site(site_file).control_socket)
    deadline = time.monotonic() + 120  # a loaded machine starts Python slowly; a healthy start takes ~1 s
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
