"""The site-to-site Messaging Bridge across crashes: site A (embedded SQLite store) forwards
its channel ``outgoing`` through a RabbitMQ queue to site B (the broker store: RabbitMQ +
PostgreSQL), whose amqp adapter publishes it on ``incoming``. Both daemons are SIGKILLed at
random moments, 10 times each at full size (the seed is printed; COUPLER_CHAOS_SEED replays it;
``make test`` runs 400 messages and 4 kills each, ``COUPLER_CRASH_FULL=1`` the full size).

Every message arrives under its own message id; a copy sent again after a kill (A killed
between the broker's confirm and its acknowledgement, B killed between publishing and its
broker acknowledgement) carries the same id, and the Idempotent Receiver of B's consumers
(keyed by message id) takes each message exactly once."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest

from coupler.bus.config.loader import load_site
from coupler.bus.messaging.idempotency import IdempotentReceiver
from coupler.bus.runtime.control import ControlClient, ControlError
from coupler.bus.transport.factory import open_transport
from coupler.bus.transport.sqlite.transport import SqliteTransport
from coupler.canonical import Envelope, FormatIndicator
from tests.bus.site_helpers import REPO, coupler_env, wait_for
from tests.bus.transport.amqp.broker import (
    AMQP_URL,
    destroy,
    servers_or_fail,
    store_table,
    unique_names,
)
from tests.chaos import chaos_seed, crash_size

TOTAL, KILLS = crash_size((400, 8), (1_000, 20))  # half the kills at each site
STEP = TOTAL // (KILLS // 2)  # added at each kill of site A

SITE_A = """
[site]
name = "site-a"
data_dir = "data"

[store]
lease_seconds = 2

[[adapters]]
name = "to-b"
type = "amqp"
direction = "outbound"
channel = "outgoing"
[adapters.options]
url = "{url}"
routing_key = "{queue}"
payload = "envelope"
"""

SITE_B = """
[site]
name = "site-b"
data_dir = "data"

{store}
[[adapters]]
name = "from-a"
type = "amqp"
direction = "inbound"
channel = "incoming"
[adapters.options]
url = "{url}"
queue = "{queue}"
payload = "envelope"
prefetch = 20
"""


@pytest.fixture
def bridge_names() -> Iterator[dict[str, str]]:
    servers_or_fail()
    names = unique_names()
    queue = f"test.h28.bridge.{uuid.uuid4().hex[:10]}"
    with pika.BlockingConnection(pika.URLParameters(AMQP_URL)) as c:
        c.channel().queue_declare(queue, durable=True)
    yield {**names, "queue": queue}
    with pika.BlockingConnection(pika.URLParameters(AMQP_URL)) as c:
        c.channel().queue_delete(queue)
    destroy(names)


def _daemon(site: Path) -> subprocess.Popen[bytes]:
    with open(site.parent / "daemon.log", "ab") as log:
        return subprocess.Popen([sys.executable, "-m", "coupler.bus.cli", "daemon", "--site", str(site)],
                                cwd=REPO, env=coupler_env(), stdout=subprocess.DEVNULL, stderr=log)


def _up(site: Path, proc: subprocess.Popen[bytes]) -> bool:
    if proc.poll() is not None:
        return True
    try:
        return bool(ControlClient(load_site(site).control_socket).call("status")["pid"] == proc.pid)
    except ControlError:
        return False


@pytest.mark.slow
def test_bridge_sqlite_site_to_amqp_site_exactly_once_across_kills_of_either_side(
        tmp_path: Path, bridge_names: dict[str, str]) -> None:
    seed = chaos_seed("crash")
    rng = random.Random(seed)
    a_site, b_site = tmp_path / "a" / "site.toml", tmp_path / "b" / "site.toml"
    for path, text in ((a_site, SITE_A), (b_site, SITE_B)):
        path.parent.mkdir(parents=True)
        path.write_text(text.format(url=AMQP_URL, store=store_table(bridge_names), **bridge_names))
    a_data = load_site(a_site).data_dir
    fmt = FormatIndicator("acme.Order", 1, "application/json")
    sent: list[str] = []

    def top_up(kill: int) -> None:
        with SqliteTransport(a_data) as t:
            batch = [Envelope(format=fmt, body=b'{"n": %d}' % i) for i in range(kill * STEP, (kill + 1) * STEP)]
            sent.extend(t.send("outgoing", batch))

    daemons = {a_site: _daemon(a_site), b_site: _daemon(b_site)}
    try:
        for kill in range(KILLS):
            victim = a_site if kill % 2 == 0 else b_site
            if victim == a_site:  # A is down for a moment: more work for it meanwhile
                daemons[a_site].send_signal(signal.SIGKILL)
                daemons[a_site].wait(30)
                top_up(kill)
                daemons[a_site] = _daemon(a_site)
            wait_for(lambda v=victim: _up(v, daemons[v]), "the daemon up", timeout=90)
            time.sleep(rng.uniform(0.0, 0.6))
            if daemons[victim].poll() is not None:
                pytest.fail(f"{victim.parent.name} exited on its own: {(victim.parent / 'daemon.log').read_text()[-2000:]}")
            daemons[victim].send_signal(signal.SIGKILL)
            daemons[victim].wait(30)
            daemons[victim] = _daemon(victim)
        with open_transport(load_site(b_site)) as b:
            receiver = IdempotentReceiver("check")
            once: list[str] = []
            copies = 0

            def drained() -> bool:
                nonlocal copies
                for d in b.receive_wait("incoming", "check", max=200, wait=0.5):
                    copies += 1
                    if not b.seen("check", receiver.keys(d.envelope)):
                        b.mark_seen("check", receiver.keys(d.envelope))
                        once.append(d.message_id)
                    b.ack(d)
                return len(once) >= TOTAL

            try:
                wait_for(drained, "every message at site B", timeout=120)
            except AssertionError:
                with SqliteTransport(a_data) as t:
                    left = t.stats("outgoing")[0]
                    dead = [(d.reason, d.component) for d in t.dead_letters()][:3]
                missing = sorted(set(sent) - set(once))
                with pika.BlockingConnection(pika.URLParameters(AMQP_URL)) as c:
                    depth = c.channel().queue_declare(bridge_names["queue"], passive=True).method.message_count
                pytest.fail(f"{len(once)} of {TOTAL} at B ({copies} copies); A: {left}, dead {dead}; "
                            f"queue depth {depth}; B dead {b.dead_letters()[:3]}; missing e.g. {missing[:3]}")
            assert b.dead_letters() == []

            def a_settled() -> bool:
                # a message a killed A had sent but not acknowledged comes back when its lease
                # ends (2 s), is sent again (B's receiver drops the copy) and acknowledged
                with SqliteTransport(a_data) as t:
                    return t.stats("outgoing")[0].depth == 0

            wait_for(a_settled, "site A's outgoing channel empty", timeout=60)
    finally:
        for proc in daemons.values():
            proc.send_signal(signal.SIGTERM)
        for proc in daemons.values():
            proc.wait(60)
    assert sorted(once) == sorted(sent) and len(sent) == TOTAL
    with SqliteTransport(a_data) as t:
        assert t.dead_letters() == [] and t.stats("outgoing")[0].depth == 0
    print(f"{TOTAL} messages bridged, {KILLS} SIGKILLs (half per site); {copies - TOTAL} copies sent again "
          f"(same ids) and dropped by the Idempotent Receiver")
