"""Code pages against Cobrix's decoded text (corpus case 08_test9_codepages)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coupler.translators.copybook.codepages import (
    EBCDIC_CODE_PAGES,
    CodePageError,
    ascii_codec,
    code_page,
)

T9 = Path(__file__).parent / "data" / "cobrix" / "08_test9_codepages"
JAVA_SPACE = "".join(chr(i) for i in range(33))
FIELDS = {
    "CURRENCY": (0, 3),
    "SIGNATURE": (3, 11),
    "COMPANY_NAME_NP": (11, 26),
    "COMPANY_ID": (26, 36),
}


@pytest.mark.parametrize(
    ("page", "expected", "trim"),
    [
        ("cp037", "test9_cp037.txt", True),
        ("cp037_extended", "test9_cp037_ext.txt", False),
        ("cp273", "test9_cp273.txt", False),
        ("cp500", "test9_cp500.txt", False),
        ("cp1140", "test9_cp1140.txt", False),
        ("cp1141", "test9_cp1141.txt", False),
        ("cp1148", "test9_cp1148.txt", False),
    ],
)
def test_text_decodes_exactly_as_cobrix(page, expected, trim):
    data = (T9 / "test9_data" / "TRAN.APR14.NPT.DATA.dat").read_bytes()
    rows = (T9 / "test9_expected" / expected).read_text(encoding="utf-8").rstrip("\n").split("\n")
    cp = code_page(page)
    for i, line in enumerate(rows):
        want = json.loads(line)
        record = data[i * 45 : (i + 1) * 45]
        for name, (a, b) in FIELDS.items():
            text = cp.decode(record[a:b])
            assert (text.strip(JAVA_SPACE) if trim else text) == want[name], (i, name)


def test_common_page_is_the_invariant_subset():
    common, cp037 = code_page("common"), code_page("cp037_extended")
    keep = {0x0D, 0x25, 0xB0, 0xBA, 0xBB, 0xE0, 0x60, 0x61}
    for lo, hi in [(0x4B, 0x50), (0x5A, 0x5E), (0x6A, 0x6F), (0x79, 0x7F), (0x81, 0x89),
                   (0x91, 0x99), (0xA1, 0xA9), (0xC0, 0xCA), (0xD0, 0xD9), (0xE2, 0xE9), (0xF0, 0xF9)]:  # fmt: skip
        keep.update(range(lo, hi + 1))
    for b in range(256):
        ch = common.decode(bytes([b]))
        if b not in keep:
            assert ch == " ", hex(b)
        elif b == 0xCA:
            assert ch == "-"
        else:
            assert ch == cp037.decode(bytes([b])), hex(b)
    assert common.decode(b"\x0d\x25") == "\n\r"
    ext = code_page("common_extended")
    assert ext.decode(b"\x00\x05\x3f\xc1") == "\x00\x09 A"


@pytest.mark.parametrize("page", EBCDIC_CODE_PAGES)
def test_every_page_round_trips_its_characters(page):
    cp = code_page(page)
    assert len(cp.table) == 256
    text = "".join(ch for ch in dict.fromkeys(cp.table) if ch >= " " and ch != "\x85")
    assert cp.decode(cp.encode(text)) == text
    assert cp.encode(" ") == b"\x40"
    assert cp.encode("0123456789") == bytes(range(0xF0, 0xFA))


def test_national_characters_of_some_pages():
    assert code_page("cp1140").decode(b"\x9f") == "€"
    assert code_page("cp273").decode(b"\xa1") == "ß"
    assert code_page("cp1047").decode(b"\xad") == "["
    assert code_page("cp037").decode(b"\x5f\xba") == "¬["
    with pytest.raises(UnicodeEncodeError):
        code_page("cp037").encode("€")


def test_unknown_names_are_errors_with_the_list():
    with pytest.raises(CodePageError, match="unknown EBCDIC code page 'cp9999'") as err:
        code_page("cp9999")
    assert "cp1047" in str(err.value)
    with pytest.raises(CodePageError, match="ascii_charset"):
        ascii_codec("no-such-charset")
    assert ascii_codec(None).decode("é".encode()) == "é"
    assert ascii_codec("latin-1").encode("é") == b"\xe9"
