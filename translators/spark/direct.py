"""Bulk translation of record files as a Spark job over splits, without DataFrame rows.

``spark.read.format("copybook")`` gives a DataFrame: its Arrow batches cross into the JVM as
rows and, for Coupler's writers, back into Python as Arrow. When a job only translates
(copybook records in, Parquet or canonical Avro out, no mapping), :func:`translate_splits`
skips both crossings: the driver plans the splits (:mod:`.splits`), Spark runs one task per task
slot (:func:`run_split_job`) that claims splits one after the other until none is left, and
each split is decoded with the same codec as the data source (vectorised decoder for
fixed-length records) and written as its own file straight from the Arrow batches into the
job's staging folder. The driver then publishes the files atomically (:mod:`.commit`),
exactly like the writer data sources. Bad records go to ``errors_path`` as with the data
source.
"""

from __future__ import annotations

import gc
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .commit import CommitError, OutputCommitter, TaskFile
from .splits import FileSplit, Framing

if TYPE_CHECKING:  # not imported in a worker that runs XML splits: pyarrow, NumPy, the copybook codec
    from .codec import CopybookCodec

log = logging.getLogger(__name__)


class _SplitTask:
    """What a task runs for each split it claims: decode the split, write one file (picklable)."""

    def __init__(self, codec: CopybookCodec, committer: OutputCommitter, kind: str, avro: dict[str, Any] | None, indicator: str | None):
        self.codec = codec
        self.committer = committer
        self.kind = kind
        self.avro = avro
        self.indicator = indicator

    def _batches(self, split: FileSplit, framing: Framing) -> Iterator[Any]:
        column = self.codec.corrupt_column
        for batch in self.codec.read_split(split, framing):
            if column and column in batch.schema.names:
                batch = batch.drop_columns([column])
            if batch.num_rows:
                yield batch

    def __call__(self, index: int, item: tuple[FileSplit, Framing]) -> dict[str, Any]:
        split, framing = item
        path, final = self.committer.task_path(index)
        count = 0
        if self.kind == "parquet":
            from coupler.translators.copybook.arrow_parquet import ParquetBatchWriter

            writer = None
            try:
                for batch in self._batches(split, framing):
                    if writer is None:
                        writer = ParquetBatchWriter(path, batch.schema)
                    writer.write_batch(batch)
                    count += batch.num_rows
            finally:
                if writer is not None:
                    writer.close()
            if writer is None:
                return {}
        else:
            import fastavro

            def records() -> Iterator[dict[str, Any]]:
                nonlocal count
                for batch in self._batches(split, framing):
                    count += batch.num_rows
                    yield from batch.to_pylist()

            metadata = {"coupler.format": self.indicator} if self.indicator else {}
            with open(path, "wb") as fh:
                assert self.avro is not None  # set for the avro writer
                fastavro.writer(fh, fastavro.parse_schema(self.avro), records(), codec="deflate", metadata=metadata)
        return {"staged": str(path), "final_name": final, "records": count, "bytes": os.path.getsize(path)}


def translate_splits(
    spark: Any,
    codec: CopybookCodec,
    paths: Sequence[str],
    output: str,
    *,
    kind: str = "parquet",
    avro_schema: dict[str, Any] | None = None,
    indicator: str | None = None,
) -> dict[str, Any]:
    """Translate ``paths`` to ``output`` (``parquet`` or ``avro``); returns the commit manifest."""
    ext = {"parquet": "parquet", "avro": "avro"}[kind]
    committer = OutputCommitter(output, "overwrite", ext)
    committer.check_target()
    # the last wave of tasks in smaller splits, so that the slots finish together; not when
    # the user set the split size
    slots = 1 if codec.options.get("input_split_size_mb") else spark.sparkContext.defaultParallelism
    work = codec.plan(paths, slots=slots)
    return run_split_job(spark, work, _SplitTask(codec, committer, kind, avro_schema, indicator), committer)


class _Claiming:
    """A task slot's loop (picklable): claim the next split nobody has claimed, run ``task``
    on it, until none is left. A claim is a file created exclusively in the job's
    ``claims`` folder, so two task attempts never run the same split in one stage. With
    ``claims`` None the partition holds the indexes of the splits to run (the driver's second
    stage, one split a task, which Spark retries as any task)."""

    def __init__(self, items: Sequence[Any], task: Callable[[int, Any], dict[str, Any]], claims: str | None):
        self.items = items
        self.task = task
        self.claims = claims

    def __call__(self, partition: Iterator[int]) -> Iterator[dict[str, Any]]:
        for index in range(len(self.items)) if self.claims is not None else partition:
            if self.claims is not None:
                try:
                    os.close(os.open(os.path.join(self.claims, str(index)), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
                except FileExistsError:
                    continue
            started, cpu = time.time(), _cpu()
            message = self.task(index, self.items[index])
            # when the split ran (wall clock of this machine) and the CPU time it took: the
            # driver reports how busy the task slots were (``task_timing``)
            span = (started, time.time(), os.getpid(), _cpu() - cpu)
            settle_worker()
            yield {**message, "index": index, "span": span}


def run_split_job(spark: Any, items: Sequence[Any], task: Callable[[int, Any], dict[str, Any]],
                  committer: OutputCommitter) -> dict[str, Any]:
    """Run ``task(index, item)`` once for every item (a split) as a Spark job and commit the
    files the runs staged; the commit manifest with ``partitions`` (the splits) and ``timing``.

    The job has one Spark task per task slot (no more than there are splits), each claiming
    splits in order until none is left (:class:`_Claiming`): a slot that finishes early takes
    the next split, as with one task per split, without the 7-10 ms of the JVM's and
    PySpark's CPU that every Spark task costs (on the same two cores the splits run on under
    ``local[2]``); with dynamic allocation, one task per split, so that executors started
    later get work. A split claimed by a task attempt whose result Spark does not keep (a
    failed attempt that was retried, a speculative copy) has no result: the driver runs
    those splits again, in a second stage with one task per split, before it commits."""
    claims_dir = committer.job_dir / "claims"
    claims_dir.mkdir(parents=True, exist_ok=True)
    sc = spark.sparkContext
    # with dynamic allocation the cores come as executors start: a task per split, as Spark
    # would schedule them, so that later executors get work (claiming makes the extra ones cheap)
    dynamic = _setting(spark, "spark.dynamicAllocation.enabled", "false").lower() == "true"
    parallelism = sc.defaultParallelism
    slots = max(1, len(items) if dynamic else min(len(items), parallelism))
    submitted = time.time()
    try:
        done = sc.parallelize(range(slots), slots).mapPartitions(
            _Claiming(items, task, str(claims_dir))).collect()
        missing = sorted(set(range(len(items))) - {m["index"] for m in done})
        if missing:
            log.warning("%d splits claimed by task attempts whose results were not kept: running them again", len(missing))
            done += sc.parallelize(missing, len(missing)).mapPartitions(
                _Claiming(items, task, None)).collect()
        if sorted(m["index"] for m in done) != list(range(len(items))):  # never publish a partial output
            raise CommitError(f"the job's tasks returned results for {len(done)} of its {len(items)} splits",
                              where=committer.output, hint="run the job again: nothing of this run was published")
    except BaseException:
        committer.abort()
        raise
    collected = time.time()
    done.sort(key=lambda m: m["index"])
    spans = [m.pop("span") for m in done]
    for m in done:
        del m["index"]
    messages = [m for m in done if m]
    committer.commit([TaskFile(**m) for m in messages])
    timing = task_timing(spans, submitted, collected, parallelism)
    timing["tasks"] = slots + len(missing)
    log.debug("split job: %s", timing, extra={"timing": timing})
    return {
        "files": len(messages), "records": sum(m["records"] for m in messages),
        "bytes": sum(m["bytes"] for m in messages), "partitions": len(items), "timing": timing,
    }


def _setting(spark: Any, key: str, default: str) -> str:
    """A setting of the session (``spark.conf``: one call to the JVM). Not through
    ``sparkContext.getConf()``, which copies every setting into a new ``SparkConf`` one call
    at a time: 3-7 ms of the driver's wall time per job and, the first time in a session,
    30 ms of the JVM's CPU on the cores the job's tasks are about to use."""
    value = spark.conf.get(key, default)
    return default if value is None else str(value)


_settled = False


def settle_worker() -> None:
    """Called by a split task when its split is done: the first time in a process, collect
    the young generations' garbage and move every object left (the modules, pyarrow, the
    decoders and schema caches the task built) to the garbage collector's permanent
    generation (``gc.freeze``).

    PySpark's daemon runs ``gc.collect()`` after every task of a reused Python worker, and a
    full collection walks every object the worker holds: that was 85 % of a worker's CPU
    outside the tasks' own code (``perf``: ``gc_collect_main``), ~20 ms per copybook task and
    ~35 ms per XML task (its schema model is a large object graph). Frozen, those objects are
    no longer walked; the collections see only what was made since. They are still freed
    when their last reference goes; only reference cycles among them are no longer
    collected (a worker's modules and caches live as long as the worker anyway).

    Only the young generations are collected first (``gc.collect(1)``: well under a
    millisecond), not all of them: a full collection walks the same ~50,000-90,000 objects
    and cost each worker 9-37 ms of its first task, in the first job of a Spark session, on
    every core at once. What it would have found and this leaves frozen is the cyclic
    garbage already in the oldest generation, once per worker: the XPath node trees an XSD
    load leaves (measured: 0 objects for HL7 CDA, 120 for ``orders.xsd``, 3,033 for ISO 20022
    ``pain.001``)."""
    global _settled
    if not _settled:
        _settled = True
        gc.collect(1)
        gc.freeze()


def _cpu() -> float:
    """CPU seconds of this process (all its threads), user and system."""
    t = os.times()
    return t.user + t.system


def task_timing(spans: Sequence[tuple[float, float, int, float]], submitted: float, collected: float,
                slots: int) -> dict[str, float]:
    """Where a job's wall time went, from when each task ran: ``task_cpu`` (the CPU seconds
    of the tasks' processes while they ran, summed), ``busy`` (task seconds, summed),
    ``utilisation`` (busy / (slots x the job's span)), ``before_first`` (submit to the first
    task's start: scheduling and shipping the task), ``after_last`` (the last task's end to
    the results on the driver), ``tail`` (the time the last wave left a slot idle: the last
    task's end minus the median end of the other workers' last tasks)."""
    if not spans:
        return {}
    first, last = min(s[0] for s in spans), max(s[1] for s in spans)
    busy = sum(s[1] - s[0] for s in spans)
    ends: dict[int, float] = {}
    for _start, end, pid, _cpu_s in spans:
        ends[pid] = max(ends.get(pid, 0.0), end)
    others = sorted(ends.values())[:-1]
    return {
        "task_cpu": round(sum(s[3] for s in spans), 3), "busy": round(busy, 3), "span": round(collected - submitted, 3), "slots": slots,
        "utilisation": round(busy / (slots * (collected - submitted)), 3) if collected > submitted else 0.0,
        "before_first": round(first - submitted, 3), "after_last": round(collected - last, 3),
        "tail": round(last - others[len(others) // 2], 3) if others else 0.0, "worker_processes": len(ends),
    }
