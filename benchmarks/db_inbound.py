"""Database inbound: rows/s of the database adapter polling a PostgreSQL table against a plain
psycopg loop reading and marking the same rows, side by side in one run.

Workload: a table of ROWS orders (id, customer, amount NUMERIC, ordered DATE, processed_at
NULL). Both sides take the rows in batches of 500 in key order, each batch in one
transaction (``SELECT ... FOR UPDATE SKIP LOCKED``, then ``UPDATE ... SET processed_at``)
until none is left; the table is reset (``processed_at = NULL``, ``VACUUM``) before each run.

* ``psycopg loop`` -- no bus: read the batch, build each row's JSON (what any consumer of the
  rows needs), mark the batch, commit. The ceiling of reading and marking.
* ``adapter`` -- the database adapter (``poll``, status_column) on the embedded SQLite store
  as the daemon opens it (``synchronous = FULL``: every batch is fsync'd before the rows
  are marked): each row becomes a message, durable on the bus before the commit. Polled as
  its poll thread polls (``poll(batches=PIPELINE)``: a batch is read and made while the one
  before is made durable and committed, on the pool's two connections).
* ``adapter, 100 rows/message`` -- the same with ``rows_per_message = 100``.

The runs alternate (baseline, adapter, adapter batched, baseline, ...) so that all see the
same machine load. Reported per mode: rows/s (wall clock; the best run and the median of the
ratios of each round), and CPU per row: this process's (``time.process_time``) and the
PostgreSQL backends serving its connections (``/proc/PID/stat`` of ``pg_backend_pid()``;
PostgreSQL runs on this machine), the two added being the work a row costs whatever the load.
The 1-minute load average at the start and the end is printed beside the figures.

``--journal N`` gives each adapter run's new store N journal entries first (a third of them
of stored messages with their trace ids), as the store of a site that has run a while holds
(the journal is kept 7 days): what a store's indexes cost grows with them.

Usage: .venv/bin/python benchmarks/db_inbound.py [--rows N] [--repeat N] [--journal N] [--json FILE]
(PostgreSQL from ``COUPLER_BENCH_POSTGRES``, default postgresql://postgres@127.0.0.1:5432/test)
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DSN = os.environ.get("COUPLER_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
BATCH = 500
MODES = ("psycopg loop", "adapter, a message per row", "adapter, 100 rows/message")


def setup(schema: str, rows: int) -> None:
    with psycopg.connect(DSN, autocommit=True) as c:
        c.execute(f"CREATE SCHEMA {schema}")
        c.execute(f"CREATE TABLE {schema}.orders (id integer PRIMARY KEY, customer text NOT NULL, "
                  "amount numeric(10,2), ordered date, processed_at timestamptz)")
        with c.cursor().copy(f"COPY {schema}.orders (id, customer, amount, ordered) FROM STDIN") as copy:
            for i in range(rows):
                copy.write_row((i, f"customer {i}", f"{i % 10000}.25", f"2026-11-{1 + i % 28:02d}"))


def reset(schema: str) -> None:
    with psycopg.connect(DSN, autocommit=True) as c:
        c.execute(f"UPDATE {schema}.orders SET processed_at = NULL")
        c.execute(f"VACUUM ANALYZE {schema}.orders")


def backend_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a PostgreSQL backend process of this machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Run:
    """Wall clock and CPU (this process, and the PostgreSQL backends ``pids``) of one run."""

    def __init__(self, pids: list[int]):
        self.pids = pids
        self.done = 0
        self.wall = self.cpu = self.backend = 0.0

    def __enter__(self) -> Run:
        self._start = (time.perf_counter(), time.process_time(), sum(backend_cpu(p) for p in self.pids))
        return self

    def __exit__(self, *exc: object) -> None:
        wall, cpu, backend = self._start
        self.wall = time.perf_counter() - wall
        self.cpu = time.process_time() - cpu
        self.backend = sum(backend_cpu(p) for p in self.pids) - backend


def baseline(schema: str) -> Run:
    with psycopg.connect(DSN) as c:
        pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]  # type: ignore[index]
        c.commit()
        with Run([pid]) as run:
            while True:
                with c.transaction():
                    rows = c.execute(
                        f"SELECT id, customer, amount, ordered, processed_at FROM {schema}.orders "
                        f"WHERE processed_at IS NULL ORDER BY id LIMIT {BATCH} FOR UPDATE SKIP LOCKED").fetchall()
                    if not rows:
                        break
                    for r in rows:
                        json.dumps({"id": r[0], "customer": r[1], "amount": str(r[2]), "ordered": r[3].isoformat(),
                                    "processed_at": None}).encode()
                    c.execute(f"UPDATE {schema}.orders SET processed_at = now() WHERE id = ANY(%s)",
                              ([r[0] for r in rows],))
                run.done += len(rows)
        return run


def backends(engine: Any) -> list[int]:
    """The backend pids of the engine's pool (two connections checked out at once)."""
    import sqlalchemy as sa

    conns = [engine.connect() for _ in range(2)]
    try:
        return sorted(c.execute(sa.text("SELECT pg_backend_pid()")).scalar_one() for c in conns)
    finally:
        for c in conns:
            c.close()


def grown_journal(transport: Any, rows: int) -> None:
    """Give a new store the journal of a site that has run a while: ``rows`` entries (a third
    of them of stored messages, each with its trace id and search keys, as a send writes
    them; the rest received and acknowledged), written before the timed part."""
    conn = transport._conn()
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(
        "INSERT INTO journal (at, channel, message_id, event, detail, trace_id, keys) VALUES (?, ?, ?, ?, ?, ?, ?)",
        ((time.time(), "older", str(uuid.uuid4()), e, "route:x", t, k)
         for t, k in ((uuid.uuid4().hex, f"|older:{i}|") for i in range(rows // 3))
         for e, t, k in (("sent", t, k), ("received", None, None), ("acked", None, None))))
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def adapter(schema: str, data: Path, rows_per_message: int = 1, journal: int = 0) -> Run:
    from coupler.adapters.database import DatabaseAdapter  # imported outside the timed part
    from coupler.adapters.database.inbound import PIPELINE
    from coupler.bus.runtime.context import BusContext, Statistics, build_adapter
    from coupler.bus.transport.sqlite.transport import SqliteTransport

    transport = SqliteTransport(data / "store").open()  # the daemon's defaults: synchronous FULL
    try:
        if journal:
            grown_journal(transport, journal)
        stats = Statistics()
        stats.add("orders-in", "database")
        ctx = BusContext(name="orders-in", config={}, data_dir=data / "adapter", transport=transport,
                         statistics=stats, channel="orders", site_dir=data)
        (data / "adapter").mkdir(exist_ok=True)
        url = DSN.replace("postgresql://", "postgresql+psycopg://", 1)
        a = build_adapter(DatabaseAdapter, "orders-in", {
            "url": url, "schema": schema,
            "poll": {"table": "orders", "status_column": "processed_at", "batch_size": BATCH, "autopoll": False,
                     "rows_per_message": rows_per_message},
        }, ctx, direction="inbound", channel="orders")
        a.start()  # connecting and reading the table's columns: not timed (nor is the baseline's connect)
        gc.freeze()  # as `coupler daemon` does once started (bus/runtime/daemon.py)
        try:
            assert isinstance(a, DatabaseAdapter) and a.poller is not None and a.engine is not None
            pids = backends(a.engine)  # the pool's two connections: those the polls take
            with Run(pids) as run:
                while n := a.poller.poll(batches=PIPELINE).done:
                    run.done += n
            assert backends(a.engine) == pids, "the same two connections"
            return run
        finally:
            a.stop()
    finally:
        transport.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--journal", type=int, default=0,
                   help="journal entries the adapter's store holds before the run (a site that has run a while)")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    try:
        psycopg.connect(DSN, connect_timeout=5).close()
    except psycopg.Error as exc:
        print(f"PostgreSQL not reachable at {DSN}: {exc}; skipped")
        return 0
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    setup(schema, args.rows)
    runs: dict[str, list[Run]] = {m: [] for m in MODES}
    load = os.getloadavg()[0]
    try:
        for _ in range(args.repeat):
            for mode in MODES:
                reset(schema)
                with tempfile.TemporaryDirectory() as tmp:
                    run = (baseline(schema) if mode == MODES[0] else
                           adapter(schema, Path(tmp), 100 if "100" in mode else 1, args.journal))
                assert run.done == args.rows, (mode, run.done)
                runs[mode].append(run)
                print(f"{mode:28s} {args.rows / run.wall:9,.0f} rows/s   CPU/row: process "
                      f"{run.cpu / args.rows * 1e6:5.1f} us + PostgreSQL backend {run.backend / args.rows * 1e6:5.1f} us",
                      flush=True)
    finally:
        with psycopg.connect(DSN, autocommit=True) as c:
            c.execute(f"DROP SCHEMA {schema} CASCADE")
    end_load = os.getloadavg()[0]
    base = runs[MODES[0]]
    print(f"\n{args.rows:,} rows, batches of {BATCH}, {args.repeat} rounds, {args.journal:,} journal entries before; load average {load:.1f} at the start, "
          f"{end_load:.1f} at the end (2 cores)")
    print(f"{'':28s} {'best rows/s':>12s} {'x (best)':>9s} {'x (median of rounds)':>21s} {'CPU us/row':>11s} "
          f"{'x (CPU)':>8s}")
    summary: dict[str, Any] = {"rows": args.rows, "load": [load, end_load], "modes": {}}
    base_cpu = statistics.median((r.cpu + r.backend) / args.rows for r in base)
    for mode in MODES:
        rs = runs[mode]
        best = max(args.rows / r.wall for r in rs)
        x_best = best / max(args.rows / r.wall for r in base)
        x_rounds = statistics.median(b.wall / r.wall for b, r in zip(base, rs, strict=True))
        cpu = statistics.median((r.cpu + r.backend) / args.rows for r in rs)
        print(f"{mode:28s} {best:12,.0f} {x_best:8.2f}x {x_rounds:20.2f}x {cpu * 1e6:11.1f} {base_cpu / cpu:7.2f}x")
        summary["modes"][mode] = {"best_rows_per_s": best, "ratio_best": x_best, "ratio_median_rounds": x_rounds,
                                  "cpu_us_per_row": cpu * 1e6, "ratio_cpu": base_cpu / cpu,
                                  "runs": [{"wall": r.wall, "cpu": r.cpu, "backend": r.backend} for r in rs]}
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
