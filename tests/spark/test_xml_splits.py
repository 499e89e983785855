"""XML files of repeated records split at record boundaries for the Spark split tasks."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

from coupler.translators.spark.xml_splits import XmlSplitTask, plan_xml_splits

ROOT = Path(__file__).resolve().parents[2]
ORDERS = ROOT / "tests" / "translators" / "xml" / "data" / "orders"
XSD = str(ORDERS / "orders.xsd")
sys.path.insert(0, str(ROOT / "benchmarks"))
from xml_translate import HEAD, TAIL, order  # noqa: E402  (the benchmark's generator)


def _orders_file(path: Path, count: int, *, prefix: str = "") -> Path:
    head = HEAD if not prefix else HEAD.replace("<orders xmlns=", f"<{prefix}:orders xmlns:{prefix}=").replace(
        "<batchId>", f"<{prefix}:batchId>").replace("</batchId>", f"</{prefix}:batchId>")
    body = "".join(order(n) for n in range(count))
    if prefix:  # the same documents with the orders namespace on a prefix
        for tag in ("order", "orderDate", "createdAt", "status", "buyer", "name", "address", "invoiceRef", "line",
                    "sku", "description", "quantity", "unitPrice", "weightKg", "total", "discountRate", "approvedBy"):
            body = body.replace(f"<{tag} ", f"<{prefix}:{tag} ").replace(f"<{tag}>", f"<{prefix}:{tag}>").replace(
                f"</{tag}>", f"</{prefix}:{tag}>").replace(f"<{tag}/>", f"<{prefix}:{tag}/>")
    path.write_text(head + body + (TAIL if not prefix else f"</{prefix}:orders>\n"), encoding="utf-8")
    return path


def _decoded(splits: list[Any]) -> list[dict[str, Any]]:
    task = XmlSplitTask(XSD, "order", None, "parquet", {}, None)  # type: ignore[arg-type]
    return [r for s in splits for r in task.records(s)]


def test_splits_start_at_records_and_decode_to_the_whole_files_records(tmp_path: Path) -> None:
    from coupler.translators.xml import XsdModel

    for prefix in ("", "o"):
        data = _orders_file(tmp_path / f"orders{prefix}.xml", 300, prefix=prefix)
        splits = plan_xml_splits([str(data)], "order", split_bytes=20_000, slots=2)
        assert len(splits) > 8
        assert splits[0].start == 0 and splits[-1].end == data.stat().st_size
        assert all(a.end == b.start for a, b in zip(splits, splits[1:], strict=False))
        raw = data.read_bytes()
        tag = b"<o:order " if prefix else b"<order "
        assert all(raw[s.start : s.start + len(tag)] == tag for s in splits[1:])
        whole = list(XsdModel.load(XSD).decoder("orders").iter_records(str(data), "orders/order"))
        assert len(whole) == 300
        assert _decoded(splits) == whole


def test_split_records_for_avro_come_encoded_as_their_dicts(tmp_path: Path) -> None:
    """Given the record's Avro schema (the task writing Avro with the generated encoder), a
    split's records come as their Avro bytes, those of the dicts it gives otherwise."""
    from coupler.translators.spark.xml_splits import record_avro_schema
    from coupler.translators.xml.avro import EncodedRecord, compile_encoder

    data = _orders_file(tmp_path / "orders.xml", 60)
    splits = plan_xml_splits([str(data)], "order", split_bytes=5_000, slots=2)
    schema = record_avro_schema(XSD, "order", "orders/order")
    task = XmlSplitTask(XSD, "order", None, "avro", schema, None)  # type: ignore[arg-type]
    encoded = [r for s in splits for r in task.records(s, schema)]
    dicts = _decoded(splits)
    assert len(splits) > 2 and len(encoded) == len(dicts) == 60
    encode = compile_encoder(schema)
    for got, record in zip(encoded, dicts, strict=True):
        out = bytearray()
        encode(record, out)
        assert type(got) is EncodedRecord and got == out


def test_a_bad_record_in_a_later_split_is_placed_in_the_file(tmp_path: Path) -> None:
    """A split after the first is read as a document of its own, its records counted from its
    start: the error names the file's line and says what its record number counts (the
    split's, with the byte the split starts at), never an XPath index (``order[10]``) that
    would name the file's tenth record. In the first split the numbers are the file's."""
    import re

    import pytest

    from coupler.translators.xml import XmlValidationError, XsdModel

    data = _orders_file(tmp_path / "orders.xml", 300)
    text = data.read_text()
    for n in (250, 3):
        at = text.index("<quantity>", text.index(f'id="PO-{n}"'))
        text = text[:at] + "<quantity>two" + text[text.index("</quantity>", at):]
    data.write_text(text)
    whole = XsdModel.load(XSD).decoder("orders")
    with pytest.raises(XmlValidationError) as in_file:
        list(whole.iter_records(str(data), "orders/order"))
    assert "/orders/order[4]/" in str(in_file.value)  # PO-3, the file's fourth record
    splits = plan_xml_splits([str(data)], "order", split_bytes=20_000, slots=2)
    task = XmlSplitTask(XSD, "order", None, "parquet", {}, None)  # type: ignore[arg-type]
    with pytest.raises(XmlValidationError) as first:
        list(task.records(splits[0]))
    assert first.value.where == in_file.value.where  # the first split's numbers are the file's
    bad = text.index("<quantity>two", text.index('id="PO-250"'))
    later = next(s for s in splits if s.start <= bad < s.end)  # the split holding PO-250, the file's 251st
    assert splits.index(later) > 1
    with pytest.raises(XmlValidationError) as error:
        list(task.records(later))
    found = re.fullmatch(rf"{re.escape(str(data))}:(\d+) /orders/order/line\[1\]/quantity: 'two' is not an"
                         rf" xs:positiveInteger \(record (\d+) of the split at byte {later.start}\)",
                         f"{error.value.where}: {error.value.message}")
    assert found, f"{error.value.where}: {error.value.message}"
    assert int(found.group(1)) == text[:bad].count("\n") + 1  # the file's line
    assert int(found.group(2)) == 251 - text[: later.start].count("<order ")  # counted from the split's start


def test_a_document_that_is_one_record_is_one_split() -> None:
    splits = plan_xml_splits([str(ORDERS / "order-1.xml")], "order", split_bytes=10, slots=2)
    assert len(splits) == 1 and splits[0].record_path == ""
    assert len(_decoded(splits)) == 1


def test_xml_to_avro_runs_as_split_tasks(spark: Any, tmp_path: Path) -> None:
    """The XSD's record schema registered as a canonical entity; the file read by several
    tasks; the records those of `xml decode --record-path`, in file order."""
    import json

    import fastavro

    from coupler.bus.batch.jobs import translate
    from coupler.translators.spark.xml_splits import record_avro_schema
    from coupler.translators.xml import XsdModel
    from coupler.translators.xml.avro import write_container

    schema = record_avro_schema(XSD, "order", "orders/order")
    (tmp_path / "schemas" / "order").mkdir(parents=True)
    (tmp_path / "schemas" / "order" / "v1.avsc").write_text(json.dumps(schema))
    data = _orders_file(tmp_path / "orders.xml", 500)
    out = tmp_path / "out"
    result = translate(spark, f"xml:{XSD}#order", f"avro:{schema['namespace']}.{schema['name']}@1",
                       [str(data), str(ORDERS / "order-1.xml")], str(out),
                       options={"input_split_size_mb": "0.05"},  # several splits of a small file
                       schema_dirs=[str(tmp_path / "schemas")])
    assert result.records == 501 and result.partitions > 2
    rows = []
    for part in sorted(out.glob("part-*.avro")):
        with open(part, "rb") as fh:
            reader = fastavro.reader(fh)
            # written by the encoder generated from the schema, as `xml decode --to avro`, with
            # Spark's default codec and the format indicator
            assert reader.codec == "deflate"
            assert reader.metadata["coupler.format"] == f"{schema['namespace']}.{schema['name']}@1"
            rows += list(reader)
    expected = list(XsdModel.load(XSD).decoder("orders").iter_records(str(data), "orders/order"))
    assert [r["id"] for r in rows[:500]] == [r["id"] for r in expected]
    assert rows[10]["total"] == expected[10]["total"] and rows[10]["line"][0]["sku"] == expected[10]["line"][0]["sku"]
    assert len(rows) == 501
    # the records the tasks' decoders encoded themselves: those of the dicts, written alike
    expected.append(XsdModel.load(XSD).decoder("order").decode_document(str(ORDERS / "order-1.xml")))
    reference = io.BytesIO()
    write_container(reference, schema, expected)
    reference.seek(0)
    assert rows == list(fastavro.reader(reference))


def test_records_with_alternatives_become_columns_and_recursive_ones_are_refused() -> None:
    """A union of several records (xsi:type) is a struct of one field per alternative; a
    type containing itself cannot be Parquet columns (the job then reads with Spark's reader)."""
    import pytest

    from coupler.translators.spark.types import SchemaMappingError, arrow_schema
    from coupler.translators.spark.xml_splits import columnar_schema, record_avro_schema

    a = {"type": "record", "name": "A", "namespace": "n", "fields": [{"name": "x", "type": "int"}]}
    b = {"type": "record", "name": "B", "namespace": "n", "fields": [{"name": "y", "type": "string"}]}
    schema = {"type": "record", "name": "R", "namespace": "n", "fields": [
        {"name": "party", "type": ["null", a, b]}, {"name": "more", "type": {"type": "array", "items": ["n.A", "n.B"]}}]}
    shape, fix = columnar_schema(schema)
    columns = arrow_schema(shape)
    assert columns.field("party").type.names == ["A", "B"]
    row = fix({"party": {"y": "s", "-type": "n.B"}, "more": [{"x": 1, "-type": "n.A"}, {"y": "t", "-type": "B"}]})
    import pyarrow as pa

    assert pa.RecordBatch.from_pylist([row], schema=columns).to_pylist() == [
        {"party": {"A": None, "B": {"y": "s"}}, "more": [{"A": {"x": 1}, "B": None}, {"A": None, "B": {"y": "t"}}]}]
    with pytest.raises(SchemaMappingError, match="contains itself"):
        columnar_schema(record_avro_schema(XSD, "order", "orders/order"))


def test_a_split_claimed_by_an_attempt_whose_result_was_lost_is_run_again(spark: Any, tmp_path: Path) -> None:
    """Each task slot claims splits until none is left; a task attempt that claimed a split
    and died before its result reached the driver (a failed attempt Spark retried, a
    speculative copy it dropped) leaves a claim and a half-written file: the driver runs
    that split again before it commits, so every record is written once, in file order,
    and the half-written file is never published."""
    import fastavro

    from coupler.translators.spark.commit import OutputCommitter
    from coupler.translators.spark.direct import run_split_job
    from coupler.translators.spark.xml_splits import record_avro_schema

    data = _orders_file(tmp_path / "orders.xml", 300)
    splits = plan_xml_splits([str(data)], "order", split_bytes=20_000, slots=2)
    assert len(splits) > 4
    out = tmp_path / "out"
    committer = OutputCommitter(str(out), "overwrite", "avro")
    committer.check_target()
    claims = committer.job_dir / "claims"
    claims.mkdir()
    (claims / "2").touch()  # claimed by the attempt that died
    half = committer.job_dir / f"part-00002-{committer.job_id}.avro.run-dead"
    half.write_bytes(b"Obj\x01 half a file")
    schema = record_avro_schema(XSD, "order", "orders/order")
    manifest = run_split_job(spark, splits, XmlSplitTask(XSD, "order", committer, "avro", schema, None), committer)
    assert manifest["records"] == 300 and manifest["partitions"] == len(splits)
    parts = sorted(out.glob("part-*.avro"))
    assert len(parts) == len(splits) and not list(out.glob("*.run-*"))
    ids = []
    for part in parts:
        with open(part, "rb") as fh:
            ids += [r["id"] for r in fastavro.reader(fh)]
    expected = [r["id"] for r in _decoded(splits)]
    assert ids == expected and len(set(ids)) == 300


def test_the_last_splits_of_an_xml_job_are_a_few_milliseconds_of_a_cores_work(tmp_path: Path) -> None:
    """XML decodes ~18 MB/s per core: the last splits of a job on two slots are a 128th of the
    split size (128 KB of the default 16 MB, ~8 ms), not a sixteenth (1 MB, ~60 ms, which one
    slot ran while the other waited); the splits still cover the file."""
    data = _orders_file(tmp_path / "orders.xml", 4000)
    splits = plan_xml_splits([str(data)], "order", split_bytes=1_000_000, slots=2)
    assert splits[0].start == 0 and splits[-1].end == data.stat().st_size
    assert all(a.end == b.start for a, b in zip(splits, splits[1:], strict=False))
    assert max(s.end - s.start for s in splits[-2:]) <= 1_000_000 // 64
    assert len(splits) <= 12


def test_a_split_job_reads_its_settings_without_copying_the_sessions_conf(spark: Any, tmp_path: Path,
                                                                           monkeypatch: Any) -> None:
    """``run_split_job`` reads ``spark.dynamicAllocation.enabled`` through ``spark.conf`` (one
    call to the JVM), not ``sparkContext.getConf()``, which copies every setting into a new
    ``SparkConf`` one call at a time (3-7 ms a job, 30 ms of the JVM's CPU the first time)."""
    from pyspark import SparkContext

    from coupler.translators.spark.commit import OutputCommitter
    from coupler.translators.spark.direct import run_split_job
    from coupler.translators.spark.xml_splits import record_avro_schema

    def refuse(self: Any) -> Any:
        raise AssertionError("getConf() called by a split job")

    monkeypatch.setattr(SparkContext, "getConf", refuse)
    data = _orders_file(tmp_path / "orders.xml", 40)
    splits = plan_xml_splits([str(data)], "order", split_bytes=10_000, slots=2)
    committer = OutputCommitter(str(tmp_path / "out"), "overwrite", "avro")
    committer.check_target()
    schema = record_avro_schema(XSD, "order", "orders/order")
    manifest = run_split_job(spark, splits, XmlSplitTask(XSD, "order", committer, "avro", schema, None), committer)
    assert manifest["records"] == 40


def test_the_spark_benchmark_warms_the_model_its_split_tasks_use(monkeypatch: Any) -> None:
    """``benchmarks/spark_ingest.py`` loads each task slot's schema model before it times a
    job; the key must be the split task's (schema, roots), or the timed job loads it again
    (and a changed signature must fail here, not in a user's benchmark run)."""
    import os

    import spark_ingest

    from coupler.translators.spark.xml_splits import _model

    monkeypatch.setattr(spark_ingest.time, "sleep", lambda _s: None)
    assert spark_ingest._WarmWorker("xml", XSD)(None) == [os.getpid()]
    before = _model.cache_info().hits
    _model(XSD, (os.getcwd(),))
    assert _model.cache_info().hits == before + 1


def test_a_worker_running_xml_splits_to_avro_imports_neither_pyarrow_nor_numpy(tmp_path: Path) -> None:
    """What a Spark worker imports to run XML splits to Avro (the task unpickled, a split
    decoded and written): the XML translator, not pyarrow, NumPy or the copybook codec, which
    cost each worker ~0.2 s of CPU in a session's first job (issue 32); the file is written."""
    import pickle
    import subprocess

    from coupler.translators.spark.commit import OutputCommitter
    from coupler.translators.spark.xml_splits import record_avro_schema

    data = _orders_file(tmp_path / "orders.xml", 50)
    split = plan_xml_splits([str(data)], "order", split_bytes=4_000, slots=2)[1]
    committer = OutputCommitter(str(tmp_path / "out"), "overwrite", "avro")
    committer.check_target()
    task = XmlSplitTask(XSD, "order", committer, "avro", record_avro_schema(XSD, "order", "orders/order"), None, "null")
    (tmp_path / "task.pickle").write_bytes(pickle.dumps((task, split)))
    script = f"""
import pickle, sys
task, split = pickle.loads(open({str(tmp_path / "task.pickle")!r}, "rb").read())
message = task(0, split)
print(message["records"], sorted(m for m in ("pyarrow", "numpy", "coupler.translators.spark.codec") if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-1500:]
    records, imported = done.stdout.strip().split(" ", 1)
    assert int(records) > 0
    assert imported == "[]"
