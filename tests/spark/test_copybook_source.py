"""The ``copybook`` Spark data source gives the rows of the copybook translator's decoder."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from coupler.translators.copybook import decoder, layout, parser
from coupler.translators.copybook.options import CopybookOptions

from .corpus_cases import CASES

CORRUPT = "_corrupt_record"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        keys = set(a) | set(b)
        return all(_same(a.get(k), b.get(k)) for k in keys)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-6)
    if isinstance(a, Decimal) and isinstance(b, Decimal | int) and not isinstance(b, bool):
        return a == b  # decimal(p, 0) columns: Spark gives a Decimal, the decoder an int
    return a == b and type(a) is type(b)


def python_rows(copybook: Path, data: list[Path], options: dict[str, str]) -> list[dict[str, Any]]:
    """The records as the CLI decoder (``decode_files``) gives them; bad ones as their error."""
    lay = layout.build_layout(parser.parse_file(copybook))
    opts = CopybookOptions.from_mapping(options)
    out = []
    for rec in decoder.decode_files(lay, data, opts):
        out.append({"error": rec.error.to_dict()} if isinstance(rec, decoder.BadRecord) else rec)
    return out


def spark_rows(spark: Any, copybook: Path, data: list[Path], options: dict[str, str]) -> tuple[list[dict[str, Any]], int]:
    reader = spark.read.format("copybook").option("copybook", str(copybook))
    for k, v in options.items():
        reader = reader.option(k, v)
    df = reader.load([str(p) for p in data])
    rows = []
    for row in df.collect():
        d = row.asDict(recursive=True)
        corrupt = d.pop(CORRUPT)
        rows.append({"error": json.loads(corrupt)} if corrupt else d)
    return rows, df.rdd.getNumPartitions()


@pytest.mark.parametrize(("case", "copybook", "data", "options"), CASES, ids=[c[0] for c in CASES])
def test_corpus_case_matches_the_decoder(spark: Any, cobrix_corpus: Path, case: str, copybook: str, data: list[str], options: dict[str, str]) -> None:
    cpy = cobrix_corpus / copybook
    files = [cobrix_corpus / d for d in data]
    expected = python_rows(cpy, files, options)
    # small splits, so that every splittable file is read by about four partitions
    per_split = max(2, len(expected) // 4)
    got, partitions = spark_rows(spark, cpy, files, {**options, "input_split_records": str(per_split)})
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert _same(g, e), f"{case}: row {i} differs:\nspark:  {g}\ndecoder: {e}"
    if case.startswith(("test1", "test5_split", "test6", "test9")):
        assert partitions > 1, "a splittable file was read by one partition"


BAD_COPYBOOK = """\
       01  REC.
           05  ID      PIC 9(4).
           05  AMOUNT  PIC S9(5)V99 COMP-3.
"""


@pytest.mark.parametrize("policy", ["strict", "lenient"])
def test_bad_field_follows_the_policy_in_every_split(spark: Any, tmp_path: Path, policy: str) -> None:
    cpy = tmp_path / "rec.cpy"
    cpy.write_text(BAD_COPYBOOK)
    records = [f"{i:04d}".encode("cp037") + bytes.fromhex(f"{i * 3:07d}C") for i in range(30)]
    records[17] = records[17][:4] + bytes.fromhex("0000AB0C")  # not a packed decimal
    data = tmp_path / "recs.dat"
    data.write_bytes(b"".join(records))
    df = (spark.read.format("copybook").option("copybook", str(cpy)).option("policy", policy)
          .option("input_split_records", "8").load(str(data)))
    assert df.rdd.getNumPartitions() == 4
    rows = df.collect()
    corrupt = [json.loads(r[CORRUPT]) for r in rows if r[CORRUPT]]
    if policy == "strict":
        assert len(rows) == 30 and len(corrupt) == 1
        assert corrupt[0]["record"] == 18 and corrupt[0]["offset"] == 17 * 8 + 4
        assert corrupt[0]["field"].endswith("AMOUNT") and corrupt[0]["raw_hex"] == "0000AB0C"
        assert [r["ID"] for r in rows if not r[CORRUPT]] == [i for i in range(30) if i != 17]
    else:
        assert corrupt == []
        assert [r["ID"] for r in rows] == list(range(30))
        assert rows[17]["AMOUNT"] is None and rows[16]["AMOUNT"] == Decimal("0.48")


HIER = Path(__file__).resolve().parents[1] / "translators" / "copybook" / "data"
HIER_CASES = {
    "test17c": ("cobrix_test17/test17_hierarchical.cob", "cobrix_test17/HIERARCHICAL.DATA.RDW.dat", "cobrix_test17/test17c.txt", {
        "record_format": "V", "generate_record_id": "true", "ebcdic_code_page": "common", "segment_field": "SEGMENT_ID",
        **{f"redefine-segment-id-map:{i}": f"{name} => {i}" for i, name in enumerate(
            ["COMPANY", "DEPT", "EMPLOYEE", "OFFICE", "CUSTOMER", "CONTACT", "CONTRACT"], start=1)},
        "segment-children:1": "COMPANY => DEPT,CUSTOMER", "segment-children:2": "DEPT => EMPLOYEE,OFFICE",
        "segment-children:3": "CUSTOMER => CONTACT,CONTRACT",
    }),
    "test17d": ("cobrix_test4/test4_copybook.cob", "cobrix_test4/COMP.DETAILS.SEP30.DATA.dat", "cobrix_test17/test17d.txt", {
        "encoding": "ascii", "record_format": "V", "segment_field": "SEGMENT_ID", "generate_record_id": "true",
        "redefine_segment_id_map:1": "STATIC-DETAILS => C", "redefine-segment-id-map:2": "CONTACTS => P",
        "segment-children:1": "STATIC-DETAILS => CONTACTS",
    }),
}


@pytest.mark.parametrize("case", list(HIER_CASES))
def test_hierarchical_records_are_never_cut_by_a_split(spark: Any, case: str) -> None:
    """Cobrix's test17 with ``input_split_records=5`` (as its own split test): many partitions,
    each starting at a root record, and the rows of the CLI decoder and of Cobrix."""
    cpy, data, expected_file, options = HIER_CASES[case]
    expected = python_rows(HIER / cpy, [HIER / data], options)
    got, partitions = spark_rows(spark, HIER / cpy, [HIER / data], {**options, "input_split_records": "5"})
    assert partitions > 10
    got.sort(key=lambda r: r["Record_Id"])
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert _same(g, e), f"{case}: row {i} differs:\nspark:  {g}\ndecoder: {e}"
    cobrix = [json.loads(line) for line in (HIER / expected_file).read_text(encoding="utf-8").splitlines()]
    ids = [r["Record_Id"] for r in got][: len(cobrix)]
    assert ids == [r["Record_Id"] for r in cobrix]
    assert [decoder.to_json(r) for r in expected[: len(cobrix)]] == (HIER / expected_file).read_text(encoding="utf-8").splitlines()
