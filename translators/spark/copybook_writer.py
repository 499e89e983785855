"""The ``copybook`` writer: a DataFrame as fixed-width (EBCDIC) record files.

``df.write.format("copybook").option("copybook", PATH).mode("overwrite").save(OUT)`` encodes
every row with the copybook translator's encoder (same options as the reader: code page,
``record_format`` ``F`` or ``V`` with an RDW, ...) and writes one record file per partition,
committed atomically like every Coupler writer (:mod:`.commit`). Rows are the dicts the
reader produces; generated columns (``File_Id``, ``Record_Id``, ``Record_Byte_Length``,
``Seg_Id*``) and the corrupt-record column are ignored.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from .avro_writer import TaskFileMessage, output_path, write_mode
from .codec import CopybookCodec, CopybookSourceError
from .commit import OutputCommitter, task_files

_GENERATED = ("File_Id", "Record_Id", "Record_Byte_Length")


def _encoder(codec: CopybookCodec) -> Any:
    from coupler.translators.copybook import encoder

    return encoder.RecordEncoder(codec.layout, codec.parsed_options)


class CopybookWriter(DataSourceArrowWriter):
    def __init__(self, codec: CopybookCodec, committer: OutputCommitter):
        self.codec = codec
        self.committer = committer

    @classmethod
    def create(cls, options: Any, schema: Any, overwrite: bool) -> CopybookWriter:
        codec = CopybookCodec.from_options(options)
        fmt = codec.parsed_options.record_format
        if fmt not in ("F", "V"):
            raise CopybookSourceError(
                f"the copybook writer writes record_format F or V, not {fmt}", where="option record_format"
            )
        committer = OutputCommitter(output_path(options, "copybook"), write_mode(overwrite), "dat")
        committer.check_target()
        return cls(codec, committer)

    def write(self, iterator: Iterator[Any]) -> TaskFileMessage:
        enc = _encoder(self.codec)
        drop = {*_GENERATED, self.codec.corrupt_column}
        path, final = self.committer.task_path()
        count = 0
        with open(path, "wb") as fh:
            for batch in iterator:
                for row in batch.to_pylist():
                    record = {k: v for k, v in row.items() if k not in drop and not k.startswith("Seg_Id")}
                    fh.write(enc.framed(record))  # with its RDW when record_format is V
                    count += 1
        return TaskFileMessage(str(path), final, count, os.path.getsize(path))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self.committer.commit(task_files(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self.committer.abort()
