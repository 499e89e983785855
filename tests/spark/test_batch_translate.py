"""``coupler batch translate``: formats, mappings, bad records, CLI errors."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import fastavro
import pyarrow.parquet as pq
import pytest

from coupler.bus.batch.jobs import BatchError, Spec, translate
from coupler.bus.cli import main as cli
from coupler.canonical.registry import SchemaRegistry
from coupler.translators.copybook import decoder, encoder, layout, parser
from coupler.translators.copybook.options import CopybookOptions
from coupler.translators.mapping import load_mapping
from tests.spark.cards_case import all_cards, write_cards
from tests.spark.hierarchy_case import FAMILIES, OPTIONS, write_hierarchy

MAPPING_DATA = Path(__file__).resolve().parents[1] / "translators" / "mapping" / "data"


def _accounts(tmp_path: Path, count: int) -> tuple[Path, Path, Path]:
    """The mapping test data (copybook, mapping, schemas) and ``count`` ASCII account records."""
    for name in ("account.cpy", "account-copybook.toml"):
        shutil.copy(MAPPING_DATA / name, tmp_path / name)
    shutil.copytree(MAPPING_DATA / "schemas", tmp_path / "schemas")
    lay = layout.build_layout(parser.parse_file(tmp_path / "account.cpy"))
    enc = encoder.RecordEncoder(lay, CopybookOptions.from_mapping({"encoding": "ascii"}))
    data = tmp_path / "accounts.dat"
    with open(data, "wb") as fh:
        for i in range(count):
            fh.write(enc.encode({
                "ACCT_ID": i, "FIRST_NAME": f"ANN{i % 7}", "LAST_NAME": "SMITH", "STATUS_CODE": "AIC"[i % 3],
                "OPEN_DATE": 20240101 + i % 28, "BALANCE": f"{i}.25", "BRANCH_CODE": "B001", "BRANCH_CITY": "LYON",
                "LINES": [{"SKU": f"S{i:05d}", "QTY": i % 999, "PRICE": "12.50"}, {"SKU": "X", "QTY": 1, "PRICE": "0.99"}],
            }))
    return tmp_path / "account.cpy", tmp_path / "account-copybook.toml", data


def test_mapped_translation_to_canonical_avro_equals_the_mapping_applied_record_by_record(spark: Any, tmp_path: Path) -> None:
    cpy, mapping, data = _accounts(tmp_path, 300)
    out = tmp_path / "accounts"
    result = translate(
        spark, f"copybook:{cpy}", "avro:demo.Account@1", [str(data)], str(out),
        mapping=str(mapping), schema_dirs=[str(tmp_path / "schemas")], options={"input_split_records": "100"},
    )
    got = []
    for f in sorted(out.glob("part-*.avro")):
        with open(f, "rb") as fh:
            got.extend(fastavro.reader(fh))
    registry = SchemaRegistry.default([tmp_path / "schemas"])
    to_canonical = load_mapping(mapping, registry=registry).direction("to_canonical")
    lay = layout.build_layout(parser.parse_file(cpy))
    decoded = decoder.decode_files(lay, [data], CopybookOptions.from_mapping({"encoding": "ascii"}))
    expected = [registry.decode(registry.encode(to_canonical.apply(r), "demo.Account@1"), "demo.Account@1") for r in decoded]
    assert result.records == 300
    assert got == expected
    assert got[4]["status"] == "INACTIVE" and got[4]["name"] == "ANN4 SMITH"


def test_cli_translate_to_jsonl_reports_bad_records_with_reasons(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cpy, _mapping, data = _accounts(tmp_path, 50)
    with open(data, "ab") as fh:
        fh.write(b"12")  # a truncated last record
    out = tmp_path / "json"
    code = cli.main([
        "batch", "translate", "--from", f"copybook:{cpy}", "--to", "jsonl",
        "-o", "encoding=ascii", str(data), "--output", str(out), "--json",
    ])
    assert code == 0
    (summary,) = json.loads(capsys.readouterr().out)
    assert (summary["records"], summary["errors"]) == (50, 1)
    lines = [json.loads(line) for f in out.glob("part-*.json") for line in f.read_text().splitlines()]
    assert sorted(r["ACCT_ID"] for r in lines) == list(range(50))
    (error,) = [json.loads(line) for f in Path(summary["errors_output"]).glob("*.jsonl") for line in f.read_text().splitlines()]
    assert error["record"] == 51 and "truncated" in error["reason"] and error["file"] == str(data)  # the 51st record, numbered from 1 as every report


def test_cli_strict_and_max_errors_exit_1_naming_the_first_rejected_record(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """--strict and --max-errors as `copybook decode` and `translate` have them: exit status 1,
    one line naming the record (from 1) and its byte offset; checked when the job has ended."""
    cpy, _mapping, data = _accounts(tmp_path, 20)
    with open(data, "ab") as fh:
        fh.write(b"12")  # a truncated last record: the 21st, at byte 20 * 92
    where = f"{data}: record 21 at byte {20 * 92}"

    def run(*extra: str) -> tuple[int, str]:
        code = cli.main(["batch", "translate", "--from", f"copybook:{cpy}", "--to", "parquet", "-o", "encoding=ascii",
                         str(data), "--output", str(tmp_path / "out"), "--master", "local[2]", *extra])
        return code, capsys.readouterr().err

    code, err = run("--max-errors", "0")
    assert code == 1
    assert err.splitlines()[-1] == f"coupler: error: 1 records rejected, more than 0 errors (--max-errors), the first at {where}"
    code, err = run("--max-errors", "1")
    assert code == 0 and "(--max-errors)" not in err
    code, err = run("--strict")
    assert code == 1
    assert err.splitlines()[-1] == f"coupler: error: 1 records rejected (--strict), the first at {where}"
    assert run("--max-errors", "-1") == (2, "coupler: error: --max-errors needs a number >= 0\n")


@pytest.mark.parametrize("case", ["truncated", "fixed-read-as-V"])
def test_the_same_input_gives_the_same_exit_status_on_every_decode_path(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str,
) -> None:
    """One rule (issue 16): lenient, a rejected record is reported and skipped with exit
    status 0 (Cobrix's PERMISSIVE); 1 under --strict and past --max-errors. The same input
    through copybook decode, translate and batch translate gives the same status."""
    cpy, _mapping, data = _accounts(tmp_path, 3)
    extra = ["-o", "record_format=V"] if case == "fixed-read-as-V" else []
    if case == "truncated":
        with open(data, "ab") as fh:
            fh.write(b"0001")

    def statuses(*mode: str) -> list[int]:
        codes = [
            cli.main(["copybook", "decode", str(cpy), str(data), "-o", "encoding=ascii", *extra,
                      "--output", str(tmp_path / "d.jsonl"), *mode]),
            cli.main(["translate", "--from", f"copybook:{cpy}", "--to", "jsonl", "-o", "encoding=ascii", *extra,
                      str(data), "--output", str(tmp_path / "t.jsonl"), *mode]),
            cli.main(["batch", "translate", "--from", f"copybook:{cpy}", "--to", "jsonl", "-o", "encoding=ascii",
                      *extra, str(data), "--output", str(tmp_path / "b"), "--master", "local[2]", *mode]),
        ]
        err = capsys.readouterr().err
        assert "Traceback" not in err, err
        if not mode:  # decode and translate count the rejected record alike, batch translate too
            assert err.count(" 1 rejected, 0 bad fields") == 2 and ", 1 errors -> " in err, err
        return codes

    assert statuses() == [0, 0, 0]
    assert statuses("--strict") == [1, 1, 1]
    assert statuses("--max-errors", "0") == [1, 1, 1]


def test_cli_rejects_a_bad_spec_and_an_unknown_option_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["batch", "translate", "--from", "cobol:x", "--to", "jsonl", "in", "--output", "o"]) == 1
    assert "unknown format 'cobol:x'" in capsys.readouterr().err
    with pytest.raises(BatchError, match="does not exist"):
        Spec.parse("copybook:/nonexistent.cpy")


def test_spark_that_cannot_start_is_one_line_naming_the_cause_not_an_internal_error(tmp_path: Path) -> None:
    """A SparkContext that does not start (here a file to ship that does not exist, as with
    ``spark-submit --py-files`` of a wheel name ``make wheel`` did not build, which the cluster
    example of docs/batch.md named before) is one line naming the master and Java's cause (it
    was "internal error: Py4JJavaError: ... report it", over several lines)."""
    import subprocess
    import sys

    write_cards(tmp_path)
    missing = tmp_path / "dist" / "coupler-0.1.0-py3-none-any.whl"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "coupler"), "batch", "translate", "--master", "local[1]",
         "--conf", f"spark.files={missing}", "--from", "copybook:cards.cpy", "--to", "parquet",
         "-o", "record_format=V", "-o", "is_rdw_big_endian=true", "in/a.dat", "--output", "out"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"coupler: error: --master local[1]: Spark did not start: FileNotFoundException: File "
                           f"file:{missing} does not exist (check --master, --conf and spark-submit's options; "
                           "--verbose shows Spark's log)\n"), done.stderr
    assert not (tmp_path / "out").exists()


def test_xml_records_named_by_the_xsd_element_are_read_with_sparks_xml_reader(spark: Any, tmp_path: Path) -> None:
    orders = Path(__file__).resolve().parents[1] / "translators" / "xml" / "data" / "orders"
    out = tmp_path / "orders"
    result = translate(spark, f"xml:{orders / 'orders.xsd'}#order", "jsonl",
                       [str(orders / "orders-batch.xml"), str(orders / "order-1.xml")], str(out))
    rows = [json.loads(line) for f in out.glob("part-*.json") for line in f.read_text().splitlines()]
    assert result.records == len(rows) == 3
    assert sorted(r["_id"] for r in rows) == ["B-1", "B-2", "PO-1001"]


def _doc_examples() -> list[str]:
    """The ``coupler batch translate`` lines of docs/batch.md's block of examples (continuations
    joined, comments dropped)."""
    import re

    text = (Path(__file__).resolve().parents[2] / "docs" / "batch.md").read_text()
    block = re.search(r"```sh\n(.*?)```", text.split("options. Examples:", 1)[1], re.S)
    assert block, "docs/batch.md: no block of examples"
    lines = block.group(1).replace("\\\n", " ").splitlines()
    return [" ".join(line.split()) for line in lines if line.startswith("coupler batch translate")]


def test_the_batch_guides_examples_run_as_written(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/batch.md's three ``coupler batch translate`` examples, as written (the shell's
    quotes and globs applied), on the files they name: EBCDIC files with big-endian RDWs and
    cards.cpy, the mapping guide's account files, and the XML orders fixture; each prints the
    summary the page describes and commits its output (``_SUCCESS`` with the record count)."""
    import glob
    import re
    import shlex

    import pyarrow.parquet as pq

    write_cards(tmp_path)
    _accounts(tmp_path, 12)
    (tmp_path / "account-copybook.toml").write_text(re.search(
        r"```toml\n(# account-copybook.toml.*?)```",
        (Path(__file__).resolve().parents[2] / "docs" / "mappings.md").read_text(), re.S).group(1))
    orders = Path(__file__).resolve().parents[1] / "translators" / "xml" / "data" / "orders"
    for xsd in orders.glob("*.xsd"):
        shutil.copy(xsd, tmp_path / xsd.name)
    (tmp_path / "orders").mkdir()
    shutil.copy(orders / "orders-batch.xml", tmp_path / "orders" / "batch.xml")
    shutil.copy(orders / "order-1.xml", tmp_path / "orders" / "order-1.xml")
    monkeypatch.chdir(tmp_path)

    examples = _doc_examples()
    assert len(examples) == 3, examples
    summaries = []
    for example in examples:
        argv = [g for a in shlex.split(example)[1:] for g in (sorted(glob.glob(a)) if "*" in a else [a])]
        assert cli.main(argv) == 0, example
        summaries.append(capsys.readouterr().err.strip().splitlines()[-1])

    # EBCDIC RDW files to Parquet
    assert summaries[0].startswith("2 input(s), 3 records, 0 errors -> out/cards in "), summaries[0]
    table = pq.read_table(sorted(glob.glob("out/cards/part-*.parquet")))
    assert sorted(zip(table.column("CARD_NO").to_pylist(), table.column("CARD_LIMIT").to_pylist(), strict=True)) == all_cards()
    # canonical Avro through the mapping guide's mapping
    assert summaries[1].startswith("1 input(s), 12 records, 0 errors -> out/accounts in "), summaries[1]
    got = [r for f in sorted(glob.glob("out/accounts/part-*.avro")) for r in fastavro.reader(open(f, "rb"))]
    assert len(got) == 12 and got[4]["name"] == "ANN4 SMITH" and got[4]["branch"]["city"] == "LYON"
    # XML with Spark's reader to JSON lines
    assert summaries[2].startswith("2 input(s), 3 records, 0 errors -> out/orders in "), summaries[2]
    rows = [json.loads(line) for f in glob.glob("out/orders/part-*.json") for line in Path(f).read_text().splitlines()]
    assert sorted(r["_id"] for r in rows) == ["B-1", "B-2", "PO-1001"]
    for out, records in (("out/cards", 3), ("out/accounts", 12)):
        assert json.loads(Path(out, "_SUCCESS").read_text())["records"] == records


#: acme.Customer@2 records as JSON lines: every field but ``phone`` (nullable, left out: null)
CUSTOMERS = [
    {"customer_id": "C-100234", "name": "Ada Lovelace", "email": "ada@example.com", "segment": "BUSINESS",
     "address": {"street": "1 Main St", "city": "Springfield", "postal_code": "12345", "country": "US"}},
    {"customer_id": "C-100235", "name": "Grace Hopper", "email": None, "segment": "RETAIL",
     "address": {"street": "2 Elm St", "city": "Arlington", "postal_code": "22201", "country": "US"}},
]


def test_the_batch_guides_python_examples_run_as_written(spark: Any, tmp_path: Path) -> None:
    """docs/batch.md's two Python examples, as written, one after the other, with the page's
    ``/data`` ("stands for your own folder") a folder holding the files they name: the
    ``copybook`` source reads the three cards of in/a.dat and in/b.dat, ``canonical-avro``
    commits JSON lines of customers as acme.Customer@2 records and ``coupler-parquet`` the
    cards. (Before, the second example wrote the cards as acme.Customer@2 and failed: "no
    value and no default for customer_id".)"""
    import re

    text = (Path(__file__).resolve().parents[2] / "docs" / "batch.md").read_text()
    assert "`/data`, which stands for your own folder" in " ".join(text.split())
    section = text.split("## Reading copybook files in Spark", 1)[1].split("## `coupler batch translate`", 1)[0]
    read, write = re.findall(r"```python\n(.*?)```", section, re.S)
    write_cards(tmp_path)
    (tmp_path / "customers.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CUSTOMERS))

    names: dict[str, Any] = {}
    for example in (read, write):
        assert "/data/" in example
        exec(example.replace("/data/", f"{tmp_path}/"), names)
    assert names["spark"] is spark  # spark_session() joins the running session
    rows = names["df"].collect()
    assert sorted((r.CARD_NO, r.CARD_LIMIT) for r in rows) == all_cards()
    assert [r._corrupt_record for r in rows] == [None] * 3

    out = tmp_path / "out" / "customers"
    files = sorted(out.glob("part-*.avro"))
    got = []
    for f in files:
        with open(f, "rb") as fh:
            reader = fastavro.reader(fh)
            assert reader.metadata["coupler.format"] == "acme.Customer@2"
            got.extend(reader)
    assert sorted(got, key=lambda r: r["customer_id"]) == [{**c, "phone": None} for c in CUSTOMERS]
    assert json.loads((out / "_SUCCESS").read_text())["records"] == 2
    cards = pq.read_table(sorted((tmp_path / "out" / "cards").glob("part-*.parquet")))
    assert sorted(zip(cards.column("CARD_NO").to_pylist(), cards.column("CARD_LIMIT").to_pylist(), strict=True)) == all_cards()


def test_a_hierarchical_file_read_in_many_splits_keeps_every_child_with_its_parent(spark: Any, tmp_path: Path) -> None:
    """``batch translate`` end to end on a ``segment-children`` file whose splits are two records
    each: a split starts only at a root record, so no child is cut from its parent (before
    f437b5b the split job started splits at children and dropped them without a word)."""
    cpy, data = write_hierarchy(tmp_path)
    options = {**OPTIONS, "input_split_records": "2"}
    out = tmp_path / "out"
    result = translate(spark, f"copybook:{cpy}", "parquet", [str(data)], str(out), options=options)  # split tasks
    rows = [r for f in sorted(out.glob("part-*.parquet")) for r in pq.read_table(f).to_pylist()]
    assert result.records == 3 and result.errors == 0
    assert [(r["P"]["PN"], [c["CN"] for c in r["P"]["C"]]) for r in rows] == FAMILIES, rows
