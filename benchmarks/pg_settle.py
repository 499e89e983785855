"""The PostgreSQL-only store's settling paths: round trips, statements, wall and CPU per settled
message, the current code beside an older commit's.

Cases (each settles COUNT received messages one at a time, each in a transaction of its own):

* ``ack-claim``: ``transport.ack(d)`` of a message whose body is claim-checked (10 KiB, over
  the threshold of 4 KiB);
* ``ack-claim-tx``: ``with transport.transaction() as tx: tx.send(out, small); tx.ack(d)``,
  the same message, as a route handling it does;
* ``ack-tx`` (unchanged control): the same with a small body;
* ``nack-retry``: ``transport.nack(d, error, component)``: back to the queue after its backoff;
* ``nack-dead``: ``transport.nack(d, error, component, dead=True)``: to the dead letters;
* ``nack-dead-claim``: the same, its body claim-checked;
* ``invalid``: ``transport.invalid(d.envelope, reason, component, channel=..., delivery=d)``: to
  the Invalid Message Channel, the delivery settled with it;
* ``invalid-claim``: the same, its body claim-checked;
* ``invalid-tx``: ``with transport.transaction() as tx: tx.send(out, small); tx.invalid(...,
  delivery=d)``, as the dispatcher refusing a command does;
* ``invalid-tx-later``: the same with ``tx.invalid_later(...)`` (the id not asked for inside the
  transaction, as the dispatcher now does);
* ``invalid-raw``: ``transport.invalid(bytes, reason, component, channel=...)`` (no delivery: a
  polling adapter's unreadable input), the messages received all the same;
* ``ack-batch``: ``transport.ack(ds)`` of 10 deliveries at once (per message: a tenth of it);
* ``receive-expired``: ``transport.receive(queue, consumer)`` meeting one expired message (sent
  with ``expires_at`` in the past), which it dead-letters: the receive is what is counted;
* ``ack-lost-tx``: ``ack-tx`` of a delivery whose lease was lost (it ran out, another consumer
  took the message): the transaction fails with ``LeaseLostError`` (its pipeline fails on
  purpose), committing nothing; the cost of that failure;
* ``ack-lost-mix``: such a failed ``ack-lost-tx``, then ``ack-tx`` of the same message by the
  consumer that took it, a pair a message (a lease lost every other transaction: their worst
  case). ``broken``: how many of the ``ack-tx`` failed (a code whose failed pipelines leave
  psycopg's prepared statements wrong: ``prepared statement "_pg3_N" does not exist``).

Every message (but ``receive-expired``'s) is received first (``max=100``, a long lease; the
``ack-lost`` cases' with a lease of 3 s, then by another consumer once it ran out); only
the settling is counted and timed. Two passes a case, each in a fresh process: counts through the protocol proxy of
``outbound_idempotent.py`` (a statement: ``Query`` or ``Execute``, ``BEGIN``/``COMMIT``
included; a round trip: ``Query`` or ``Sync``), then wall and CPU without it. With
``--baseline-ref REF`` each case runs on REF's code too, alternating (old first, then new
first), ``--repeat`` times.

Usage: .venv/bin/python benchmarks/pg_settle.py [--baseline-ref REF] [--cases a,b] [--count 1000]
       [--count-statements 200] [--repeat 1]

PostgreSQL: ``COUPLER_BENCH_POSTGRES`` (default postgresql://postgres@127.0.0.1:5432/test);
schemas made here start with ``bench_settle_`` and are dropped afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from outbound_idempotent import PG_DSN, PgCounter, _through, in_child, reachable  # noqa: E402

CASES = ("ack-claim", "ack-claim-tx", "ack-tx", "nack-retry", "nack-dead", "nack-dead-claim", "invalid",
         "invalid-claim", "invalid-tx", "invalid-tx-later", "invalid-raw", "ack-batch", "receive-expired",
         "ack-lost-tx", "ack-lost-mix")
#: the lease of the ``ack-lost`` cases' first receive: they all end before the messages are taken again
LOST_LEASE = 3.0
QUEUE = "bench.settle"


def _case(code: str | None, case: str, count: int, counting: bool, out: Any) -> None:
    if code:
        import baseline

        baseline.use_code(Path(code))
    import logging

    logging.disable(logging.WARNING)  # a dead letter's warning each: not what is measured
    from coupler.bus.transport.base import LeaseLostError, TransportError
    from coupler.bus.transport.postgres.transport import PostgresTransport
    from coupler.canonical import Envelope

    counter: PgCounter | None = None
    dsn = PG_DSN
    if counting:
        parts = urlsplit(PG_DSN)
        counter = PgCounter(parts.hostname or "127.0.0.1", parts.port or 5432)
        dsn = _through(PG_DSN, counter.port)
    t = PostgresTransport(dsn, schema=f"bench_settle_{uuid.uuid4().hex[:8]}", claim_threshold=4096).open()
    if code:  # the old code runs, not the installed one
        import coupler.bus.transport.base as module

        assert Path(module.__file__).resolve().is_relative_to(Path(code).resolve()), module.__file__
    try:
        big = "claim" in case
        body = bytes(range(256)) * 40 if big else b"x" * 1024
        expires = datetime.now(UTC) - timedelta(seconds=1) if case == "receive-expired" else None
        for i in range(0, count, 100):
            t.send(QUEUE, [Envelope(format="bench.Order@1", body=body, expires_at=expires)
                           for _ in range(min(100, count - i))])
        t.send("bench.out", Envelope(format="bench.Order@1", body=b"warm"))  # its table exists
        deliveries = []
        lost = case.startswith("ack-lost")
        leased = time.monotonic()
        while len(deliveries) < count and expires is None:
            deliveries += t.receive(QUEUE, "bench", max=100, lease_seconds=LOST_LEASE if lost else 3600)
        taken = []
        if lost:
            assert time.monotonic() - leased < LOST_LEASE, "the first receives outlasted their leases"
            time.sleep(max(0.0, leased + LOST_LEASE + 0.2 - time.monotonic()))
            while len(taken) < count:
                taken += t.receive(QUEUE, "other", max=100, lease_seconds=3600)
            order = {d.message_id: i for i, d in enumerate(deliveries)}
            taken = sorted(taken, key=lambda d: order[d.message_id])
        broken = 0
        load = os.getloadavg()[0]
        time.sleep(0.3)  # what opening and sending left to the background threads
        before = counter.counts() if counter else (0, 0)
        start, cpu = time.monotonic(), time.process_time()
        if case == "ack-batch":
            for i in range(0, count, 10):
                t.ack(deliveries[i:i + 10])
            deliveries = []
        if case == "receive-expired":
            for _ in range(count):
                assert t.receive(QUEUE, "bench") == []
        for i, d in enumerate(deliveries):
            if lost:
                try:
                    with t.transaction() as tx:
                        tx.send("bench.out", Envelope(format="bench.Order@1", body=b"done"))
                        tx.ack(d)
                    raise AssertionError("an acknowledgement of a lost lease committed")
                except LeaseLostError:
                    pass
                if case == "ack-lost-mix":
                    try:
                        with t.transaction() as tx:
                            tx.send("bench.out", Envelope(format="bench.Order@1", body=b"done"))
                            tx.ack(taken[i])
                    except TransportError:
                        broken += 1
            elif case == "ack-claim":
                t.ack(d)
            elif case in ("ack-claim-tx", "ack-tx"):
                with t.transaction() as tx:
                    tx.send("bench.out", Envelope(format="bench.Order@1", body=b"done"))
                    tx.ack(d)
            elif case in ("invalid", "invalid-claim"):
                t.invalid(d.envelope, "field 'amount': not a number", "bench", channel=QUEUE, delivery=d)
            elif case == "invalid-tx":
                with t.transaction() as tx:
                    tx.send("bench.out", Envelope(format="bench.Order@1", body=b"fault"))
                    tx.invalid(d.envelope, "refused", "bench", channel=QUEUE, delivery=d)
            elif case == "invalid-tx-later":
                with t.transaction() as tx:
                    tx.send("bench.out", Envelope(format="bench.Order@1", body=b"fault"))
                    tx.invalid_later(d.envelope, "refused", "bench", channel=QUEUE, delivery=d)
            elif case == "invalid-raw":
                t.invalid(b"\x00unreadable", "cannot decode", "bench", channel=QUEUE)
            elif case == "nack-retry":
                assert t.nack(d, "later", "bench", delay=3600) == "retry"
            else:
                assert t.nack(d, "refused", "bench", dead=True) == "dead"
        seconds, cpu = time.monotonic() - start, time.process_time() - cpu
        after = counter.counts() if counter else (0, 0)
        result: dict[str, Any] = {"load": round(load, 2), "broken": broken}
        if counting:
            result["statements"] = round((after[0] - before[0]) / count, 2)
            result["round_trips"] = round((after[1] - before[1]) / count, 2)
        else:
            result["wall_us"] = round(seconds / count * 1e6)
            result["cpu_us"] = round(cpu / count * 1e6)
        out.put(result)
    finally:
        t.close()
        t.destroy()


def run_case(code: str | None, case: str, count: int, counting: bool) -> dict[str, Any]:
    return in_child(_case, (code, case, count, counting), case)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline-ref", metavar="REF", help="also run this commit's code, alternating")
    parser.add_argument("--cases", default=",".join(CASES), help=f"cases to run (of {', '.join(CASES)})")
    parser.add_argument("--count", type=int, default=1000, help="messages of a timed run")
    parser.add_argument("--count-statements", type=int, default=200, help="messages of a counted run")
    parser.add_argument("--repeat", type=int, default=1, help="timed runs of each code a case")
    args = parser.parse_args(argv)
    if not reachable(urlsplit(PG_DSN).port or 5432):
        print("PostgreSQL not reachable", file=sys.stderr)
        return 1
    import baseline
    import machine

    print(f"{platform.node()}: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {machine.memory_note()}")
    with baseline.checkout(args.baseline_ref) if args.baseline_ref else contextlib.nullcontext() as old:
        codes: dict[str, str | None] = {}
        if old is not None:
            codes[baseline.describe(args.baseline_ref)] = str(old)
        codes[baseline.head()] = None
        print(f"{'case':16} {'code':18} {'stmt/msg':>9} {'rt/msg':>7} {'wall us/msg':>12} {'cpu us/msg':>11} {'load':>5}")
        for case in [c for c in args.cases.split(",") if c]:
            rows: dict[str, dict[str, Any]] = {}
            for name, code in codes.items():
                rows[name] = run_case(code, case, args.count_statements, counting=True)
                rows[name]["wall"], rows[name]["cpu"], rows[name]["loads"] = [], [], []
            for i in range(args.repeat):  # the order alternates too: the second of a pair may fare better
                for name, code in list(codes.items())[::1 if i % 2 == 0 else -1]:
                    timed = run_case(code, case, args.count, counting=False)
                    rows[name]["wall"].append(timed["wall_us"])
                    rows[name]["cpu"].append(timed["cpu_us"])
                    rows[name]["loads"].append(timed["load"])
                    rows[name]["broken"] = rows[name]["broken"] + timed["broken"]
            for name, row in rows.items():
                print(f"{case:16} {name:18} {row['statements']:9} {row['round_trips']:7} "
                      f"{statistics.median(row['wall']):12} {statistics.median(row['cpu']):11} "
                      f"{max(row['loads']):5}" + (f"  broken {row['broken']}" if row["broken"] else ""), flush=True)
            if len(rows) == 2:
                a, b = rows.values()
                pairs = list(zip(a["wall"], b["wall"], strict=True))
                cpus = list(zip(a["cpu"], b["cpu"], strict=True))
                print(f"  new/old: round trips x{b['round_trips'] / a['round_trips']:.2f}, "
                      f"wall {', '.join(f'x{n / o:.2f}' for o, n in pairs)}, "
                      f"cpu {', '.join(f'x{n / o:.2f}' for o, n in cpus)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
