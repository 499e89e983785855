"""Two `coupler daemon` processes running one site on the postgres transport (PostgreSQL only)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from coupler.bus.config.loader import load_site
from coupler.bus.testing.contract import doc
from coupler.bus.transport.factory import open_transport
from coupler.bus.transport.postgres.transport import PostgresTransport
from tests.bus.site_helpers import coupler_env, start_daemon_process, write_site
from tests.bus.transport.amqp.broker import PG_DSN, servers_or_fail, unique_names

SITE = """
[site]
name = "{name}"

[store]
type = "postgres"

[store.postgres]
dsn = "{dsn}"
postgres_schema = "{schema}"

[[adapters]]
name = "echo"
type = "echo"
direction = "outbound"
channel = "to-echo"
[adapters.options]
forward_to = "echo.out"
"""


def test_two_daemons_of_one_site_share_the_work_on_postgresql(tmp_path: Path) -> None:
    servers_or_fail()
    schema = unique_names()["postgres_schema"]
    sites = [write_site(tmp_path / host, SITE.format(name=host, dsn=PG_DSN, schema=schema)) for host in ("host-a", "host-b")]
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
            # the echo adapter forwards (a commit), then acknowledges its delivery (another): the
            # last forwarded message can be seen before its acknowledgement is
            handled: set[str] = set()
            while handled != set(ids) and time.monotonic() < deadline + 30:
                handled = {e.message_id for e in t.journal(channel="to-echo", event="acked", limit=1000)}
                time.sleep(0.05)
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
        PostgresTransport(PG_DSN, schema=schema).destroy()
    assert sorted(out) == sorted(ids)  # each message forwarded once
    assert handled == set(ids)  # every delivery acknowledged, and journaled as such
    taken = [next(a["in"] for a in s["adapters"] if a["name"] == "echo") for s in status]
    assert sum(taken) == 60 and min(taken) > 0, logs  # both daemons competed for the work
    assert all(p.returncode == 0 for p in daemons), logs
