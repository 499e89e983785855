"""2,000 POSTs to a daemon's http adapter, the daemon SIGKILLed 20 times while they come in
(the seed is printed; COUPLER_CHAOS_SEED replays it; ``make test`` runs 600 POSTs and 6 kills,
``COUPLER_CRASH_FULL=1`` the full size). Each request carries an
Idempotency-Key and is sent again until it gets a 2xx, as a well-behaved client does: every
request that got a 2xx is on the bus, under the message id its answer named; a copy
published again after a kill (between the publish and the answer) has the same id and an
Idempotent Receiver drops it."""

from __future__ import annotations

import json
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from coupler.bus.config.loader import load_site
from coupler.bus.messaging.idempotency import IdempotentReceiver
from coupler.bus.runtime.control import ControlClient, ControlError
from coupler.bus.transport.sqlite.transport import SqliteTransport
from tests.bus.site_helpers import REPO, coupler_env, wait_for
from tests.chaos import chaos_seed, crash_size

TOTAL, KILLS = crash_size((600, 6), (2_000, 20))
DATA = Path(__file__).parent / "data"

#: an inbound http server on {port} (also the daemon test_attacks.py runs out of file descriptors)
SITE = """
[site]
data_dir = "data"

[[adapters]]
name = "api"
type = "http"
direction = "inbound"
channel = "orders"
[adapters.options]
mode = "server"
port = {port}
[adapters.options.endpoints.orders]
format = "acme.Order@1"
schema_file = "order.avsc"
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_every_post_that_got_a_2xx_is_on_the_bus_once(tmp_path: Path) -> None:
    seed = chaos_seed("crash")
    rng = random.Random(seed)
    port = _free_port()
    root = tmp_path / "site"
    root.mkdir()
    (root / "site.toml").write_text(SITE.format(port=port))
    shutil.copy(DATA / "order.avsc", root / "order.avsc")
    site = load_site(root / "site.toml")
    control = ControlClient(site.control_socket)

    def start() -> subprocess.Popen[bytes]:
        with open(root / "daemon.log", "ab") as log:
            return subprocess.Popen([sys.executable, "-m", "coupler.bus.cli", "daemon", "--site", str(root / "site.toml")],
                                    cwd=REPO, env=coupler_env(), stdout=subprocess.DEVNULL, stderr=log)

    accepted: dict[int, str] = {}  # order -> the message id its 2xx named
    progress: list[int] = []
    attempts = [0]
    done = threading.Event()

    def post_all() -> None:
        with httpx.Client(timeout=10) as client:
            for i in range(TOTAL):
                order = {"orderNo": f"N{i:05d}", "customer": f"c{i}", "quantity": i % 50}
                while True:
                    attempts[0] += 1
                    try:
                        answer = client.post(f"http://127.0.0.1:{port}/orders", json=order,
                                             headers={"Idempotency-Key": f"order-{i}"})
                    except httpx.TransportError:
                        done.wait(0.05)  # the daemon is down: send it again
                        continue
                    if answer.is_success:
                        accepted[i] = answer.json()["message_id"]
                        break
                    assert answer.status_code >= 500, answer.text  # never a refusal of a good order
                    done.wait(0.05)
        done.set()

    proc = start()
    poster = threading.Thread(target=post_all, daemon=True)
    poster.start()
    try:
        for kill in range(KILLS):
            # each kill comes while requests are coming in: after the next ~TOTAL/KILLS have a 2xx
            target = min(TOTAL - 1, kill * (TOTAL // KILLS) + rng.randrange(TOTAL // KILLS // 2))
            wait_for(lambda t=target: len(accepted) >= t or done.is_set(), "requests answered", timeout=120)
            if done.is_set():
                pytest.fail(f"all requests were answered after {kill} kills: the kills proved little")
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
            progress.append(len(accepted))
            proc = start()
        wait_for(done.is_set, "every request answered", timeout=240)
        wait_for(lambda: _up(control, proc), "the daemon up", timeout=60)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        done.set()
    assert len(accepted) == TOTAL
    with SqliteTransport(site.data_dir) as t:
        copies = []
        while batch := t.receive("orders", "check", max=500):
            t.ack(batch)
            copies.extend(d.envelope for d in batch)
        receiver = IdempotentReceiver("check")
        once = []
        for e in copies:
            if not t.seen("check", receiver.keys(e)):
                t.mark_seen("check", receiver.keys(e))
                once.append(e)
        assert t.dead_letters() == []
    by_id = {e.message_id: json.loads(e.body) for e in once}
    assert len(once) == TOTAL
    for i, message_id in accepted.items():
        assert by_id[message_id]["orderNo"] == f"N{i:05d}", f"order {i} (2xx) is not on the bus as {message_id}"
    print(f"{TOTAL} orders, {KILLS} SIGKILLs, 2xx answered after each kill: {progress}; {attempts[0]} POSTs "
          f"sent; {len(copies) - TOTAL} copies published again (same ids), dropped by the Idempotent Receiver")


def _up(control: ControlClient, proc: subprocess.Popen[bytes]) -> bool:
    try:
        return bool(control.call("status")["pid"] == proc.pid)
    except ControlError:
        return False
