"""SIGKILL of the daemon at random moments (the seed is printed; COUPLER_CHAOS_SEED replays it;
``make test`` runs 600 rows and 6 kills, ``COUPLER_CRASH_FULL=1`` the sizes below).

Inbound: 2,000 rows of a PostgreSQL table polled: every row is on the bus (distinct message
ids, one per row; a copy published again after a kill between the bus accepting it and the
database commit carries the same id and is dropped by an Idempotent Receiver), and every row
is marked processed exactly once (a trigger logs each marking; a marking rolled back by the
kill leaves no log row).

Outbound: 2,000 messages upserted into a PostgreSQL table: 2,000 rows, each written exactly
once (a trigger counts every insert and update of a row), the channel empty, no dead letters.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from coupler.bus.config.loader import load_site
from coupler.bus.messaging.idempotency import IdempotentReceiver
from coupler.bus.runtime.control import ControlClient, ControlError
from coupler.bus.transport.sqlite.transport import SqliteTransport
from coupler.canonical import Envelope, FormatIndicator
from tests.bus.site_helpers import REPO, coupler_env, wait_for
from tests.chaos import chaos_seed, crash_size

from .conftest import Database

TOTAL, KILLS = crash_size((600, 6), (2_000, 20))
STEP = TOTAL // KILLS  # rows (messages) added before each daemon start, so every kill finds work

SITE = """
[site]
data_dir = "data"

[store]
lease_seconds = 2

[[adapters]]
name = "db"
type = "database"
direction = "{direction}"
channel = "orders"
format = "acme.Order@1;application/json"
[adapters.options]
url = "{url}"
schema = "{schema}"
{side}
"""

POLL = """[adapters.options.poll]
table = "orders"
status_column = "processed_at"
interval = 0.05
max_interval = 0.2
batch_size = 2  # small polls: a kill a few tenths of a second after the start finds work left
"""

WRITE = """[adapters.options.write]
table = "orders_copy"
operation = "upsert"
key = "order_no"
mapping = { orderNo = "order_no", customer = "customer", amount = "amount" }
"""


def _site(root: Path, db: Database, direction: str, side: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "site.toml").write_text(SITE.format(direction=direction, url=db.url, schema=db.schema, side=side))
    return root / "site.toml"


def _daemon(site: Path) -> subprocess.Popen[bytes]:
    with open(site.parent / "daemon.log", "ab") as log:
        return subprocess.Popen([sys.executable, "-m", "coupler.bus.cli", "daemon", "--site", str(site)],
                                cwd=REPO, env=coupler_env(), stdout=subprocess.DEVNULL, stderr=log)


def _up(control: ControlClient, proc: subprocess.Popen[bytes]) -> bool:
    if proc.poll() is not None:
        return True
    try:
        return bool(control.call("status")["pid"] == proc.pid)
    except ControlError:
        return False


def _chaos(site: Path, top_up: Callable[[int], None], count: Callable[[], int], seed: int,
           settled: Callable[[], bool] = lambda: True) -> list[int]:
    """KILLS daemons killed at random moments (some while starting), STEP units of work added
    before each start; then a clean run until ``count()`` reaches TOTAL and ``settled()``.
    Returns ``count()`` after each kill, and fails unless several kills came while work was left."""
    rng = random.Random(seed)
    control = ControlClient(load_site(site).control_socket)
    progress = []
    for kill in range(KILLS):
        top_up(kill)
        proc = _daemon(site)
        if kill % 5 == 4:  # now and then while it starts and recovers
            time.sleep(rng.uniform(0.0, 1.5))
        else:
            # at a random point of this round's work (not a random time: on a fast machine the
            # daemon can finish a round's rows before a timer fires, and the kill proves nothing)
            done, goal = count(), STEP * (kill + 1)
            at = done + rng.uniform(0.0, 0.8) * (goal - done)
            wait_for(partial(_up, control, proc), "the daemon up", timeout=90)
            deadline = time.monotonic() + 60
            while count() < at and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
        if proc.poll() is not None:
            pytest.fail(f"the daemon exited on its own ({proc.returncode}): {(site.parent / 'daemon.log').read_text()[-2000:]}")
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        progress.append(count())
    busy = sum(done < STEP * (kill + 1) for kill, done in enumerate(progress))
    assert busy >= KILLS // 4, f"only {busy} kills came while work was left ({progress}): they proved little"
    proc = _daemon(site)
    try:
        wait_for(lambda: count() == TOTAL and settled(), "the work finished", timeout=180)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    return progress


@pytest.mark.slow
def test_rows_polled_with_sigkills_are_each_on_the_bus_and_marked_once(tmp_path: Path, postgres: Database) -> None:
    seed = chaos_seed("database adapter crash")
    postgres.sql("CREATE TABLE orders (id integer PRIMARY KEY, customer text NOT NULL, amount numeric(10,2), "
                 "processed_at timestamptz)")
    postgres.sql("CREATE TABLE marks (id integer, at timestamptz DEFAULT clock_timestamp())")
    postgres.sql("CREATE FUNCTION log_mark() RETURNS trigger LANGUAGE plpgsql AS "
                 "$$ BEGIN INSERT INTO marks (id) VALUES (NEW.id); RETURN NEW; END $$")
    postgres.sql("CREATE TRIGGER orders_marked AFTER UPDATE OF processed_at ON orders "
                 "FOR EACH ROW EXECUTE FUNCTION log_mark()")
    site = _site(tmp_path / "site", postgres, "inbound", POLL)

    def top_up(kill: int) -> None:
        first = kill * STEP
        postgres.many("INSERT INTO orders (id, customer, amount) VALUES (%s, %s, %s)",
                      [(i, f"customer {i}", f"{i}.25") for i in range(first, first + STEP)])

    def marked() -> int:
        return int(postgres.sql("SELECT count(*) FROM orders WHERE processed_at IS NOT NULL")[0][0])

    progress = _chaos(site, top_up, marked, seed)

    with SqliteTransport(load_site(site).data_dir) as t:
        copies = []
        while batch := t.receive("orders", "check", max=500):
            t.ack(batch)
            copies.extend(d.envelope for d in batch)
        receiver = IdempotentReceiver("check")  # what every consumer of the channel declares
        fresh = []
        for e in copies:
            if not t.seen("check", receiver.keys(e)):
                t.mark_seen("check", receiver.keys(e))
                fresh.append(e)
        assert t.dead_letters() == []
    ids = Counter(json.loads(e.body)["id"] for e in fresh)
    assert sorted(ids) == list(range(TOTAL)) and set(ids.values()) == {1}, "every row exactly once"
    by_id: dict[str, set[int]] = {}
    for e in copies:
        by_id.setdefault(e.message_id, set()).add(json.loads(e.body)["id"])
    assert all(len(rows) == 1 for rows in by_id.values()) and len(by_id) == TOTAL  # one id per row
    assert postgres.sql("SELECT count(*), count(DISTINCT id) FROM marks") == [(TOTAL, TOTAL)], "marked once each"
    print(f"{TOTAL} rows, {KILLS} SIGKILLs, rows marked after each kill: {progress}; "
          f"{len(copies) - TOTAL} copies published again (same ids) and dropped by the Idempotent Receiver")


@pytest.mark.slow
def test_upserts_with_sigkills_write_every_message_exactly_once(tmp_path: Path, postgres: Database) -> None:
    seed = chaos_seed("database adapter crash")
    postgres.sql("CREATE TABLE orders_copy (order_no varchar(20) PRIMARY KEY, customer text NOT NULL, "
                 "amount numeric(10,2), writes integer NOT NULL DEFAULT 0)")
    postgres.sql("CREATE FUNCTION count_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                 "NEW.writes := COALESCE(OLD.writes, 0) + 1; RETURN NEW; END $$")
    postgres.sql("CREATE TRIGGER orders_copy_written BEFORE INSERT OR UPDATE ON orders_copy "
                 "FOR EACH ROW EXECUTE FUNCTION count_write()")
    site = _site(tmp_path / "site", postgres, "outbound", WRITE)
    data_dir = load_site(site).data_dir
    fmt = FormatIndicator("acme.Order", 1, "application/json")

    def top_up(kill: int) -> None:
        with SqliteTransport(data_dir) as t:
            t.send("orders", [Envelope(format=fmt, message_id=str(uuid.uuid5(uuid.NAMESPACE_OID, str(i))),
                                       body=json.dumps({"orderNo": f"N{i:05d}", "customer": f"c{i}",
                                                        "amount": f"{i}.10"}).encode())
                              for i in range(kill * STEP, (kill + 1) * STEP)])

    def written() -> int:
        return int(postgres.sql("SELECT count(*) FROM orders_copy")[0][0])

    def channel_empty() -> bool:
        # a message whose row a killed daemon wrote but did not acknowledge comes back when its
        # lease ends (2 s) and is acknowledged without a second write: wait for that too
        with SqliteTransport(data_dir) as t:
            return all(s.depth == 0 for s in t.stats())

    progress = _chaos(site, top_up, written, seed, settled=channel_empty)
    rows = postgres.sql("SELECT order_no, customer, amount, writes FROM orders_copy ORDER BY order_no")
    assert len(rows) == TOTAL
    assert [r[0] for r in rows] == [f"N{i:05d}" for i in range(TOTAL)]
    assert {r[3] for r in rows} == {1}, f"rows written more than once: {[r for r in rows if r[3] != 1][:5]}"
    assert all(str(r[2]) == f"{int(r[0][1:])}.10" for r in rows)
    assert postgres.sql("SELECT count(*) FROM coupler_delivered WHERE adapter = 'db'") == [(TOTAL,)]
    with SqliteTransport(data_dir) as t:
        assert t.dead_letters() == [] and all(s.depth == 0 for s in t.stats())
    print(f"{TOTAL} upserts, {KILLS} SIGKILLs, rows written after each kill: {progress}")
