"""Bulk translation of record files as a Spark job over splits, without DataFrame rows.

``spark.read.format("copybook")`` gives a DataFrame: its Arrow batches cross into the JVM as
rows and, for Coupler's writers, back into Python as Arrow. When a job only translates
(copybook records in, Parquet or canonical Avro out, no mapping), :func:`translate_splits`
skips both crossings: the driver plans the splits (:mod:`.splits`), Spark runs one task per
split (``SparkContext.parallelize``), and each task decodes its split with the same codec as
the data source (vectorised decoder for fixed-length records) and writes its file straight
from the Arrow batches into the job's staging folder. The driver then publishes the files
atomically (:mod:`.commit`), exactly like the writer data sources. Bad records go to
``errors_path`` as with the data source.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

from .codec import CopybookCodec
from .commit import OutputCommitter, TaskFile
from .splits import FileSplit, Framing, balanced_split_bytes, plan_splits


class _SplitTask:
    """What one task runs: decode a split, write one file (picklable)."""

    def __init__(self, codec: CopybookCodec, committer: OutputCommitter, kind: str, avro: dict[str, Any] | None, indicator: str | None):
        self.codec = codec
        self.committer = committer
        self.kind = kind
        self.avro = avro
        self.indicator = indicator

    def __call__(self, items: Iterator[tuple[FileSplit, Framing]]) -> Iterator[dict[str, Any]]:
        for split, framing in items:
            yield self._one(split, framing)

    def _batches(self, split: FileSplit, framing: Framing) -> Iterator[Any]:
        column = self.codec.corrupt_column
        for batch in self.codec.read_split(split, framing):
            if column and column in batch.schema.names:
                batch = batch.drop_columns([column])
            if batch.num_rows:
                yield batch

    def _one(self, split: FileSplit, framing: Framing) -> dict[str, Any]:
        path, final = self.committer.task_path()
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
    split_bytes, split_records = codec.split_size()
    framings = [codec.framing(path) for path in paths]
    if not codec.options.get("input_split_size_mb") and split_records is None:
        total = sum(os.path.getsize(p) for p in paths)
        unit = framings[0].record_length if framings and framings[0].kind == "fixed" else 1
        split_bytes = balanced_split_bytes(total, split_bytes, spark.sparkContext.defaultParallelism, unit)
    work: list[tuple[FileSplit, Framing]] = []
    for file_id, (path, framing) in enumerate(zip(paths, framings, strict=True)):
        for s in plan_splits([path], framing, split_bytes=split_bytes, split_records=split_records):
            work.append((FileSplit(s.path, file_id, s.start, s.end, s.first_record, s.index), framing))
    task = _SplitTask(codec, committer, kind, avro_schema, indicator)
    try:
        rdd = spark.sparkContext.parallelize(work, max(1, len(work)))
        messages = [m for m in rdd.mapPartitions(task).collect() if m]
    except BaseException:
        committer.abort()
        raise
    committer.commit([TaskFile(**m) for m in messages])
    return {
        "files": len(messages), "records": sum(m["records"] for m in messages),
        "bytes": sum(m["bytes"] for m in messages), "partitions": len(work),
    }
