"""The postgres transport's counter flush: round trips, statements and time per flush.

A process of the ``postgres`` transport adds its channels' counts (sent, received, acked...)
to the shared ``counters`` table at most once a second (``PostgresTransport._write_counts``).
This script fills the counts a busy second leaves (``--channels`` channels, ``--counters``
counters each) and flushes them ``--flushes`` times, in a fresh process per run, alternating
the current code with ``--baseline-ref`` (an older commit, in a temporary worktree) when
given. Per flush: round trips to PostgreSQL and statements (from a libpq trace of one flush),
client CPU (``time.process_time``) and wall time (with ``synchronous_commit`` on, the
transport's default, wall time includes the server's WAL flush of each commit).

    ../.venv/bin/python counter_flush.py --baseline-ref HEAD~1 --repeat 5

PostgreSQL: ``COUPLER_BENCH_POSTGRES`` (default ``postgresql://postgres@127.0.0.1:5432/test``);
each run uses a schema of its own, dropped afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PG_DSN = os.environ.get("COUPLER_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
COUNTERS = ("sent", "received", "acked", "failed", "dead", "invalid", "expired")


def _trace_counts(text: str) -> tuple[int, int]:
    """(round trips, statements) of a libpq trace: runs of frontend messages; Query and Execute."""
    lines = [line.split("\t") for line in text.splitlines() if line[:2] in ("F\t", "B\t")]
    sides = [parts[0] for parts in lines]
    trips = sum(1 for i, side in enumerate(sides) if side == "F" and (i == 0 or sides[i - 1] == "B"))
    statements = sum(1 for parts in lines if parts[0] == "F" and len(parts) > 2 and parts[2].strip() in ("Query", "Execute"))
    return trips, statements


def child(code: str | None, channels: list[int], counters: int, flushes: int) -> dict[str, Any]:
    """In a fresh process: per number of channels, the figures of one flush."""
    sys.path.insert(0, str(HERE))
    if code:
        import baseline

        baseline.use_code(Path(code))
    import psycopg

    from coupler.bus.transport.postgres.transport import PostgresTransport

    t = PostgresTransport(PG_DSN, schema=f"bench_counters_{uuid.uuid4().hex[:8]}").open()
    out: dict[str, Any] = {}
    try:
        conn = t._conn()  # this thread's: the flushes run on it
        for n in channels:
            counts = {(f"channel.{i}", c): 3 for i in range(n) for c in COUNTERS[:counters]}

            def flush(counts: dict[tuple[str, str], int] = counts) -> None:
                with t._lock:
                    t._pending.update(counts)
                t._write_counts(force=True)

            for _ in range(20):  # rows inserted, statements prepared
                flush()
            with tempfile.TemporaryFile("w+") as trace:
                conn.pgconn.trace(trace.fileno())
                conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
                try:
                    flush()
                finally:
                    conn.pgconn.untrace()
                trace.seek(0)
                trips, statements = _trace_counts(trace.read())
            cpu0, wall0 = time.process_time(), time.perf_counter()
            for _ in range(flushes):
                flush()
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            out[str(n)] = {"pairs": len(counts), "round_trips": trips, "statements": statements,
                           "cpu_us": cpu / flushes * 1e6, "wall_us": wall / flushes * 1e6}
    finally:
        t.destroy()
    return out


def run(code: str | None, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", code or "",
           "--channels", ",".join(map(str, args.channels)), "--counters", str(args.counters),
           "--flushes", str(args.flushes)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--channels", type=lambda s: [int(x) for x in s.split(",")], default=[1, 5, 20, 100],
                        help="numbers of channels with counts in a flush (default 1,5,20,100)")
    parser.add_argument("--counters", type=int, default=3, choices=range(1, len(COUNTERS) + 1),
                        help="counters of each channel (default 3: sent, received, acked)")
    parser.add_argument("--flushes", type=int, default=300, help="flushes timed per run (default 300)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each code, alternating (default 3)")
    parser.add_argument("--baseline-ref", metavar="REF", help="an older commit, measured in the same run")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child or None, args.channels, args.counters, args.flushes)))
        return 0
    sys.path.insert(0, str(HERE))
    import baseline
    import machine

    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {machine.memory_note()}")
    print(f"PostgreSQL {PG_DSN}; {args.counters} counters a channel; {args.flushes} flushes a run; "
          f"medians of {args.repeat} runs; current code: {baseline.head()}")
    with contextlib.ExitStack() as stack:
        codes: dict[str, str | None] = {"current": None}
        if args.baseline_ref:
            name = baseline.describe(args.baseline_ref)
            codes = {name: str(stack.enter_context(baseline.checkout(name))), **codes}
        runs: dict[str, list[dict[str, Any]]] = {label: [] for label in codes}
        for _ in range(args.repeat):
            for label, code in codes.items():  # alternating: the machine's load falls on both
                runs[label].append(run(code, args))
    header = f"{'code':>10} {'channels':>8} {'pairs':>5} {'trips':>5} {'stmts':>5} {'CPU us':>8} {'wall us':>8}"
    print(header)
    medians: dict[str, dict[str, tuple[float, float]]] = {}
    for label, results in runs.items():
        for n in map(str, args.channels):
            cpu = statistics.median(r[n]["cpu_us"] for r in results)
            wall = statistics.median(r[n]["wall_us"] for r in results)
            first = results[0][n]
            medians.setdefault(n, {})[label] = (cpu, wall)
            print(f"{label:>10} {n:>8} {first['pairs']:>5} {first['round_trips']:>5} {first['statements']:>5} "
                  f"{cpu:>8.0f} {wall:>8.0f}")
    if args.baseline_ref:
        old = next(iter(codes))
        for n, by in medians.items():
            (cpu0, wall0), (cpu1, wall1) = by[old], by["current"]
            print(f"{n:>4} channels: {old}/current CPU {cpu0 / cpu1:.2f}x, wall {wall0 / wall1:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
