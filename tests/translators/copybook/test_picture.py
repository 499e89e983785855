"""PICTURE/USAGE -> size, kind and the exact codecs of every storage form."""

from __future__ import annotations

from decimal import Decimal

import pytest

from coupler.translators.copybook.picture import (
    DecodeContext,
    FieldDecodeError,
    FieldEncodeError,
    PictureError,
    field_type,
)

EBCDIC = DecodeContext()
ASCII = DecodeContext(encoding="ascii", ascii_charset="latin-1")
IEEE = DecodeContext(floating_point_format="IEEE754")


@pytest.mark.parametrize(
    ("picture", "usage", "size", "kind", "digits", "scale"),
    [
        ("X(10)", "DISPLAY", 10, "string", 0, 0),
        ("A(3)", "DISPLAY", 3, "string", 0, 0),
        ("9(5)", "DISPLAY", 5, "integer", 5, 0),
        ("S9(7)V99", "DISPLAY", 9, "decimal", 9, 2),
        ("S9(3).99", "DISPLAY", 6, "decimal", 5, 2),
        ("S9(4)", "COMP", 2, "integer", 4, 0),
        ("9(5)", "BINARY", 4, "integer", 5, 0),
        ("S9(18)", "COMP-4", 8, "integer", 18, 0),
        ("9(19)", "COMP", 9, "integer", 19, 0),
        ("9(37)", "COMP-5", 16, "integer", 37, 0),
        ("S9(9)V99", "COMP-3", 6, "decimal", 11, 2),
        ("9(4)", "PACKED-DECIMAL", 3, "integer", 4, 0),
        ("9(4)", "COMP-6", 2, "integer", 4, 0),
        ("PPP9(5)", "COMP-3", 3, "decimal", 5, 8),
        ("S9(5)PPP", "DISPLAY", 5, "integer", 5, -3),
        ("SVPP9", "DISPLAY", 1, "decimal", 1, 3),
        (None, "COMP-1", 4, "float", 0, 0),
        (None, "COMP-2", 8, "float", 0, 0),
        ("N(4)", "NATIONAL", 8, "string", 0, 0),
        ("G(3)", "DISPLAY-1", 6, "bytes", 0, 0),
        ("Z(6)VZZ-", "DISPLAY", 9, "decimal", 8, 2),
        ("$$,$$9.99CR", "DISPLAY", 11, "decimal", 6, 2),
        ("99/99/99", "DISPLAY", 8, "string", 0, 0),
        ("x(2)bx", "display", 4, "string", 0, 0),
    ],
)
def test_size_kind_and_scale(picture, usage, size, kind, digits, scale):
    ft = field_type(picture, usage)
    assert (ft.size, ft.kind, ft.digits, ft.scale) == (size, kind, digits, scale)


def test_alignment_of_synchronized_items():
    assert field_type("S9(4)", "COMP").alignment == 2
    assert field_type("S9(9)", "COMP").alignment == 4
    assert field_type("S9(18)", "COMP-5").alignment == 8
    assert field_type(None, "COMP-1").alignment == 4
    assert field_type(None, "COMP-2").alignment == 8
    assert field_type("S9(5)", "COMP-3").alignment == 1
    assert field_type("X(3)").alignment == 1


def test_sign_separate_adds_a_byte_and_explicit_point_too():
    ft = field_type("S9(9)", sign_position="leading", sign_separate=True)
    assert ft.size == 10
    assert ft.encode(-305039325) == b"\x60" + bytes.fromhex("f3f0f5f0f3f9f3f2f5")
    assert ft.decode(ft.encode(-305039325)) == -305039325
    comma = field_type("9(3),99", decimal_point_is_comma=True)
    assert comma.size == 6 and comma.scale == 2
    assert comma.encode(Decimal("12.5"), ASCII) == b"012,50"


@pytest.mark.parametrize(
    ("picture", "usage", "bad"),
    [
        ("9(5)Q", "DISPLAY", "invalid character"),
        ("9(0)", "DISPLAY", "repeat count"),
        ("X(5)", "COMP-3", "cannot have USAGE"),
        ("9V9V9", "DISPLAY", "more than one decimal point"),
        ("99S", "DISPLAY", "S must be the first"),
        ("9P9", "DISPLAY", "P must be at the left or right"),
        ("S9(3).99", "COMP-3", "explicit decimal point"),
        ("9(5)", "COMP-9", "unknown USAGE"),
        (None, "DISPLAY", "needs a PICTURE"),
        ("SZZ9", "DISPLAY", "not allowed in numeric-edited"),
    ],
)
def test_bad_pictures_raise_picture_error_with_place(picture, usage, bad):
    with pytest.raises(PictureError, match=bad) as err:
        field_type(picture, usage, where="book.cpy:12:20")
    assert "book.cpy:12:20" in str(err.value)


def test_zoned_overpunch_ebcdic_and_ascii():
    ft = field_type("S9(3)V99")
    assert ft.encode(Decimal("-305.03")) == bytes.fromhex("f3f0f5f0d3")
    assert ft.decode(bytes.fromhex("f3f0f5f0d3")) == Decimal("-305.03")
    assert ft.decode(bytes.fromhex("f3f0f5f0c3")) == Decimal("305.03")
    assert ft.decode(bytes.fromhex("f3f0f5f0f3")) == Decimal("305.03")
    assert ft.encode(Decimal("-305.03"), ASCII) == b"3050L"
    assert ft.decode(b"3050L", ASCII) == Decimal("-305.03")
    assert ft.decode(b"3050s", ASCII) == Decimal("-305.03")  # 0x70-0x79 negative zone
    lead = field_type("SV9(7)", sign_position="leading")
    assert lead.decode(bytes.fromhex("d3f0f5f0f3f9f3")) == Decimal("-0.3050393")
    assert lead.encode(Decimal("-0.3050393")) == bytes.fromhex("d3f0f5f0f3f9f3")


def test_strict_sign_overpunching_rejects_a_punch_away_from_the_sign():
    ft = field_type("S9(3)")
    raw = bytes.fromhex("d1f2f3")  # negative punch on the first digit of a trailing-sign field
    with pytest.raises(FieldDecodeError, match="sign position"):
        ft.decode(raw)
    assert ft.decode(raw, DecodeContext(strict_sign_overpunching=False)) == -123
    unsigned = field_type("9(3)")
    with pytest.raises(FieldDecodeError):
        unsigned.decode(bytes.fromhex("f1f2d3"))


def test_malformed_numbers_raise_with_a_reason():
    cases = [
        (field_type("9(3)"), bytes.fromhex("f1c1f3"), "sign overpunch"),
        (field_type("9(3)"), b"\xf1\x4e\xf3", "invalid character"),
        (field_type("S9(3)", "COMP-3"), bytes.fromhex("1a3c"), "digit nibble"),
        (field_type("S9(3)", "COMP-3"), bytes.fromhex("1234"), "sign nibble"),
        (field_type("9(3)", "COMP-3"), bytes.fromhex("123d"), "negative value in an unsigned"),
        (field_type("9(4)", "COMP"), (10000).to_bytes(2, "big"), "more than the 4 digits"),
        (field_type("9(8)", "COMP"), bytes.fromhex("f9f2f7f1"), "more than the 8 digits"),
        (
            field_type(
                "9(2)V9",
            ),
            b"\xf1\xf2",
            "needs 3 bytes",
        ),
    ]
    std = DecodeContext(trunc="std")  # range checks of COMP values against the PICTURE
    for ft, raw, reason in cases:
        with pytest.raises(FieldDecodeError, match=reason) as err:
            ft.decode(raw, std)
        assert err.value.raw == raw


def test_comp_values_beyond_the_picture_are_kept_as_cobrix_does():
    """IBM's TRUNC(BIN) and Cobrix keep the whole binary value; trunc=std restores the check."""
    ft = field_type("9(8)", "COMP")
    assert ft.decode(b"9271") == 959592241  # Cobrix test4: ASCII digits read as a binary number
    assert field_type("9(4)", "COMP").decode((10000).to_bytes(2, "big")) == 10000
    with pytest.raises(FieldDecodeError, match="does not fit"):  # beyond the int the schema holds
        ft.decode(bytes.fromhex("f9f2f7f1"))
    with pytest.raises(FieldDecodeError, match="more than the 8 digits"):
        ft.decode(b"9271", DecodeContext(trunc="std"))
    with pytest.raises(FieldDecodeError):  # decimals stay within their precision
        field_type("9(3)V9", "COMP").decode((10000).to_bytes(2, "big"))


def test_comp5_uses_the_full_binary_width():
    ft = field_type("9(4)", "COMP-5")
    assert ft.decode(b"\xff\xff") == 65535
    assert ft.encode(65535) == b"\xff\xff"
    with pytest.raises(FieldEncodeError):
        ft.encode(65536)
    assert field_type("S9(4)", "COMP-5").decode(b"\xff\xfe") == -2


def test_packed_sign_nibbles():
    ft = field_type("S9(5)", "COMP-3")
    assert ft.decode(bytes.fromhex("12345c")) == 12345
    assert ft.decode(bytes.fromhex("12345d")) == -12345
    assert ft.decode(bytes.fromhex("12345f")) == 12345
    assert ft.encode(-12345) == bytes.fromhex("12345d")
    assert field_type("9(5)", "COMP-3").encode(12345) == bytes.fromhex("12345f")
    assert field_type("9(4)", "COMP-6").encode(1234) == bytes.fromhex("1234")


def test_p_scaling_values():
    assert field_type("PPP9(5)", "COMP-3").decode(bytes.fromhex("30503f")) == Decimal("0.00030503")
    assert field_type("S9(5)PPP", "COMP-3").decode(bytes.fromhex("30503d")) == -30503000
    assert field_type("SPP99999", "COMP-3").decode(bytes.fromhex("30503d")) == Decimal("-0.0030503")
    ft = field_type("S9(5)PPP")
    assert ft.encode(-30503000) == bytes.fromhex("f3f0f5f0d3")
    with pytest.raises(FieldEncodeError, match="more decimals"):
        ft.encode(30503001)


@pytest.mark.parametrize(
    ("picture", "value", "text"),
    [
        ("Z(6).99-", Decimal("-1234.5"), "  1234.50-"),
        ("Z(6).99-", Decimal("0.05"), "      .05 "),
        ("Z(4)", 0, "    "),
        ("Z(4)", 12, "  12"),
        ("ZZZ9", 0, "   0"),
        ("**,**9.99", Decimal("12.3"), "****12.30"),
        ("**,**9.99", Decimal("12345.3"), "12,345.30"[:0] + "12,345.30"),
        ("$$,$$9.99CR", Decimal("-5"), "     $5.00CR"[1:]),
        ("$$,$$9.99CR", Decimal("1234"), "$1,234.00  "),
        ("++++9", -12, "  -12"),
        ("----9", 12, "   12"),
        ("+9(3)", 7, "+007"),
        ("9(3)DB", -7, "007DB"),
        ("ZZ9B990", 12345, "123 450"),
        ("ZZ9B990", 5, "  0 050"),
        ("Z(6)VZZ-", 0, "         "),
    ],
)
def test_numeric_edited_encode_and_decode(picture, value, text):
    ft = field_type(picture)
    assert ft.size == len(text)
    raw = ft.encode(value, ASCII)
    assert raw.decode("latin-1") == text
    assert ft.decode(raw, ASCII) == value
    assert ft.decode(ft.encode(value, EBCDIC), EBCDIC) == value


def test_edited_sign_positions_accept_plus_like_cobrix_data():
    ft = field_type("Z(8)-")
    assert ft.decode(b"78449737+", ASCII) == 78449737
    assert ft.decode(b"30503932-", ASCII) == -30503932


def test_blank_when_zero_and_justified_right():
    ft = field_type("9(3)V99", blank_when_zero=True)
    assert ft.encode(0) == b"\x40" * 5
    assert ft.decode(b"\x40" * 5) == Decimal("0.00")
    jr = field_type("X(5)", justified_right=True)
    assert jr.encode("AB") == b"\x40\x40\x40\xc1\xc2"
    assert jr.decode(jr.encode("AB")) == "AB"


def test_blank_display_numbers_follow_cobrix():
    assert field_type("9(4)").decode(b"\x40" * 4) is None
    assert field_type("9(2)V99").decode(b"\x40" * 4) == Decimal("0.00")
    assert field_type("9(4)").decode(b"\x40\xf1\xf2\x40") == 12


def test_improved_null_detection_only_for_display_items():
    assert field_type("X(3)").decode(b"\x00\x00\x00") is None
    assert field_type("9(3)").decode(b"\x00\x00\x00") is None
    off = DecodeContext(improved_null_detection=False)
    assert (
        field_type(
            "X(3)",
        ).decode(b"\x00\x00\x00", off)
        == ""
    )
    assert field_type("9(4)", "COMP").decode(b"\x00\x00") == 0
    assert field_type("X(3)").encode(None) == b"\x00\x00\x00"


def test_string_trimming_policies_and_code_page():
    raw = bytes.fromhex("4040c1c2404040")
    for policy, want in [("both", "AB"), ("left", "AB   "), ("right", "  AB"), ("none", "  AB   ")]:
        assert field_type("X(7)").decode(raw, DecodeContext(string_trimming_policy=policy)) == want
    ft = field_type("X(4)")
    cp1141 = DecodeContext(ebcdic_code_page="cp1141")
    assert ft.decode(bytes.fromhex("c39fa0d9"), cp1141) == "C€µR"
    assert ft.encode("C€µR", cp1141) == bytes.fromhex("c39fa0d9")
    with pytest.raises(FieldEncodeError, match="not in code page"):
        ft.encode("€", DecodeContext(ebcdic_code_page="cp037"))
    with pytest.raises(FieldEncodeError, match="needs 5 bytes"):
        ft.encode("ABCDE")


def test_ascii_strings_drop_control_bytes_unless_keep_all():
    ft = field_type("X(5)")
    ctx = DecodeContext(encoding="ascii")
    assert ft.decode(b"A\x01B  ", ctx) == "AB"
    assert (
        ft.decode(b"A\x01B  ", DecodeContext(encoding="ascii", string_trimming_policy="keep_all"))
        == "A\x01B  "
    )


def test_national_is_utf16be():
    ft = field_type("N(3)")
    assert ft.encode("Añ") == "Añ ".encode("utf-16-be")
    assert ft.decode("Añ ".encode("utf-16-be")) == "Añ"
    assert field_type("9(3)", "NATIONAL").decode("123".encode("utf-16-be")) == 123


def test_ibm_hexadecimal_floats():
    f = field_type(None, "COMP-1")
    d = field_type(None, "COMP-2")
    assert f.decode(bytes.fromhex("41100000")) == 1.0
    assert f.decode(bytes.fromhex("c276a000")) == -118.625
    assert f.encode(-118.625) == bytes.fromhex("c276a000")
    assert d.encode(0.1) == bytes.fromhex("401999999999999a")
    assert d.decode(bytes.fromhex("401999999999999a")) == 0.1
    assert f.encode(0.0) == bytes(4)
    with pytest.raises(FieldEncodeError, match="range"):
        f.encode(1e80)


def test_ieee_floats_by_option():
    f = field_type(None, "COMP-1")
    assert f.decode(bytes.fromhex("3f800000"), IEEE) == 1.0
    assert f.encode(-2.5, IEEE) == bytes.fromhex("c0200000")
    le = DecodeContext(floating_point_format="IEEE754_little_endian")
    assert field_type(None, "COMP-2").encode(1.0, le) == bytes.fromhex("000000000000f03f")


def test_encode_rejects_values_that_do_not_fit():
    with pytest.raises(FieldEncodeError, match="more digits"):
        field_type("9(3)").encode(1000)
    with pytest.raises(FieldEncodeError, match="negative"):
        field_type("9(3)", "COMP-3").encode(-1)
    with pytest.raises(FieldEncodeError, match="more decimals"):
        field_type("9(3)V9").encode(Decimal("1.25"))
    with pytest.raises(FieldEncodeError, match="not a number"):
        field_type("9(3)").encode("abc")
    with pytest.raises(FieldEncodeError, match="holds text"):
        field_type("X(3)").encode(12)


@pytest.mark.parametrize("picture,usage", [("S9(5)V99", "COMP-3"), ("9(5)", None), ("S9(9)", "COMP"), ("9(3)V9", None)])
@pytest.mark.parametrize("value", [Decimal("1e999999999"), "1e999999999", Decimal("-1E+400000")])
def test_a_number_with_a_huge_exponent_is_refused_at_once(picture: str, usage: str | None, value: object) -> None:
    """Found while fuzzing the mapping translator (h92): a JSON number 1e999999999 given to a
    copybook field raised decimal.Overflow (an internal error, not a CouplerError), and
    -1E+400000 took 5 s of CPU to be made an integer before its digits were counted."""
    import time

    from coupler.canonical.errors import CouplerError

    start = time.process_time()
    with pytest.raises(CouplerError, match=r"^a number of \d+ digits does not fit picture"):
        field_type(picture, usage).encode(value)
    assert time.process_time() - start < 1.0
