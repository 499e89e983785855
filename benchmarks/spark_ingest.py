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
  record schema registered as a canonical entity beforehand, codec ``null`` as the CLI
  writes: the same generated Avro encoder on both sides; ``orders.xsd`` has a recursive
  type, so not Parquet).

``--pairs`` times: the CLI pinned to one core, then ``local[1]`` and ``local[2]`` back to back
(order alternating); ``os.sync()`` before each run, so no run pays for writing back the last
one's output. Each Spark run is its own process (one master per JVM) and does what ``batch
translate`` does: ``check_job`` (the copybook parsed, the ``avro:`` schema resolved in the
registry), then the session, started as for a split-task job (``lean_jvm``: C1 only, the
parallel collector). The job time excludes the check and the session start-up (the JVM, one
Python worker per task slot with the task's modules imported, and the JIT compilers'
start-up backlog: a session's later jobs pay none of it), which are reported separately.
Each session runs two jobs, each committed to a new folder as the batch daemon commits each
batch (the first job and the second, reported apart).
Reported, as medians: job time, MB/s, MB/s per core (local[N]: divided by N), CPU seconds of
every process of the run (Spark: driver, JVM and the Python workers, all read from
``/proc``; the JVM's threads on standard error), MB per CPU-second, and the machine's CPU
during the job (``/proc/stat``: every process and kernel thread; cores busy); where
``local[2]``'s time goes (tasks, the split tasks' own CPU against ``local[1]``'s, PySpark's
CPU per task outside them, the JVM's, the slots' utilisation and the last wave's tail); then
the acceptance ratios: the median of the pairs' local[2]/local[1] scaling (target ≥ 1.85) and
Spark per core / CLI per core (target ≥ 1). ``--pool`` also runs the same split tasks in a
plain process pool of 1 and of 2 (no Spark): the scaling the machine itself gives the work,
the ceiling for Spark's; and from it what ``local[2]`` can reach once Spark's own CPU (JVM,
driver, PySpark per task) shares the two cores (:func:`spark_ceiling`). Record counts are
checked to agree. The load average is printed: wall-clock scaling needs a quiet machine.
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
from machine import memory_note  # noqa: E402

MB = 1e6


class _WarmWorker:
    """A task slot's start-up: the split task's modules imported (and for XML the schema
    model loaded, which the worker keeps), holding the slot so that every slot starts its
    own worker."""

    def __init__(self, source: str, schema: str):
        self.source = source
        self.schema = schema
        self.roots = (os.getcwd(),)  # the driver's, as XmlSplitTask keeps them (its schema roots)

    def __call__(self, _: object) -> list[int]:
        import coupler.translators.copybook.arrow_parquet  # noqa: F401
        import coupler.translators.copybook.batch_files  # noqa: F401
        import coupler.translators.spark.direct  # noqa: F401

        if self.source == "xml":
            from coupler.translators.spark.xml_splits import _model

            _model(self.schema, self.roots)
        time.sleep(0.5)
        return [os.getpid()]


def spark_from(source: str, schema: str) -> str:
    """The ``--from`` spec of a source: the copybook, or the XSD with the record element."""
    return f"copybook:{schema}" if source == "copybook" else f"xml:{schema}#order"


def tree_cpu(root: int) -> dict[str, float]:
    """CPU seconds (user + system) of a Spark run's driver (``root``, with the children it
    reaped), of its JVM (the ``java`` process below it) and of the JVM's descendants (the
    PySpark daemon and its Python workers: the split tasks and PySpark's handling of each
    task). Read from ``/proc`` while they run: the workers are reused for every job of the
    session, so none exits during a job (the daemon does not collect the times of workers
    that exit, which a process tree's totals then lose)."""
    hz = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    java: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        pid, parent = int(entry), int(fields[1])
        children.setdefault(parent, []).append(pid)
        own = (int(fields[11]) + int(fields[12])) / hz
        cpu[pid] = own + (sum(int(v) for v in fields[13:15]) / hz if pid == root else 0.0)
        if parent == root and raw[raw.index("(") + 1 : raw.rindex(")")] == "java":
            java.append(pid)
    workers, stack = 0.0, [c for j in java for c in children.get(j, [])]
    while stack:
        pid = stack.pop()
        workers += cpu.get(pid, 0.0)
        stack += children.get(pid, [])
    return {"driver": cpu.get(root, 0.0), "jvm": sum(cpu.get(j, 0.0) for j in java), "workers": workers}


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
    # as `coupler batch translate` runs: the specs parsed and check_job (the copybook parsed,
    # the canonical schema resolved in the registry, which loads the plugins: 0.7 s of CPU
    # for the XML job's avro: spec) before the session starts; the output schema registered
    # beforehand, as a user's is
    from coupler.bus.batch.jobs import Spec, check_job

    schema_dirs = [str(Path(out).parent / "schemas")] if source == "xml" else []
    to_spec = "parquet" if source == "copybook" else avro_to(schema, out)
    c0, t0 = time.process_time(), time.perf_counter()
    src, dst = Spec.parse(spark_from(source, schema), where="--from"), Spec.parse(to_spec, where="--to")
    check_job(src, dst, [data], schema_dirs=schema_dirs)
    check = {"check_s": time.perf_counter() - t0, "check_cpu": time.process_time() - c0}
    t0 = time.perf_counter()
    spark = spark_session(master, app_name="bench-spark-ingest", lean_jvm=True)  # as `batch translate` starts it
    # start-up: the JVM, then one Python worker per task slot with the split task's modules
    # imported (workers are reused for every later job of the session)
    slots = spark.sparkContext.defaultParallelism
    spark.sparkContext.parallelize(range(slots), slots).mapPartitions(_WarmWorker(source, schema)).collect()
    settle_jit(os.getpid())
    started_at = time.perf_counter()
    out_runs = []
    # the session's first job, then a second one, each into a new folder: the batch daemon's
    # case (``bus/batch/ingest.py``: each batch is committed to its own folder; a job that
    # overwrites an output also removes the old one after the new one is in, ~0.05-0.1 s of
    # the driver's for 1 GB of Parquet: ``commit.py``)
    for n in (1, 2):
        timing.clear()
        os.sync()  # the last job's output on disk: no writeback of it during this one
        threads0 = jvm_threads(os.getpid())
        cpu0, ticks0, started = tree_cpu(os.getpid()), _cpu_ticks(), time.perf_counter()
        result = translate(spark, src, dst, [data], str(Path(out) / f"job-{n}"), schema_dirs=schema_dirs,
                           write_options={"codec": "null"} if source == "xml" else None)
        done, cpu1, ticks1 = time.perf_counter(), tree_cpu(os.getpid()), _cpu_ticks()
        threads = {k: round(v - threads0.get(k, 0.0), 2) for k, v in jvm_threads(os.getpid()).items()}
        print("JVM threads' CPU during the job (s): "
              + json.dumps({k: v for k, v in sorted(threads.items(), key=lambda kv: -kv[1]) if v}), file=sys.stderr)
        roles = {k: round(cpu1[k] - cpu0[k], 3) for k in cpu0}
        out_runs.append({"job": done - started, "cpu": sum(roles.values()), **roles, "records": result.records,
                         "partitions": result.partitions, "machine_cpu": _busy_seconds(ticks0, ticks1), **timing})
    spark.stop()
    first, second = out_runs
    return {"startup": started_at - t0, **check, **first, "second": second}


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


def _busy_seconds(before: list[int], after: list[int]) -> float:
    """CPU seconds the whole machine was busy between two ``/proc/stat`` readings (all
    cores, every process and kernel thread: user, nice, system, irq, softirq, steal; not
    idle or iowait). On a quiet machine, this minus the run's own processes is the kernel's
    share (page-cache writeback, interrupts) and anything else that ran."""
    hz = os.sysconf("SC_CLK_TCK")
    delta = [a - b for a, b in zip(after, before, strict=False)]
    return (sum(delta[:8]) - delta[3] - delta[4]) / hz


def _pool_task(task: object, index: int, item: object) -> tuple[int, float]:
    """One split through the split task, then the worker settled as a Spark worker is after
    its first split (``settle_worker``): its records and the CPU seconds it took."""
    from coupler.translators.spark.direct import _cpu, settle_worker

    cpu = _cpu()
    message = task(index, item)  # type: ignore[operator]
    spent = _cpu() - cpu
    settle_worker()
    return message.get("records", 0), spent


def pool_run(processes: int, source: str, schema: Path, data: Path, out: Path) -> dict[str, float]:
    """The same split tasks as the Spark job in a plain process pool (``--pool``): what the
    machine gives the work without Spark (no JVM, no driver). Reports the cores busy (from
    ``/proc/stat``) and the tasks' CPU seconds: with two processes, how much more CPU the
    same work takes when both cores are busy (caches, memory, the kernel's page cache)."""
    import multiprocessing as mp

    from coupler.translators.spark.commit import OutputCommitter

    committer = OutputCommitter(str(out), "overwrite", "parquet" if source == "copybook" else "avro")
    committer.check_target()
    items: list[object]
    if source == "copybook":
        from coupler.translators.spark.codec import CopybookCodec
        from coupler.translators.spark.direct import _SplitTask
        from coupler.translators.spark.splits import FileSplit, plan_splits

        codec = CopybookCodec(str(schema), {})
        framing = codec.framing(str(data))
        items = [(FileSplit(s.path, 0, s.start, s.end, s.first_record, s.index), framing)
                 for s in plan_splits([str(data)], framing, split_bytes=codec.split_size()[0], slots=processes)]
        task: object = _SplitTask(codec, committer, "parquet", None, None)
    else:
        from coupler.translators.spark.xml_splits import (
            XmlSplitTask,
            plan_xml_splits,
            record_avro_schema,
        )

        items = list(plan_xml_splits([str(data)], "order", slots=processes))
        task = XmlSplitTask(str(schema), "order", committer, "avro",
                            record_avro_schema(str(schema), "order", "orders/order"), None, "null")
    with mp.get_context("fork").Pool(processes) as pool:
        pool.starmap(_pool_task, [(task, len(items) + n, items[-1]) for n in range(processes)])  # imports, first use
        os.sync()
        before, t0 = _cpu_ticks(), time.perf_counter()
        done = pool.starmap(_pool_task, list(zip([task] * len(items), range(len(items)), items, strict=True)), chunksize=1)
        elapsed, after = time.perf_counter() - t0, _cpu_ticks()
    committer.abort()
    shutil.rmtree(out, ignore_errors=True)
    return {"job": elapsed, "records": sum(r for r, _ in done), "task_cpu": sum(c for _, c in done),
            "cores_busy": _busy_seconds(before, after) / elapsed, "splits": len(items)}


def cli_baseline(source: str, schema: Path, data: Path, out: Path, jobs: int = 1) -> dict[str, float]:
    """The CLI per core, pinned to one core (the figure a Spark job per core is compared
    with): ``copybook decode --to parquet --jobs 1``, or ``xml decode --record-path
    orders/order --to avro`` (the XML CLI writes JSON lines or Avro, not Parquet); its wall
    time and CPU time. ``jobs`` 2 (copybook): ``--jobs 2 --parts`` on both cores, ordered
    part files as the Spark job writes them: the CLI per core on two cores."""
    one = min(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") and jobs == 1 else None
    if source == "copybook":
        command = ["copybook", "decode", str(schema), str(data), "--to", "parquet", "--output", str(out), "--jobs", str(jobs),
                   *(["--parts"] if jobs > 1 else [])]
    else:
        command = ["xml", "decode", str(schema), str(data), "--record-path", "orders/order", "--to", "avro",
                   "--output", str(out), "--no-progress"]
    os.sync()  # the last run's output on disk: no writeback of it during this one
    before, ticks = resource.getrusage(resource.RUSAGE_CHILDREN), _cpu_ticks()
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "coupler.bus.cli.main", *command],
        capture_output=True, text=True, preexec_fn=(lambda: os.sched_setaffinity(0, {one})) if one is not None else None,
    )
    elapsed = time.perf_counter() - t0
    after, machine = resource.getrusage(resource.RUSAGE_CHILDREN), _busy_seconds(ticks, _cpu_ticks())
    if proc.returncode:
        raise SystemExit(f"CLI decoder failed: {proc.stderr.strip()}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if source == "copybook":
        import pyarrow.parquet as pq

        parts = sorted(out.glob("*.parquet")) if out.is_dir() else [out]
        records = sum(pq.ParquetFile(p).metadata.num_rows for p in parts)
        if out.is_dir():
            shutil.rmtree(out)
    else:
        import fastavro

        with open(out, "rb") as fh:
            records = sum(block.num_records for block in fastavro.block_reader(fh))
    return {"job": elapsed, "cpu": cpu, "records": records, "machine_cpu": machine}


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
    print(f"\n{what}: {mb:.0f} MB, {records} records; {parts:.0f} splits on local[2]; "
          f"{len(cli)} pairs; load average {min(loads):.1f}-{max(loads):.1f} during the run; {memory_note()}.\n")
    print("| run | job time (s), median | MB/s | MB/s per core | CPU (s) | of which JVM | of which Python workers | "
          "MB per CPU-second | machine CPU (s) | cores busy |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| CLI, one process pinned to one core | {_med([r['job'] for r in cli]):.2f} | {cli_rate:.1f} | "
          f"{cli_rate:.1f} | {_med([r['cpu'] for r in cli]):.2f} | | | {cli_cpu_rate:.1f} | "
          f"{_med([r['machine_cpu'] for r in cli]):.2f} | {_med([r['machine_cpu'] / r['job'] for r in cli]):.2f} |")
    two_cli = [r["two"] for r in cli if "two" in r]
    if two_cli:
        job2 = _med([r["job"] for r in two_cli])
        print(f"| CLI, `--jobs 2 --parts` on both cores | {job2:.2f} | {mb / job2:.1f} | {mb / job2 / 2:.1f} | "
              f"{_med([r['cpu'] for r in two_cli]):.2f} | | | {mb / _med([r['cpu'] for r in two_cli]):.1f} | "
              f"{_med([r['machine_cpu'] for r in two_cli]):.2f} | {_med([r['machine_cpu'] / r['job'] for r in two_cli]):.2f} |")
    views = {"first job": {m: list(rs) for m, rs in runs.items()},
             "second job": {m: [r["second"] for r in rs] for m, rs in runs.items()}}  # type: ignore[misc]
    for view, vruns in views.items():
        for master, cores in (("local[1]", 1), ("local[2]", 2)):
            rs = vruns[master]
            job, cpu = _med([r["job"] for r in rs]), _med([r["cpu"] for r in rs])
            startup = f"; start-up {_med([r['startup'] for r in runs[master]]):.1f} s not counted" if view == "first job" else ""
            print(f"| Spark `{master}`, the session's {view}{startup} | {job:.2f} | {mb / job:.1f} | {mb / job / cores:.1f} | "
                  f"{cpu:.2f} | {_med([r['jvm'] for r in rs]):.2f} | {_med([r['workers'] for r in rs]):.2f} | {mb / cpu:.1f} | "
                  f"{_med([r['machine_cpu'] for r in rs]):.2f} | {_med([r['machine_cpu'] / r['job'] for r in rs]):.2f} |")
    print(f"\nBefore each Spark session, as `batch translate` does: check_job {_med([r['check_s'] for r in runs['local[2]']]):.2f} s "
          f"({_med([r['check_cpu'] for r in runs['local[2]']]):.2f} s CPU). Machine CPU: every core's busy time during the "
          "job from /proc/stat (all processes and kernel threads); cores busy = machine CPU / job time.")
    for view, vruns in views.items():
        one, two = vruns["local[1]"], vruns["local[2]"]
        inflation = [b["task_cpu"] / a["task_cpu"] for a, b in zip(one, two, strict=True) if a.get("task_cpu")]
        other = [r["machine_cpu"] - r["cpu"] for r in two]
        handling = {m: [(r["workers"] - r.get("task_cpu", 0)) / max(1, r.get("tasks", r["partitions"])) * 1000 for r in rs]
                    for m, rs in vruns.items()}
        print(f"{view}, where `local[2]`'s time goes (medians): {_med([r['partitions'] for r in two]):.0f} splits in "
              f"{_med([r.get('tasks', r['partitions']) for r in two]):.0f} Spark tasks (local[1]: "
              f"{_med([r['partitions'] for r in one]):.0f} in {_med([r.get('tasks', r['partitions']) for r in one]):.0f}); "
              f"the split tasks' own CPU local[2] / local[1] "
              f"{_med(inflation):.3f}× (the same work with both cores busy); the Python workers' CPU outside the "
              f"splits (PySpark's handling of a Spark task) {_med(handling['local[2]']):.0f} ms per task (local[1] "
              f"{_med(handling['local[1]']):.0f}); JVM {_med([r['jvm'] for r in two]):.2f} s and driver "
              f"{_med([r['driver'] for r in two]):.2f} s of CPU on the task slots' cores; machine CPU not of the run's "
              f"processes {_med(other):.2f} s; task slots' utilisation {_med([r.get('utilisation', 0) for r in two]):.3f}; "
              f"submit to first task {_med([r.get('before_first', 0) for r in two]):.3f} s, last task to results "
              f"{_med([r.get('after_last', 0) for r in two]):.3f} s, last wave's tail {_med([r.get('tail', 0) for r in two]):.3f} s; "
              f"job time minus the tasks' span {_med([r['job'] - r.get('span', 0) for r in two]):.3f} s (planning, commit)")
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
        if two_cli:
            same = [c["job"] / b["job"] for b, c in zip(vruns["local[2]"], two_cli, strict=True)]
            print(f"{view}: per core on the same number of cores, Spark local[2] / CLI `--jobs 2 --parts`: "
                  f"**{_med(same):.2f}×** ({', '.join(f'{r:.2f}' for r in same)}); local[1] / CLI `--jobs 1`: "
                  f"{_med(per_core_1):.2f}×")
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
        if source == "copybook":
            c["two"] = cli_baseline(source, schema, data, work / "cli-parts", jobs=2)
            print(f"CLI --jobs 2 --parts: {c['two']}", file=sys.stderr)
        for r in (c, c.get("two", c)):
            if r["records"] != records:
                raise SystemExit(f"record counts differ: CLI {r['records']}, generated {records}")
        for master in (("local[2]", "local[1]") if rep % 2 == 0 else ("local[1]", "local[2]")):
            r = spark_run(master, source, schema, data, work / f"spark-{master[6]}")
            print(f"{master}: {r}", file=sys.stderr)
            shutil.rmtree(work / f"spark-{master[6]}", ignore_errors=True)
            if r["records"] != records:
                raise SystemExit(f"record counts differ: {master} {r['records']}, generated {records}")
            runs[master].append(r)
        loads.append(os.getloadavg()[0])
        if args.pool:
            for n in (1, 2):
                r = pool_run(n, source, schema, data, work / "pool")
                print(f"pool of {n}: {r}", file=sys.stderr)
                pools.setdefault(n, []).append(r)
    title = ("Copybook file → Parquet (`copybook` source, split tasks)" if source == "copybook" else
             "XML file → Avro (`xml:orders.xsd#order` → `avro:…Order@1`, split tasks; the CLI `xml decode --to avro`)")
    report(size, records, cli, runs, loads, title)
    if pools:
        ratios = [a["job"] / b["job"] for a, b in zip(pools[1], pools[2], strict=True)]
        inflation = [b["task_cpu"] / a["task_cpu"] for a, b in zip(pools[1], pools[2], strict=True)]
        print(f"Plain process pool, the same split tasks, no Spark: 1 process {_med([r['job'] for r in pools[1]]):.2f} s "
              f"({_med([r['cores_busy'] for r in pools[1]]):.2f} cores busy), 2 processes "
              f"{_med([r['job'] for r in pools[2]]):.2f} s ({_med([r['cores_busy'] for r in pools[2]]):.2f} "
              f"cores busy): median ratio **{_med(ratios):.2f}×** ({', '.join(f'{r:.2f}' for r in ratios)}), the "
              f"scaling the machine gives this work; the tasks' CPU with 2 processes / with 1: {_med(inflation):.2f}× "
              f"({', '.join(f'{r:.2f}' for r in inflation)})")
        for view, vruns in (("first job", runs), ("second job", {m: [r["second"] for r in rs] for m, rs in runs.items()})):
            print(spark_ceiling(view, _med(ratios), vruns, cli))


def spark_ceiling(view: str, pool_ratio: float, runs: dict[str, list[dict[str, float]]],
                  cli: list[dict[str, float]]) -> str:
    """What ``local[2]`` can reach on this machine, from this run's figures: the pool's
    scaling, less the share of the two cores that Spark's own CPU takes (the JVM, the driver
    and PySpark's handling of each task, which ``local[1]`` runs on the idle second core and
    ``local[2]`` on the task slots' cores): pool ratio × tasks' CPU / (tasks' CPU + Spark's
    own CPU). Per core: ``local[1]``'s per-core ratio to the CLI × that ceiling / 2."""
    two = runs["local[2]"]
    tasks = _med([r.get("task_cpu", 0.0) for r in two])
    own = _med([r["cpu"] - r.get("task_cpu", 0.0) for r in two])
    ceiling = pool_ratio * tasks / (tasks + own) if tasks else 0.0
    per_core_1 = _med([c["job"] / a["job"] for a, c in zip(runs["local[1]"], cli, strict=True)])
    return (f"{view}: Spark's own CPU beside its split tasks on local[2] {own:.2f} s (JVM "
            f"{_med([r['jvm'] for r in two]):.2f}, driver {_med([r['driver'] for r in two]):.2f}, PySpark "
            f"{_med([r['workers'] - r.get('task_cpu', 0.0) for r in two]):.2f}) against {tasks:.2f} s of split tasks "
            f"({own / tasks * 100 if tasks else 0:.1f} %): local[2] / local[1] can reach about pool × tasks / (tasks + "
            f"Spark's own) = **{ceiling:.2f}×** here, and per core about local[1]'s {per_core_1:.2f}× × {ceiling:.2f} / 2 "
            f"= **{per_core_1 * ceiling / 2:.2f}×** the CLI")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", choices=("copybook", "xml", "both"), default="both", help="which data source (default both)")
    ap.add_argument("--gb", type=float, default=1.0, help="size of the generated copybook file (default 1.0)")
    ap.add_argument("--xml-mb", type=float, default=200, help="size of the generated XML file in MiB (default 200)")
    ap.add_argument("--workdir", help="where to put the files and outputs (default: a temporary folder)")
    ap.add_argument("--pairs", "--repeat", type=int, default=3,
                    help="pairs of local[1] and local[2] runs (each with a CLI run), medians reported (default 3)")
    ap.add_argument("--pool", action="store_true",
                    help="also run the split tasks in a plain process pool of 1 and 2 (no Spark): the machine's scaling")
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
