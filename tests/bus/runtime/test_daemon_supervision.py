"""Through a real daemon process (issue 29 items 2 and 3):

* a delivery worker whose ``deliver()`` raises SystemExit or KeyboardInterrupt is logged with
  the adapter and the message, counted, restarted, and the adapter shows ``degraded`` in
  ``ctl status``, ``/healthz`` and the console; the other messages are delivered;
* a drain stops the inbound side first (a file dropped meanwhile is not taken), waits for a
  hung delivery up to ``drain_timeout_seconds``, names it, exits 1; after the restart the
  abandoned message is delivered again and the dropped file taken.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from coupler.bus.config.loader import load_site
from coupler.bus.runtime.console.server import read_token
from coupler.bus.runtime.control import ControlClient
from tests.bus.site_helpers import coupler_env, start_daemon_process, wait_for, write_site

PLUGINS = {"COUPLER_EXTRA_PLUGINS": "tests.bus.plugin_echo,tests.bus.plugin_faulty"}


def env() -> dict[str, str]:
    return {**coupler_env(), **PLUGINS}


def put(site: Path, channel: str, *bodies: str) -> None:
    done = subprocess.run([sys.executable, "-m", "coupler.bus.cli.main", "channel", "put", "--site", str(site),
                           channel, "--lines"], input="\n".join(bodies) + "\n", env=env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def delivered(out: Path) -> list[str]:
    path = out / "delivered.txt"
    return path.read_text().split() if path.exists() else []


def test_a_dying_delivery_worker_is_logged_counted_restarted_and_shown_degraded(tmp_path: Path) -> None:
    out = tmp_path / "out"
    site = write_site(tmp_path / "site", f"""
[site]
name = "supervised"
[http]
listen = "127.0.0.1:0"
[store.redelivery]
max_attempts = 1

[[adapters]]
name = "legacy"
type = "faulty"
direction = "outbound"
channel = "work"
options = {{ directory = "{out}" }}
""")
    daemon = start_daemon_process(site, env=env())
    try:
        put(site, "work", "one", "exit", "two", "interrupt", "three")
        wait_for(lambda: delivered(out) == ["one", "two", "three"], "the other messages delivered", timeout=120)
        client = ControlClient(load_site(site).control_socket)
        status = client.call("status")
        [row] = [r for r in status["adapters"] if r["name"] == "legacy"]
        assert row["state"] == "degraded" and row["worker_deaths"] == 2 and row["failed"] == 2
        assert "KeyboardInterrupt" in row["degraded"]
        assert any(a.get("adapter") == "legacy" and "degraded" in a["alert"] for a in status["alerts"])
        # both poisoned messages ended as dead letters (max_attempts = 1), naming the cause
        dead = client.call("dlq.list")
        assert sorted(d["error"].split(":")[0] for d in dead) == ["the worker died", "the worker died"]

        url = status.get("console_url") or _console_url(site)
        with urllib.request.urlopen(url + "/healthz", timeout=10) as r:  # noqa: S310 - loopback
            raise AssertionError(f"healthz answered {r.status} while degraded")
    except urllib.error.HTTPError as exc:
        health = json.loads(exc.read())
        assert exc.code == 503 and health["status"] == "degraded" and "legacy" in health["degraded_adapters"]
        token = read_token(load_site(site))
        req = urllib.request.Request(_console_url(site) + "/adapters", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=10) as r:  # noqa: S310
            assert "degraded" in r.read().decode()
    finally:
        daemon.terminate()
        _, err = daemon.communicate(timeout=120)
    assert daemon.returncode == 0, err
    assert "worker deliver:legacy of adapter legacy died on message" in err
    assert "SystemExit: 3" in err and "KeyboardInterrupt" in err
    assert "Traceback" not in err  # one line each; the traceback is logged at DEBUG


def _console_url(site: Path) -> str:
    status = ControlClient(load_site(site).control_socket).call("status")
    for key in ("console_url", "console"):
        if status.get(key):
            return str(status[key]).split("/?")[0]
    from coupler.bus.runtime.console.server import console_url

    return console_url(load_site(site)).split("/?")[0]


def test_a_drain_stops_inbound_first_waits_for_the_timeout_names_the_hung_delivery_and_exits_1(tmp_path: Path) -> None:
    out, inbox = tmp_path / "out", tmp_path / "inbox"
    inbox.mkdir()
    site = write_site(tmp_path / "site", f"""
[site]
name = "draining"
drain_timeout_seconds = 2
[store]
lease_seconds = 2

[[adapters]]
name = "drop"
type = "filedrop"
direction = "inbound"
channel = "work"
options = {{ directory = "{inbox}", stable_seconds = 0, poll_interval = 0.1, max_poll_interval = 0.2, payload = "lines" }}

[[adapters]]
name = "legacy"
type = "faulty"
direction = "outbound"
channel = "work"
options = {{ directory = "{out}" }}
""")
    daemon = start_daemon_process(site, env=env())
    try:
        (inbox / "first.txt").write_text("hang\n")
        wait_for(lambda: (out / "hanging").exists(), "the delivery to hang")
        hung_id = (out / "hanging").read_text().split()[0]
        wait_for(lambda: not (inbox / "first.txt").exists(), "the first file taken")
        client = ControlClient(load_site(site).control_socket)
        started = time.monotonic()
        daemon.send_signal(signal.SIGTERM)
        wait_for(lambda: client.call("status")["state"] == "stopping", "the drain to begin")
        (inbox / "late.txt").write_text("late\n")  # dropped during the drain: not taken
        _, err = daemon.communicate(timeout=120)
        took = time.monotonic() - started
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.communicate()
    assert daemon.returncode == 1, err
    assert took < 60, f"the drain took {took:.0f} s with a 2 s time-out"
    assert "drain: still running after 2 s, abandoned" in err and f"deliver:legacy (message {hung_id}" in err
    assert (inbox / "late.txt").exists(), "a file dropped during the drain was taken"
    assert delivered(out) == []

    again = start_daemon_process(site, env=env())  # the abandoned message comes back when its lease ends
    try:
        wait_for(lambda: sorted(delivered(out)) == ["hang", "late"], "redelivery and the late file", timeout=120)
    finally:
        again.send_signal(signal.SIGTERM)
        _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    assert os.listdir(inbox / "archive") and not (inbox / "late.txt").exists()


def test_the_monitor_thread_is_supervised_too(tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    """A bug that ends the monitor (heartbeats, stuck channels, route timers) is logged and the
    monitor restarted, like a delivery worker."""
    import logging

    from tests.bus.site_helpers import running_daemon

    site = write_site(tmp_path / "site", "[monitor]\ninterval_seconds = 0.05\n")
    with caplog.at_level(logging.ERROR), running_daemon(site) as daemon:
        calls = []
        check = daemon.monitor.check_stuck

        def broken_once() -> None:
            calls.append(1)
            if len(calls) == 1:
                raise RuntimeError("a bug in the monitor")
            check()

        daemon.monitor.check_stuck = broken_once  # type: ignore[method-assign]
        wait_for(lambda: len(calls) >= 3, "the monitor to run again after it died", timeout=60)
    assert "worker monitor died: RuntimeError: a bug in the monitor (death 1)" in caplog.text
    [died] = [r for r in caplog.records if "worker monitor died" in r.getMessage()]
    assert died.exc_info is None and "Traceback" not in caplog.text  # one line; in full only at DEBUG
