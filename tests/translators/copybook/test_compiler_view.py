"""Copybooks as a COBOL compiler reads them: floating comments, pointers and index items,
top-level REDEFINES without an 01 level, COMP values beyond the PICTURE, the ASCII sign
convention of the encoder, level-66 RENAMES."""

from __future__ import annotations

import pytest

from coupler.translators.copybook.decoder import RecordDecoder
from coupler.translators.copybook.encoder import RecordEncoder
from coupler.translators.copybook.errors import CopybookError
from coupler.translators.copybook.layout import build_layout
from coupler.translators.copybook.parser import parse_copybook


def _offsets(text: str, **kw) -> dict[str, tuple[int, int]]:
    layout = build_layout(parse_copybook(text), **kw)
    return {n.name: (n.offset, n.span) for n in layout.walk()}


def test_floating_comments_in_fixed_and_free_format() -> None:
    text = """\
       01 REC.
          05 A PIC X(2). *> was 420
          05 B PIC X(3).  *> 'quoted' *> twice
          05 C PIC X VALUE '*>'.
"""
    assert _offsets(text) == {"REC": (0, 6), "A": (0, 2), "B": (2, 3), "C": (5, 1)}
    free = "01 REC. *> the record\n  05 A PIC X(2). *> a\n  05 B PIC X VALUE '*>'.\n"
    assert build_layout(parse_copybook(free, source_format="free")).size == 3


def test_pointer_and_index_items_are_sized_as_ibm() -> None:
    text = """\
       01 REC.
          05 A PIC X.
          05 P USAGE POINTER.
          05 PP PROCEDURE-POINTER.
          05 FP USAGE IS FUNCTION-POINTER.
          05 IX INDEX.
"""
    assert _offsets(text)["FP"] == (9, 4)
    assert _offsets(text)["IX"] == (13, 4)
    wide = _offsets(text, pointer_size=8)
    assert wide["P"] == (1, 8) and wide["PP"] == (9, 8) and wide["FP"] == (17, 8) and wide["IX"] == (25, 4)
    record = RecordDecoder(build_layout(parse_copybook(text)), {"encoding": "ascii"}).decode(
        b"A" + bytes.fromhex("0000000100000002000000030000002A"))
    assert record == {"A": "A", "P": b"\0\0\0\1", "PP": b"\0\0\0\2", "FP": b"\0\0\0\3", "IX": 42}


def test_top_level_redefines_without_an_01_level() -> None:
    text = """\
           03 COMM-OPENED PIC 9(8).
           03 COMM-OPENED-GROUP REDEFINES COMM-OPENED.
              05 COMM-OPENED-DD PIC 99.
              05 COMM-OPENED-MM PIC 99.
              05 COMM-OPENED-YYYY PIC 9999.
           03 COMM-NEXT PIC X.
"""
    got = _offsets(text)
    assert got["COMM-OPENED-GROUP"] == (0, 8) and got["COMM-OPENED-YYYY"] == (4, 4)
    assert got["COMM-NEXT"] == (8, 1)
    under_01 = _offsets("       01 R.\n" + text)
    assert {k: v for k, v in under_01.items() if k != "R"} == got


def test_comp_beyond_the_picture_kept_by_default_and_checked_with_trunc_std() -> None:
    text = "       01 R.\n          05 TAXPAYER-NUM PIC 9(8) COMP.\n"
    layout = build_layout(parse_copybook(text))
    assert RecordDecoder(layout, {"encoding": "ascii"}).decode(b"9271") == {"TAXPAYER_NUM": 959592241}
    assert RecordDecoder(layout, {"encoding": "ascii", "trunc": "std"}).decode(b"9271") == {}
    with pytest.raises(CopybookError, match="trunc"):
        RecordDecoder(layout, {"trunk": "std"})


def test_encoder_ascii_sign_conventions() -> None:
    text = "       01 R.\n          05 N PIC S9(3).\n          05 M PIC S9(3).\n"
    layout = build_layout(parse_copybook(text))
    rec = {"N": -123, "M": 45}
    ibm = RecordEncoder(layout, {"encoding": "ascii"}).encode(rec)
    gnu = RecordEncoder(layout, {"encoding": "ascii", "ascii_sign_convention": "gnucobol"}).encode(rec)
    assert ibm == b"12L04E"
    assert gnu == b"12s045"  # GnuCOBOL / Micro Focus: 0x70 + digit when negative, plain digit otherwise
    for raw in (ibm, gnu):
        assert RecordDecoder(layout, {"encoding": "ascii"}).decode(raw) == rec


RENAMES = """\
       01 REC.
          05 A PIC X(2).
          05 B.
             10 B1 PIC 9(3).
             10 B2 PIC S9(3) COMP-3.
          05 C PIC X(4).
       66 AB RENAMES A THRU B1.
       66 BB RENAMES B2.
       66 WHOLE RENAMES A THROUGH C.
"""


def test_renames_are_fields_in_layout_schema_and_records() -> None:
    from coupler.translators.copybook.avro import avro_schema

    layout = build_layout(parse_copybook(RENAMES))
    rows = {r["name"]: r for r in layout.rows()}
    assert (rows["AB"]["start"], rows["AB"]["length"], rows["AB"]["picture"]) == (1, 5, "X(5)")
    assert (rows["BB"]["start"], rows["BB"]["length"], rows["BB"]["usage"]) == (6, 2, "COMP-3")
    assert rows["WHOLE"]["length"] == 11 and "66" in rows["WHOLE"]["attributes"]
    assert "WHOLE" not in layout.layout_text()  # Cobrix's layout listing has no level 66
    names = [f["name"] for f in avro_schema(layout)["fields"]]
    assert names[-3:] == ["AB", "BB", "WHOLE"]
    raw = b"XY123\x12\x3dCCCC"
    rec = RecordDecoder(layout, {"encoding": "ascii"}).decode(raw)
    assert rec == {"A": "XY", "B": {"B1": 123, "B2": -123}, "C": "CCCC", "AB": "XY123", "BB": -123,
                   "WHOLE": "XY123=CCCC"}  # control bytes dropped, as Cobrix
    # encoding ignores the views: the renamed items write the bytes
    assert RecordEncoder(layout, {"encoding": "ascii"}).encode(rec) == raw


@pytest.mark.parametrize(("line", "message"), [
    ("66 X RENAMES C THRU A.", "does not end after"),
    ("66 Y RENAMES A THRU NOPE.", "NOPE, which is not an item"),
    ("66 Z RENAMES MISSING.", "MISSING, which is not an item"),
])
def test_renames_errors_are_located(line: str, message: str) -> None:
    text = RENAMES.split("       66")[0] + f"       {line}\n"
    with pytest.raises(CopybookError, match=message) as err:
        build_layout(parse_copybook(text, file="rec.cpy"))
    assert err.value.where == "rec.cpy:7:8"


def test_cobrix_test4_keeps_comp_values_beyond_the_picture(capsys) -> None:
    """Cobrix's own expected output for test4 (data/cobrix_test4/SOURCES.md), byte for byte."""
    from pathlib import Path

    from coupler.bus.cli.main import main

    d = Path(__file__).parent / "data" / "cobrix_test4"
    opts = ["encoding=ascii", "record_format=V", "segment_field=SEGMENT_ID", "segment_id_level0=C",
            "segment_id_level1=P", "generate_record_id=true", "schema_retention_policy=collapse_root",
            "segment_id_prefix=A"]
    args = [x for o in opts for x in ("-o", o)]
    assert main(["copybook", "decode", str(d / "test4_copybook.cob"), str(d / "COMP.DETAILS.SEP30.DATA.dat"), *args]) == 0
    lines = capsys.readouterr().out.splitlines()[:60]
    assert lines == (d / "test4.txt").read_text(encoding="utf-8").splitlines()
    assert '"TAXPAYER_NUM":959592241' in lines[0]


ROUND_TRIP_CASES = {
    "test4-ascii": ("data/cobrix_test4/test4_copybook.cob", "data/cobrix_test4/COMP.DETAILS.SEP30.DATA.dat",
                    {"encoding": "ascii", "ascii_charset": "latin-1", "string_trimming_policy": "keep_all"}),
    # (Cobrix's EBCDIC test5 pads its text with 0x00, which the EBCDIC code pages read as a
    # space: its text cannot come back byte for byte, whatever the branch)
}


@pytest.mark.parametrize("case", list(ROUND_TRIP_CASES))
def test_multi_segment_records_round_trip(case: str, cobrix_corpus) -> None:
    """encode(decode(x)) == x for every record of a multi-segment file: the encoder writes
    the REDEFINES branch of each record's segment, and a segment's record ends after it."""
    from pathlib import Path

    from coupler.translators.copybook.framing import iter_records
    from coupler.translators.copybook.options import CopybookOptions
    from coupler.translators.copybook.parser import parse_file

    cpy, data, extra = ROUND_TRIP_CASES[case]
    here = Path(__file__).parent
    root = here if cpy.startswith("data/") else cobrix_corpus
    layout = build_layout(parse_file(root / cpy))
    options = CopybookOptions.from_mapping({
        "record_format": "V", "segment_field": "SEGMENT_ID", "improved_null_detection": "false",
        "redefine_segment_id_map:0": "STATIC-DETAILS => C", "redefine_segment_id_map:1": "CONTACTS => P", **extra})
    decoder, encoder = RecordDecoder(layout, options), RecordEncoder(layout, options)
    segments = set()
    with open(root / data, "rb") as stream:
        frames = list(iter_records(stream, options, record_size=layout.size))
    for frame in frames:
        record = decoder.decode(frame.payload)
        assert isinstance(record, dict)
        segments.add(record["SEGMENT_ID"].strip("\0 "))
        assert encoder.encode(record) == frame.payload, f"record {frame.number + 1}"
    assert len(frames) == 1000 and segments == {"C", "P"}


def test_encode_branches_picks_the_branch_to_write() -> None:
    text = "       01 R.\n          05 S PIC X(4).\n          05 N REDEFINES S PIC 9(8) COMP.\n"
    layout = build_layout(parse_copybook(text))
    record = {"S": "ABCD", "N": 7}
    assert RecordEncoder(layout, {"encoding": "ascii"}).encode(record) == b"ABCD"
    assert RecordEncoder(layout, {"encoding": "ascii", "encode_branches": "N"}).encode(record) == b"\0\0\0\7"
    with pytest.raises(CopybookError, match="no REDEFINES branch"):
        RecordEncoder(layout, {"encode_branches": "R"})
