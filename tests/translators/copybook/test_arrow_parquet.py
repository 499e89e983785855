"""``ParquetBatchWriter(background=True)``: the same file as the writer on the caller's
thread, and a failure of the writer thread reaches the caller."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coupler.translators.copybook.arrow_parquet import ParquetBatchWriter
from coupler.translators.copybook.batch import BatchDecoder
from coupler.translators.copybook.layout import build_layout
from coupler.translators.copybook.parser import parse_copybook

REPO = Path(__file__).resolve().parents[3]


def _batches() -> tuple[pa.Schema, list[pa.RecordBatch]]:
    sys.path.insert(0, str(REPO / "benchmarks"))
    import datagen

    decoder = BatchDecoder(build_layout(parse_copybook(datagen.COPYBOOK)))
    return decoder.schema, [decoder.decode(datagen.make_records(1000, seed=k)).batch for k in range(9)]


def test_background_writer_writes_the_same_row_groups_and_rows(tmp_path: Path) -> None:
    schema, batches = _batches()
    for background in (False, True):
        path = tmp_path / f"{background}.parquet"
        with ParquetBatchWriter(path, schema, row_group_rows=4000, background=background) as writer:
            for batch in batches:
                writer.write_batch(batch)
        meta = pq.ParquetFile(path).metadata
        assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [4000, 4000, 1000]
        assert pq.read_table(path).to_pylist() == [row for b in batches for row in b.to_pylist()]


def test_a_failure_of_the_writer_thread_is_raised_in_the_caller(tmp_path: Path) -> None:
    schema, batches = _batches()
    writer = ParquetBatchWriter(tmp_path / "out.parquet", schema, row_group_rows=1000, background=True)
    wrong = pa.RecordBatch.from_pydict({"other": list(range(1000))})  # not the file's schema
    writer.write_batch(wrong)  # handed to the thread, which fails on it
    with pytest.raises(Exception, match="(?i)schema"):
        for batch in batches:  # the failure is raised at the next row group, or at close
            writer.write_batch(batch)
        writer.close()
