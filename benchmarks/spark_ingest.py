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
import logging
import os
import resource
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


def tree_cpu(root: int) -> dict[str, float]:
    """CPU seconds (user + system) of ``root`` and every process below it, including their
    reaped children, by role: for a Spark run ``driver`` (this Python process), ``jvm`` and
    ``workers`` (the Python daemon and the task workers it forks). Read before and after a
    job, the difference is the job's CPU time whatever the load of the machine."""
    parents: dict[int, int] = {}
    times: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        pid = int(entry)
        parents[pid] = int(fields[1])
        names[pid] = raw[raw.index("(") + 1 : raw.rindex(")")]
        times[pid] = sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
    hz = os.sysconf("SC_CLK_TCK")
    out = {"driver": times.get(root, 0) / hz, "jvm": 0.0, "workers": 0.0}
    frontier = [(root, "driver")]
    seen = {root}
    while frontier:
        pid, role = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in seen:
                seen.add(child)
                kind = "jvm" if names.get(child) == "java" else ("workers" if role != "driver" else "driver")
                if role == "driver" and kind == "driver":
                    kind = "workers"  # a Python process started by the driver itself (none in local mode)
                out[kind] += times.get(child, 0) / hz
                frontier.append((child, kind))
    return out


def jvm_threads(root: int) -> dict[str, float]:
    """CPU seconds of the JVM's threads below ``root``, by thread name (numbers dropped:
    ``C2 CompilerThread0`` and ``1`` count together): where the JVM's share goes."""
    out: dict[str, float] = {}
    hz = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if raw[raw.index("(") + 1 : raw.rindex(")")] != "java" or int(raw[raw.rindex(")") + 2 :].split()[1]) != root:
            continue
        for tid in os.listdir(f"/proc/{entry}/task"):
            try:
                t = Path(f"/proc/{entry}/task/{tid}/stat").read_text()
            except OSError:
                continue
            name = "".join(ch for ch in t[t.index("(") + 1 : t.rindex(")")] if not ch.isdigit()).strip()
            fields = t[t.rindex(")") + 2 :].split()
            out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / hz
    return out


def run_one(master: str, copybook: str, data: str, out: str) -> dict[str, float]:
    """One Spark run in this process (called through ``--run-one``)."""
    from coupler.bus.batch.jobs import spark_session, translate

    timing: dict[str, float] = {}

    class Grab(logging.Handler):  # the task slots' timing that translate_splits logs
        def emit(self, record: logging.LogRecord) -> None:
            timing.update(getattr(record, "timing", {}))

    logger = logging.getLogger("coupler.translators.spark.direct")
    logger.addHandler(Grab())
    logger.setLevel(logging.DEBUG)
    t0 = time.perf_counter()
    spark = spark_session(master, app_name="bench-spark-ingest")
    # start-up: the JVM, then one Python worker per task slot with the split task's modules
    # imported (workers are reused for every later job of the session)
    slots = spark.sparkContext.defaultParallelism
    spark.sparkContext.parallelize(range(slots), slots).mapPartitions(_warm_worker).collect()
    threads0 = jvm_threads(os.getpid())
    cpu0, started = tree_cpu(os.getpid()), time.perf_counter()
    result = translate(spark, f"copybook:{copybook}", "parquet", [data], out)
    done, cpu1 = time.perf_counter(), tree_cpu(os.getpid())
    threads = {k: round(v - threads0.get(k, 0.0), 2) for k, v in jvm_threads(os.getpid()).items()}
    print("JVM threads' CPU during the job (s): " + json.dumps({k: v for k, v in sorted(threads.items(), key=lambda kv: -kv[1]) if v}),
          file=sys.stderr)
    spark.stop()
    roles = {k: round(cpu1[k] - cpu0[k], 3) for k in cpu0}
    return {"startup": started - t0, "job": done - started, "cpu": sum(roles.values()), **roles,
            "records": result.records, "partitions": result.partitions, **timing}


def _cpu_ticks() -> list[int]:
    return [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]


def _pool_task(task: object, item: object) -> int:
    return sum(m.get("records", 0) for m in task(iter([item])))  # type: ignore[operator,attr-defined]


def pool_run(processes: int, copybook: Path, data: Path, out: Path) -> dict[str, float]:
    """The same split tasks as the Spark job in a plain process pool (``--pool``): what the
    machine gives the work without Spark. Reports the cores busy (from ``/proc/stat``)."""
    import multiprocessing as mp

    from coupler.translators.spark.codec import CopybookCodec
    from coupler.translators.spark.commit import OutputCommitter
    from coupler.translators.spark.direct import _SplitTask
    from coupler.translators.spark.splits import FileSplit, plan_splits

    codec = CopybookCodec(str(copybook), {})
    framing = codec.framing(str(data))
    items = [(FileSplit(s.path, 0, s.start, s.end, s.first_record, s.index), framing)
             for s in plan_splits([str(data)], framing, split_bytes=codec.split_size()[0], slots=processes)]
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


def cli_baseline(copybook: Path, data: Path, out: Path) -> dict[str, float]:
    """The CLI per core: ``copybook decode --jobs 1`` pinned to one core (the figure a Spark
    job per core is compared with); its wall time and CPU time."""
    one = min(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "coupler.bus.cli.main", "copybook", "decode", str(copybook), str(data),
         "--to", "parquet", "--output", str(out), "--jobs", "1"],
        capture_output=True, text=True, preexec_fn=(lambda: os.sched_setaffinity(0, {one})) if one is not None else None,
    )
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"CLI decoder failed: {proc.stderr.strip()}")
    import pyarrow.parquet as pq

    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"job": elapsed, "cpu": cpu, "records": pq.ParquetFile(out).metadata.num_rows}


def spark_run(master: str, copybook: Path, data: Path, out: Path) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, __file__, "--run-one", master, str(copybook), str(data), str(out)],
        capture_output=True, text=True,
    )
    if proc.returncode:
        raise SystemExit(f"Spark run on {master} failed: {proc.stderr.strip()[-2000:]}")
    for line in proc.stderr.splitlines():
        if line.startswith("JVM threads"):
            print(f"{master}: {line}", file=sys.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _med(values: list[float]) -> float:
    return statistics.median(values)


def report(size: int, records: int, cli: list[dict[str, float]], runs: dict[str, list[dict[str, float]]],
           loads: list[float], what: str) -> None:
    """The Markdown table and the acceptance ratios (medians of the pairs)."""
    mb = size / MB
    cli_rate = mb / _med([r["job"] for r in cli])
    cli_cpu_rate = mb / _med([r["cpu"] for r in cli])
    parts = runs["local[2]"][0]["partitions"]
    print(f"\n{what}: {mb:.0f} MB, {records} records; {parts:.0f} partitions on local[2]; "
          f"{len(cli)} pairs; load average {min(loads):.1f}-{max(loads):.1f} during the run.\n")
    print("| run | job time (s), median | MB/s | MB/s per core | CPU (s) | MB per CPU-second | cores busy |")
    print("|---|---|---|---|---|---|---|")
    print(f"| CLI, one process pinned to one core (`--jobs 1`) | {_med([r['job'] for r in cli]):.1f} | {cli_rate:.1f} | "
          f"{cli_rate:.1f} | {_med([r['cpu'] for r in cli]):.1f} | {cli_cpu_rate:.1f} | "
          f"{_med([r['cpu'] / r['job'] for r in cli]):.2f} |")
    for master, cores in (("local[1]", 1), ("local[2]", 2)):
        rs = runs[master]
        job, cpu = _med([r["job"] for r in rs]), _med([r["cpu"] for r in rs])
        print(f"| Spark `{master}` (job; start-up {_med([r['startup'] for r in rs]):.1f} s not counted) | {job:.1f} | "
              f"{mb / job:.1f} | {mb / job / cores:.1f} | {cpu:.1f} | {mb / cpu:.1f} | "
              f"{_med([r['cpu'] / r['job'] for r in rs]):.2f} |")
    pairs = [a["job"] / b["job"] for a, b in zip(runs["local[1]"], runs["local[2]"], strict=True)]
    per_core = [mb / b["job"] / 2 / (mb / c["job"]) for b, c in zip(runs["local[2]"], cli, strict=True)]
    per_core_1 = [c["job"] / a["job"] for a, c in zip(runs["local[1]"], cli, strict=True)]
    cpu_ratio = [c["cpu"] / b["cpu"] for b, c in zip(runs["local[2]"], cli, strict=True)]
    print(f"\nScaling local[2] / local[1] (job time of each pair, run back to back): median **{_med(pairs):.2f}×** "
          f"(pairs {', '.join(f'{r:.2f}' for r in pairs)}; target ≥ 1.85)")
    print(f"Spark per core / CLI per core (wall, median of the pairs): local[2] **{_med(per_core):.2f}×** "
          f"({', '.join(f'{r:.2f}' for r in per_core)}), local[1] {_med(per_core_1):.2f}× (target ≥ 1)")
    print(f"Spark MB per CPU-second / CLI's (all of Spark's processes; meaningful under load): local[2] "
          f"**{_med(cpu_ratio):.2f}×** ({', '.join(f'{r:.2f}' for r in cpu_ratio)})")
    print("All job times (s): " + "; ".join(f"{m}: " + ", ".join(f"{r['job']:.1f}" for r in rs) for m, rs in runs.items())
          + "; CLI: " + ", ".join(f"{r['job']:.1f}" for r in cli))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0, help="size of the generated file (default 1.0)")
    ap.add_argument("--workdir", help="where to put the file and outputs (default: a temporary folder)")
    ap.add_argument("--pairs", "--repeat", type=int, default=3,
                    help="pairs of local[1] and local[2] runs (each with a CLI run), medians reported (default 3)")
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
        if not data.exists() or data.stat().st_size != records * datagen.RECORD_SIZE:
            datagen.write_fixed_file(data, records)
        # the generated file on disk before anything is timed: its writeback would otherwise
        # run during the first runs, on the core local[1] leaves free and local[2] does not
        os.sync()
        size = data.stat().st_size
        print(f"generated {size / MB:.0f} MB ({records} records) in {time.perf_counter() - t0:.1f}s", file=sys.stderr)

        loads = [os.getloadavg()[0]]
        cli: list[dict[str, float]] = []
        runs: dict[str, list[dict[str, float]]] = {"local[1]": [], "local[2]": []}
        pools: dict[int, list[dict[str, float]]] = {}
        for rep in range(args.pairs):
            c = cli_baseline(copybook, data, work / "cli.parquet")
            cli.append(c)
            print(f"CLI decoder: {c}", file=sys.stderr)
            if c["records"] != records:
                raise SystemExit(f"record counts differ: CLI {c['records']}, generated {records}")
            for master in (("local[2]", "local[1]") if rep % 2 == 0 else ("local[1]", "local[2]")):
                r = spark_run(master, copybook, data, work / f"spark-{master[6]}")
                print(f"{master}: {r}", file=sys.stderr)
                shutil.rmtree(work / f"spark-{master[6]}", ignore_errors=True)
                if r["records"] != records:
                    raise SystemExit(f"record counts differ: {master} {r['records']}, generated {records}")
                runs[master].append(r)
            loads.append(os.getloadavg()[0])
            if args.pool:
                for n in (1, 2):
                    r = pool_run(n, copybook, data, work / "pool")
                    print(f"pool of {n}: {r}", file=sys.stderr)
                    pools.setdefault(n, []).append(r)
        report(size, records, cli, runs, loads, "Copybook file → Parquet (`copybook` source, split tasks)")
        if pools:
            ratios = sorted(a["job"] / b["job"] for a, b in zip(pools[1], pools[2], strict=True))
            print(f"Plain process pool, same tasks, no Spark: 1 process {_med([r['job'] for r in pools[1]]):.1f} s "
                  f"({_med([r['cores_busy'] for r in pools[1]]):.2f} cores busy), 2 processes "
                  f"{_med([r['job'] for r in pools[2]]):.1f} s ({_med([r['cores_busy'] for r in pools[2]]):.2f} "
                  f"cores busy); median ratio {_med(ratios):.2f}×")
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
