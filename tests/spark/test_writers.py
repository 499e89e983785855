"""The ``canonical-avro`` and ``copybook`` writers: content, metadata, atomic commit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fastavro
import pytest

from coupler.bus.batch.jobs import translate
from coupler.translators.copybook import avro, decoder, layout, parser
from coupler.translators.copybook.options import CopybookOptions
from coupler.translators.spark.avro_writer import FORMAT_METADATA_KEY
from coupler.translators.spark.commit import (
    SUCCESS_MARKER,
    CommitError,
    OutputCommitter,
    read_manifest,
)

CASE = "01_test1_fixed_comp3_odo"
OPTIONS = {"ebcdic_code_page": "common"}


def _decoded(cpy: Path, data: Path, options: dict[str, str]) -> list[dict[str, Any]]:
    lay = layout.build_layout(parser.parse_file(cpy))
    return list(decoder.decode_files(lay, [data], CopybookOptions.from_mapping(options)))


def _register(schema_dir: Path, cpy: Path, options: dict[str, str]) -> None:
    """The copybook's Avro schema as canonical entity ``test.Company@1``."""
    lay = layout.build_layout(parser.parse_file(cpy))
    schema = avro.avro_schema(lay, CopybookOptions.from_mapping(options), name="Company", namespace="test")
    (schema_dir / "company").mkdir(parents=True)
    (schema_dir / "company" / "v1.avsc").write_text(json.dumps(schema))


def test_copybook_to_canonical_avro_one_file_per_partition_with_the_format_indicator(
    spark: Any, cobrix_corpus: Path, tmp_path: Path
) -> None:
    cpy = cobrix_corpus / CASE / "test1_copybook.cob"
    data = cobrix_corpus / CASE / "test1_data" / "example.bin"
    _register(tmp_path / "schemas", cpy, OPTIONS)
    out = tmp_path / "out"
    result = translate(
        spark, f"copybook:{cpy}", "avro:test.Company@1", [str(data)], str(out),
        options={**OPTIONS, "input_split_records": "4"}, write_options={"schema_dirs": str(tmp_path / "schemas")},
    )
    files = sorted(out.glob("part-*.avro"))
    assert len(files) == 3  # 10 records in splits of 4
    rows: list[dict[str, Any]] = []
    for f in files:
        with open(f, "rb") as fh:
            reader = fastavro.reader(fh)
            assert reader.metadata[FORMAT_METADATA_KEY] == "test.Company@1"
            rows.extend(reader)
    assert rows == _decoded(cpy, data, OPTIONS)
    assert result.records == 10 and result.errors == 0
    assert read_manifest(out)["records"] == 10  # type: ignore[index]
    assert not (tmp_path / ".out.staging").exists()


def test_a_failed_job_leaves_no_output_and_no_staging(spark: Any, tmp_path: Path) -> None:
    schema = {"type": "record", "name": "Pair", "namespace": "test",
              "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}
    df = spark.createDataFrame([(i, None if i == 37 else f"n{i}") for i in range(100)], "id long, name string")
    out = tmp_path / "pairs"
    with pytest.raises(Exception, match="does not fit the Avro schema"):
        (df.repartition(4).write.format("canonical-avro").mode("overwrite")
         .option("avro_schema", json.dumps(schema)).option("format", "test.Pair@1").save(str(out)))
    assert not out.exists()
    assert not (tmp_path / ".pairs.staging").exists()


def test_a_task_still_running_when_its_job_was_aborted_leaves_no_staging_folder(tmp_path: Path) -> None:
    """A failed job's other tasks may still be running when the driver aborts it: one that
    asks for its staging file afterwards made the job's folder again, and the staging folder
    stayed behind the abort (seen once in the suite: the test above)."""
    committer = OutputCommitter(str(tmp_path / "pairs"), "overwrite", "avro")
    committer.check_target()  # the driver, before the job
    path, _final = committer.task_path()
    assert path.parent == committer.job_dir
    committer.abort()  # the driver, after a task failed
    with pytest.raises(CommitError, match="staging folder .* is gone: the job was aborted"):
        committer.task_path()  # a task still running
    assert not committer.staging_root.exists()


def test_overwrite_replaces_the_whole_output(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "o"
    for n in (50, 7):
        (spark.range(n).repartition(3).write.format("canonical-avro").mode("overwrite").save(str(out)))
    ids = []
    for f in out.glob("part-*.avro"):
        with open(f, "rb") as fh:
            ids.extend(r["id"] for r in fastavro.reader(fh))
    assert sorted(ids) == list(range(7))
    assert (out / SUCCESS_MARKER).exists()


@pytest.mark.parametrize("record_format", ["F", "V"])
def test_copybook_writer_writes_records_that_read_back_the_same(
    spark: Any, cobrix_corpus: Path, tmp_path: Path, record_format: str
) -> None:
    cpy = cobrix_corpus / "05_test6_type_variety" / "test6_copybook.cob"
    data = cobrix_corpus / "05_test6_type_variety" / "test6_data" / "INTEGR.TYPES.NOV28.DATA.dat"
    opts = {"floating_point_format": "IEEE754"}
    df = spark.read.format("copybook").option("copybook", str(cpy)).options(**opts).load(str(data))
    out = tmp_path / "records"
    (df.repartition(3).write.format("copybook").option("copybook", str(cpy)).options(**opts)
     .option("record_format", record_format).mode("overwrite").save(str(out)))
    parts = sorted(out.glob("part-*.dat"))
    assert len(parts) == 3
    size = sum(p.stat().st_size for p in parts)
    assert size == 100 * (1493 + (4 if record_format == "V" else 0))
    back = (spark.read.format("copybook").option("copybook", str(cpy)).options(**opts)
            .option("record_format", record_format).load([str(p) for p in parts]))
    assert back.count() == 100
    assert sorted(map(repr, back.collect())) == sorted(map(repr, df.collect()))
