"""Layout: offsets and sizes against Cobrix's layout files, REDEFINES, OCCURS, SYNC slack."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from coupler.translators.copybook.errors import CopybookLayoutError
from coupler.translators.copybook.layout import Field, Group, build_layout, identifier
from coupler.translators.copybook.parser import parse_copybook, parse_file

CORPUS = Path(__file__).parent / "data" / "cobrix"



def layout_of(*lines: str):
    text = "\n".join(f"       {line}" for line in lines) + "\n"
    return build_layout(parse_copybook(text))


def test_layout_text_is_byte_identical_to_cobrix_test6() -> None:
    case = CORPUS / "05_test6_type_variety"
    expected = (case / "test6_expected" / "test6_layout.txt").read_text()
    layout = build_layout(parse_file(case / "test6_copybook.cob"))
    assert layout.layout_text() == expected
    assert layout.size == 1493


def test_offsets_equal_every_corpus_layout_file() -> None:
    """test19's layout file is in an older format (no FLD column on the record line):
    compare names, start, end and length of every line in order."""
    layouts = sorted(CORPUS.glob("*/*/*_layout.txt"))
    assert layouts, "no *_layout.txt in the corpus"
    for path in layouts:
        case = path.parent.parent
        copybook = next(p for p in case.glob("*.cob") if p.stem.split("_")[0] == path.stem.split("_")[0])
        layout = build_layout(parse_file(copybook))
        expected = []
        for line in path.read_text().splitlines()[2:]:
            if not line.strip():
                continue
            numbers = re.findall(r"\d+", line[39:])
            name = next(t for t in line.split() if not t.isdigit())
            expected.append((name, *map(int, numbers[-3:])))
        got = [(r["path"].split(".")[-1], r["start"], r["end"], r["length"]) for r in layout.rows()]
        assert got == expected, path


@pytest.mark.parametrize(
    ("copybook", "size"),
    [
        ("01_test1_fixed_comp3_odo/test1_copybook.cob", 2202),
        ("01_test1_fixed_comp3_odo/test1a_copybook.cob", 2202 - 2 - 27),
        ("02_test3_segment_filter_trimming/test3_copybook.cob", 45),
        ("04_test5_ebcdic_rdw_multiseg/test5_copybook.cob", 64),
        ("08_test9_codepages/test9_copybook.cob", 45),
        ("15_test21_ascii_nested_odo/test21_copybook.cob", 1 + 2 * (1 + 3)),
    ],
)
def test_record_sizes_match_the_corpus_data(copybook: str, size: int) -> None:
    assert build_layout(parse_file(CORPUS / copybook)).size == size


def test_identifiers_are_cobrix_column_names() -> None:
    assert identifier("CUST-NAME") == "CUST_NAME"
    assert identifier("A:B'C") == "ABC"


def test_redefines_block_spans_the_largest_item() -> None:
    layout = layout_of(
        "01 R.",
        "   05 A PIC X(2).",
        "   05 B REDEFINES A PIC X(5).",
        "   05 C REDEFINES A PIC X(3).",
        "   05 D PIC X.",
    )
    a, b, c, d = layout.records[0].children
    assert (a.offset, b.offset, c.offset, d.offset) == (0, 0, 0, 5)
    assert (a.span, b.span, c.span) == (5, 5, 5)
    assert (a.is_redefined, b.is_redefined, b.redefines, c.redefines) == (True, True, "A", "A")
    assert layout.size == 6
    # the real data size of A is still 2 bytes
    assert isinstance(a, Field) and a.size == 2


def test_redefines_must_follow_the_redefined_item() -> None:
    with pytest.raises(CopybookLayoutError, match="not the item just before it"):
        layout_of("01 R.", "   05 A PIC X.", "   05 B PIC X.", "   05 C REDEFINES Z PIC X.")
    with pytest.raises(CopybookLayoutError, match="first item"):
        layout_of("01 R.", "   05 A REDEFINES B PIC X.")


def test_a_block_of_thousands_of_redefines_is_laid_out_in_linear_time() -> None:
    """Each REDEFINES was checked against, and marked on, every item of its block so far: a
    block of 20,000 REDEFINES of one field took 53 s of CPU here (4x per doubling), now a
    fraction of a second. Also when the items share their name (as FILLER items do). 10,000
    are enough: the quadratic check would take some 13 s of CPU on them (a quarter of 53 s), over
    four times the bound."""
    for redefining in ("B{i} REDEFINES A", "A REDEFINES A"):
        lines = ["01 R.", "   05 A PIC X(10)."] + [f"   05 {redefining.format(i=i)} PIC X({1 + i % 20})." for i in range(10_000)]
        text = "\n".join(f"       {line}" for line in lines) + "\n"
        copybook = parse_copybook(text)
        started = time.process_time()
        layout = build_layout(copybook)
        assert time.process_time() - started < 3.0  # before: 53 s on 20,000
        children = layout.records[0].children
        assert len(children) == 10_001 and layout.size == 20
        assert all(c.offset == 0 and c.span == 20 for c in children)
        assert all(c.is_redefined for c in children[:-1]) and not children[-1].is_redefined


def test_occurs_and_depending_on() -> None:
    layout = layout_of(
        "01 R.",
        "   05 N PIC 9(2).",
        "   05 T OCCURS 1 TO 4 DEPENDING ON N.",
        "      10 X PIC X(3).",
        "   05 AFTER PIC X.",
    )
    n, t, after = layout.records[0].children
    assert isinstance(t, Group) and t.occurs is not None
    assert (t.occurs.min, t.occurs.max, t.occurs.depending_on) == (1, 4, "N")
    assert (t.offset, t.size, t.total_size, after.offset) == (2, 3, 12, 14)
    assert isinstance(n, Field) and n.is_dependee
    rows = {r["name"]: r for r in layout.rows()}
    assert rows["N"]["attributes"] == "D"
    assert rows["T"]["attributes"] == "[]"
    assert layout.has_depending_on
    with pytest.raises(CopybookLayoutError, match="not a field"):
        layout_of("01 R.", "   05 T OCCURS 1 TO 4 DEPENDING ON NOPE PIC X.")
    # a text counter is laid out (occurs_mappings may map its values to counts) ...
    text_counter = layout_of("01 R.", "   05 N PIC X.", "   05 T OCCURS 1 TO 4 DEPENDING ON N PIC X.")
    assert text_counter.records[0].children[0].is_dependee
    # ... but cannot be decoded without a mapping
    from coupler.translators.copybook.decoder import RecordDecoder

    with pytest.raises(CopybookLayoutError, match="not numeric") as err:
        RecordDecoder(text_counter)
    assert "occurs_mappings" in (err.value.hint or "")


def test_synchronized_items_get_slack_bytes() -> None:
    layout = layout_of(
        "01 R.",
        "   05 A PIC X.",
        "   05 B PIC S9(4) COMP SYNC.",
        "   05 C PIC X.",
        "   05 D PIC S9(9) COMP SYNC.",
        "   05 E PIC S9(9) COMP.",
    )
    a, b, c, d, e = layout.records[0].children
    assert [(n.offset, n.slack) for n in (a, b, c, d, e)] == [(0, 0), (2, 1), (4, 0), (8, 3), (12, 0)]
    assert layout.size == 16


def test_occurring_group_with_sync_items_is_padded_per_occurrence() -> None:
    layout = layout_of(
        "01 R.",
        "   05 T OCCURS 2.",
        "      10 X PIC X.",
        "      10 Y PIC S9(9) COMP SYNC.",
    )
    t = layout.records[0].children[0]
    assert isinstance(t, Group)
    x, y = t.children
    assert (x.offset, y.offset, y.slack, t.size, t.total_size) == (0, 4, 3, 8, 16)


def test_several_01_records_share_the_record_area() -> None:
    layout = layout_of(
        "01 HEADER.", "   05 H PIC X(10).", "01 DETAIL.", "   05 D PIC X(30).", "77 FLAG PIC X."
    )
    assert [r.offset for r in layout.records] == [0, 0, 0]
    assert layout.size == 30


def test_rows_are_one_based_inclusive() -> None:
    layout = layout_of("01 R.", "   05 A PIC X(4).", "   05 B PIC S9(5)V99 COMP-3.")
    rows = layout.rows()
    assert rows[0] == {
        "level": 1, "name": "R", "path": "R", "start": 1, "end": 8, "length": 8, "size": 8, "occurs": None,
        "usage": None, "picture": None, "attributes": "",
    }
    assert rows[2] == {
        "level": 5, "name": "B", "path": "R.B", "start": 5, "end": 8, "length": 4, "size": 4, "occurs": None,
        "usage": "COMP-3", "picture": "S9(5)V99", "attributes": "",
    }


def test_find_by_name_or_path() -> None:
    layout = layout_of("01 R.", "   05 G1.", "      10 X PIC X.", "   05 G2.", "      10 X PIC X.")
    assert layout.find("R.G2.X").offset == 1
    with pytest.raises(CopybookLayoutError, match="2 fields"):
        layout.find("X")


def test_a_record_longer_than_2_gib_is_refused_in_one_line_before_any_decoding() -> None:
    """OCCURS 99999999 of 9,999 bytes: a record of ~10^12 bytes. It was an internal error
    (an int32 overflow) after 36 s and 6 GB of memory building the decoder."""
    cb = parse_copybook("       01 R.\n          05 A PIC X(9999) OCCURS 99999999 TIMES.\n", file="huge.cpy")
    with pytest.raises(CopybookLayoutError, match=r"^huge.cpy: record R is 999,899,990,001 bytes long, more than "
                                                  r"the 2,147,483,647 a record can have") as refused:
        build_layout(cb)
    assert "\n" not in str(refused.value)
    assert build_layout(parse_copybook("       01 R.\n          05 A PIC X(9999) OCCURS 9999 TIMES.\n")).size == 9999 * 9999


def test_a_record_of_more_than_4_million_values_is_refused_naming_its_largest_table() -> None:
    """OCCURS 20,000,000 of PIC X is a 20 MB record, but each value costs the decoders about
    50 bytes: the decode took 1 GB. 4,000,000 values (2,000 x 2,000) still decode."""
    text = "       01 R.\n          05 H PIC X(4).\n          05 G OCCURS 2000 TIMES.\n             10 A PIC X OCCURS {} TIMES.\n"
    with pytest.raises(CopybookLayoutError, match=r"^t.cpy:3:11: a record has 20,000,002 values once its OCCURS are expanded, "
                                                  r"more than the 4,000,000 a record can have \(the largest table: G, "
                                                  r"OCCURS 2,000 TIMES\)"):
        build_layout(parse_copybook(text.format(10000) + "          05 T PIC X.\n", file="t.cpy"))
    assert build_layout(parse_copybook(text.format(1999))).size == 4 + 2000 * 1999


def test_an_odo_table_laid_out_at_its_maximum_is_bounded_by_the_vectorised_decoder() -> None:
    """A fixed-length file lays OCCURS DEPENDING ON out at its maximum (as Cobrix does): the
    vectorised decoder refuses a maximum beyond the bounds in one line (an int32 overflow
    after 25 s and 6 GB before); the layout itself, whose counts come from the data, is built."""
    from coupler.translators.copybook.batch import BatchDecoder

    text = "       01 R.\n          05 N PIC 9(9).\n          05 A PIC X(9999) OCCURS 0 TO 99999999 DEPENDING ON N.\n"
    layout = build_layout(parse_copybook(text, file="odo.cpy"))
    with pytest.raises(CopybookLayoutError, match=r"^odo.cpy: record R is 999,899,990,010 bytes long"):
        BatchDecoder(layout, {"encoding": "ascii"})
