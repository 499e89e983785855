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


def test_the_file_is_byte_for_byte_what_pyarrow_parquet_writes(tmp_path: Path) -> None:
    """The writer is made without ``pyarrow.parquet`` (start-up); the file is the same as
    ``pyarrow.parquet.ParquetWriter`` writes with the same options (OCCURS lists, groups,
    decimals, text; statistics outside the lists), so that a pyarrow upgrade that changes
    what that writer passes shows here."""
    from coupler.translators.copybook import arrow_parquet

    schema, batches = _batches()
    ours = tmp_path / "ours.parquet"
    with ParquetBatchWriter(ours, schema, row_group_rows=4000) as writer:
        for batch in batches:
            writer.write_batch(batch)
    theirs = tmp_path / "theirs.parquet"
    with pq.ParquetWriter(str(theirs), schema, compression="snappy", use_dictionary=False,
                          write_statistics=arrow_parquet._outside_lists(schema),
                          write_batch_size=arrow_parquet.WRITE_BATCH_SIZE) as writer:
        table = pa.Table.from_batches(batches)
        for start in range(0, table.num_rows, 4000):
            part = table.slice(start, 4000)
            writer.write_table(part, row_group_size=part.num_rows)
    assert ours.read_bytes() == theirs.read_bytes()


def test_a_pyarrow_whose_internal_writer_takes_other_arguments_gets_the_public_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pyproject admits any pyarrow from 15: when the internal writer refuses the arguments
    (another version's signature), the file is written by ``pyarrow.parquet`` all the same."""
    import pyarrow._parquet as internal

    real, calls = internal.ParquetWriter, []

    def other_signature(*args: object, **kwargs: object) -> object:  # refuses Coupler's call only
        calls.append(kwargs)
        if len(calls) == 1:
            raise TypeError("__cinit__() got an unexpected keyword argument 'store_schema'")
        return real(*args, **kwargs)  # pyarrow.parquet's own call, after

    monkeypatch.setattr(internal, "ParquetWriter", other_signature)
    schema, batches = _batches()
    with ParquetBatchWriter(tmp_path / "out.parquet", schema, row_group_rows=4000) as writer:
        for batch in batches:
            writer.write_batch(batch)
    assert pq.read_table(tmp_path / "out.parquet").equals(pa.Table.from_batches(batches))
    assert len(calls) == 2  # refused, then made by pyarrow.parquet


@pytest.mark.parametrize("where", ["missing-dir/out.parquet", "."])
def test_a_file_that_cannot_be_opened_raises_what_pyarrow_parquet_raises(tmp_path: Path, where: str) -> None:
    schema, _ = _batches()
    path = str(tmp_path / where)
    with pytest.raises(OSError) as theirs:
        pq.ParquetWriter(path, schema)
    with pytest.raises(OSError) as ours:
        ParquetBatchWriter(path, schema)
    assert (type(ours.value), str(ours.value), ours.value.errno, ours.value.filename) == (
        type(theirs.value), str(theirs.value), theirs.value.errno, theirs.value.filename)


def test_decoding_to_parquet_does_not_import_pyarrow_parquet(tmp_path: Path) -> None:
    """``pyarrow.parquet`` imports ``pyarrow.fs`` (S3, GCS, HDFS, ``ssl``): 6 % of the
    start-up of ``coupler copybook decode --to parquet`` (docs/performance.md)."""
    import subprocess

    sys.path.insert(0, str(REPO / "benchmarks"))
    import datagen

    copybook = datagen.write_copybook(tmp_path / "txn.cpy")
    data = datagen.write_fixed_file(tmp_path / "tiny.dat", 10)
    code = ("import contextlib, io, sys\n"
            "from coupler.bus.cli.main import main\n"
            f"argv = ['copybook', 'decode', {str(copybook)!r}, {str(data)!r}, '--to', 'parquet',\n"
            f"        '--output', {str(tmp_path / 'out.parquet')!r}]\n"
            "with contextlib.redirect_stderr(io.StringIO()):\n"
            "    assert main(argv) == 0\n"
            "print(' '.join(m for m in ('pyarrow.parquet', 'pyarrow.fs', 'ssl') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
    assert pq.read_table(tmp_path / "out.parquet").num_rows == 10
