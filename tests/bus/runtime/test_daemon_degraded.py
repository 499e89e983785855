"""An adapter that fails to start makes the site ``degraded`` (an alert in ``ctl status``, exit 3
of ``coupler daemon --check``); a ``direction`` an adapter cannot take is a configuration error
at load; a command to a paused adapter is answered with a fault at once."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from coupler.bus.config.loader import ConfigError, load_site
from coupler.bus.model.commands import command_envelope, parse_reply
from coupler.bus.plugins.manager import plugin_manager
from coupler.bus.runtime.context import request_reply
from coupler.bus.runtime.daemon import Daemon
from tests.bus import plugin_echo
from tests.bus.site_helpers import (
    REPO,
    coupler_env,
    running_daemon,
    start_daemon_process,
    write_site,
)

HEALTHY = """
[site]
name = "checked"

[[adapters]]
name = "good"
type = "echo"
"""
BROKEN = HEALTHY + """
[[adapters]]
name = "broken"
type = "echo"
[adapters.options]
fail_start = true
"""


def coupler(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coupler.bus.cli", *args], cwd=REPO, env=coupler_env(),
                          capture_output=True, text=True, timeout=120)


def test_a_failed_adapter_makes_the_site_degraded_with_an_alert(tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, BROKEN)) as daemon:
        status = daemon.status()
        assert status["state"] == "degraded"
        assert {"adapter": "broken", "alert": "failed to start: adapter broken: told to fail at start"} in status["alerts"]
        rows = {r["name"]: r["state"] for r in status["adapters"]}
        assert rows == {"good": "running", "broken": "failed"}
    with running_daemon(write_site(tmp_path / "healthy", HEALTHY)) as daemon:
        assert daemon.status()["state"] == "running" and daemon.status()["alerts"] == []


def test_daemon_check_exits_3_when_degraded_and_0_when_every_adapter_runs(tmp_path: Path) -> None:
    broken = write_site(tmp_path / "broken", BROKEN)
    done = coupler("daemon", "--site", str(broken), "--check")
    assert done.returncode == 3, done.stderr
    assert "site checked: degraded: 1 of 2 adapter(s) do not run" in done.stdout
    assert "ALERT adapter broken: failed to start: adapter broken: told to fail at start" in done.stdout
    healthy = write_site(tmp_path / "healthy", HEALTHY)
    done = coupler("daemon", "--site", str(healthy), "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "site checked: running: 1 adapter(s) started" in done.stdout


def test_daemon_check_asks_the_running_daemon_and_ctl_status_shows_the_alert(tmp_path: Path) -> None:
    site = write_site(tmp_path, BROKEN)
    proc = start_daemon_process(site)
    try:
        done = coupler("daemon", "--site", str(site), "--check")
        assert done.returncode == 3, done.stdout + done.stderr
        assert f"the running daemon (pid {proc.pid})" in done.stdout
        status = coupler("ctl", "--site", str(site), "status")
        assert status.returncode == 0, status.stderr
        assert f"site checked: degraded (pid {proc.pid}" in status.stdout
        assert "ALERT adapter broken: failed to start: adapter broken: told to fail at start" in status.stdout
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


@pytest.mark.parametrize(("entry", "problem"), [
    ('type = "pingonly"\ndirection = "inbound"\nchannel = "in"',  # a type that only delivers
     "adapters[a].direction: adapter type 'pingonly' cannot be inbound: it is outbound"),
    ('type = "socket"\ndirection = "outbound"\nchannel = "out"\n[adapters.options]\nmode = "server"\nhost = "127.0.0.1"\nport = 0',
     "adapters[a].direction: adapter type 'socket' in mode 'server' cannot be outbound: it is inbound"),
    ('type = "socket"\ndirection = "inbound"\nchannel = "in"\n[adapters.options]\nmode = "client"\nhost = "127.0.0.1"\nport = 9',
     "adapters[a].direction: adapter type 'socket' in mode 'client' cannot be inbound: it is outbound"),
])
def test_a_direction_the_adapter_cannot_take_is_a_configuration_error_at_load(tmp_path: Path, entry: str, problem: str) -> None:
    site = write_site(tmp_path, f'[site]\nname = "d"\n\n[[adapters]]\nname = "a"\n{entry}\n')
    daemon = Daemon(load_site(site), pm=plugin_manager(extra=(plugin_echo,)))
    with pytest.raises(ConfigError) as raised:
        daemon.start()
    assert problem in str(raised.value)
    assert daemon.adapters["a"].started is False  # refused before anything started
    done = coupler("daemon", "--site", str(site))
    assert done.returncode != 0 and problem in done.stderr and "Traceback" not in done.stderr


def test_a_command_to_a_paused_adapter_gets_a_fault_at_once(tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, HEALTHY)) as daemon:
        assert daemon.transport is not None
        daemon.pause("good")
        started = time.monotonic()
        (reply,) = request_reply(daemon.transport, command_envelope("ping", "good"), daemon.site.command_channel,
                                 reply_channel="test.replies", consumer="test", timeout=30, component="test")
        fault = parse_reply(reply)
        assert time.monotonic() - started < 10  # answered, not left to the 30 s timeout
        assert not fault.ok and fault.code == "paused"
        assert "adapter 'good' is paused" in (fault.reason or "") and "ctl resume good" in (fault.reason or "")
        daemon.resume("good")
        (reply,) = request_reply(daemon.transport, command_envelope("ping", "good"), daemon.site.command_channel,
                                 reply_channel="test.replies", consumer="test", timeout=30, component="test")
        assert parse_reply(reply).ok
