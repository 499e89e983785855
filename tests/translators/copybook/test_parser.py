"""Copybook grammar: source formats, clauses, COPY, errors, and robustness on random text."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coupler.canonical.errors import CouplerError
from coupler.translators.copybook.errors import CopybookSyntaxError
from coupler.translators.copybook.parser import Item, parse_copybook


def fixed(*lines: str) -> str:
    """Lines of area A/B text placed from column 8, with a sequence number in 1-6."""
    return "\n".join(f"{n:06d} {line}" for n, line in enumerate(lines, start=1)) + "\n"


def names(item: Item) -> list[str]:
    return [c.name for c in item.children]


def test_fixed_format_ignores_sequence_and_identification_areas() -> None:
    text = (
        "000100 01  REC.                                                         SEQ00001\n"
        "000200     05  A   PIC X(4).                                            IDENTXYZ\n"
        "000300*    05  COMMENTED PIC X.\n"
        "000400/    05  PAGE-EJECT PIC X.\n"
        "000500D    05  DEBUG-ONLY PIC X.\n"
        "000600     05  B   PIC 9(3).                                            99999999\n"
    )
    cb = parse_copybook(text)
    assert names(cb.records[0]) == ["A", "B"]
    assert cb.records[0].children[0].picture == "X(4)"
    with_debug = parse_copybook(text, debug_lines=True)
    assert names(with_debug.records[0]) == ["A", "DEBUG-ONLY", "B"]


def test_free_format_with_inline_comments() -> None:
    text = "01 rec. *> the record\n  05 a pic x(2).\n* a comment line\n  05 b pic s9(3)v99 comp-3.\n"
    cb = parse_copybook(text, source_format="free")
    rec = cb.records[0]
    assert names(rec) == ["a", "b"]
    assert rec.children[1].picture == "S9(3)V99"
    assert rec.children[1].usage == "COMP-3"


def test_lower_case_and_optional_periods() -> None:
    cb = parse_copybook(fixed("01 rec", "   05 a pic x(3)", "   05 b pic 9(2) comp", "   05 c pic x."))
    rec = cb.records[0]
    assert names(rec) == ["a", "b", "c"]
    assert rec.children[1].usage == "COMP"


def test_tabs_are_expanded_and_never_truncate_a_clause() -> None:
    ok = "       01 R.\n\t\t\t         05 A PIC X(3).\n"
    assert names(parse_copybook(ok).records[0]) == ["A"]
    too_wide = "       01 R.\n\t\t\t\t\t\t\t\t05 ABCDEFGHIJ PIC X(3).\n"
    with pytest.raises(CopybookSyntaxError) as exc:
        parse_copybook(too_wide)
    assert ":2:73" in str(exc.value)
    assert "column 72" in str(exc.value)
    # the same text in free format is fine
    assert names(parse_copybook(too_wide, source_format="free").records[0]) == ["ABCDEFGHIJ"]


def test_continuation_of_a_literal_and_of_a_word() -> None:
    first = "           05 A PIC X(80) VALUE 'ABCDEFGHIJKLMNOPQRSTUVWXYZ01234567"
    text = "       01 R.\n" + first + "\n      -    '89'.\n           05 LONG-NAME-\n      -    PART PIC X.\n"
    rec = parse_copybook(text).records[0]
    a = rec.children[0]
    # the literal runs to column 72, then continues after the quote of the next line
    to_col_72 = 72 - (first.index("'") + 1)
    assert a.value[0].text == "ABCDEFGHIJKLMNOPQRSTUVWXYZ01234567".ljust(to_col_72) + "89"
    assert rec.children[1].name == "LONG-NAME-PART"


def test_levels_66_77_88_and_several_records() -> None:
    cb = parse_copybook(fixed(
        "01 HEADER.",
        "   05 KIND PIC X.",
        "      88 IS-HEADER VALUE 'H'.",
        "      88 IS-OTHER VALUES 'A' THRU 'F' 'X'.",
        "   05 COUNTER PIC 9(4).",
        "      88 SMALL VALUE 0 THRU 10.",
        "66 ALIAS RENAMES KIND THRU COUNTER.",
        "01 DETAIL.",
        "   05 AMOUNT PIC S9(7)V99.",
        "77 STANDALONE PIC X(2).",
    ))
    assert [r.name for r in cb.records] == ["HEADER", "DETAIL", "STANDALONE"]
    kind = cb.records[0].children[0]
    assert [c.name for c in kind.conditions] == ["IS-HEADER", "IS-OTHER"]
    other = kind.conditions[1]
    assert other.describe() == "88 IS-OTHER VALUE 'A' THRU 'F' 'X'"
    small = cb.records[0].children[1].conditions[0]
    assert small.describe() == "88 SMALL VALUE 0 THRU 10"
    assert cb.renames[0].name == "ALIAS" and cb.renames[0].thru == "COUNTER"
    assert cb.records[2].level == 77 and cb.records[2].picture == "X(2)"


def test_occurs_redefines_keys_and_indexes() -> None:
    cb = parse_copybook(fixed(
        "01 R.",
        "   05 N PIC 9(2).",
        "   05 T OCCURS 1 TO 20 TIMES DEPENDING ON N",
        "        ASCENDING KEY IS K1 K2 INDEXED BY IX1 IX2.",
        "      10 K1 PIC X.",
        "      10 K2 PIC X.",
        "   05 FIX OCCURS 3 TIMES PIC X(2).",
        "   05 FIX-ALL REDEFINES FIX PIC X(6).",
    ))
    t = cb.records[0].children[1]
    assert (t.occurs_min, t.occurs_max, t.depending_on) == (1, 20, "N")
    assert t.occurs_keys == [("ASCENDING", "K1"), ("ASCENDING", "K2")]
    assert t.indexed_by == ["IX1", "IX2"]
    fix, fix_all = cb.records[0].children[2:]
    assert (fix.occurs_min, fix.occurs_max) == (3, 3)
    assert fix_all.redefines == "FIX"


def test_group_usage_and_sign_are_inherited() -> None:
    rec = parse_copybook(fixed(
        "01 R.",
        "   05 G USAGE COMP-3 SIGN IS TRAILING SEPARATE.",
        "      10 A PIC S9(5).",
        "      10 B PIC S9(3) COMP.",
        "   05 C PIC 9.",
    )).records[0]
    a, b = rec.children[0].children
    assert (a.usage, a.sign_position, a.sign_separate) == ("COMP-3", "trailing", True)
    assert b.usage == "COMP"
    assert rec.children[1].usage is None


def test_clause_values_are_kept_raw() -> None:
    rec = parse_copybook(fixed(
        "01 R.",
        "   05 A PIC S9(4) COMP SYNC.",
        "   05 B PIC X(5) JUST RIGHT.",
        "   05 C PIC 9(5) BLANK WHEN ZERO VALUE ZEROS.",
        "   05 D PIC S9(3)V9 SIGN LEADING SEPARATE CHARACTER VALUE -12.5.",
        "   05 E PIC X(2) VALUE X'C1C2'.",
        "   05 F COMP-1.",
        "   05 PIC X(3).",
        "   05 FILLER PIC X.",
    )).records[0]
    a, b, c, d, e, f, anon, filler = rec.children
    assert a.synchronized and a.usage == "COMP" and a.usage_written == "COMP"
    assert b.justified_right
    assert c.blank_when_zero and c.value[0].kind == "figurative"
    assert (d.sign_position, d.sign_separate, d.value[0].python_value()) == ("leading", True, "-12.5")
    assert e.value[0].render() == "X'C1C2'"
    assert f.picture is None and f.usage == "COMP-1"
    assert anon.is_filler and filler.is_filler


def test_copy_with_replacing(tmp_path: Path) -> None:
    (tmp_path / "CUSTREC.cpy").write_text(
        "       05 :PFX:-ID      PIC 9(6).\n"
        "       05 :PFX:-NAME    PIC X(NAMELEN).\n"
    )
    main = tmp_path / "main.cob"
    main.write_text(
        "       01 CUSTOMER.\n"
        "           COPY CUSTREC REPLACING ==:PFX:== BY ==CUST==\n"
        "                                  ==NAMELEN== BY ==20==.\n"
        "           05 TRAILER PIC X.\n"
    )
    from coupler.translators.copybook.parser import parse_file

    rec = parse_file(main).records[0]
    assert names(rec) == ["CUST-ID", "CUST-NAME", "TRAILER"]
    assert rec.children[1].picture == "X(20)"
    assert rec.children[0].file.endswith("CUSTREC.cpy")


def test_copy_member_searched_on_the_search_path(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "part.cob").write_text("       05 X PIC X.\n")
    rec = parse_copybook(fixed("01 R.", "COPY PART."), copy_paths=[lib]).records[0]
    assert names(rec) == ["X"]
    with pytest.raises(CopybookSyntaxError) as exc:
        parse_copybook(fixed("01 R.", "COPY MISSING."), file="main.cob")
    assert "main.cob:2:" in str(exc.value) and "MISSING" in str(exc.value)


def test_copy_cycle_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.cpy").write_text("       COPY b.\n")
    (tmp_path / "b.cpy").write_text("       COPY a.\n")
    with pytest.raises(CopybookSyntaxError, match="include each other"):
        parse_copybook(fixed("01 R.", "COPY a."), copy_paths=[tmp_path])


@pytest.mark.parametrize(
    ("text", "where", "token", "expected"),
    [
        (fixed("01 R.", "   05 A PIK X."), "<copybook>:2:16", "PIK", "a clause"),
        (fixed("01 R.", "   05 A PIC X USAGE COMPX."), "<copybook>:2:28", "COMPX", "DISPLAY, COMP"),
        (fixed("01 R.", "   05 A OCCURS MANY PIC X."), "<copybook>:2:23", "MANY", "unsigned integer"),
        (fixed("01 R.", "   05 A PIC X VALUE 'OPEN."), "<copybook>:2:28", "'OPEN.", "closing '"),
        (fixed("R."), "<copybook>:1:8", "R", "a level number"),
        (fixed("01 R.", "   05 A PIC X.", "      10 B PIC X."), "<copybook>:3:14", "10", "not greater than 5"),
        (fixed("01 R.", "   05 A."), "<copybook>:2:11", "A", "a PICTURE clause"),
        (fixed("01 R.", "   05 A PIC X OCCURS 5 TO 2."), "<copybook>:2:34", "2", ">= 5"),
        (fixed("01 R.", "   05 A PIC X REDEFINES"), "<copybook>:2:", "", "data name"),
    ],
)
def test_syntax_errors_name_place_token_and_expectation(
    text: str, where: str, token: str, expected: str
) -> None:
    with pytest.raises(CopybookSyntaxError) as exc:
        parse_copybook(text)
    message = str(exc.value)
    assert message.startswith(where), message
    assert f"at {token!r}" in message or (token == "" and "end of input" in message), message
    assert expected in message, message


_valid = fixed(
    "01 R.",
    "   05 A PIC S9(4) COMP.",
    "   05 B OCCURS 1 TO 5 DEPENDING ON A.",
    "      10 C PIC X(3) VALUE 'AB'.",
    "         88 C-OK VALUE 'OK' 'KO'.",
    "   05 D REDEFINES B PIC X(15).",
)

_copybook_alphabet = st.sampled_from(
    list("0123456789ABCPSVX()'\".,-=*/ \n\t:") + ["PIC ", "OCCURS ", "REDEFINES ", "VALUE ", "COPY ",
    "DEPENDING ON ", " 01 ", " 05 ", " 88 ", " 66 ", "==", "COMP-3", "THRU ", "\x1a", "\u00e9"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_copybook_alphabet, max_size=80).map("".join), st.sampled_from(["fixed", "free"]))
def test_random_text_raises_only_coupler_errors(text: str, source_format: str) -> None:
    try:
        parse_copybook(text, source_format=source_format)  # type: ignore[arg-type]
    except CouplerError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=len(_valid) - 1), st.integers(0, 30), st.text(max_size=6))
def test_mutated_copybooks_raise_only_coupler_errors(at: int, cut: int, insert: str) -> None:
    text = _valid[:at] + insert + _valid[at + cut:]
    try:
        parse_copybook(text)
    except CouplerError:
        pass


def test_listing_and_option_statements_describe_no_data() -> None:
    """*CBL and *CONTROL from column 8 on, CBL and PROCESS from column 1 on (GnuCOBOL 3.1
    stops on the first two and calls CBL unsupported; IBM reads them as compiler options):
    the layout is the one without them."""
    plain = fixed("01 REC.", "   05 A PIC X(4).", "   05 B PIC 9(3) COMP-3.")
    with_statements = (
        "CBL XREF,MAP\n"
        "       PROCESS APOST\n"
        + fixed("*CONTROL NOSOURCE", "01 REC.", "   SKIP2", "   05 A PIC X(4).", "*CBL LIST",
                "   EJECT.", "TITLE 'LAYOUT'", "   05 B PIC 9(3) COMP-3.")
    )
    free = "process xref\n*cbl list\n01 rec.\n  eject\n  05 a pic x(4).\n  title \"t\".\n  05 b pic 9(3) comp-3.\n"
    for text, source_format in ((with_statements, "fixed"), (free, "free")):
        cb = parse_copybook(text, source_format=source_format)  # type: ignore[arg-type]
        assert [n.upper() for n in names(cb.records[0])] == names(parse_copybook(plain).records[0]) == ["A", "B"]


def test_a_word_that_only_starts_like_a_statement_is_data() -> None:
    cb = parse_copybook(fixed("01 REC.", "   05 EJECT-FLAG PIC X.", "   05 PROCESS-CODE", "      PIC X(2)."))
    assert names(cb.records[0]) == ["EJECT-FLAG", "PROCESS-CODE"]


def test_debugging_lines_in_free_format() -> None:
    text = "01 rec.\n>>D 05 trace pic x(8).\n  05 a pic x.\n"
    assert names(parse_copybook(text, source_format="free").records[0]) == ["a"]
    assert names(parse_copybook(text, source_format="free", debug_lines=True).records[0]) == ["trace", "a"]


def test_replace_applies_until_replace_off_and_after_copy(tmp_path: Path) -> None:
    (tmp_path / "MEMBER.cpy").write_text(fixed("05 :X:-CODE PIC X(2)."))
    text = fixed("REPLACE ==:X:== BY ==ORD== LEADING ==OLD-== BY ==NEW-==.", "01 REC.", "   COPY MEMBER.",
                 "   05 OLD-AMT PIC 9(5).", "REPLACE OFF.", "01 OLD-REC.", "   05 OLD-X PIC X.")
    cb = parse_copybook(text, file=str(tmp_path / "MAIN.cpy"))
    assert names(cb.records[0]) == ["ORD-CODE", "NEW-AMT"]
    assert cb.records[1].name == "OLD-REC" and names(cb.records[1]) == ["OLD-X"]


@pytest.mark.parametrize(("text", "expected"), [
    ("REPLACE A BY B.", "pseudo-text"),
    ("REPLACE ==A== B.", "BY"),
    ("REPLACE ==A== BY ==B==", "'.'"),
    ("REPLACE .", "OFF"),
])
def test_bad_replace_statements_are_located_errors(text: str, expected: str) -> None:
    with pytest.raises(CopybookSyntaxError) as info:
        parse_copybook(fixed(text, "01 REC.", "   05 A PIC X."))
    assert expected in str(info.value) and str(info.value).startswith("<copybook>:")


def test_the_parser_reads_usage_words_from_the_one_usage_table() -> None:
    """One table of USAGE words (picture.USAGES): every word in it parses, as the clause and
    after USAGE IS, to the canonical usage the codecs know; a word outside it is refused."""
    from coupler.translators.copybook import parser, picture

    assert parser.USAGES is picture.USAGES
    for word, canonical in picture.USAGES.items():
        pic = "" if canonical in picture.NO_PICTURE_USAGES else " PIC 9(4)" if canonical != "NATIONAL" else " PIC N(2)"
        if canonical == "DISPLAY-1":
            pic = " PIC G(2)"
        for clause in (word, f"USAGE IS {word}"):
            item = parse_copybook(fixed("01 REC.", f"   05 A{pic} {clause}.")).records[0].children[0]
            assert item.usage == canonical, (word, clause)
    with pytest.raises(CopybookSyntaxError):
        parse_copybook(fixed("01 REC.", "   05 A PIC 9(4) USAGE COMP-9."))
