"""Acceptance of the Aggregator: records split from files, aggregated back into batches of 100
and by a 2-second time-out, with the daemon SIGKILLed at random moments (on AMQP two daemons
compete for the records and both are killed): every record in exactly one batch, none lost,
no batch with two contents. The files are split by the inbound adapter (``payload = "lines"``:
a durable message per record) or, as the Node-RED peer's site does, taken whole and split by
the route's ``split`` step (the parts live only in the route's transaction: a kill before its
commit redoes the whole file, and on AMQP a part counted before is recognised by its id).

Sized to keep the suite short; the full size of issue 27 (200 files of 100 records, 40 kills)
runs with ``COUPLER_CRASH_FULL=1``. The seed is printed (``-s``); rerun a failure with
``COUPLER_CHAOS_SEED=<seed>``.
"""

from __future__ import annotations

import json
import logging
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from coupler.bus.config.loader import load_site
from coupler.bus.transport.factory import open_transport
from tests.bus.site_helpers import start_daemon_process, write_site
from tests.chaos import FULL, chaos_seed, crash_size

log = logging.getLogger(__name__)

FILES, RECORDS, KILLS = crash_size((30, 50, 8), (200, 100, 40))
GROUPS = 7  # records go to 7 groups: batches of 100 by size; each group ends with fewer than 100, which
# only the 2-second time-out completes (so a time-out happens however fast the records come)

SITE = """
[site]
name = "{host}"
{store}
[[adapters]]
name = "records-in"
type = "filedrop"
direction = "inbound"
channel = "records"
{inbound}
directory = "{drop}"
include = ["*.jsonl"]
stable_seconds = 0
poll_interval = 0.2
max_poll_interval = 0.5

[[routes]]
name = "batches"
from = "records"
to = ["batches"]
idempotent_key = "message_id"
{split}[[routes.steps]]
type = "aggregate"
correlation = "body.group"
complete_size = 100
timeout_seconds = 2
strategy = "lines"
"""

HOW = {
    "lines": ('format = "test.Rec@1;application/json"\n[adapters.options]\npayload = "lines"', ""),
    "split": ('format = "test.Recs@1;application/x-ndjson"\n[adapters.options]\npayload = "whole"',
              '[[routes.steps]]\ntype = "split"\nlines = true\npart_format = "test.Rec@1;application/json"\n'),
}

def _kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    proc.stderr.close()


@pytest.mark.slow
@pytest.mark.timeout(2400 if FULL else 300)
@pytest.mark.parametrize("how", sorted(HOW))
def test_every_record_in_exactly_one_batch_despite_sigkills(store: str, how: str, tmp_path: Path) -> None:
    seed = chaos_seed("aggregate crash")
    rng = random.Random(seed)
    total = FILES * RECORDS
    drop = tmp_path / "drop"
    drop.mkdir()
    hosts = ["host-a", "host-b"] if store else ["host-a"]
    inbound, split = HOW[how]
    sites = [write_site(tmp_path / h, SITE.format(host=h, store=store, drop=drop, inbound=inbound, split=split))
             for h in hosts]

    def drop_files(files: range) -> None:
        for f in files:
            lines = [json.dumps({"n": f * RECORDS + i, "group": f"g{(f * RECORDS + i) % GROUPS}"}) for i in range(RECORDS)]
            tmp = drop / f".f{f:04d}.tmp"
            tmp.write_text("\n".join(lines) + "\n")
            tmp.rename(drop / f"f{f:04d}.jsonl")

    copies: Counter[str] = Counter()
    bodies: dict[str, bytes] = {}
    reasons: Counter[str] = Counter()
    kills = busy = 0
    daemons = [start_daemon_process(s) for s in sites]
    try:
        with open_transport(load_site(sites[0])) as t:

            def collect(wait: float) -> None:
                for d in t.receive_wait("batches", "test", max=100, wait=wait):
                    e = d.envelope
                    copies[e.message_id] += 1
                    assert bodies.setdefault(e.message_id, e.body) == e.body, f"batch {e.message_id} has two contents"
                    if copies[e.message_id] == 1:
                        reasons[e.properties["aggregate.reason"]] += 1
                    t.ack(d)

            def records() -> int:
                return sum(len(b.splitlines()) for b in bodies.values())

            def drain() -> None:
                while True:
                    received = sum(copies.values())
                    collect(0.05)
                    if sum(copies.values()) == received:
                        return

            while kills < KILLS:
                # a wave of files, then a kill at a random moment of its handling: half the
                # files first (groups fill to 100 before the time-out), then the rest a few
                # at a time (the whole set dropped at once was batched within a second or
                # two, and every later kill hit an idle daemon)
                wave = range(FILES * (KILLS + kills) // (2 * KILLS) if kills else 0,
                             FILES * (KILLS + kills + 1) // (2 * KILLS))
                drop_files(wave)
                # the kill's moment: a sleep, not a receive (on a loaded machine a receive ran
                # past it, and late kills found every record out: 6 of 8 "busy" kills)
                time.sleep(rng.uniform(0.05, 0.8))
                victim = rng.randrange(len(daemons))
                _kill(daemons[victim])
                kills += 1
                drain()  # what the daemon put out before it died (and the other daemon so far)
                busy += records() < wave.stop * RECORDS  # it died with a record not yet out in a batch
                daemons[victim] = start_daemon_process(sites[victim])
            last, seen = time.monotonic(), records()
            while records() < total and time.monotonic() - last < 120:  # until done, or 2 min without progress
                collect(1.0)
                if records() > seen:
                    last, seen = time.monotonic(), records()
            collect(3.0)  # a batch sent twice after all would be here by now
            dead = t.dead_letters()
    finally:
        for p in daemons:
            _kill(p)
    numbers = Counter(json.loads(line)["n"] for body in bodies.values() for line in body.splitlines())
    twice = sorted(n for n, c in numbers.items() if c > 1)
    lost = sorted(set(range(total)) - set(numbers))
    duplicate_copies = sum(c - 1 for c in copies.values())
    summary = (f"{how}, seed {seed}: {total} records from {FILES} files, {kills} SIGKILLs, {len(bodies)} batches "
               f"({dict(reasons)}), {duplicate_copies} duplicate copies of a batch, {len(lost)} records lost, "
               f"{len(twice)} in two batches; {busy} kills with work left")
    print(summary)
    log.warning(summary)
    assert dead == [], [(d.kind, d.reason, d.error, d.component) for d in dead]
    assert not lost and not twice, summary
    assert all(len(b.splitlines()) <= 100 for b in bodies.values())
    assert set(reasons) <= {"size", "timeout"} and reasons["timeout"] >= 1, summary
    # most kills must land with work in the daemon, or the test proves little. Not all: after a
    # restart, groups recovered past their time-out take the next wave's records until the timer
    # sweeps them, and then all go out at once, sometimes before the kill (on a loaded machine,
    # 2 of 8 in session 22's first fresh clone, at load 8-11)
    assert kills == KILLS and busy >= KILLS - KILLS // 4, f"only {busy} of the kills hit the daemon at work; {summary}"
    if not store:  # on SQLite the batch commits with the acknowledgements: never a second copy
        assert duplicate_copies == 0, summary
