"""Spark ingestion throughput per core and scaling: the copybook and XML sources vs the CLI.

    .venv/bin/python benchmarks/spark_ingest.py [--source both|copybook|xml] [--gb 1.0] [--xml-mb 200]
        [--pairs 3] [--pool] [--workdir DIR]

For each source, on one generated file:

* ``copybook``: 207-byte records of ``datagen.py`` (PIC X, zoned, COMP-3, COMP, an OCCURS 5
  group); the CLI ``coupler copybook decode CPY DATA --to parquet --jobs 1`` against
  ``coupler batch translate --from copybook:CPY --to parquet`` (split tasks, ``direct.py``);
* ``xml``: ``orders/order`` records of ``xml_translate.py`` against ``orders.xsd``; the CLI
  ``coupler xml decode XSD DATA --record-path orders/order --to avro`` against ``coupler
  batch translate --from xml:XSD#order --to avro:...Order@1`` (``xml_splits.py``; the
  record schema registered as a canonical entity, codec ``null`` as the CLI writes: the same
  fastavro writer on both sides; ``orders.xsd`` has a recursive type, so not Parquet).

``--pairs`` times: the CLI pinned to one core, then ``local[1]`` and ``local[2]`` back to back
(order alternating). Each Spark run is its own process (one master per JVM); its job time
excludes the session start-up (the JVM, one Python worker per task slot with the task's
modules imported, and the JIT compilers' start-up backlog: a session's later jobs pay none
of it), which is reported separately. The session is started as ``batch translate`` starts
it for a split-task job (``lean_jvm``: C1 only, the parallel collector). Reported, as medians: job time, MB/s, MB/s per core
(local[N]: divided by N), CPU seconds of every process of the run (Spark: driver, JVM and
the split tasks as they report it; the JVM's threads on standard error) and MB per CPU-second (the per-core
figure that a loaded machine does not distort much); then the acceptance ratios: the median
of the pairs' local[2]/local[1] scaling (target ≥ 1.85) and Spark per core / CLI per core
(target ≥ 1). Record counts are checked to agree. The load average is printed: wall-clock
scaling needs a quiet machine.
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


class _WarmWorker:
    """A task slot's start-up: the split task's modules imported (and for XML the schema
    model loaded, which the worker keeps), holding the slot so that every slot starts its
    own worker."""

    def __init__(self, source: str, schema: str):
        self.source = source
        self.schema = schema

    def __call__(self, _: object) -> list[int]:
        import coupler.translators.copybook.arrow_parquet  # noqa: F401
        import coupler.translators.copybook.batch_files  # noqa: F401
        import coupler.translators.spark.direct  # noqa: F401

        if self.source == "xml":
            from coupler.translators.spark.xml_splits import _model

            _model(self.schema)
        time.sleep(0.5)
        return [os.getpid()]


def spark_from(source: str, schema: str) -> str:
    """The ``--from`` spec of a source: the copybook, or the XSD with the record element."""
    return f"copybook:{schema}" if source == "copybook" else f"xml:{schema}#order"


def tree_cpu(root: int) -> dict[str, float]:
    """CPU seconds (user + system) of a Spark run's driver (``root``, with the children it
    reaped) and of its JVM (the ``java`` process below it). The Python workers are not
    counted here: PySpark's daemon does not collect its workers' times when they exit, so a
    process tree loses them; each split task reports the CPU time it took instead
    (``task_cpu``)."""
    hz = os.sysconf("SC_CLK_TCK")
    out = {"driver": 0.0, "jvm": 0.0}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        if int(entry) == root:
            out["driver"] = sum(int(v) for v in fields[11:15]) / hz
        elif int(fields[1]) == root and raw[raw.index("(") + 1 : raw.rindex(")")] == "java":
            out["jvm"] = (int(fields[11]) + int(fields[12])) / hz
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


def settle_jit(root: int, *, quiet: float = 0.05, longest: float = 60.0) -> float:
    """Wait until the JVM's JIT compilers have worked through the start-up's backlog (less
    than ``quiet`` s of compiler CPU in a second), at most ``longest`` s; the seconds waited.
    Part of the session start-up: a session's later jobs do not pay it."""
    t0 = time.perf_counter()
    before = sum(v for k, v in jvm_threads(root).items() if "Compiler" in k)
    while time.perf_counter() - t0 < longest:
        time.sleep(1.0)
        now = sum(v for k, v in jvm_threads(root).items() if "Compiler" in k)
        if now - before < quiet:
            break
        before = now
    return time.perf_counter() - t0


def run_one(master: str, source: str, schema: str, data: str, out: str) -> dict[str, float]:
    """One Spark run in this process (called through ``--run-one``)."""
    from coupler.bus.batch.jobs import spark_session, translate

    timing: dict[str, float] = {}

    class Grab(logging.Handler):  # the task slots' timing that translate_splits logs
        def emit(self, record: logging.LogRecord) -> None:
            timing.update(getattr(record, "timing", {}))

    for name in ("coupler.translators.spark.direct", "coupler.translators.spark.xml_splits"):
        logging.getLogger(name).addHandler(Grab())
        logging.getLogger(name).setLevel(logging.DEBUG)
    t0 = time.perf_counter()
    spark = spark_session(master, app_name="bench-spark-ingest", lean_jvm=True)  # as `batch translate` starts it
    # start-up: the JVM, then one Python worker per task slot with the split task's modules
    # imported (workers are reused for every later job of the session)
    slots = spark.sparkContext.defaultParallelism
    spark.sparkContext.parallelize(range(slots), slots).mapPartitions(_WarmWorker(source, schema)).collect()
    settle_jit(os.getpid())
    started_at = time.perf_counter()
    out_runs = []
    for _ in range(2):  # the session's first job, then a second one (the batch daemon's case)
        timing.clear()
        threads0 = jvm_threads(os.getpid())
        cpu0, started = tree_cpu(os.getpid()), time.perf_counter()
        result = translate(spark, spark_from(source, schema), "parquet" if source == "copybook" else avro_to(schema, out),
                           [data], out, schema_dirs=[str(Path(out).parent / "schemas")] if source == "xml" else (),
                           write_options={"codec": "null"} if source == "xml" else None)
        done, cpu1 = time.perf_counter(), tree_cpu(os.getpid())
        threads = {k: round(v - threads0.get(k, 0.0), 2) for k, v in jvm_threads(os.getpid()).items()}
        print("JVM threads' CPU during the job (s): "
              + json.dumps({k: v for k, v in sorted(threads.items(), key=lambda kv: -kv[1]) if v}), file=sys.stderr)
        roles = {k: round(cpu1[k] - cpu0[k], 3) for k in cpu0}
        roles["workers"] = float(timing.get("task_cpu", 0.0))
        out_runs.append({"job": done - started, "cpu": sum(roles.values()), **roles, "records": result.records,
                         "partitions": result.partitions, **timing})
    spark.stop()
    first, second = out_runs
    return {"startup": started_at - t0, **first, "second": second}


def avro_to(xsd: str, out: str) -> str:
    """The XML records' schema (as ``xml decode`` writes it) registered as a canonical entity
    beside the output; the ``--to`` spec naming it."""
    from coupler.translators.spark.xml_splits import record_avro_schema

    schema = record_avro_schema(xsd, "order", "orders/order")
    folder = Path(out).parent / "schemas" / "order"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "v1.avsc").write_text(json.dumps(schema))
    return f"avro:{schema['namespace']}.{schema['name']}@1"


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


def cli_baseline(source: str, schema: Path, data: Path, out: Path) -> dict[str, float]:
    """The CLI per core, pinned to one core (the figure a Spark job per core is compared
    with): ``copybook decode --to parquet --jobs 1``, or ``xml decode --record-path
    orders/order --to avro`` (the XML CLI writes JSON lines or Avro, not Parquet); its wall
    time and CPU time."""
    one = min(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    if source == "copybook":
        command = ["copybook", "decode", str(schema), str(data), "--to", "parquet", "--output", str(out), "--jobs", "1"]
    else:
        command = ["xml", "decode", str(schema), str(data), "--record-path", "orders/order", "--to", "avro",
                   "--output", str(out), "--no-progress"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "coupler.bus.cli.main", *command],
        capture_output=True, text=True, preexec_fn=(lambda: os.sched_setaffinity(0, {one})) if one is not None else None,
    )
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"CLI decoder failed: {proc.stderr.strip()}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if source == "copybook":
        import pyarrow.parquet as pq

        records = pq.ParquetFile(out).metadata.num_rows
    else:
        import fastavro

        with open(out, "rb") as fh:
            records = sum(block.num_records for block in fastavro.block_reader(fh))
    return {"job": elapsed, "cpu": cpu, "records": records}


def spark_run(master: str, source: str, schema: Path, data: Path, out: Path) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, __file__, "--run-one", master, source, str(schema), str(data), str(out)],
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
    """The Markdown table and the acceptance ratios (medians of the pairs), for the session's
    first job and for its second."""
    mb = size / MB
    cli_rate = mb / _med([r["job"] for r in cli])
    cli_cpu_rate = mb / _med([r["cpu"] for r in cli])
    parts = runs["local[2]"][0]["partitions"]
    print(f"\n{what}: {mb:.0f} MB, {records} records; {parts:.0f} partitions on local[2]; "
          f"{len(cli)} pairs; load average {min(loads):.1f}-{max(loads):.1f} during the run.\n")
    print("| run | job time (s), median | MB/s | MB/s per core | CPU (s) | of which JVM | MB per CPU-second | cores busy |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| CLI, one process pinned to one core | {_med([r['job'] for r in cli]):.1f} | {cli_rate:.1f} | "
          f"{cli_rate:.1f} | {_med([r['cpu'] for r in cli]):.1f} | | {cli_cpu_rate:.1f} | "
          f"{_med([r['cpu'] / r['job'] for r in cli]):.2f} |")
    views = {"first job": {m: list(rs) for m, rs in runs.items()},
             "second job": {m: [r["second"] for r in rs] for m, rs in runs.items()}}  # type: ignore[misc]
    for view, vruns in views.items():
        for master, cores in (("local[1]", 1), ("local[2]", 2)):
            rs = vruns[master]
            job, cpu = _med([r["job"] for r in rs]), _med([r["cpu"] for r in rs])
            startup = f"; start-up {_med([r['startup'] for r in runs[master]]):.1f} s not counted" if view == "first job" else ""
            print(f"| Spark `{master}`, the session's {view}{startup} | {job:.1f} | {mb / job:.1f} | {mb / job / cores:.1f} | "
                  f"{cpu:.1f} | {_med([r['jvm'] for r in rs]):.1f} | {mb / cpu:.1f} | {_med([r['cpu'] / r['job'] for r in rs]):.2f} |")
    print()
    for view, vruns in views.items():
        pairs = [a["job"] / b["job"] for a, b in zip(vruns["local[1]"], vruns["local[2]"], strict=True)]
        per_core = [c["job"] / b["job"] / 2 for b, c in zip(vruns["local[2]"], cli, strict=True)]
        per_core_1 = [c["job"] / a["job"] for a, c in zip(vruns["local[1]"], cli, strict=True)]
        cpu_ratio = [c["cpu"] / b["cpu"] for b, c in zip(vruns["local[2]"], cli, strict=True)]
        print(f"{view}: scaling local[2] / local[1] (each pair back to back): median **{_med(pairs):.2f}×** "
              f"(pairs {', '.join(f'{r:.2f}' for r in pairs)}; target ≥ 1.85); Spark per core / CLI per core: "
              f"local[2] **{_med(per_core):.2f}×** ({', '.join(f'{r:.2f}' for r in per_core)}), local[1] "
              f"{_med(per_core_1):.2f}× (target ≥ 1); MB per CPU-second, Spark local[2] / CLI: "
              f"{_med(cpu_ratio):.2f}× ({', '.join(f'{r:.2f}' for r in cpu_ratio)})")
    print("All job times (s), first/second job: " + "; ".join(
        f"{m}: " + ", ".join(f"{r['job']:.1f}/{r['second']['job']:.1f}" for r in rs) for m, rs in runs.items())
        + "; CLI: " + ", ".join(f"{r['job']:.1f}" for r in cli))


def prepare(source: str, work: Path, gb: float, xml_mb: float) -> tuple[Path, Path, int]:
    """The schema, the data file and its record count (generated once per work folder)."""
    if source == "copybook":
        schema = datagen.write_copybook(work / "txn.cpy")
        data = work / "txn.dat"
        records = int(gb * 1e9 / datagen.RECORD_SIZE)
        if not data.exists() or data.stat().st_size != records * datagen.RECORD_SIZE:
            datagen.write_fixed_file(data, records)
        return schema, data, records
    import xml_translate

    data = work / f"orders-{xml_mb:g}.xml"
    count_file = data.with_suffix(".count")
    if not data.exists() or not count_file.exists():
        count_file.write_text(str(xml_translate.generate(data, xml_mb)))
    return xml_translate.XSD, data, int(count_file.read_text())


def run_source(source: str, args: argparse.Namespace, work: Path) -> None:
    """``--pairs`` pairs of local[1] and local[2] runs of one source, each with a CLI run."""
    t0 = time.perf_counter()
    schema, data, records = prepare(source, work, args.gb, args.xml_mb)
    # the generated file on disk before anything is timed: its writeback would otherwise
    # run during the first runs, on the core local[1] leaves free and local[2] does not
    os.sync()
    size = data.stat().st_size
    print(f"{source}: {size / MB:.0f} MB ({records} records) ready in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    loads = [os.getloadavg()[0]]
    cli: list[dict[str, float]] = []
    runs: dict[str, list[dict[str, float]]] = {"local[1]": [], "local[2]": []}
    pools: dict[int, list[dict[str, float]]] = {}
    for rep in range(args.pairs):
        c = cli_baseline(source, schema, data, work / ("cli.parquet" if source == "copybook" else "cli.avro"))
        cli.append(c)
        print(f"CLI: {c}", file=sys.stderr)
        if c["records"] != records:
            raise SystemExit(f"record counts differ: CLI {c['records']}, generated {records}")
        for master in (("local[2]", "local[1]") if rep % 2 == 0 else ("local[1]", "local[2]")):
            r = spark_run(master, source, schema, data, work / f"spark-{master[6]}")
            print(f"{master}: {r}", file=sys.stderr)
            shutil.rmtree(work / f"spark-{master[6]}", ignore_errors=True)
            if r["records"] != records:
                raise SystemExit(f"record counts differ: {master} {r['records']}, generated {records}")
            runs[master].append(r)
        loads.append(os.getloadavg()[0])
        if args.pool and source == "copybook":
            for n in (1, 2):
                r = pool_run(n, schema, data, work / "pool")
                print(f"pool of {n}: {r}", file=sys.stderr)
                pools.setdefault(n, []).append(r)
    title = ("Copybook file → Parquet (`copybook` source, split tasks)" if source == "copybook" else
             "XML file → Avro (`xml:orders.xsd#order` → `avro:…Order@1`, split tasks; the CLI `xml decode --to avro`)")
    report(size, records, cli, runs, loads, title)
    if pools:
        ratios = sorted(a["job"] / b["job"] for a, b in zip(pools[1], pools[2], strict=True))
        print(f"Plain process pool, same tasks, no Spark: 1 process {_med([r['job'] for r in pools[1]]):.1f} s "
              f"({_med([r['cores_busy'] for r in pools[1]]):.2f} cores busy), 2 processes "
              f"{_med([r['job'] for r in pools[2]]):.1f} s ({_med([r['cores_busy'] for r in pools[2]]):.2f} "
              f"cores busy); median ratio {_med(ratios):.2f}×")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", choices=("copybook", "xml", "both"), default="both", help="which data source (default both)")
    ap.add_argument("--gb", type=float, default=1.0, help="size of the generated copybook file (default 1.0)")
    ap.add_argument("--xml-mb", type=float, default=200, help="size of the generated XML file in MiB (default 200)")
    ap.add_argument("--workdir", help="where to put the files and outputs (default: a temporary folder)")
    ap.add_argument("--pairs", "--repeat", type=int, default=3,
                    help="pairs of local[1] and local[2] runs (each with a CLI run), medians reported (default 3)")
    ap.add_argument("--pool", action="store_true",
                    help="also run the copybook split tasks in a plain process pool of 1 and 2 (no Spark)")
    ap.add_argument("--run-one", nargs=5, metavar=("MASTER", "SOURCE", "SCHEMA", "DATA", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run_one:
        print(json.dumps(run_one(*args.run_one)))
        return 0

    work = Path(args.workdir or tempfile.mkdtemp(prefix="coupler-spark-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        for source in ("copybook", "xml") if args.source == "both" else (args.source,):
            run_source(source, args, work)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
