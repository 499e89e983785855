"""Spark ingestion throughput: a generated fixed-length EBCDIC file -> Parquet.

    .venv/bin/python benchmarks/spark_ingest.py [--gb 1.0] [--workdir DIR]

Runs, on the same file (207-byte records of ``datagen.py``: PIC X, zoned, COMP-3, COMP, an
OCCURS 5 group):

* the single-process CLI decoder: ``coupler copybook decode CPY DATA --to parquet``;
* ``coupler batch translate --from copybook:CPY --to parquet`` through the Spark ``copybook``
  source on ``local[2]`` and on ``local[1]``.

Each Spark run is its own process (one master per JVM); the job time excludes the session
start-up, which is reported separately. Every configuration runs ``--repeat`` times,
interleaved, and the best time is reported (the development machine is shared, so single
runs vary a lot); the load average is printed with the results. Record counts are checked to
agree. Prints a Markdown table for ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import datagen  # noqa: E402

MB = 1e6


def run_one(master: str, copybook: str, data: str, out: str) -> dict[str, float]:
    """One Spark run in this process (called through ``--run-one``)."""
    from coupler.bus.batch import spark_session, translate

    t0 = time.perf_counter()
    spark = spark_session(master, app_name="bench-spark-ingest")
    spark.range(1).count()  # the Python workers are up
    started = time.perf_counter()
    result = translate(spark, f"copybook:{copybook}", "parquet", [data], out)
    done = time.perf_counter()
    spark.stop()
    return {"startup": started - t0, "job": done - started, "records": result.records, "partitions": result.partitions}


def cli_baseline(copybook: Path, data: Path, out: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "coupler.bus.cli", "copybook", "decode", str(copybook), str(data),
         "--to", "parquet", "--output", str(out)],
        capture_output=True, text=True,
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"CLI decoder failed: {proc.stderr.strip()}")
    import pyarrow.parquet as pq

    return elapsed, pq.ParquetFile(out).metadata.num_rows


def spark_run(master: str, copybook: Path, data: Path, out: Path) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, __file__, "--run-one", master, str(copybook), str(data), str(out)],
        capture_output=True, text=True,
    )
    if proc.returncode:
        raise SystemExit(f"Spark run on {master} failed: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0, help="size of the generated file (default 1.0)")
    ap.add_argument("--workdir", help="where to put the file and outputs (default: a temporary folder)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each configuration, best reported (default 3)")
    ap.add_argument("--run-one", nargs=4, metavar=("MASTER", "COPYBOOK", "DATA", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run_one:
        print(json.dumps(run_one(*args.run_one)))
        return 0

    work = Path(args.workdir or tempfile.mkdtemp(prefix="coupler-spark-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        copybook = datagen.write_copybook(work / "txn.cpy")
        data = work / "txn.dat"
        records = int(args.gb * 1e9 / datagen.RECORD_SIZE)
        t0 = time.perf_counter()
        datagen.write_fixed_file(data, records)
        size = data.stat().st_size
        print(f"generated {size / MB:.0f} MB ({records} records) in {time.perf_counter() - t0:.1f}s", file=sys.stderr)

        load_before = os.getloadavg()
        base_times: list[float] = []
        runs: dict[str, list[dict[str, float]]] = {"local[1]": [], "local[2]": []}
        for rep in range(args.repeat):
            base_time, base_rows = cli_baseline(copybook, data, work / "cli.parquet")
            base_times.append(base_time)
            print(f"CLI decoder: {base_time:.1f}s", file=sys.stderr)
            for master in (("local[2]", "local[1]") if rep % 2 == 0 else ("local[1]", "local[2]")):
                r = spark_run(master, copybook, data, work / f"spark-{master[6]}")
                print(f"{master}: {r}", file=sys.stderr)
                shutil.rmtree(work / f"spark-{master[6]}", ignore_errors=True)
                if r["records"] != base_rows or base_rows != records:
                    raise SystemExit(f"record counts differ: CLI {base_rows}, {master} {r['records']}, generated {records}")
                runs[master].append(r)
        load_after = os.getloadavg()
        base_time = min(base_times)
        best = {m: min(rs, key=lambda r: r["job"]) for m, rs in runs.items()}
        rate = size / MB / base_time
        print(f"\nFile: {size / MB:.0f} MB, {records} records of {datagen.RECORD_SIZE} bytes; "
              f"{best['local[2]']['partitions']:.0f} partitions; best of {args.repeat} runs each; "
              f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after.\n")
        print("| run | time (s) | MB/s | vs CLI decoder |")
        print("|---|---|---|---|")
        print(f"| CLI decoder, one process (`coupler copybook decode --to parquet`) | {base_time:.1f} | {rate:.1f} | 1.00× |")
        for master in ("local[1]", "local[2]"):
            r = best[master]
            mbs = size / MB / r["job"]
            print(f"| Spark `copybook` source → Parquet, `{master}` (job) | {r['job']:.1f} | {mbs:.1f} | {mbs / rate:.2f}× |")
        for master in ("local[1]", "local[2]"):
            r = best[master]
            total = r["job"] + r["startup"]
            print(f"| same, `{master}`, with session start-up ({r['startup']:.1f} s) | {total:.1f} | "
                  f"{size / MB / total:.1f} | {size / MB / total / rate:.2f}× |")
        print(f"\nScaling local[1] → local[2] (best job times): {best['local[1]']['job'] / best['local[2]']['job']:.2f}×")
        print("All job times (s): " + "; ".join(f"{m}: " + ", ".join(f"{r['job']:.1f}" for r in rs) for m, rs in runs.items())
              + "; CLI: " + ", ".join(f"{t:.1f}" for t in base_times))
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
