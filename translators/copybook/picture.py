"""Elementary COBOL items: a PICTURE and a USAGE give a size, a kind and a codec.

:func:`field_type` reads a picture string (``S9(7)V99``, ``X(10)``, ``Z(6).99-``, ``PPP9(5)``)
and a usage (``DISPLAY``, ``COMP``, ``COMP-3``, ...) into a :class:`FieldType` that knows
its size in bytes, its SYNCHRONIZED alignment, what it holds (``kind``) and how to
``decode`` its bytes into a Python value and ``encode`` a value back into bytes.

Values: ``string`` -> ``str``, ``integer`` -> ``int``, ``decimal`` -> :class:`decimal.Decimal`
with exactly the declared scale, ``float`` -> ``float``, ``bytes`` -> ``bytes``. A field
whose bytes cannot be read raises :class:`FieldDecodeError` with the reason, so that the
record decoder can apply its strict or lenient policy; ``decode`` returns ``None`` for a
null field (all 0x00 bytes under ``improved_null_detection``, a blank number).

The codecs are small pure functions at the end of the module, one per storage form
(text, zoned, edited, binary, packed, floating point).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from typing import Any, Literal

from coupler.translators.copybook.codepages import AsciiCodec, CodePage, ascii_codec, code_page
from coupler.translators.copybook.errors import CopybookError, RecordEncodeError

__all__ = [
    "DEFAULT_CONTEXT",
    "USAGES",
    "DecodeContext",
    "FieldDecodeError",
    "FieldEncodeError",
    "FieldType",
    "PictureError",
    "field_type",
    "normalize_usage",
]

Kind = Literal["string", "integer", "decimal", "float", "bytes"]


class PictureError(CopybookError):
    """A PICTURE string or a PICTURE/USAGE combination that COBOL does not allow."""


class FieldDecodeError(CopybookError):
    """The bytes of a field are not a valid value of its type; ``reason`` says why."""

    def __init__(self, reason: str, *, raw: bytes = b"", where: str | None = None):
        self.reason = reason
        self.raw = raw
        super().__init__(reason, where=where)


class FieldEncodeError(RecordEncodeError):
    """A value that does not fit its field (too long, too many digits, wrong type)."""


# --------------------------------------------------------------------------------------
# usages

#: Accepted USAGE spellings -> the canonical usage name a FieldType carries.
USAGES: dict[str, str] = {
    "DISPLAY": "DISPLAY",
    "COMP": "COMP",
    "COMPUTATIONAL": "COMP",
    "COMP-0": "COMP",
    "COMPUTATIONAL-0": "COMP",
    "COMP-4": "COMP",
    "COMPUTATIONAL-4": "COMP",
    "BINARY": "COMP",
    "COMP-5": "COMP-5",
    "COMPUTATIONAL-5": "COMP-5",
    "COMP-3": "COMP-3",
    "COMPUTATIONAL-3": "COMP-3",
    "PACKED-DECIMAL": "COMP-3",
    "COMP-6": "COMP-6",
    "COMPUTATIONAL-6": "COMP-6",
    "COMP-1": "COMP-1",
    "COMPUTATIONAL-1": "COMP-1",
    "COMP-2": "COMP-2",
    "COMPUTATIONAL-2": "COMP-2",
    "NATIONAL": "NATIONAL",
    "DISPLAY-1": "DISPLAY-1",
}


def normalize_usage(usage: str | None, *, where: str | None = None) -> str:
    """The canonical name of a USAGE clause (``COMPUTATIONAL-3`` -> ``COMP-3``)."""
    key = " ".join((usage or "DISPLAY").upper().split())
    if key.startswith("USAGE "):
        key = key[6:].strip()
    if key.startswith("IS "):
        key = key[3:].strip()
    try:
        return USAGES[key]
    except KeyError:
        raise PictureError(
            f"unknown USAGE {usage!r}",
            where=where,
            hint="use DISPLAY, COMP, COMP-3, COMP-5, BINARY, PACKED-DECIMAL, COMP-1, COMP-2 or NATIONAL",
        ) from None


def binary_size(digits: int) -> int:
    """Bytes of a COMP/BINARY/COMP-5 item of ``digits`` digits (as IBM COBOL and Cobrix)."""
    if digits <= 4:
        return 2
    if digits <= 9:
        return 4
    if digits <= 18:
        return 8
    return math.ceil((math.log2(10) * digits + 1) / 8)


# --------------------------------------------------------------------------------------
# picture strings

_SYMBOL = re.compile(r"CR|DB|[9XASVPZ*+\-.,B0/$NGE]")
_REPEAT = re.compile(r"\((\d+)\)")


def expand_picture(picture: str, *, where: str | None = None) -> list[str]:
    """The picture's symbols, one per character position (``9(3)V9`` -> 9 9 9 V 9)."""
    text = picture.strip().upper()
    if text.startswith("PIC"):
        raise PictureError(f"picture {picture!r} still has its PIC keyword", where=where)
    symbols: list[str] = []
    i = 0
    while i < len(text):
        m = _SYMBOL.match(text, i)
        if not m:
            raise PictureError(
                f"invalid character {text[i]!r} at position {i + 1} of picture {picture!r}",
                where=where,
                hint="a picture holds 9 X A S V P Z * + - . , B 0 / $ CR DB N G and repeat counts like 9(5)",
            )
        sym = m.group(0)
        i = m.end()
        count = 1
        r = _REPEAT.match(text, i)
        if r:
            count = int(r.group(1))
            if count == 0:
                raise PictureError(f"repeat count (0) in picture {picture!r}", where=where)
            if count > 1_000_000:
                raise PictureError(
                    f"repeat count ({count}) too large in picture {picture!r}", where=where
                )
            i = r.end()
        elif text.startswith("(", i):
            raise PictureError(f"bad repeat count in picture {picture!r}", where=where)
        symbols.extend([sym] * count)
    if not symbols:
        raise PictureError("empty picture", where=where)
    return symbols


@dataclass(frozen=True)
class EditPosition:
    """One character position of a numeric-edited picture.

    ``role``: ``digit`` (9), ``zero`` (Z), ``star`` (*), ``float`` (a digit position of a
    floating + - $ string), ``float_lead`` (the first symbol of a floating string, never a
    digit), ``sign`` (a fixed + or -), ``crdb`` (CR or DB, two bytes), ``currency`` (a fixed
    $), ``point`` (the actual decimal point), ``insert`` (B 0 / and the comma).
    """

    role: str
    symbol: str
    width: int = 1
    after_point: bool = False


# --------------------------------------------------------------------------------------
# decode context


@dataclass(frozen=True)
class DecodeContext:
    """What a codec needs to know beyond the field itself (built from the options)."""

    encoding: Literal["ebcdic", "ascii"] = "ebcdic"
    ebcdic_code_page: str = "cp037"
    ascii_charset: str | None = None
    string_trimming_policy: Literal["both", "left", "right", "none", "keep_all"] = "both"
    improved_null_detection: bool = True
    floating_point_format: Literal[
        "IBM", "IBM_little_endian", "IEEE754", "IEEE754_little_endian"
    ] = "IBM"
    strict_sign_overpunching: bool = True

    @cached_property
    def text_codec(self) -> CodePage | AsciiCodec:
        """The code page of text fields."""
        if self.encoding == "ascii":
            return ascii_codec(self.ascii_charset)
        return code_page(self.ebcdic_code_page)

    @property
    def is_ebcdic(self) -> bool:
        return self.encoding != "ascii"

    @classmethod
    def from_options(cls, options: Any) -> DecodeContext:
        """The context of a :class:`~coupler.translators.copybook.options.CopybookOptions`."""
        return cls(
            encoding=options.encoding,
            ebcdic_code_page=options.ebcdic_code_page,
            ascii_charset=options.ascii_charset,
            string_trimming_policy=options.string_trimming_policy,
            improved_null_detection=options.improved_null_detection,
            floating_point_format=options.floating_point_format,
            strict_sign_overpunching=options.strict_sign_overpunching,
        )


DEFAULT_CONTEXT = DecodeContext()


# --------------------------------------------------------------------------------------
# field type


@dataclass(frozen=True)
class FieldType:
    """The type of one elementary item.

    ``size`` is in bytes; ``alignment`` the SYNCHRONIZED boundary; ``digits`` the digit
    positions of a number (9, Z, * and floating symbols; P not included); ``scale`` the
    digits after the decimal point of the value (leading P add to it, trailing P make it
    negative: ``9(5)PPP`` has scale -3); ``precision`` digits plus P positions.
    ``category`` is COBOL's: alphanumeric, alphabetic, alphanumeric-edited, numeric,
    numeric-edited, national, dbcs, float.
    """

    picture: str | None
    usage: str
    kind: Kind
    category: str
    size: int
    alignment: int = 1
    digits: int = 0
    scale: int = 0
    precision: int = 0
    signed: bool = False
    sign_position: Literal["leading", "trailing"] | None = None
    sign_separate: bool = False
    explicit_point: bool = False
    decimal_point_is_comma: bool = False
    blank_when_zero: bool = False
    justified_right: bool = False
    synchronized: bool = False
    edit: tuple[EditPosition, ...] = field(default=(), repr=False)

    @property
    def is_numeric(self) -> bool:
        return self.kind in ("integer", "decimal", "float")

    @property
    def max_abs_unscaled(self) -> int:
        """One more than the largest unscaled integer the digit positions hold."""
        return 10**self.digits

    def decode(self, raw: bytes, ctx: DecodeContext = DEFAULT_CONTEXT) -> Any:
        """The value of ``raw`` (exactly ``size`` bytes); ``FieldDecodeError`` if malformed."""
        return _decode(self, raw, ctx)

    def encode(self, value: Any, ctx: DecodeContext = DEFAULT_CONTEXT) -> bytes:
        """The ``size`` bytes of ``value``; ``FieldEncodeError`` if it does not fit."""
        return _encode(self, value, ctx)

    def null_bytes(self) -> bytes:
        """The bytes of a null field (all 0x00, what improved null detection reads as null)."""
        return bytes(self.size)


def field_type(
    picture: str | None,
    usage: str = "DISPLAY",
    *,
    sign_position: Literal["leading", "trailing"] | None = None,
    sign_separate: bool = False,
    synchronized: bool = False,
    blank_when_zero: bool = False,
    justified_right: bool = False,
    decimal_point_is_comma: bool = False,
    where: str | None = None,
) -> FieldType:
    """The :class:`FieldType` of an elementary item with this PICTURE and USAGE.

    ``picture`` is the picture string without ``PIC`` (``None`` for COMP-1/COMP-2 items);
    ``sign_position``/``sign_separate`` come from a SIGN clause, the other flags from
    SYNCHRONIZED, BLANK WHEN ZERO, JUSTIFIED RIGHT and DECIMAL-POINT IS COMMA. ``where``
    (``file:line:col``) is put into any :class:`PictureError`.
    """
    norm = normalize_usage(usage, where=where)
    common = dict(
        blank_when_zero=blank_when_zero,
        justified_right=justified_right,
        synchronized=synchronized,
        decimal_point_is_comma=decimal_point_is_comma,
    )
    if norm in ("COMP-1", "COMP-2"):
        size = 4 if norm == "COMP-1" else 8
        return FieldType(
            picture=picture, usage=norm, kind="float", category="float", size=size,
            alignment=size, signed=True, **common,
        )  # fmt: skip
    if not picture:
        raise PictureError(f"an item of USAGE {norm} needs a PICTURE clause", where=where)
    symbols = expand_picture(picture, where=where)
    kinds = set(symbols)
    pic = picture.strip().upper()

    if "N" in kinds:
        if not kinds <= {"N", "B", "0", "/"}:
            raise PictureError(f"picture {picture!r} mixes N with other symbols", where=where)
        return FieldType(
            picture=pic, usage="NATIONAL", kind="string", category="national",
            size=2 * len(symbols), **common,
        )  # fmt: skip
    if "G" in kinds:
        if not kinds <= {"G", "B"}:
            raise PictureError(f"picture {picture!r} mixes G with other symbols", where=where)
        return FieldType(
            picture=pic, usage="DISPLAY-1", kind="bytes", category="dbcs",
            size=2 * len(symbols), **common,
        )  # fmt: skip
    if "E" in kinds:
        raise PictureError(
            f"floating-point edited picture {picture!r} is not supported", where=where,
            hint="read the item as PIC X and convert it after decoding",
        )  # fmt: skip
    if kinds & {"X", "A"}:
        if not kinds <= {"X", "A", "9", "B", "0", "/"}:
            raise PictureError(
                f"picture {picture!r} mixes X/A with numeric editing symbols", where=where
            )
        if norm not in ("DISPLAY", "NATIONAL"):
            raise PictureError(
                f"an alphanumeric picture {picture!r} cannot have USAGE {norm}", where=where
            )
        category = "alphabetic" if kinds == {"A"} else "alphanumeric"
        if kinds & {"B", "0", "/"}:
            category = "alphanumeric-edited"
        width = 2 if norm == "NATIONAL" else 1
        return FieldType(
            picture=pic, usage=norm, kind="string", category=category,
            size=width * len(symbols), **common,
        )  # fmt: skip

    point = "," if decimal_point_is_comma else "."
    plain = {"9", "S", "V", "P", point}
    if kinds <= plain:
        return _numeric(pic, symbols, norm, point, sign_position, sign_separate, where, common)
    if kinds <= {"9", "B", "0", "/"}:
        # Only simple insertion (dates 99/99/99, 999B999): the text is what users want.
        if norm != "DISPLAY":
            raise PictureError(f"an edited picture {picture!r} needs USAGE DISPLAY", where=where)
        return FieldType(
            picture=pic, usage=norm, kind="string", category="alphanumeric-edited",
            size=len(symbols), **common,
        )  # fmt: skip
    return _edited(pic, symbols, norm, point, where, common)


def _numeric(
    pic: str,
    symbols: list[str],
    usage: str,
    point: str,
    sign_position: str | None,
    sign_separate: bool,
    where: str | None,
    common: dict[str, Any],
) -> FieldType:
    signed = False
    if "S" in symbols:
        if symbols.count("S") > 1 or symbols[0] != "S":
            raise PictureError(f"S must be the first symbol of picture {pic!r}", where=where)
        signed = True
        symbols = symbols[1:]
    body = [s for s in symbols]
    n_points = body.count("V") + body.count(point)
    if n_points > 1:
        raise PictureError(f"picture {pic!r} has more than one decimal point", where=where)
    explicit = point in body
    if explicit and usage not in ("DISPLAY", "NATIONAL"):
        raise PictureError(
            f"an explicit decimal point in picture {pic!r} needs USAGE DISPLAY", where=where
        )
    digits = body.count("9")
    if digits == 0:
        raise PictureError(f"numeric picture {pic!r} has no digit positions", where=where)
    # P scaling: a run of P at the left (before the first 9) or at the right (after the last 9)
    first9 = body.index("9")
    last9 = len(body) - 1 - body[::-1].index("9")
    if any(s == "P" for s in body[first9 : last9 + 1]):
        raise PictureError(f"P must be at the left or right end of picture {pic!r}", where=where)
    lead_p = body[:first9].count("P")
    trail_p = body[last9 + 1 :].count("P")
    if lead_p and trail_p:
        raise PictureError(f"picture {pic!r} has P at both ends", where=where)
    pt_index = next((i for i, s in enumerate(body) if s in ("V", point)), None)
    if pt_index is None:
        frac_digits = 0
        if lead_p:
            pt_index = 0  # leading P imply the point at the left
    else:
        if trail_p and pt_index < last9:
            raise PictureError(
                f"picture {pic!r} has a decimal point before trailing P", where=where
            )
        frac_digits = sum(1 for s in body[pt_index:] if s == "9")
    if lead_p:
        scale = lead_p + digits
        if pt_index is not None and any(s == "9" for s in body[:pt_index]):
            raise PictureError(f"picture {pic!r} has digits before leading P", where=where)
    elif trail_p:
        scale = -trail_p
    else:
        scale = frac_digits
    if explicit and (lead_p or trail_p):
        raise PictureError(
            f"picture {pic!r} mixes P scaling with an actual decimal point", where=where
        )

    if sign_separate and usage not in ("DISPLAY", "NATIONAL"):
        raise PictureError(f"SIGN SEPARATE needs USAGE DISPLAY, not {usage}", where=where)
    if sign_separate or sign_position:
        signed = True
    if signed and usage in ("DISPLAY", "NATIONAL"):
        sign_position = sign_position or "trailing"
    else:
        sign_position = None

    width = 2 if usage == "NATIONAL" else 1
    if usage in ("DISPLAY", "NATIONAL"):
        size = width * (digits + (1 if explicit else 0) + (1 if sign_separate else 0))
        alignment = 1
    elif usage in ("COMP", "COMP-5"):
        size = binary_size(digits)
        alignment = size if size in (2, 4, 8) else 8
    elif usage == "COMP-3":
        size = digits // 2 + 1
        alignment = 1
    elif usage == "COMP-6":
        size = (digits + 1) // 2
        alignment = 1
        if signed:
            raise PictureError(f"COMP-6 is unsigned; picture {pic!r} has a sign", where=where)
    elif usage == "DISPLAY-1":
        raise PictureError(f"USAGE DISPLAY-1 needs a PIC G picture, not {pic!r}", where=where)
    else:  # pragma: no cover - every usage is handled above
        raise PictureError(f"USAGE {usage} cannot hold picture {pic!r}", where=where)
    return FieldType(
        picture=pic,
        usage=usage,
        kind="decimal" if scale > 0 else "integer",
        category="numeric",
        size=size,
        alignment=alignment,
        digits=digits,
        scale=scale,
        precision=digits + lead_p + trail_p,
        signed=signed,
        sign_position=sign_position,  # type: ignore[arg-type]
        sign_separate=sign_separate,
        explicit_point=explicit,
        **common,
    )


def _edited(
    pic: str,
    symbols: list[str],
    usage: str,
    point: str,
    where: str | None,
    common: dict[str, Any],
) -> FieldType:
    if usage != "DISPLAY":
        raise PictureError(f"numeric-edited picture {pic!r} needs USAGE DISPLAY", where=where)
    insertion_comma = "." if point == "," else ","
    allowed = {
        "9",
        "V",
        "Z",
        "*",
        "+",
        "-",
        "CR",
        "DB",
        "B",
        "0",
        "/",
        "$",
        point,
        insertion_comma,
        "P",
    }
    bad = set(symbols) - allowed
    if bad:
        raise PictureError(
            f"symbol {sorted(bad)[0]!r} is not allowed in numeric-edited picture {pic!r}",
            where=where,
            hint="S is only allowed in plain numeric pictures; use + - CR or DB",
        )
    if "P" in symbols:
        raise PictureError(
            f"P scaling in numeric-edited picture {pic!r} is not supported", where=where
        )
    if "Z" in symbols and "*" in symbols:
        raise PictureError(f"picture {pic!r} mixes Z and *", where=where)
    floating = None
    for sym in ("+", "-", "$"):
        if symbols.count(sym) >= 2:
            if floating is not None:
                raise PictureError(f"picture {pic!r} has two floating strings", where=where)
            floating = sym
    signs = [s for s in symbols if s in ("+", "-", "CR", "DB")]
    if floating in ("+", "-"):
        other = [s for s in signs if s != floating]
    else:
        other = signs
    if len(other) > 1 or (floating in ("+", "-") and other):
        raise PictureError(f"picture {pic!r} has more than one sign", where=where)
    for s in ("CR", "DB"):
        if s in symbols and symbols[-1] != s:
            raise PictureError(f"{s} must end picture {pic!r}", where=where)

    positions: list[EditPosition] = []
    seen_point = False
    float_seen = 0
    n_points = 0
    for sym in symbols:
        if sym == "V":
            n_points += 1
            seen_point = True
            continue
        if sym == point:
            n_points += 1
            seen_point = True
            positions.append(EditPosition("point", sym, 1, True))
            continue
        if sym == floating:
            float_seen += 1
            role = "float_lead" if float_seen == 1 else "float"
            positions.append(EditPosition(role, sym, 1, seen_point))
            continue
        role = {
            "9": "digit", "Z": "zero", "*": "star", "+": "sign", "-": "sign",
            "CR": "crdb", "DB": "crdb", "$": "currency",
            "B": "insert", "0": "insert", "/": "insert", insertion_comma: "insert",
        }[sym]  # fmt: skip
        positions.append(EditPosition(role, sym, 2 if role == "crdb" else 1, seen_point))
    if n_points > 1:
        raise PictureError(f"picture {pic!r} has more than one decimal point", where=where)
    digit_roles = ("digit", "zero", "star", "float")
    digits = sum(1 for p in positions if p.role in digit_roles)
    if digits == 0:
        raise PictureError(f"numeric-edited picture {pic!r} has no digit positions", where=where)
    scale = sum(1 for p in positions if p.role in digit_roles and p.after_point)
    return FieldType(
        picture=pic,
        usage=usage,
        kind="decimal" if scale > 0 else "integer",
        category="numeric-edited",
        size=sum(p.width for p in positions),
        digits=digits,
        scale=scale,
        precision=digits,
        signed=bool(signs),
        explicit_point=point in symbols,
        edit=tuple(positions),
        **common,
    )


def unscaled(value: Any, ft: FieldType) -> int:
    """The integer of ``value`` at the field's scale (``12.34`` at scale 2 -> 1234).

    Raises :class:`FieldEncodeError` when the value has more decimals than the scale or
    more digits than the picture.
    """
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, float, str)):
        raise FieldEncodeError(f"{value!r} is not a number (picture {ft.picture})")
    try:
        dec = Decimal(value) if not isinstance(value, float) else Decimal(repr(value))
    except Exception:
        raise FieldEncodeError(f"{value!r} is not a number (picture {ft.picture})") from None
    if not dec.is_finite():
        raise FieldEncodeError(f"{value!r} is not a finite number (picture {ft.picture})")
    scaled = dec.scaleb(ft.scale)
    n = int(scaled)
    if scaled != n:
        raise FieldEncodeError(
            f"{value} has more decimals than picture {ft.picture} holds (scale {ft.scale})"
        )
    if n < 0 and not ft.signed:
        raise FieldEncodeError(f"{value} is negative but picture {ft.picture} is unsigned")
    return n


def _decode(ft: FieldType, raw: bytes, ctx: DecodeContext) -> Any:
    raise NotImplementedError


def _encode(ft: FieldType, value: Any, ctx: DecodeContext) -> bytes:
    raise NotImplementedError
