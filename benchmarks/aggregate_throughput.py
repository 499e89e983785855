"""Aggregation throughput against a plain route of the same messages, on SQLite and on AMQP.

Workload: COUNT JSON records (about 100 bytes, 10 correlation groups) are put on a channel;
then a daemon (in this process, as ``coupler daemon`` runs it) starts with one route reading
them:

* ``plain`` -- the route forwards each record to ``out`` (no steps);
* ``aggregate`` -- the route aggregates them by ``body.group`` into batches of 100 (time-out
  2 s, ``lines`` strategy) and sends the batches to ``out``: every record's group header and
  member are written to the transport's store in the transaction that acknowledges it (SQLite),
  or in PostgreSQL beside the broker acknowledgement (AMQP: advisory lock per group, the ids
  of counted records, an outbox row per batch).

records/s = COUNT / (daemon started -> the last record or batch taken off ``out``); the CPU time of
this process (daemon and all) per record is printed beside it. Both routes run on each
transport in the same run, interleaved ``--rounds`` times; the ratio is aggregate's cost per
record over plain's. Usage::

    .venv/bin/python benchmarks/aggregate_throughput.py [--count N] [--rounds R] [--only sqlite,amqp]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from coupler.bus.config.loader import load_site
from coupler.bus.runtime.daemon import Daemon
from coupler.bus.transport.factory import open_transport
from coupler.canonical import Envelope, FormatIndicator

AMQP_URL = os.environ.get("COUPLER_BENCH_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")
PG_DSN = os.environ.get("COUPLER_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
FORMAT = FormatIndicator.parse("bench.Record@1;application/json")

ROUTES = {
    "plain": '[[routes]]\nname = "r"\nfrom = "records"\nto = ["out"]\n',
    "aggregate": ('[[routes]]\nname = "r"\nfrom = "records"\nto = ["out"]\n[[routes.steps]]\ntype = "aggregate"\n'
                  'correlation = "body.group"\ncomplete_size = 100\ntimeout_seconds = 2\nstrategy = "lines"\n'),
}


def store_toml(kind: str) -> tuple[str, Any]:
    if kind == "sqlite":
        return "", None
    tag = uuid.uuid4().hex[:8]
    names = {"prefix": f"bench.{tag}.", "postgres_schema": f"bench_{tag}"}
    text = (f'[store]\ntype = "amqp"\n[store.amqp]\nurl = "{AMQP_URL}"\npostgres = "{PG_DSN}"\n'
            f'prefix = "{names["prefix"]}"\npostgres_schema = "{names["postgres_schema"]}"\n')
    return text, names


def run(kind: str, route: str, count: int, directory: Path) -> dict[str, float]:
    text, names = store_toml(kind)
    site_file = directory / "site.toml"
    site_file.write_text(text + ROUTES[route])
    site = load_site(site_file)
    expected = count if route == "plain" else count // 100
    try:
        with open_transport(site) as t:
            for i in range(0, count, 500):
                t.send("records", [Envelope(format=FORMAT, body=json.dumps(
                    {"n": n, "group": f"g{n % 10}", "amount": n * 1.5, "customer": f"c{n % 977}"}).encode())
                    for n in range(i, min(count, i + 500))])
        daemon = Daemon(site)
        cpu0, t0 = time.process_time(), time.perf_counter()
        daemon.start()
        try:
            t = daemon.transport
            assert t is not None
            got = 0
            while got < expected:  # what the route sends is taken off ``out`` as it comes
                batch = t.receive_wait("out", "bench", max=100, wait=0.5)
                t.ack(batch)
                got += len(batch)
            elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        finally:
            daemon.shutdown()
    finally:
        if names is not None:
            from coupler.bus.transport.amqp.transport import AmqpTransport

            AmqpTransport(AMQP_URL, postgres=PG_DSN, **names).destroy()
    return {"records_per_s": count / elapsed, "cpu_us_per_record": cpu / count * 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=5000, help="records per run (a multiple of 1,000)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="sqlite,amqp")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    kinds = args.only.split(",")
    print(f"{args.count} records, {args.rounds} rounds, load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    results: dict[str, list[dict[str, float]]] = {}
    for r in range(args.rounds):
        for kind in kinds:
            for route in ROUTES:
                with tempfile.TemporaryDirectory() as d:
                    got = run(kind, route, args.count, Path(d))
                results.setdefault(f"{kind} {route}", []).append(got)
                print(f"round {r + 1} {kind:6} {route:9} {got['records_per_s']:8.0f} records/s "
                      f"{got['cpu_us_per_record']:7.0f} us CPU/record", flush=True)
    print("\nmedians:")
    summary: dict[str, Any] = {}
    for kind in kinds:
        med = {route: {k: statistics.median(x[k] for x in results[f"{kind} {route}"]) for k in ("records_per_s", "cpu_us_per_record")}
               for route in ROUTES}
        ratio = med["plain"]["records_per_s"] / med["aggregate"]["records_per_s"]
        cpu_ratio = med["aggregate"]["cpu_us_per_record"] / med["plain"]["cpu_us_per_record"]
        summary[kind] = {**med, "cost_ratio": ratio, "cpu_ratio": cpu_ratio}
        print(f"{kind:6} plain {med['plain']['records_per_s']:7.0f} records/s, aggregate "
              f"{med['aggregate']['records_per_s']:7.0f} records/s: aggregation costs {ratio:.2f}x per record "
              f"(CPU {cpu_ratio:.2f}x)")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
