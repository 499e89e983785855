"""The ``coupler-parquet`` writer data source: Arrow batches straight into Parquet files.

``df.write.format("coupler-parquet").mode("overwrite").save(OUT)`` writes one Parquet file
per partition with pyarrow (Arrow C++), committed atomically like every Coupler writer
(:mod:`.commit`). The batches come from Spark as Arrow, so nested columns (groups, OCCURS)
and decimals are written without going through Spark's row-by-row Parquet writer.
Options: ``compression`` (``snappy`` by default, as Spark's), ``row_group_rows``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

from .avro_writer import TaskFileMessage, output_path, write_mode
from .commit import OutputCommitter, task_files


class ParquetDataSource(DataSource):
    """Writer data source ``coupler-parquet``."""

    @classmethod
    def name(cls) -> str:
        return "coupler-parquet"

    def writer(self, schema: Any, overwrite: bool) -> ParquetWriter:
        committer = OutputCommitter(output_path(self.options, "coupler-parquet"), write_mode(overwrite), "parquet")
        committer.check_target()
        return ParquetWriter(
            committer, str(self.options.get("compression", "snappy")), int(self.options.get("row_group_rows", 1 << 20))
        )


class ParquetWriter(DataSourceArrowWriter):
    def __init__(self, committer: OutputCommitter, compression: str, row_group_rows: int):
        self.committer = committer
        self.compression = compression
        self.row_group_rows = row_group_rows

    def write(self, iterator: Iterator[Any]) -> TaskFileMessage:
        import pyarrow.parquet as pq

        path, final = self.committer.task_path()
        writer = None
        count = 0
        try:
            for batch in iterator:
                if writer is None:
                    writer = pq.ParquetWriter(path, batch.schema, compression=self.compression)
                writer.write_batch(batch, row_group_size=self.row_group_rows)
                count += batch.num_rows
        finally:
            if writer is not None:
                writer.close()
        if writer is None:  # an empty partition: no file
            return TaskFileMessage(str(path), final, 0, 0) if path.exists() else None  # type: ignore[return-value]
        return TaskFileMessage(str(path), final, count, os.path.getsize(path))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self.committer.commit(task_files(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self.committer.abort()
