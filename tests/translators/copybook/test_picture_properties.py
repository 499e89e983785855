"""Property tests: decode(encode(v)) == v for every usage and picture form, and
encode(decode(raw)) == raw for canonical raw forms; random bytes never crash a codec."""

from __future__ import annotations

import math
from decimal import Context, Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coupler.translators.copybook.picture import (
    DecodeContext,
    FieldDecodeError,
    FieldEncodeError,
    FieldType,
    field_type,
)

CONTEXTS = [
    DecodeContext(),
    DecodeContext(encoding="ascii", ascii_charset="latin-1"),
    DecodeContext(ebcdic_code_page="common"),
]


@st.composite
def numeric_fields(draw) -> FieldType:
    usage = draw(st.sampled_from(["DISPLAY", "COMP", "COMP-5", "COMP-3", "COMP-6", "NATIONAL"]))
    digits = draw(st.integers(1, 38 if usage != "COMP-5" else 18))
    signed = usage != "COMP-6" and draw(st.booleans())
    form = draw(st.sampled_from(["plain", "V", "leadP", "trailP", "point"]))
    if form == "point" and usage not in ("DISPLAY", "NATIONAL"):
        form = "V"
    frac = draw(st.integers(0, digits)) if form in ("V", "point") else 0
    p = draw(st.integers(1, 4))
    body = "9" * (digits - frac)
    if form == "V":
        body += "V" + "9" * frac
    elif form == "point":
        body = body + "." + "9" * frac
        if not frac or digits == frac:
            body = "9" * max(digits - frac, 1) + "." + "9" * frac if frac else "9" * digits
    elif form == "leadP":
        body = "P" * p + body
    elif form == "trailP":
        body = body + "P" * p
    picture = ("S" if signed else "") + body
    kwargs = {}
    if usage in ("DISPLAY", "NATIONAL") and signed:
        kwargs["sign_position"] = draw(st.sampled_from(["leading", "trailing"]))
        kwargs["sign_separate"] = draw(st.booleans())
    return field_type(picture, usage, **kwargs)


def _value_for(ft: FieldType, draw) -> int | Decimal:
    limit = 10**ft.digits - 1
    if ft.usage == "COMP-5":
        bits = 8 * ft.size
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if ft.signed else (0, (1 << bits) - 1)
    else:
        lo, hi = (-limit if ft.signed else 0), limit
    n = draw(st.integers(lo, hi))
    if ft.scale > 0:
        return Decimal(n).scaleb(-ft.scale, Context(prec=100))
    return n * 10 ** (-ft.scale)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_numbers_round_trip_through_every_usage(data):
    ft = data.draw(numeric_fields())
    value = _value_for(ft, data.draw)
    ctx = data.draw(st.sampled_from(CONTEXTS))
    raw = ft.encode(value, ctx)
    assert len(raw) == ft.size
    back = ft.decode(raw, ctx)
    assert back == value
    if ft.scale > 0:
        assert back.as_tuple().exponent == -ft.scale
    assert ft.encode(back, ctx) == raw


EDITED = [
    "Z(6).99-", "ZZZ9", "Z(4)", "**,**9.99", "$$,$$9.99CR", "9(5)DB", "++++9", "----9.99",
    "+9(6)V99", "9(6).99-", "Z(6)VZZ-", "$ZZ9.99+", "-9(8)", "ZZ9B990", "$$$$", "***.**",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(EDITED), st.data())
def test_edited_numbers_round_trip(picture, data):
    ft = field_type(picture)
    value = _value_for(ft, data.draw)
    for ctx in CONTEXTS[:2]:
        raw = ft.encode(value, ctx)
        assert len(raw) == ft.size
        assert ft.decode(raw, ctx) == value
        assert ft.encode(ft.decode(raw, ctx), ctx) == raw


_CP037_TEXT = st.text(
    alphabet=st.sampled_from(
        [c for c in DecodeContext().text_codec.table if c >= " " and c not in "\x7f\x85"]
    ),
    max_size=12,
).map(lambda s: s.strip(" "))


@settings(max_examples=200, deadline=None)
@given(_CP037_TEXT, st.booleans())
def test_strings_round_trip(text, right):
    ft = field_type("X(12)", justified_right=right)
    assert ft.decode(ft.encode(text)) == text
    nat = field_type("N(12)")
    national = "".join(ch for ch in text if not 0xD800 <= ord(ch) <= 0xDFFF)
    assert nat.decode(nat.encode(national)) == national


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([4, 8]),
    st.integers(0, 1),
    st.integers(0, 127),
    st.data(),
)
def test_normalized_ibm_floats_are_canonical(size, sign, exponent, data):
    fbits = 8 * size - 8
    frac = data.draw(st.integers(1 << (fbits - 4), (1 << fbits) - 1))  # first hex digit != 0
    raw = ((sign << (8 * size - 1)) | (exponent << fbits) | frac).to_bytes(size, "big")
    ft = field_type(None, "COMP-1" if size == 4 else "COMP-2")
    if size == 4 and math.ldexp(frac, 4 * (exponent - 64) - fbits) > 3.4028234663852886e38:
        with pytest.raises(FieldDecodeError, match="beyond the range of a 32-bit float"):
            ft.decode(raw)  # an IBM single beyond what the canonical float holds
        return
    value = ft.decode(raw)
    if size == 8 and frac.bit_length() > 53:
        # a double keeps 53 bits: re-encoding gives the nearest IBM value
        assert abs(ft.decode(ft.encode(value)) - value) <= abs(value) * 2**-52
    else:
        assert ft.encode(value) == raw
        assert ft.decode(ft.encode(value)) == value


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=64, min_value=-1e70, max_value=1e70))
def test_doubles_survive_ibm_comp2(value):
    ft = field_type(None, "COMP-2")
    if value != 0 and abs(value) < 1e-70:
        return
    assert ft.decode(ft.encode(value)) == value


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, width=32))
def test_ieee_floats_round_trip(value):
    for fmt in ("IEEE754", "IEEE754_little_endian"):
        ctx = DecodeContext(floating_point_format=fmt)
        ft = field_type(None, "COMP-1")
        assert ft.decode(ft.encode(value, ctx), ctx) == value


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_random_bytes_give_a_value_or_a_field_decode_error(data):
    ft = data.draw(numeric_fields() | st.sampled_from([field_type(p) for p in EDITED]))
    raw = data.draw(st.binary(min_size=ft.size, max_size=ft.size))
    ctx = data.draw(st.sampled_from(CONTEXTS))
    try:
        value = ft.decode(raw, ctx)
    except FieldDecodeError as err:
        assert err.reason
        return
    if value is not None:
        assert isinstance(value, (int, Decimal))


@pytest.mark.parametrize("sign", [0, 1])
def test_the_largest_ibm_doubles_encode_again(sign):
    """The largest COMP-2 values, (1 - 16**-14) * 16**63 and those just below, decode to the
    double 16**63 (53 bits cannot tell them apart); encoding it gives the largest again, as
    for every other value the nearest IBM one, not 'out of the range' (found by the property
    test above: 0x7FFFFFFFFFFFFFFC). Twice as large stays out of the range."""
    ft = field_type(None, "COMP-2")
    for frac in ((1 << 56) - 1, (1 << 56) - 4):
        raw = ((sign << 63) | (127 << 56) | frac).to_bytes(8, "big")
        value = ft.decode(raw)
        assert abs(value) == 16.0**63
        assert ft.encode(value) == ((sign << 63) | (127 << 56) | ((1 << 56) - 1)).to_bytes(8, "big")
    with pytest.raises(FieldEncodeError, match="out of the range of an IBM COMP-2 float"):
        ft.encode(-(2.0**253) if sign else 2.0**253)
