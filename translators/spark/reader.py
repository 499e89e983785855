"""The ``copybook`` data source: COBOL record files as a DataFrame (and back).

::

    spark.read.format("copybook")
        .option("copybook", "/data/customer.cpy")
        .option("record_format", "V").option("is_rdw_big_endian", "true")
        .load("/data/in/*.dat")

Options are the copybook translator's (Cobrix's names, validated by
``CopybookOptions``; an unknown one is an error suggesting the nearest name), plus:

``copybook`` / ``copybook_contents``
    the copybook file, or its text.
``copy_paths``
    folders searched for ``COPY`` members (``:``-separated; the copybook's folder is always searched).
``input_split_size_mb`` / ``input_split_records``
    the size of a split: bytes (default 128 MB, as Spark's files) or records (Cobrix's names).
``policy``
    ``lenient`` (default: a field that cannot be decoded is null) or ``strict`` (the record
    goes to the corrupt-record column instead).
``corrupt_record_column``
    the column that holds a bad record's error as JSON (file, record, offset, field, raw
    bytes in hex, reason); default ``_corrupt_record``; empty to leave it out.
``batch_size``
    rows per Arrow batch (default 8192).

The Spark schema comes from the layout through the translator's Avro schema. Files are split
as :mod:`.splits` describes; each partition yields Arrow record batches.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from .codec import CopybookCodec, CopybookSourceError
from .splits import FileSplit, Framing
from .types import spark_schema


def input_paths(options: Any) -> list[str]:
    """The data files named by ``load(PATH)`` / ``load([PATHS])``: globs and folders expanded."""
    raw: list[str] = []
    if options.get("paths"):
        raw = list(json.loads(options["paths"]))
    elif options.get("path"):
        raw = [options["path"]]
    if not raw:
        raise CopybookSourceError("no input files", hint="pass the data files to load(PATH) or load([PATHS])")
    out: list[str] = []
    for item in raw:
        item = item.removeprefix("file://")
        matches = sorted(glob.glob(item)) if glob.has_magic(item) else [item]
        if not matches:
            raise CopybookSourceError(f"no file matches {item}", where=item)
        for m in matches:
            if os.path.isdir(m):
                out.extend(
                    os.path.join(m, f) for f in sorted(os.listdir(m))
                    if not f.startswith((".", "_")) and os.path.isfile(os.path.join(m, f))
                )
            elif os.path.isfile(m):
                out.append(m)
            else:
                raise CopybookSourceError(f"input {m} does not exist", where=m)
    return out


class SplitPartition(InputPartition):
    """One split and how its file is framed."""

    def __init__(self, split: FileSplit, framing: Framing):
        super().__init__((split.path, split.start, split.end))
        self.split = split
        self.framing = framing


class CopybookDataSource(DataSource):
    """Data source ``copybook``: read COBOL record files; write DataFrames as records."""

    @classmethod
    def name(cls) -> str:
        return "copybook"

    def _codec(self) -> CopybookCodec:
        return CopybookCodec.from_options(self.options)

    def schema(self) -> Any:
        return spark_schema(self._codec().arrow_schema)

    def reader(self, schema: Any) -> CopybookReader:
        return CopybookReader(self._codec(), input_paths(self.options))

    def writer(self, schema: Any, overwrite: bool) -> Any:
        from .copybook_writer import CopybookWriter

        return CopybookWriter.create(self.options, schema, overwrite)


class CopybookReader(DataSourceReader):
    def __init__(self, codec: CopybookCodec, paths: list[str]):
        self.codec = codec
        self.paths = paths

    def partitions(self) -> list[SplitPartition]:
        return [SplitPartition(split, framing) for split, framing in self.codec.plan(self.paths)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, SplitPartition)
        yield from self.codec.read_split(partition.split, partition.framing)
        from .direct import settle_worker

        settle_worker()  # the worker's later tasks: PySpark's gc.collect() after each walks less
