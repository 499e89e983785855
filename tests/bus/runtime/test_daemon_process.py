"""The daemon as a process: SIGTERM/SIGINT drain and exit 0, one daemon per data directory,
JSON logs, a restart after SIGKILL."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from coupler.bus.config.loader import load_site
from coupler.bus.runtime.control import ControlClient
from coupler.bus.transport.factory import open_transport
from coupler.canonical import Envelope, FormatIndicator
from tests.bus.site_helpers import coupler_env, start_daemon_process, wait_for, write_site

SITE = """
[[adapters]]
name = "slow"
type = "echo"
direction = "outbound"
channel = "to-slow"
[adapters.options]
forward_to = "slow.out"
delay = 1.5
"""

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_drains_in_flight_work_and_exits_0(tmp_path: Path, sig: signal.Signals) -> None:
    site_file = write_site(tmp_path, SITE)
    proc = start_daemon_process(site_file, "--log-format", "json")
    try:
        client = ControlClient(load_site(site_file).control_socket)
        env = Envelope(format=FormatIndicator.parse("t.T@1"), body=b"in flight")
        from coupler.bus.runtime.control import encode_envelope

        client.call("channel.put", channel="to-slow", envelopes=[encode_envelope(env)])

        def in_flight() -> bool:
            return any(c["channel"] == "to-slow" and c["in_flight"] == 1 for c in client.call("channels"))

        wait_for(in_flight, "a message in flight")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    records = [json.loads(line) for line in err.splitlines() if line.strip()]
    assert {"time", "level", "logger", "message"} <= set(records[0])
    assert any("draining" in r["message"] for r in records)
    assert records[-1]["message"].endswith("stopped")
    site = load_site(site_file)
    assert not site.control_socket.exists()
    with open_transport(site) as t:
        (done,) = t.receive("slow.out", "test")
        assert done.envelope.message_id == env.message_id and done.envelope.body == b"in flight"
        assert t.peek("to-slow") == []  # acknowledged before the exit


def test_second_daemon_on_the_same_data_dir_fails_with_a_clear_message(tmp_path: Path) -> None:
    site_file = write_site(tmp_path, "")
    first = start_daemon_process(site_file)
    try:
        second = subprocess.run(
            [sys.executable, "-m", "coupler.bus.cli.main", "daemon", "--site", str(site_file)],
            env=coupler_env(), capture_output=True, text=True, timeout=60,
        )
        assert second.returncode == 1
        assert second.stderr.strip() == (
            f"coupler: error: another coupler daemon (pid {first.pid}) already runs for data directory "
            f"{load_site(site_file).data_dir} (stop it first (`coupler ctl --site SITE.toml stop`) or give "
            "this site another data_dir)"
        )
        assert ControlClient(load_site(site_file).control_socket).call("status")["pid"] == first.pid
    finally:
        first.terminate()
        first.communicate(timeout=30)
    assert first.returncode == 0


def test_restart_after_sigkill_reuses_the_data_dir(tmp_path: Path) -> None:
    site_file = write_site(tmp_path, "")
    proc = start_daemon_process(site_file)
    proc.kill()
    proc.communicate()
    assert load_site(site_file).control_socket.exists()  # stale socket left behind
    again = start_daemon_process(site_file)
    try:
        assert ControlClient(load_site(site_file).control_socket).call("status")["pid"] == again.pid
        ControlClient(load_site(site_file).control_socket).call("stop")
        again.communicate(timeout=30)
    finally:
        if again.poll() is None:
            again.kill()
    assert again.returncode == 0
