"""Spark ingestion throughput: a generated fixed-length EBCDIC file -> Parquet.

    .venv/bin/python benchmarks/spark_ingest.py [--gb 1.0] [--repeat 3] [--pool] [--workdir DIR]

Runs, on the same file (207-byte records of ``datagen.py``: PIC X, zoned, COMP-3, COMP, an
OCCURS 5 group):

* the single-process CLI decoder: ``coupler copybook decode CPY DATA --to parquet``;
* ``coupler batch translate --from copybook:CPY --to parquet`` through the Spark ``copybook``
  source on ``local[2]`` and on ``local[1]``.

Each Spark run is its own process (one master per JVM); the job time excludes the session
start-up (the JVM, and one Python worker per task slot with the task's modules imported:
Spark reuses them for every job of the session), which is reported separately. Every configuration runs ``--repeat`` times,
interleaved, and the best time is reported (the development machine is shared, so single
runs vary a lot); the scaling is also given as the median of the ratios of the runs made
back to back (local[1] / local[2] of the same repetition), which a single fast or slow run
does not move. The load average is printed with the results. Record counts are checked to
agree. Prints a Markdown table for ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import datagen  # noqa: E402

MB = 1e6


def _warm_worker(_: object) -> list[int]:
    import coupler.translators.copybook.arrow_parquet  # noqa: F401
    import coupler.translators.spark.direct  # noqa: F401

    time.sleep(0.5)  # hold the slot, so that every slot starts its own worker
    return [os.getpid()]


def run_one(master: str, copybook: str, data: str, out: str) -> dict[str, float]:
    """One Spark run in this process (called through ``--run-one``)."""
    from coupler.bus.batch.jobs import spark_session, translate

    t0 = time.perf_counter()
    spark = spark_session(master, app_name="bench-spark-ingest")
    # start-up: the JVM, then one Python worker per task slot with the split task's modules
    # imported (workers are reused for every later job of the session)
    slots = spark.sparkContext.defaultParallelism
    spark.sparkContext.parallelize(range(slots), slots).mapPartitions(_warm_worker).collect()
    started = time.perf_counter()
    result = translate(spark, f"copybook:{copybook}", "parquet", [data], out)
    done = time.perf_counter()
    spark.stop()
    return {"startup": started - t0, "job": done - started, "records": result.records, "partitions": result.partitions}


def _cpu_ticks() -> list[int]:
    return [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]


def _pool_task(task: object, item: object) -> int:
    return sum(m.get("records", 0) for m in task(iter([item])))  # type: ignore[operator]


def pool_run(processes: int, copybook: Path, data: Path, out: Path) -> dict[str, float]:
    """The same split tasks as the Spark job in a plain process pool (``--pool``): what the
    machine gives the work without Spark. Reports the cores busy (from ``/proc/stat``)."""
    import multiprocessing as mp

    from coupler.translators.spark.codec import CopybookCodec
    from coupler.translators.spark.commit import OutputCommitter
    from coupler.translators.spark.direct import _SplitTask
    from coupler.translators.spark.splits import FileSplit, balanced_split_bytes, plan_splits

    codec = CopybookCodec(str(copybook), {})
    framing = codec.framing(str(data))
    split_bytes = balanced_split_bytes(data.stat().st_size, codec.split_size()[0], 2, framing.record_length)
    items = [(FileSplit(s.path, 0, s.start, s.end, s.first_record, s.index), framing)
             for s in plan_splits([str(data)], framing, split_bytes=split_bytes, split_records=None)]
    task = _SplitTask(codec, OutputCommitter(str(out), "overwrite", "parquet"), "parquet", None, None)
    with mp.get_context("fork").Pool(processes) as pool:
        pool.starmap(_pool_task, [(task, items[0])] * processes)  # the workers' imports
        before, t0 = _cpu_ticks(), time.perf_counter()
        records = sum(pool.starmap(_pool_task, [(task, item) for item in items], chunksize=1))
        elapsed, after = time.perf_counter() - t0, _cpu_ticks()
    shutil.rmtree(out, ignore_errors=True)
    hz = os.sysconf("SC_CLK_TCK")
    busy = (sum(after) - sum(before) - (after[3] - before[3]) - (after[4] - before[4])) / hz / elapsed
    return {"job": elapsed, "records": records, "cores_busy": busy}


def cli_baseline(copybook: Path, data: Path, out: Path) -> tuple[float, int]:
    """The CLI per core: ``copybook decode --jobs 1`` pinned to one core (the figure a Spark
    job per core is compared with)."""
    one = min(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "coupler.bus.cli.main", "copybook", "decode", str(copybook), str(data),
         "--to", "parquet", "--output", str(out), "--jobs", "1"],
        capture_output=True, text=True, preexec_fn=(lambda: os.sched_setaffinity(0, {one})) if one is not None else None,
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
    ap.add_argument("--pool", action="store_true",
                    help="also run the split tasks in a plain process pool of 1 and 2 (no Spark)")
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
        # the generated file on disk before anything is timed: its writeback would otherwise
        # run during the first runs, on the core local[1] leaves free and local[2] does not
        os.sync()
        size = data.stat().st_size
        print(f"generated {size / MB:.0f} MB ({records} records) in {time.perf_counter() - t0:.1f}s", file=sys.stderr)

        load_before = os.getloadavg()
        base_times: list[float] = []
        runs: dict[str, list[dict[str, float]]] = {"local[1]": [], "local[2]": []}
        pools: dict[int, list[dict[str, float]]] = {}
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
            if args.pool:
                for n in (1, 2):
                    r = pool_run(n, copybook, data, work / "pool")
                    print(f"pool of {n}: {r}", file=sys.stderr)
                    pools.setdefault(n, []).append(r)
        load_after = os.getloadavg()
        base_time = min(base_times)
        best = {m: min(rs, key=lambda r: r["job"]) for m, rs in runs.items()}
        rate = size / MB / base_time
        print(f"\nFile: {size / MB:.0f} MB, {records} records of {datagen.RECORD_SIZE} bytes; "
              f"{best['local[2]']['partitions']:.0f} partitions; best of {args.repeat} runs each; "
              f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after.\n")
        print("| run | time (s) | MB/s | vs CLI decoder |")
        print("|---|---|---|---|")
        print(f"| CLI decoder, one process on one core (`coupler copybook decode --to parquet --jobs 1`) | {base_time:.1f} | {rate:.1f} | 1.00× |")
        for master in ("local[1]", "local[2]"):
            r = best[master]
            mbs = size / MB / r["job"]
            print(f"| Spark `copybook` source → Parquet, `{master}` (job) | {r['job']:.1f} | {mbs:.1f} | {mbs / rate:.2f}× |")
        for master in ("local[1]", "local[2]"):
            r = best[master]
            total = r["job"] + r["startup"]
            print(f"| same, `{master}`, with session start-up ({r['startup']:.1f} s) | {total:.1f} | "
                  f"{size / MB / total:.1f} | {size / MB / total / rate:.2f}× |")
        pairs = sorted(a["job"] / b["job"] for a, b in zip(runs["local[1]"], runs["local[2]"], strict=True))
        print(f"\nScaling local[1] → local[2]: median of the {len(pairs)} runs' ratios (each pair run "
              f"back to back) {statistics.median(pairs):.2f}× (each: {', '.join(f'{r:.2f}' for r in pairs)}); "
              f"best job times {best['local[1]']['job'] / best['local[2]']['job']:.2f}×")
        if pools:
            ratios = sorted(a["job"] / b["job"] for a, b in zip(pools[1], pools[2], strict=True))
            print(f"Plain process pool, same tasks, no Spark: 1 process {min(r['job'] for r in pools[1]):.1f} s "
                  f"({statistics.median(r['cores_busy'] for r in pools[1]):.2f} cores busy), 2 processes "
                  f"{min(r['job'] for r in pools[2]):.1f} s ({statistics.median(r['cores_busy'] for r in pools[2]):.2f} "
                  f"cores busy); median ratio {statistics.median(ratios):.2f}×")
        print("All job times (s): " + "; ".join(f"{m}: " + ", ".join(f"{r['job']:.1f}" for r in rs) for m, rs in runs.items())
              + "; CLI: " + ", ".join(f"{t:.1f}" for t in base_times))
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
