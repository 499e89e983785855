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
import struct
from decimal import Context, Decimal
from functools import cached_property
from typing import Any, Literal

from coupler.canonical.plain import Plain
from coupler.translators.copybook.codepages import AsciiCodec, CodePage, ascii_codec, code_page
from coupler.translators.copybook.errors import CopybookError, RecordEncodeError

__all__ = [
    "DEFAULT_CONTEXT",
    "USAGES",
    "DecodeContext",
    "FieldDecodeError",
    "FieldEncodeError",
    "NO_PICTURE_USAGES",
    "FieldType",
    "PictureError",
    "field_type",
    "normalize_usage",
]

Kind = Literal["string", "integer", "decimal", "float", "bytes"]

# Exact decimal arithmetic for pictures of any length (the default context keeps 28 digits).
_EXACT = Context(prec=100_000)
#: more digits than any picture holds (COBOL's are 38 at most), refused before the value is
#: scaled: a JSON number such as 1e999999999 overflows even _EXACT (decimal.Overflow), and
#: 1e999999 would be made an integer of a million digits (half a minute of CPU)
_MOST_DIGITS = 100


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

#: USAGE words as written -> the canonical usage name a FieldType carries (the one table:
#: the parser reads USAGE clauses with it, the layout and the codecs use its values).
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
    "INDEX": "INDEX",
    "POINTER": "POINTER",
    "PROCEDURE-POINTER": "PROCEDURE-POINTER",
    "FUNCTION-POINTER": "FUNCTION-POINTER",
}

#: usages without a PICTURE whose size is the address size (4 bytes, 8 with ``pointer_size=8``)
POINTER_USAGES = frozenset({"POINTER", "PROCEDURE-POINTER", "FUNCTION-POINTER"})
#: usages of elementary items that have no PICTURE clause
NO_PICTURE_USAGES = POINTER_USAGES | {"COMP-1", "COMP-2", "INDEX"}


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
            hint="use DISPLAY, COMP, COMP-3, COMP-5, BINARY, PACKED-DECIMAL, COMP-1, COMP-2, NATIONAL,"
            " INDEX or POINTER",
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


class EditPosition(Plain, frozen=True):
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

    def __init__(self, role: str, symbol: str, width: int = 1, after_point: bool = False) -> None:
        self.__dict__.update(role=role, symbol=symbol, width=width, after_point=after_point)


# --------------------------------------------------------------------------------------
# decode context


class DecodeContext(Plain, frozen=True):
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
    #: ``bin`` (the default, as Cobrix and IBM's TRUNC(BIN)): a COMP integer keeps its whole
    #: binary value even beyond the digits of its PICTURE (as long as its type holds it);
    #: ``std``: such a value is bad data, as with TRUNC(STD)
    trunc: Literal["bin", "std"] = "bin"
    #: how the encoder overpunches the sign of ASCII zoned decimals: ``ibm`` ({ A-I, } J-R)
    #: or ``gnucobol`` (GnuCOBOL and Micro Focus: positive plain digits, negative 0x70-0x79)
    ascii_sign_convention: Literal["ibm", "gnucobol"] = "ibm"

    def __init__(
        self, encoding: Literal["ebcdic", "ascii"] = "ebcdic", ebcdic_code_page: str = "cp037",
        ascii_charset: str | None = None,
        string_trimming_policy: Literal["both", "left", "right", "none", "keep_all"] = "both",
        improved_null_detection: bool = True,
        floating_point_format: Literal["IBM", "IBM_little_endian", "IEEE754", "IEEE754_little_endian"] = "IBM",
        strict_sign_overpunching: bool = True, trunc: Literal["bin", "std"] = "bin",
        ascii_sign_convention: Literal["ibm", "gnucobol"] = "ibm",
    ) -> None:
        self.__dict__.update(
            encoding=encoding, ebcdic_code_page=ebcdic_code_page, ascii_charset=ascii_charset,
            string_trimming_policy=string_trimming_policy, improved_null_detection=improved_null_detection,
            floating_point_format=floating_point_format, strict_sign_overpunching=strict_sign_overpunching,
            trunc=trunc, ascii_sign_convention=ascii_sign_convention,
        )

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
            trunc="std" if options.strict_integral_precision else options.trunc,
            ascii_sign_convention=options.ascii_sign_convention,
        )


DEFAULT_CONTEXT = DecodeContext()


# --------------------------------------------------------------------------------------
# field type


class FieldType(Plain, frozen=True, hidden=('edit',)):
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
    edit: tuple[EditPosition, ...] = ()

    def __init__(
        self, picture: str | None, usage: str, kind: Kind, category: str, size: int, alignment: int = 1,
        digits: int = 0, scale: int = 0, precision: int = 0, signed: bool = False,
        sign_position: Literal["leading", "trailing"] | None = None, sign_separate: bool = False,
        explicit_point: bool = False, decimal_point_is_comma: bool = False, blank_when_zero: bool = False,
        justified_right: bool = False, synchronized: bool = False, edit: tuple[EditPosition, ...] = (),
    ) -> None:
        self.__dict__.update(
            picture=picture, usage=usage, kind=kind, category=category, size=size, alignment=alignment,
            digits=digits, scale=scale, precision=precision, signed=signed, sign_position=sign_position,
            sign_separate=sign_separate, explicit_point=explicit_point,
            decimal_point_is_comma=decimal_point_is_comma, blank_when_zero=blank_when_zero,
            justified_right=justified_right, synchronized=synchronized, edit=edit,
        )

    @property
    def is_numeric(self) -> bool:
        return self.kind in ("integer", "decimal", "float")

    @property
    def max_abs_unscaled(self) -> int:
        """One more than the largest unscaled integer the digit positions hold."""
        return 10**self.digits

    def binary_limit(self, ctx: DecodeContext) -> int:
        """One more than the largest magnitude a COMP item decodes to: the digits of its
        PICTURE under ``trunc=std``; under ``trunc=bin`` (the default) whatever its Avro type
        holds (int up to 9 digits, long up to 18) for integers, the PICTURE otherwise."""
        if ctx.trunc == "bin" and self.kind == "integer" and self.scale == 0:
            if self.precision <= 9:
                return 1 << 31
            if self.precision <= 18:
                return 1 << 63
        return self.max_abs_unscaled

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
    pointer_size: int = 4,
    where: str | None = None,
) -> FieldType:
    """The :class:`FieldType` of an elementary item with this PICTURE and USAGE.

    ``picture`` is the picture string without ``PIC`` (``None`` for COMP-1/COMP-2 items);
    ``sign_position``/``sign_separate`` come from a SIGN clause, the other flags from
    SYNCHRONIZED, BLANK WHEN ZERO, JUSTIFIED RIGHT and DECIMAL-POINT IS COMMA. ``where``
    (``file:line:col``) is put into any :class:`PictureError`.
    """
    norm = normalize_usage(usage, where=where)
    common: dict[str, Any] = dict(
        blank_when_zero=blank_when_zero,
        justified_right=justified_right,
        synchronized=synchronized,
        decimal_point_is_comma=decimal_point_is_comma,
    )
    if norm in POINTER_USAGES or norm == "INDEX":
        if picture:
            raise PictureError(f"an item of USAGE {norm} has no PICTURE clause", where=where)
        if norm == "INDEX":  # a 4-byte binary integer, as IBM COBOL stores index data items
            return FieldType(
                picture=None, usage="COMP-5", kind="integer", category="index", size=4,
                alignment=4, digits=9, precision=9, signed=True, **common,
            )  # fmt: skip
        size = pointer_size if pointer_size in (4, 8) else 4
        return FieldType(
            picture=None, usage=norm, kind="bytes", category="pointer", size=size,
            alignment=size, **common,
        )  # fmt: skip
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
    if dec and dec.adjusted() + ft.scale >= _MOST_DIGITS:
        raise FieldEncodeError(f"a number of {dec.adjusted() + 1} digits does not fit picture {ft.picture}")
    scaled = dec.scaleb(ft.scale, _EXACT)
    n = int(scaled)
    if scaled != n:
        raise FieldEncodeError(
            f"{value} has more decimals than picture {ft.picture} holds (scale {ft.scale})"
        )
    if n < 0 and not ft.signed:
        raise FieldEncodeError(f"{value} is negative but picture {ft.picture} is unsigned")
    return n


# --------------------------------------------------------------------------------------
# codecs: one small pure function per storage form

_TEXT_USAGES = frozenset({"DISPLAY", "NATIONAL", "DISPLAY-1"})
_JAVA_SPACE = "".join(chr(i) for i in range(0x21))  # what Java's String.trim() removes
_DIGIT_ROLES = ("digit", "zero", "star", "float")
_SUPPRESSING = ("zero", "star", "float")


def _numeric_tables() -> tuple[bytes, bytes]:
    """EBCDIC bytes <-> the characters of numeric text (zone-based, the same in every page).

    Overpunched digits read as the ASCII overpunch letters: C0-C9 -> { A-I, D0-D9 -> } J-R.
    """
    to_text = bytearray(b"?" * 256)
    to_ebcdic = bytearray(b"\x6f" * 256)
    pairs = {0x40: " ", 0x4E: "+", 0x60: "-", 0x4B: ".", 0x6B: ",", 0x5C: "*", 0x5B: "$", 0x61: "/"}
    for i in range(10):
        pairs[0xF0 + i] = str(i)
        pairs[0xC0 + i] = "{ABCDEFGHI"[i]
        pairs[0xD0 + i] = "}JKLMNOPQR"[i]
    for b, ch in pairs.items():
        to_text[b] = ord(ch)
        to_ebcdic[ord(ch)] = b
    to_text[0x00] = ord(" ")
    return bytes(to_text), bytes(to_ebcdic)


_EBCDIC_TO_TEXT, _TEXT_TO_EBCDIC = _numeric_tables()
_OVERPUNCH: dict[str, tuple[int, bool]] = {}
for _i in range(10):
    _OVERPUNCH["{ABCDEFGHI"[_i]] = (_i, False)
    _OVERPUNCH["}JKLMNOPQR"[_i]] = (_i, True)
    _OVERPUNCH[chr(0x70 + _i)] = (_i, True)  # p-y: negative overpunch of some ASCII compilers
_PUNCH_POS = "{ABCDEFGHI"
_PUNCH_NEG = "}JKLMNOPQR"
_PUNCH_NEG_GNU = "pqrstuvwxy"  # 0x70-0x79


def _fail(reason: str, raw: bytes) -> FieldDecodeError:
    return FieldDecodeError(reason, raw=raw)


def _make(ft: FieldType, n: int) -> int | Decimal:
    """The value of the unscaled integer ``n``."""
    if ft.scale > 0:
        return Decimal(n).scaleb(-ft.scale, _EXACT)
    if ft.scale < 0:
        return n * 10 ** (-ft.scale)
    return n


def _decode(ft: FieldType, raw: bytes, ctx: DecodeContext) -> Any:
    if len(raw) != ft.size:
        raise _fail(f"field needs {ft.size} bytes, got {len(raw)}", raw)
    if ctx.improved_null_detection and ft.usage in _TEXT_USAGES and not any(raw):
        return None
    if ft.kind == "string":
        return _decode_text(ft, raw, ctx)
    if ft.kind == "bytes":
        return bytes(raw)
    usage = ft.usage
    if usage in ("COMP-1", "COMP-2"):
        return _decode_float(ft, raw, ctx)
    if usage in ("COMP", "COMP-5"):
        n = int.from_bytes(raw, "big", signed=ft.signed)
        if usage == "COMP" and abs(n) >= ft.binary_limit(ctx):
            if abs(n) >= ft.max_abs_unscaled and ctx.trunc == "std":
                raise _fail(
                    f"binary value {n} has more than the {ft.digits} digits of the picture"
                    " (trunc=std)", raw
                )
            raise _fail(f"binary value {n} does not fit the field's type (PIC {ft.picture})", raw)
        return _make(ft, n)
    if usage == "COMP-3":
        return _decode_packed(ft, raw)
    if usage == "COMP-6":
        h = raw.hex()
        if not h.isdigit():
            raise _fail("invalid digit nibble in unsigned packed decimal", raw)
        n = int(h)
        if n >= ft.max_abs_unscaled:
            raise _fail(f"packed value {n} has more than {ft.digits} digits", raw)
        return _make(ft, n)
    text = _numeric_text(ft, raw, ctx)
    if ft.category == "numeric-edited":
        return _decode_edited(ft, text, raw)
    return _decode_zoned(ft, text, raw, ctx)


def _encode(ft: FieldType, value: Any, ctx: DecodeContext) -> bytes:
    if value is None:
        if ft.usage in _TEXT_USAGES:
            return ft.null_bytes()
        raise FieldEncodeError(f"null cannot be stored in a USAGE {ft.usage} field")
    if ft.kind == "string":
        return _encode_text(ft, value, ctx)
    if ft.kind == "bytes":
        if not isinstance(value, (bytes, bytearray)) or len(value) != ft.size:
            raise FieldEncodeError(f"a PIC {ft.picture} field needs {ft.size} bytes, got {value!r}")
        return bytes(value)
    usage = ft.usage
    if usage in ("COMP-1", "COMP-2"):
        return _encode_float(ft, value, ctx)
    n = unscaled(value, ft)
    if usage == "COMP-5":
        try:
            return n.to_bytes(ft.size, "big", signed=ft.signed)
        except OverflowError:
            raise FieldEncodeError(f"{value} does not fit {ft.size} bytes of COMP-5") from None
    if usage == "COMP" and abs(n) < ft.binary_limit(ctx):
        # trunc=bin (the default): the whole binary value, as the decoder reads it back
        try:
            return n.to_bytes(ft.size, "big", signed=ft.signed)
        except OverflowError:
            raise FieldEncodeError(f"{value} does not fit {ft.size} bytes of binary") from None
    if abs(n) >= ft.max_abs_unscaled:
        raise FieldEncodeError(f"{value} has more digits than picture {ft.picture} holds")
    if usage == "COMP":
        return n.to_bytes(ft.size, "big", signed=ft.signed)
    if usage == "COMP-3":
        sign = ("d" if n < 0 else "c") if ft.signed else "f"
        return bytes.fromhex(str(abs(n)).rjust(2 * ft.size - 1, "0") + sign)
    if usage == "COMP-6":
        return bytes.fromhex(str(n).rjust(2 * ft.size, "0"))
    if ft.category == "numeric-edited":
        text = _encode_edited(ft, n)
    elif n == 0 and ft.blank_when_zero:
        text = " " * (ft.size // (2 if usage == "NATIONAL" else 1))
    else:
        text = _encode_zoned(ft, n, ctx)
    return _numeric_bytes(ft, text, ctx)


# --- text -----------------------------------------------------------------------------


def _trim(text: str, policy: str) -> str:
    if policy == "both":
        return text.strip(_JAVA_SPACE)
    if policy == "right":
        return text.rstrip(_JAVA_SPACE)
    if policy == "left":
        return text.lstrip(_JAVA_SPACE)
    return text


_CONTROL_BYTES = bytes(range(0x20))


def _decode_text(ft: FieldType, raw: bytes, ctx: DecodeContext) -> str:
    if ft.usage == "NATIONAL":
        try:
            text = raw.decode("utf-16-be")
        except UnicodeDecodeError as exc:
            raise _fail(f"invalid UTF-16 in a national field: {exc.reason}", raw) from None
    elif not ctx.is_ebcdic and ctx.string_trimming_policy != "keep_all":
        # Cobrix drops the control bytes before decoding (AsciiStringDecoderWrapper): an
        # invalid UTF-8 sequence cut by one becomes a single U+FFFD, as in its test17e
        text = ctx.text_codec.decode(raw.translate(None, _CONTROL_BYTES))
        text = "".join(ch for ch in text if ch >= " ")
    else:
        text = ctx.text_codec.decode(raw)
    return _trim(text, ctx.string_trimming_policy)


def _encode_text(ft: FieldType, value: Any, ctx: DecodeContext) -> bytes:
    if not isinstance(value, str):
        raise FieldEncodeError(f"a PIC {ft.picture} field holds text, got {value!r}")
    if ft.usage == "NATIONAL":
        data, pad = value.encode("utf-16-be", errors="surrogatepass"), b"\x00\x20"
    else:
        codec = ctx.text_codec
        try:
            data = codec.encode(value)
        except UnicodeEncodeError as exc:
            raise FieldEncodeError(
                f"character {value[exc.start]!r} of {value!r} is not in code page {codec.name}"
            ) from None
        pad = codec.pad
    if len(data) > ft.size:
        raise FieldEncodeError(
            f"{value!r} needs {len(data)} bytes but PIC {ft.picture} holds {ft.size}"
        )
    fill = pad * ((ft.size - len(data)) // len(pad))
    return fill + data if ft.justified_right else data + fill


# --- zoned and edited numbers (DISPLAY) ------------------------------------------------


def _numeric_text(ft: FieldType, raw: bytes, ctx: DecodeContext) -> str:
    if ft.usage == "NATIONAL":
        try:
            return raw.decode("utf-16-be").replace("\x00", " ")
        except UnicodeDecodeError:
            raise _fail("invalid UTF-16 in a national number", raw) from None
    if ctx.is_ebcdic:
        return raw.translate(_EBCDIC_TO_TEXT).decode("latin-1")
    return raw.decode("latin-1").replace("\x00", " ")


def _numeric_bytes(ft: FieldType, text: str, ctx: DecodeContext) -> bytes:
    if ft.usage == "NATIONAL":
        return text.encode("utf-16-be")
    data = text.encode("latin-1")
    return data.translate(_TEXT_TO_EBCDIC) if ctx.is_ebcdic else data


def _decode_zoned(ft: FieldType, text: str, raw: bytes, ctx: DecodeContext) -> int | Decimal | None:
    s = text.strip(" ")
    if not s:
        if ft.blank_when_zero or (ft.scale > 0 and not ft.explicit_point):
            return _make(ft, 0)  # Cobrix reads a blank implied-decimal number as zero
        return None
    sign: str | None = None
    if s[0] in "+-":
        sign, s = s[0], s[1:].strip(" ")
    elif s[-1] in "+-":
        sign, s = s[-1], s[:-1].strip(" ")
    if not s:
        raise _fail("a sign without digits", raw)
    neg = sign == "-"
    punched = False
    digits: list[str] = []
    point_at: int | None = None
    last = len(s) - 1
    for i, ch in enumerate(s):
        if "0" <= ch <= "9":
            digits.append(ch)
            continue
        op = _OVERPUNCH.get(ch)
        if op is not None:
            if sign is not None or punched:
                raise _fail("more than one sign", raw)
            if ctx.strict_sign_overpunching:
                if not ft.signed or ft.sign_separate:
                    raise _fail("sign overpunch in a field without an overpunched sign", raw)
                if i != (0 if ft.sign_position == "leading" else last):
                    raise _fail("sign overpunch away from the sign position", raw)
            digits.append(str(op[0]))
            neg, punched = op[1], True
            continue
        if ch in ".," and ft.explicit_point and point_at is None:
            point_at = len(digits)
            continue
        raise _fail(f"invalid character {ch!r} in a number", raw)
    if not digits:
        raise _fail("no digits in a number", raw)
    if neg and not ft.signed:
        raise _fail("negative value in an unsigned field", raw)
    n = int("".join(digits))
    if ft.explicit_point:
        frac = len(digits) - point_at if point_at is not None else 0
        if frac > ft.scale:
            raise _fail(f"{frac} decimals where the picture has {ft.scale}", raw)
        n *= 10 ** (ft.scale - frac)
    if n >= ft.max_abs_unscaled:
        raise _fail(f"more than the {ft.digits} digits of the picture", raw)
    return _make(ft, -n if neg else n)


def _encode_zoned(ft: FieldType, n: int, ctx: DecodeContext = DEFAULT_CONTEXT) -> str:
    neg = n < 0
    s = str(abs(n)).rjust(ft.digits, "0")
    if ft.explicit_point:
        k = ft.digits - ft.scale
        s = s[:k] + ("," if ft.decimal_point_is_comma else ".") + s[k:]
    if ft.sign_separate:
        c = "-" if neg else "+"
        return c + s if ft.sign_position == "leading" else s + c
    if ft.signed:
        idx = 0 if ft.sign_position == "leading" else len(s) - 1
        if not s[idx].isdigit():  # "999." with trailing sign: punch the last digit
            idx -= 1
        if not ctx.is_ebcdic and ctx.ascii_sign_convention == "gnucobol":
            punches = _PUNCH_NEG_GNU if neg else "0123456789"
        else:
            punches = _PUNCH_NEG if neg else _PUNCH_POS
        punch = punches[int(s[idx])]
        s = s[:idx] + punch + s[idx + 1 :]
    return s


def _decode_edited(ft: FieldType, text: str, raw: bytes) -> int | Decimal | None:
    if not text.strip(" *"):
        digit_roles = [p.role for p in ft.edit if p.role in _DIGIT_ROLES]
        if ft.blank_when_zero or all(r in _SUPPRESSING for r in digit_roles):
            return _make(ft, 0)
        return None
    neg = False
    digits: list[str] = []
    i = 0
    for p in ft.edit:
        chunk = text[i : i + p.width]
        i += p.width
        role = p.role
        if role == "digit":
            if not chunk.isdigit():
                raise _fail(f"invalid character {chunk!r} at a digit position", raw)
            digits.append(chunk)
        elif role in ("zero", "star", "float"):
            if chunk.isdigit():
                digits.append(chunk)
            elif role == "float" and p.symbol in "+-" and chunk in "+-":
                digits.append("0")
                neg = chunk == "-"
            elif chunk in (" ", "*") or (role == "float" and chunk == p.symbol):
                digits.append("0")
            else:
                raise _fail(f"invalid character {chunk!r} at a digit position", raw)
        elif role in ("float_lead", "sign"):
            if chunk == "-":
                neg = True
            elif chunk not in (" ", "+", "$", "*"):
                raise _fail(f"invalid character {chunk!r} at a sign position", raw)
        elif role == "crdb":
            if chunk in ("CR", "DB"):
                neg = True
            elif chunk.strip(" *"):
                raise _fail(f"invalid {chunk!r} where CR/DB or spaces belong", raw)
    n = int("".join(digits))
    if neg and not ft.signed:
        raise _fail("negative value in an unsigned field", raw)
    return _make(ft, -n if neg else n)


def _encode_edited(ft: FieldType, n: int) -> str:
    if n == 0 and ft.blank_when_zero:
        return " " * ft.size
    neg = n < 0
    ds = str(abs(n)).rjust(ft.digits, "0")
    comma = ft.decimal_point_is_comma
    point_char = "," if comma else "."
    star = any(p.role == "star" for p in ft.edit)
    fill = "*" if star else " "
    digit_roles = [p.role for p in ft.edit if p.role in _DIGIT_ROLES]
    if n == 0 and all(r in _SUPPRESSING for r in digit_roles):
        if not star:
            return " " * ft.size
        return "".join(point_char if p.role == "point" else "*" * p.width for p in ft.edit)
    floating = next((p.symbol for p in ft.edit if p.role == "float_lead"), None)
    out: list[str] = []
    k = 0
    suppressing = True
    float_at: int | None = None
    for p in ft.edit:
        role = p.role
        if role in _DIGIT_ROLES:
            d = ds[k]
            k += 1
            if suppressing and role in _SUPPRESSING and d == "0" and not p.after_point:
                if role == "float":
                    float_at = len(out)
                out.append(" " if role == "float" else fill)
                continue
            suppressing = False
            out.append(d)
        elif role == "float_lead":
            float_at = len(out)
            out.append(" ")
        elif role == "point":
            suppressing = False
            out.append(point_char)
        elif role == "insert":
            if suppressing:
                if floating is not None and float_at is not None:
                    float_at = len(out)
                    out.append(" ")
                else:
                    out.append(fill)
            else:
                out.append({"B": " ", "0": "0", "/": "/"}.get(p.symbol, "." if comma else ","))
        elif role == "sign":
            out.append(("-" if neg else "+") if p.symbol == "+" else ("-" if neg else " "))
        elif role == "crdb":
            out.append(p.symbol if neg else "  ")
        elif role == "currency":
            out.append("$")
    if floating is not None and float_at is not None:
        if floating == "+":
            out[float_at] = "-" if neg else "+"
        elif floating == "-":
            out[float_at] = "-" if neg else " "
        else:
            out[float_at] = "$"
    return "".join(out)


# --- packed decimal --------------------------------------------------------------------


def _decode_packed(ft: FieldType, raw: bytes) -> int | Decimal:
    h = raw.hex()
    body, sign = h[:-1], h[-1]
    if not body.isdigit():
        raise _fail("invalid digit nibble in packed decimal", raw)
    if sign in "cfae":
        neg = False
    elif sign in "db":
        neg = True
    else:
        raise _fail(f"invalid sign nibble {sign.upper()} in packed decimal", raw)
    if neg and not ft.signed:
        raise _fail("negative value in an unsigned field", raw)
    n = int(body)
    if n >= ft.max_abs_unscaled:
        raise _fail(f"packed value {n} has more than the {ft.digits} digits of the picture", raw)
    return _make(ft, -n if neg else n)


# --- floating point --------------------------------------------------------------------


def _decode_float(ft: FieldType, raw: bytes, ctx: DecodeContext) -> float:
    fmt = ctx.floating_point_format
    data = raw[::-1] if fmt.endswith("little_endian") else raw
    if fmt.startswith("IEEE"):
        return struct.unpack(">f" if ft.size == 4 else ">d", data)[0]
    bits = 8 * ft.size
    fbits = bits - 8
    w = int.from_bytes(data, "big")
    exp = (w >> fbits) & 0x7F
    frac = w & ((1 << fbits) - 1)
    v = math.ldexp(frac, 4 * (exp - 64) - fbits)
    if ft.size == 4 and v > _FLOAT32_MAX:
        # IBM single precision reaches 7.2E75; the canonical type (Avro float) does not
        raise _fail(f"COMP-1 value {v:.7G} is beyond the range of a 32-bit float", raw)
    return -v if w >> (bits - 1) else v


_FLOAT32_MAX = struct.unpack(">f", b"\x7f\x7f\xff\xff")[0]


def _encode_float(ft: FieldType, value: Any, ctx: DecodeContext) -> bytes:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise FieldEncodeError(f"a USAGE {ft.usage} field holds a number, got {value!r}")
    v = float(value)
    fmt = ctx.floating_point_format
    if fmt.startswith("IEEE"):
        try:
            data = struct.pack(">f" if ft.size == 4 else ">d", v)
        except OverflowError:
            raise FieldEncodeError(f"{value} is out of range of a {ft.usage} float") from None
    else:
        data = _ibm_float(v, ft.size, ft.usage)
    return data[::-1] if fmt.endswith("little_endian") else data


def _ibm_float(v: float, size: int, usage: str) -> bytes:
    """IBM System/360 hexadecimal floating point (sign, excess-64 base-16 exponent)."""
    if not math.isfinite(v):
        raise FieldEncodeError(f"{v} has no IBM hexadecimal floating-point form")
    bits = 8 * size
    fbits = bits - 8
    sign = 1 if math.copysign(1.0, v) < 0 else 0
    if v == 0:
        return (sign << (bits - 1)).to_bytes(size, "big")
    m, e = math.frexp(abs(v))  # abs(v) = m * 2**e, 0.5 <= m < 1
    exp16 = -(-e // 4)  # ceil(e / 4)
    shift = 4 * exp16 - e  # 0..3: the fraction is m / 2**shift, in [1/16, 1)
    frac = round(math.ldexp(m, fbits - shift))
    if frac >> fbits:  # rounding carried into a new hex digit
        frac >>= 4
        exp16 += 1
    biased = exp16 + 64
    if biased == 128 and abs(v) <= 16.0**63:  # 16**63: the double the largest IBM double decodes to
        biased, frac = 127, (1 << fbits) - 1  # (1 - 16**-14) * 16**63, that largest value again
    if not 0 <= biased <= 127:
        raise FieldEncodeError(f"{v} is out of the range of an IBM {usage} float")
    return ((sign << (bits - 1)) | (biased << fbits) | frac).to_bytes(size, "big")
