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
  are marked): each row becomes a message, durable on the bus before the commit.

The runs alternate (baseline, adapter, baseline, adapter, ...) so that both see the same
machine load; the best of each is reported with the ratio, and the 1-minute load average.

Usage: .venv/bin/python benchmarks/db_inbound.py [--rows N] [--repeat N] [--json FILE]
(PostgreSQL from ``COUPLER_BENCH_POSTGRES``, default postgresql://postgres@127.0.0.1:5432/test)
"""

from __future__ import annotations

import argparse
import json
import os
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


def baseline(schema: str) -> tuple[int, float]:
    done = 0
    with psycopg.connect(DSN) as c:
        started = time.perf_counter()
        while True:
            with c.transaction():
                rows = c.execute(
                    f"SELECT id, customer, amount, ordered, processed_at FROM {schema}.orders "
                    f"WHERE processed_at IS NULL ORDER BY id LIMIT {BATCH} FOR UPDATE SKIP LOCKED").fetchall()
                if not rows:
                    return done, time.perf_counter() - started
                for r in rows:
                    json.dumps({"id": r[0], "customer": r[1], "amount": str(r[2]), "ordered": r[3].isoformat(),
                                "processed_at": None}).encode()
                c.execute(f"UPDATE {schema}.orders SET processed_at = now() WHERE id = ANY(%s)", ([r[0] for r in rows],))
            done += len(rows)


def adapter(schema: str, data: Path, rows_per_message: int = 1) -> tuple[int, float]:
    from coupler.adapters.database import DatabaseAdapter  # imported outside the timed part
    from coupler.bus.runtime.context import BusContext, Statistics, build_adapter
    from coupler.bus.transport.sqlite.transport import SqliteTransport

    transport = SqliteTransport(data / "store").open()  # the daemon's defaults: synchronous FULL
    try:
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
        try:
            assert isinstance(a, DatabaseAdapter) and a.poller is not None
            done = 0
            started = time.perf_counter()
            while n := a.poller.poll().done:
                done += n
            return done, time.perf_counter() - started
        finally:
            a.stop()
    finally:
        transport.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    try:
        psycopg.connect(DSN, connect_timeout=5).close()
    except psycopg.Error as exc:
        print(f"PostgreSQL not reachable at {DSN}: {exc}; skipped")
        return 0
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    setup(schema, args.rows)
    results: dict[str, list[float]] = {"psycopg loop": [], "adapter": [], "adapter, 100 rows/message": []}
    load = os.getloadavg()[0]
    try:
        for _ in range(args.repeat):
            for name in results:
                reset(schema)
                with tempfile.TemporaryDirectory() as tmp:
                    done, elapsed = (baseline(schema) if name == "psycopg loop" else
                                     adapter(schema, Path(tmp), 100 if "100" in name else 1))
                assert done == args.rows, (name, done)
                results[name].append(args.rows / elapsed)
                print(f"{name:28s} {args.rows / elapsed:10,.0f} rows/s")
    finally:
        with psycopg.connect(DSN, autocommit=True) as c:
            c.execute(f"DROP SCHEMA {schema} CASCADE")
    best = {k: max(v) for k, v in results.items()}
    ratio = best["adapter"] / best["psycopg loop"]
    batched = best["adapter, 100 rows/message"] / best["psycopg loop"]
    print(f"\n{args.rows:,} rows, batches of {BATCH}, load average {load:.1f} at the start (2 cores)")
    print(f"psycopg loop {best['psycopg loop']:,.0f} rows/s; adapter {best['adapter']:,.0f} rows/s "
          f"({ratio:.2f}x); adapter with 100 rows a message {best['adapter, 100 rows/message']:,.0f} rows/s "
          f"({batched:.2f}x)")
    if args.json:
        out: dict[str, Any] = {"rows": args.rows, "load": load, "best": best, "ratio": ratio,
                               "ratio_batched": batched, "runs": results}
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
