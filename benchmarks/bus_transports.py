"""The bus on both transports, side by side: embedded SQLite vs RabbitMQ (+ PostgreSQL).

The workload of ``benchmarks/bus_throughput.py`` (durable send + receive + acknowledge of
1 KiB bodies, one producer process and one consumer process; batches of 100 and of 1;
p50/p99 end-to-end latency at 1,000 msg/s offered), run in the same run on:

* ``sqlite FULL`` — the embedded transport (``SqliteTransport``, ``synchronous=FULL``),
* ``amqp`` — Coupler's broker transport (``AmqpTransport``: quorum queue, persistent
  messages, publisher confirms per batch, manual acks, journal and counters in PostgreSQL),
* ``raw rabbitmq`` — pika alone on a classic durable queue (no Coupler), the ceiling of
  what the broker gives one producer and one consumer here.

Usage: .venv/bin/python benchmarks/bus_transports.py [--quick] [--json FILE]
Needs RabbitMQ on 127.0.0.1:5672 (guest/guest) and PostgreSQL on 127.0.0.1:5432.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bus_throughput import _body, _run, _stamp, rabbitmq_available, run_rabbitmq, run_sqlite  # noqa: E402

AMQP_URL = os.environ.get("COUPLER_BENCH_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")
PG_DSN = os.environ.get("COUPLER_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def _transport(names: dict[str, str]) -> Any:
    from coupler.bus.amqp_transport import AmqpTransport

    return AmqpTransport(AMQP_URL, postgres=PG_DSN, **names).open()


def _amqp_producer(names: dict[str, str], count: int, batch: int, rate: float | None, out: Any, go: Any) -> None:
    from coupler.canonical import Envelope

    t = _transport(names)
    go.wait()
    start = time.monotonic()
    cpu = time.process_time()
    for i in range(0, count, batch):
        if rate:
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        t.send("bench", [Envelope(format="bench.Item@1", body=_body(i + j)) for j in range(min(batch, count - i))])
    out.put(("producer", time.process_time() - cpu))
    t.close()


def _amqp_consumer(names: dict[str, str], count: int, batch: int, out: Any, go: Any) -> None:
    t = _transport(names)
    latencies = []
    got = 0
    go.wait()
    start = time.monotonic()
    cpu = time.process_time()
    while got < count:
        ds = t.receive_wait("bench", "consumer", max=batch, wait=5)
        if not ds:
            continue
        t.ack(ds)
        done = time.monotonic()
        latencies.extend(done - _stamp(d.envelope.body) for d in ds)
        got += len(ds)
    out.put(("consumer", (start, time.monotonic(), latencies, time.process_time() - cpu)))
    t.close()


def run_amqp(count: int, batch: int, rate: float | None = None) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:8]
    names = {"prefix": f"bench.{tag}.", "postgres_schema": f"bench_{tag}"}
    t = _transport(names)
    t.declare("bench")
    t.close()
    try:
        ctx = mp.get_context("spawn")
        go, out = ctx.Event(), ctx.Queue()
        procs = [
            ctx.Process(target=_amqp_consumer, args=(names, count, 100 if rate else batch, out, go)),
            ctx.Process(target=_amqp_producer, args=(names, count, batch, rate, out, go)),
        ]
        return _run(procs, go, out, count)
    finally:
        _transport(names).destroy()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer messages (a smoke run)")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    if not rabbitmq_available():
        print("RabbitMQ on 127.0.0.1:5672 not reachable", file=sys.stderr)
        return 1
    scale = 0.1 if args.quick else 1.0
    n100, n1, nlat = int(20_000 * scale), int(5_000 * scale), int(5_000 * scale)
    runs: dict[str, dict[str, Any]] = {}
    for label, count, batch, rate in (
        ("batch 100", n100, 100, None), ("batch 1", n1, 1, None), ("latency @1000/s", nlat, 1, 1000.0),
    ):
        runs[f"sqlite FULL {label}"] = run_sqlite("FULL", count, batch, rate=rate)
        runs[f"amqp {label}"] = run_amqp(count, batch, rate=rate)
        runs[f"raw rabbitmq {label}"] = run_rabbitmq(count, batch, rate=rate)
    print(f"{'run':34} {'msgs':>7} {'msg/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'cpu us/msg':>10} {'load':>5}")
    for name, r in runs.items():
        cpu = r.get("producer_cpu_us", 0) + r.get("consumer_cpu_us", 0)
        print(f"{name:34} {r['count']:7} {r['msg_per_s']:8} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f} "
              f"{cpu:10.0f} {r.get('load', 0):5.1f}")
    for b in ("batch 100", "batch 1"):
        amqp = runs[f"amqp {b}"]["msg_per_s"]
        print(f"{b}: sqlite FULL / amqp {runs[f'sqlite FULL {b}']['msg_per_s'] / amqp:.2f}x, "
              f"amqp / raw rabbitmq {amqp / runs[f'raw rabbitmq {b}']['msg_per_s']:.2f}x")
    if args.json:
        machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
        Path(args.json).write_text(json.dumps({"machine": machine, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
