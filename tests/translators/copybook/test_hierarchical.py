"""Hierarchical records (Cobrix's ``segment-children:N``) against Cobrix's own expected output.

The data, copybooks and expected JSON lines are Cobrix's test17 (``data/cobrix_test17/SOURCES.md``)
and test4 (``data/cobrix_test4``); the comparison is byte for byte after the ``orderBy``/``take``
each Cobrix test applies.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coupler.bus.cli.main import main
from coupler.translators.copybook.avro import avro_schema
from coupler.translators.copybook.decoder import RecordDecoder, decode_files, to_json
from coupler.translators.copybook.errors import CopybookError
from coupler.translators.copybook.layout import build_layout
from coupler.translators.copybook.options import CopybookOptions, OptionsError
from coupler.translators.copybook.parser import parse_file

DATA = Path(__file__).parent / "data"
T17 = DATA / "cobrix_test17"
T4 = DATA / "cobrix_test4"

T17_OPTIONS = {
    "record_format": "V", "pedantic": "true", "generate_record_id": "true", "ebcdic_code_page": "common",
    "schema_retention_policy": "collapse_root", "segment_field": "SEGMENT_ID",
    "redefine_segment_id_map:1": "COMPANY => 1", "redefine-segment-id-map:2": "DEPT => 2",
    "redefine-segment-id-map:3": "EMPLOYEE => 3", "redefine-segment-id-map:4": "OFFICE => 4",
    "redefine-segment-id-map:5": "CUSTOMER => 5", "redefine-segment-id-map:6": "CONTACT => 6",
    "redefine-segment-id-map:7": "CONTRACT => 7",
    "segment-children:1": "COMPANY => DEPT,CUSTOMER", "segment-children:2": "DEPT => EMPLOYEE,OFFICE",
    "segment-children:3": "CUSTOMER => CONTACT,CONTRACT",
}
T4_OPTIONS = {
    "encoding": "ascii", "record_format": "V", "segment_field": "SEGMENT_ID",
    "redefine_segment_id_map:1": "STATIC-DETAILS => C", "redefine-segment-id-map:2": "CONTACTS => P",
    "segment-children:1": "STATIC-DETAILS => CONTACTS",
}

#: a parent segment P (id "P") whose children C (id "C") redefine it, behind a one-byte segment id T
PARENT_CHILD = (
    "       01 R.\n          05 T PIC X.\n          05 P.\n             10 PN PIC X(3).\n"
    "          05 C REDEFINES P.\n             10 CN PIC 9(3).\n"
)


def _cli(capsys, copybook: Path, data: Path, options: dict[str, str], *extra: str) -> list[str]:
    args = [x for k, v in options.items() for x in ("-o", f"{k}={v}")]
    assert main(["copybook", "decode", str(copybook), str(data), *args, *extra]) == 0
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("per_record", [False, True])
def test_test17c_nests_three_levels_as_cobrix(capsys, per_record: bool) -> None:
    lines = _cli(capsys, T17 / "test17_hierarchical.cob", T17 / "HIERARCHICAL.DATA.RDW.dat", T17_OPTIONS,
                 *(["--per-record"] if per_record else []))
    assert len(lines) == 50  # Cobrix: df.count == 50
    assert lines == (T17 / "test17c.txt").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    assert list(first["COMPANY"])[-2:] == ["DEPT", "CUSTOMER"]  # children after the parent's fields
    assert "DEPT" not in first and "EMPLOYEE" not in first  # gone from their own place


@pytest.mark.parametrize(("case", "extra"), [("d", {"generate_record_id": "true"}),
                                             ("f", {"generate_record_id": "true", "debug": "true"})])
def test_test4_hierarchy_matches_cobrix_test17d_f(capsys, case: str, extra: dict[str, str]) -> None:
    lines = _cli(capsys, T4 / "test4_copybook.cob", T4 / "COMP.DETAILS.SEP30.DATA.dat", {**T4_OPTIONS, **extra})
    assert lines[:60] == (T17 / f"test17{case}.txt").read_text(encoding="utf-8").splitlines()


def test_test4_hierarchy_keep_original_matches_cobrix_test17e(capsys) -> None:
    lines = _cli(capsys, T4 / "test4_copybook.cob", T4 / "COMP.DETAILS.SEP30.DATA.dat",
                 {**T4_OPTIONS, "schema_retention_policy": "keep_original"})
    ordered = sorted(lines, key=lambda line: json.loads(line)["COMPANY_DETAILS"].get("COMPANY_ID", ""))
    expected = (T17 / "test17e.txt").read_text(encoding="utf-8").splitlines()
    assert ordered[:60] == expected
    # an invalid UTF-8 sequence cut by control bytes is one U+FFFD (the bytes are dropped first)
    assert any('"TAXPAYER_STR":"\ufffd"' in line for line in expected)


def test_avro_schema_has_child_segments_as_arrays_in_the_parent() -> None:
    layout = build_layout(parse_file(T17 / "test17_hierarchical.cob"))
    schema = avro_schema(layout, CopybookOptions.from_mapping(T17_OPTIONS))
    top = {f["name"]: f for f in schema["fields"]}
    assert list(top) == ["File_Id", "Record_Id", "Record_Byte_Length", "SEGMENT_ID", "COMPANY"]
    company = top["COMPANY"]["type"][1]
    names = [f["name"] for f in company["fields"]]
    assert names == ["COMPANY_NAME", "ADDRESS", "TAXPAYER", "DEPT", "CUSTOMER"]
    dept = company["fields"][3]["type"][1]
    assert dept["type"] == "array"
    assert [f["name"] for f in dept["items"]["fields"]] == ["DEPT_NAME", "EXTENSION", "EMPLOYEE", "OFFICE"]


@pytest.mark.parametrize("to", ["avro", "parquet"])
def test_hierarchical_rows_write_avro_and_parquet(tmp_path, capsys, to: str) -> None:
    out = tmp_path / f"out.{to}"
    _cli(capsys, T17 / "test17_hierarchical.cob", T17 / "HIERARCHICAL.DATA.RDW.dat", T17_OPTIONS,
         "--to", to, "--output", str(out))
    if to == "avro":
        import fastavro

        with open(out, "rb") as fh:
            rows = list(fastavro.reader(fh))
    else:
        import pyarrow.parquet as pq

        rows = pq.read_table(out).to_pylist()
    expected = [json.loads(line) for line in (T17 / "test17c.txt").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 50
    assert [r["Record_Id"] for r in rows] == [e["Record_Id"] for e in expected]
    first = rows[0]["COMPANY"]
    assert [d["DEPT_NAME"] for d in first["DEPT"]] == [d["DEPT_NAME"] for d in expected[0]["COMPANY"]["DEPT"]]
    assert len(first["CUSTOMER"][0]["CONTRACT"]) == len(expected[0]["COMPANY"]["CUSTOMER"][0]["CONTRACT"])


def test_records_before_the_first_root_are_dropped_and_ids_follow_cobrix(tmp_path) -> None:
    cpy = tmp_path / "h.cpy"
    cpy.write_text(PARENT_CHILD)
    data = tmp_path / "h.dat"
    data.write_bytes(b"C001" b"PAAA" b"C002" b"C003" b"PBBB" b"XZZZ" b"C004")
    options = {"encoding": "ascii", "segment_field": "T", "generate_record_id": "true",
               "redefine_segment_id_map:1": "P => P", "redefine_segment_id_map:2": "C => C",
               "segment_children:1": "P => C"}
    rows = [to_json(r) for r in decode_files(build_layout(parse_file(cpy)), [data], options)]  # type: ignore[arg-type]
    assert rows == [
        '{"File_Id":0,"Record_Id":4,"Record_Byte_Length":12,"T":"P","P":{"PN":"AAA","C":[{"CN":2},{"CN":3}]}}',
        '{"File_Id":0,"Record_Id":7,"Record_Byte_Length":12,"T":"P","P":{"PN":"BBB","C":[{"CN":4}]}}',
    ]


@pytest.mark.parametrize(("children", "message"), [
    ("COMPANY => DEPT,NOPE", "child 'NOPE' of \"COMPANY => DEPT,NOPE\" is not a segment redefine"),
    ("NOPE => DEPT", "parent 'NOPE' of \"NOPE => DEPT\" is not a segment redefine"),
])
def test_unknown_parent_or_child_is_a_one_line_located_error(capsys, children: str, message: str) -> None:
    options = {**T17_OPTIONS, "segment-children:1": children}
    args = [x for k, v in options.items() for x in ("-o", f"{k}={v}")]
    code = main(["copybook", "decode", str(T17 / "test17_hierarchical.cob"), str(T17 / "HIERARCHICAL.DATA.RDW.dat"), *args])
    err = capsys.readouterr().err.strip()
    assert code != 0
    assert len(err.splitlines()) == 1
    assert "option segment-children" in err and message in err and "COMPANY, CONTACT" in err


def test_option_errors_of_segment_children() -> None:
    t4 = build_layout(parse_file(T4 / "test4_copybook.cob"))
    with pytest.raises(OptionsError, match="ID fields generation is not supported"):
        RecordDecoder(t4, {**T4_OPTIONS, "segment_id_level0": "C"})
    with pytest.raises(OptionsError, match="ID fields generation is not supported"):
        RecordDecoder(t4, {**T4_OPTIONS, "segment_id_root": "C"})
    with pytest.raises(OptionsError, match="needs segment_field"):
        RecordDecoder(t4, {"segment-children:1": "STATIC-DETAILS => CONTACTS"})
    with pytest.raises(OptionsError, match="PARENT => CHILD1,CHILD2"):
        CopybookOptions.from_mapping({**T4_OPTIONS, "segment-children:1": "STATIC-DETAILS"})
    with pytest.raises(OptionsError, match="duplicate child 'B'"):
        CopybookOptions.from_mapping({**T4_OPTIONS, "segment-children:1": "A => B", "segment-children:2": "C => B"})
    layout = build_layout(parse_file(T17 / "test17_hierarchical.cob"))
    with pytest.raises(CopybookError, match="only one root segment is allowed, found 2"):
        RecordDecoder(layout, {**T17_OPTIONS, "segment-children:1": "COMPANY => DEPT"})


def test_segment_children_options_round_trip_through_to_dict() -> None:
    options = CopybookOptions.from_mapping(T17_OPTIONS)
    assert options.segment_children[0] == ("COMPANY", ("DEPT", "CUSTOMER"))
    again = CopybookOptions.from_mapping(options.to_dict())
    assert again == options
    assert options.with_options({"segment_children:1": "COMPANY => DEPT"}).segment_children == (("COMPANY", ("DEPT",)),)


def test_groups_never_span_files(capsys, tmp_path) -> None:
    """Two RDW files: each file's rows as alone (File_Id counts the files); a file that starts
    with child records drops them, as Cobrix does before the first root."""
    data = (T17 / "HIERARCHICAL.DATA.RDW.dat").read_bytes()
    first_rdw = 4 + int.from_bytes(data[2:4], "little")
    tail = tmp_path / "tail.dat"
    tail.write_bytes(data[first_rdw:])  # starts with the first company's children
    args = [x for k, v in T17_OPTIONS.items() for x in ("-o", f"{k}={v}")]
    assert main(["copybook", "decode", str(T17 / "test17_hierarchical.cob"),
                 str(T17 / "HIERARCHICAL.DATA.RDW.dat"), str(tail), *args]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = [json.loads(line) for line in (T17 / "test17c.txt").read_text(encoding="utf-8").splitlines()]
    assert rows[:50] == expected
    assert [r["File_Id"] for r in rows[50:]] == [1] * 49
    assert [r["COMPANY"] for r in rows[50:]] == [e["COMPANY"] for e in expected[1:]]
    assert [r["Record_Id"] for r in rows[50:]] == [e["Record_Id"] - 1 for e in expected[1:]]


# Cobrix's Test22HierarchicalOccursSpec (spark-cobol/src/test/scala/.../integration/, commit
# 898330b8267dc2452e984572b421e1f0622743f2, Apache-2.0): copybook, bytes and expected rows inline
T22_COPYBOOK = """\
      01 RECORD.
          02 SEG PIC X(1).
          02 SEG1.
            03 COUNT1 PIC 9(1).
            03 GROUP1 OCCURS 0 TO 2 TIMES DEPENDING ON COUNT1.
               04 INNER-COUNT1 PIC 9(1).
               04 INNER-GROUP1 OCCURS 0 TO 3 TIMES
                                DEPENDING ON INNER-COUNT1.
                  05 FIELD1 PIC X.
          02 SEG2 REDEFINES SEG1.
            03 COUNT2 PIC 9(1).
            03 GROUP2 OCCURS 0 TO 2 TIMES DEPENDING ON COUNT2.
               04 INNER-COUNT2 PIC 9(1).
               04 INNER-GROUP2 OCCURS 0 TO 3 TIMES
                                DEPENDING ON INNER-COUNT2.
                  05 FIELD2 PIC X.
"""
T22_RECORDS = ["F1F0", "F1F1F0", "F1F1F1C1", "F1F1F2C1C2", "F1F2F2C3C4F2C5C6", "F2F2F2C7C8F2C9D1"]
T22_EXPECTED = """\
{"File_Id":0,"Record_Id":1,"SEG":"1","SEG1":{"COUNT1":0,"GROUP1":[],"SEG2":[]}}
{"File_Id":0,"Record_Id":2,"SEG":"1","SEG1":{"COUNT1":1,"GROUP1":[{"INNER_COUNT1":0,"INNER_GROUP1":[]}],"SEG2":[]}}
{"File_Id":0,"Record_Id":3,"SEG":"1","SEG1":{"COUNT1":1,"GROUP1":[{"INNER_COUNT1":1,"INNER_GROUP1":[{"FIELD1":"A"}]}],"SEG2":[]}}
{"File_Id":0,"Record_Id":4,"SEG":"1","SEG1":{"COUNT1":1,"GROUP1":[{"INNER_COUNT1":2,"INNER_GROUP1":[{"FIELD1":"A"},{"FIELD1":"B"}]}],"SEG2":[]}}
{"File_Id":0,"Record_Id":6,"SEG":"1","SEG1":{"COUNT1":2,"GROUP1":[{"INNER_COUNT1":2,"INNER_GROUP1":[{"FIELD1":"C"},{"FIELD1":"D"}]},{"INNER_COUNT1":2,"INNER_GROUP1":[{"FIELD1":"E"},{"FIELD1":"F"}]}],"SEG2":[{"COUNT2":2,"GROUP2":[{"INNER_COUNT2":2,"INNER_GROUP2":[{"FIELD2":"G"},{"FIELD2":"H"}]},{"INNER_COUNT2":2,"INNER_GROUP2":[{"FIELD2":"I"},{"FIELD2":"J"}]}]}]}}
"""


def test_variable_size_occurs_in_hierarchical_records_match_cobrix_test22(tmp_path) -> None:
    from coupler.translators.copybook.parser import parse_copybook

    data = tmp_path / "t22.dat"
    data.write_bytes(b"".join(
        bytes([0, 0, len(bytes.fromhex(r)), 0]) + bytes.fromhex(r) for r in T22_RECORDS))
    options = {"pedantic": "true", "record_format": "V", "generate_record_id": "true", "ebcdic_code_page": "common",
               "variable_size_occurs": "true", "segment_field": "SEG", "redefine_segment_id_map:1": "SEG1 => 1",
               "redefine-segment-id-map:2": "SEG2 => 2", "segment-children:1": "SEG1 => SEG2"}
    rows = []
    for rec in decode_files(build_layout(parse_copybook(T22_COPYBOOK)), [data], options):
        assert isinstance(rec, dict)
        rec.pop("Record_Byte_Length")  # Cobrix's test drops it
        rows.append(to_json(rec))
    assert rows == T22_EXPECTED.splitlines()


def test_a_bad_field_in_a_child_record_names_that_record(tmp_path) -> None:
    from coupler.translators.copybook.decoder import BadRecord, DecodeStats

    cpy = tmp_path / "h.cpy"
    cpy.write_text(PARENT_CHILD)
    data = tmp_path / "h.dat"
    data.write_bytes(b"PAAA" b"C001" b"C0X2" b"PBBB")
    options = {"encoding": "ascii", "segment_field": "T", "redefine_segment_id_map:1": "P => P",
               "redefine_segment_id_map:2": "C => C", "segment_children:1": "P => C"}
    layout = build_layout(parse_file(cpy))
    strict = list(decode_files(layout, [data], options, policy="strict"))
    assert isinstance(strict[0], BadRecord)
    err = strict[0].error
    assert (err.record, err.offset, err.field) == (3, 9, "R.C.CN")  # record 3 (from 1), bytes 8..11
    assert strict[1] == {"T": "P", "P": {"PN": "BBB", "C": []}}
    seen: list = []
    stats = DecodeStats(on_bad_field=seen.append)
    lenient = list(decode_files(layout, [data], options, stats=stats))
    assert lenient[0] == {"T": "P", "P": {"PN": "AAA", "C": [{"CN": 1}, {}]}}
    assert [(e.record, e.offset, e.field) for e in seen] == [(3, 9, "R.C.CN")]


def test_encoding_hierarchical_rows_is_refused_in_one_line_and_writes_no_file(capsys, tmp_path: Path) -> None:
    # a child record's own segment id and common keys are not in its parent's row: encoding
    # the rows back would invent them, so `copybook encode` says so instead of writing a file
    rows = tmp_path / "rows.jsonl"
    rows.write_text("\n".join(_cli(capsys, T4 / "test4_copybook.cob", T4 / "COMP.DETAILS.SEP30.DATA.dat", T4_OPTIONS)))
    out = tmp_path / "back.dat"
    args = [x for k, v in T4_OPTIONS.items() for x in ("-o", f"{k}={v}")]
    assert main(["copybook", "encode", str(T4 / "test4_copybook.cob"), str(rows), "--output", str(out), *args]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("coupler: error: option segment-children: hierarchical rows")
    assert "decode without segment-children" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.jsonl"]  # no output, no .part left
