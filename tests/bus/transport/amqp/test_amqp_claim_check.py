"""Claim Check across hosts: a large body one daemon publishes is consumed by another.

Two `coupler daemon` processes, each with a data directory of its own (two hosts), share
RabbitMQ and PostgreSQL. Daemon A's echo adapter forwards what reaches ``to-a`` to ``to-b``;
only daemon B consumes ``to-b`` and forwards to ``out``. The body is over the site's
``claim_check_bytes``, so A stores it in PostgreSQL and the AMQP message carries only its
reference: B can read it only from there.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from coupler.bus.config.loader import load_site
from coupler.bus.transport.factory import open_transport
from tests.bus.site_helpers import start_daemon_process, write_site
from tests.bus.transport.amqp.broker import AMQP_URL, PG_DSN
from tests.bus.transport.contract.support import doc

SITE = """
[site]
name = "{name}"

[store]
type = "amqp"
claim_check_bytes = 65536

[store.amqp]
url = "{url}"
postgres = "{dsn}"
prefix = "{prefix}"
postgres_schema = "{postgres_schema}"

[[adapters]]
name = "relay"
type = "echo"
direction = "outbound"
channel = "{channel}"
[adapters.options]
forward_to = "{forward_to}"
"""


def test_large_body_published_by_one_daemon_is_consumed_by_the_other(broker_names, tmp_path: Path) -> None:
    big = os.urandom(3 * 1024 * 1024 + 17)  # over claim_check_bytes, several 1 MiB chunks
    site_a = write_site(tmp_path / "host-a", SITE.format(
        name="host-a", url=AMQP_URL, dsn=PG_DSN, channel="to-a", forward_to="to-b", **broker_names))
    site_b = write_site(tmp_path / "host-b", SITE.format(
        name="host-b", url=AMQP_URL, dsn=PG_DSN, channel="to-b", forward_to="out", **broker_names))
    daemons = [start_daemon_process(site_a), start_daemon_process(site_b)]
    try:
        with open_transport(load_site(site_a)) as t:
            [mid] = t.send("to-a", doc(big))
            got = []
            deadline = time.monotonic() + 60
            while not got and time.monotonic() < deadline:
                got = t.receive_wait("out", "test", wait=1)
            assert got, "the large message never came out of host B"
            [d] = got
            body = d.envelope.body
            t.ack(d)
            # A forwarded it (published to-b), B took it from to-b and forwarded it to out; B's
            # acknowledgement of to-b (which journals its receipt) comes a moment after: wait
            deadline = time.monotonic() + 30
            while True:
                events = {(e.channel, e.event) for e in t.journal(message_id=mid)}
                if {("to-b", "sent"), ("to-b", "received")} <= events or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert {("to-b", "sent"), ("to-b", "received")} <= events
            # the AMQP messages carried only the reference: the body was in PostgreSQL
            deadline = time.monotonic() + 10
            while t.store.claim_refs() and time.monotonic() < deadline:
                time.sleep(0.1)  # B acknowledges to-b after forwarding, a moment later
            assert t.store.claim_refs() == []  # every copy acknowledged: the bodies are gone
    finally:
        for p in daemons:
            p.terminate()
        for p in daemons:
            p.communicate(timeout=30)
    assert hashlib.sha256(body).digest() == hashlib.sha256(big).digest()
    assert all(p.returncode == 0 for p in daemons)
    # neither host's data directory holds a claim-check file: nothing local was needed
    assert not list((tmp_path / "host-a").rglob("claims/*")) and not list((tmp_path / "host-b").rglob("claims/*"))
