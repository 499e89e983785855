"""Several `coupler daemon` processes running one site on RabbitMQ + PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from coupler.bus.config.loader import load_site
from coupler.bus.transport.factory import open_transport
from tests.bus.site_helpers import coupler_env, start_daemon_process, write_site
from tests.bus.transport.amqp.broker import store_table
from tests.bus.transport.contract.support import doc

SITE = """
[site]
name = "{name}"

{store}
[[adapters]]
name = "echo"
type = "echo"
direction = "outbound"
channel = "to-echo"
[adapters.options]
forward_to = "echo.out"
"""


def test_two_daemons_of_one_site_share_the_work(broker_names, tmp_path: Path) -> None:
    # two hosts: each its own data directory, the same broker and database
    sites = [
        write_site(tmp_path / host, SITE.format(name=host, store=store_table(broker_names)))
        for host in ("host-a", "host-b")
    ]
    daemons = [start_daemon_process(s) for s in sites]
    try:
        with open_transport(load_site(sites[0])) as t:
            ids = t.send("to-echo", [doc(str(i).encode()) for i in range(60)])
            out: list[str] = []
            deadline = time.monotonic() + 60
            while len(out) < 60 and time.monotonic() < deadline:
                got = t.receive_wait("echo.out", "test", max=60, wait=1)
                t.ack(got)
                out += [d.message_id for d in got]
            # the daemons acknowledge after forwarding and journal a moment later
            deadline = time.monotonic() + 20
            while True:
                handled = {e.message_id for e in t.journal(channel="to-echo", event="acked", limit=1000)}
                if handled >= set(ids) or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
        status = [
            json.loads(subprocess.run(
                [sys.executable, "-m", "coupler.bus.cli.main", "ctl", "--site", str(s), "status", "--json"],
                env=coupler_env(), capture_output=True, text=True, check=True, timeout=30,
            ).stdout)
            for s in sites
        ]
    finally:
        for p in daemons:
            p.terminate()
        logs = [p.communicate(timeout=30)[1] for p in daemons]
    assert sorted(out) == sorted(ids)  # each message forwarded once
    assert set(handled) == set(ids)
    assert [s["site"] for s in status] == ["host-a", "host-b"]
    taken = [next(a["in"] for a in s["adapters"] if a["name"] == "echo") for s in status]
    # both daemons competed for the work (a delivery interrupted by a lost connection is
    # received again, hence >=)
    assert sum(taken) >= 60 and min(taken) > 0, logs
    assert all(p.returncode == 0 for p in daemons)
