"""What message tracing costs the embedded store: sends with and without a trace context.

Since schema version 3 the SQLite store journals the trace id of every message it stores and
its search keys (correlation id, ``coupler.business-key``, ``file.name``), with an index on the
trace id. This measures that cost: the same durable send + receive + acknowledge of 1 KiB
bodies in one process, envelopes that carry a ``traceparent`` and a ``file.name`` (as every
message of a file drop does) against envelopes that carry neither (their journal rows have
no trace id and no index entry: the journal as before tracing), in alternating rounds so
that both see the same machine load. Reported: CPU seconds per message (process time, less
sensitive to other load than wall time) and wall msg/s, median of the rounds, and the ratio.

Usage: .venv/bin/python benchmarks/trace_overhead.py [--count 4000] [--rounds 5] [--batch 100] [--synchronous FULL]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from coupler.bus.transport.sqlite.transport import SqliteTransport
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.tracecontext import TRACEPARENT, TraceContext

FMT = FormatIndicator("bench.Order", 1, "application/octet-stream")
BODY = b"x" * 1024


def envelopes(n: int, traced: bool) -> list[Envelope]:
    out = []
    ctx = TraceContext.new()
    for i in range(n):
        props = {TRACEPARENT: ctx.header, "file.name": f"ORDERS-{i // 100}.DAT"} if traced else {"file.path": f"in/{i}"}
        out.append(Envelope(format=FMT, body=BODY, properties=props))
    return out


def run(directory: str, count: int, batch: int, traced: bool, synchronous: str = "NORMAL") -> tuple[float, float]:
    """(CPU seconds per message, wall msg/s) of sending, receiving and acknowledging ``count``."""
    envs = envelopes(count, traced)
    with SqliteTransport(directory, synchronous=synchronous) as t:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for i in range(0, count, batch):
            t.send("bench", envs[i:i + batch])
        taken = 0
        while taken < count:
            got = t.receive("bench", "consumer", max=batch)
            t.ack(got)
            taken += len(got)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return cpu / count, count / wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--synchronous", choices=("FULL", "NORMAL"), default="NORMAL")
    args = ap.parse_args()
    results: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for traced in ((False, True) if r % 2 == 0 else (True, False)):
                d = os.path.join(tmp, f"r{r}-{int(traced)}")
                results[traced].append(run(d, args.count, args.batch, traced, args.synchronous))
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
          f"{args.count} messages x {args.rounds} rounds, batches of {args.batch}, synchronous {args.synchronous}")
    rows = {}
    for traced, label in ((False, "untraced (journal as before)"), (True, "traced (trace id + keys + index)")):
        cpu = statistics.median(c for c, _ in results[traced]) * 1e6
        rate = statistics.median(w for _, w in results[traced])
        rows[traced] = (cpu, rate)
        print(f"{label:<34} {cpu:8.1f} us CPU/msg  {rate:9.0f} msg/s")
    print(f"ratio traced/untraced: CPU {rows[True][0] / rows[False][0]:.2f}x, throughput {rows[True][1] / rows[False][1]:.2f}x")


if __name__ == "__main__":
    main()
