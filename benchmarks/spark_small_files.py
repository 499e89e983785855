"""Many small files through one Spark job: `batch translate` of N copybook files to Parquet.

    .venv/bin/python benchmarks/spark_small_files.py [--files 300] [--records 5000] [--jobs 3]
        [--master local[2]] [--baseline-ref REF] [--workdir DIR]

A drop box often holds hundreds of small extracts, which one batch job translates together:
every file is at least one split. The split job (``translators/spark/direct.py``) runs one
Spark task per task slot, each claiming splits until none is left; before (``--baseline-ref``,
e.g. c96d525) it ran one Spark task per split, each costing the JVM's scheduling and
PySpark's hand-over besides its work. Each code runs in its own process with its own Spark
session (``lean_jvm``, as ``batch translate`` starts it), then ``--jobs`` jobs of the same
files, each into a new folder; reported per code: the medians of the job time and of the CPU
seconds of the driver, the JVM and the Python workers (``/proc``), and this code / baseline.
The baseline's code is put first on ``PYTHONPATH`` (the driver and the Spark workers both
import it from there). Record counts are checked to agree.
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

import baseline  # noqa: E402
import datagen  # noqa: E402
from machine import memory_note  # noqa: E402


def run_one(master: str, work: Path, jobs: int) -> None:
    """One Spark session in this process: ``jobs`` jobs over every ``*.dat`` in ``work``."""
    from spark_ingest import tree_cpu

    from coupler.bus.batch.jobs import Spec, spark_session, translate

    files = sorted(str(p) for p in work.glob("*.dat"))
    src, dst = Spec.parse(f"copybook:{work / 'txn.cpy'}", where="--from"), Spec.parse("parquet", where="--to")
    spark = spark_session(master, app_name="bench-small-files", lean_jvm=True)
    slots = spark.sparkContext.defaultParallelism
    spark.sparkContext.parallelize(range(slots), slots).map(lambda x: x).collect()  # the workers started
    for n in range(jobs):
        os.sync()
        cpu0, t0 = tree_cpu(os.getpid()), time.perf_counter()
        result = translate(spark, src, dst, files, str(work / "out" / f"{os.getpid()}-{n}"))
        elapsed, cpu1 = time.perf_counter() - t0, tree_cpu(os.getpid())
        print(json.dumps({"job": elapsed, "records": result.records, "splits": result.partitions,
                          **{k: cpu1[k] - cpu0[k] for k in cpu0}}), flush=True)
    spark.stop()


def measure(master: str, work: Path, jobs: int, code: Path | None) -> list[dict[str, float]]:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(code.parent / "importable"), env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, __file__, "--run-one", master, str(work), str(jobs)], env=env,
                          capture_output=True, text=True, cwd=tempfile.gettempdir())
    shutil.rmtree(work / "out", ignore_errors=True)  # the jobs' outputs
    if proc.returncode:
        raise SystemExit(f"the Spark run failed: {proc.stderr.strip()[-2000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=300, help="how many files (default 300)")
    ap.add_argument("--records", type=int, default=5000, help="207-byte records per file (default 5000: ~1 MB)")
    ap.add_argument("--jobs", type=int, default=3, help="jobs per Spark session, medians reported (default 3)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--baseline-ref", help="also run this commit's code (e.g. c96d525: one Spark task per split)")
    ap.add_argument("--workdir", help="where the files go (default: a temporary folder)")
    ap.add_argument("--run-one", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run_one:
        run_one(args.run_one[0], Path(args.run_one[1]), int(args.run_one[2]))
        return 0
    work = Path(args.workdir or tempfile.mkdtemp(prefix="coupler-small-files-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        return _run(args, work)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


def _run(args: argparse.Namespace, work: Path) -> int:
    datagen.write_copybook(work / "txn.cpy")
    for i in range(args.files):
        path = work / f"f{i:05d}.dat"
        if not path.exists() or path.stat().st_size != args.records * datagen.RECORD_SIZE:
            datagen.write_fixed_file(path, args.records, seed=i)
    os.sync()
    results = {"this code": measure(args.master, work, args.jobs, None)}
    if args.baseline_ref:
        with baseline.checkout_built(args.baseline_ref) as old:
            (old.parent / "importable").mkdir()
            (old.parent / "importable" / "coupler").symlink_to(old)
            results[f"commit {baseline.describe(args.baseline_ref)}"] = measure(args.master, work, args.jobs, old)
    size = args.files * args.records * datagen.RECORD_SIZE / 1e6
    print(f"\n{args.files} files of {args.records} records ({size:.0f} MB), {args.master}, {args.jobs} jobs per "
          f"session (medians); load average {os.getloadavg()[0]:.2f}; {memory_note()}\n")
    print("| code | splits | job (s) | MB/s | CPU: driver (s) | JVM (s) | Python workers (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    med = {}
    for label, runs in results.items():
        if any(r["records"] != args.files * args.records for r in runs):
            raise SystemExit(f"{label}: record counts differ from the {args.files * args.records} generated")
        med[label] = {k: statistics.median(r[k] for r in runs) for k in ("job", "driver", "jvm", "workers", "splits")}
        m = med[label]
        print(f"| {label} | {m['splits']:.0f} | {m['job']:.2f} | {size / m['job']:.0f} | {m['driver']:.2f} | "
              f"{m['jvm']:.2f} | {m['workers']:.2f} |")
    if len(med) == 2:
        new, old = med["this code"], next(v for k, v in med.items() if k != "this code")
        print(f"\nthis code / baseline: job time {old['job'] / new['job']:.2f}× faster; CPU (driver + JVM + workers) "
              f"{(old['driver'] + old['jvm'] + old['workers']) / (new['driver'] + new['jvm'] + new['workers']):.2f}× less")
    return 0


if __name__ == "__main__":
    sys.exit(main())
