"""Simple types: XSD simple type -> Avro type, lexical form <-> typed Python value.

The converters are compiled once per simple type; decoding raises ``ValueError`` with a
message naming the offending value, which the record decoder turns into an
:class:`XmlValidationError` carrying the line and the path.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from .facets import decimal_digits

XS = "http://www.w3.org/2001/XMLSchema"

#: XSD built-in type (local name) -> scalar kind
BUILTIN_KINDS: dict[str, str] = {
    "boolean": "boolean",
    "byte": "int", "short": "int", "int": "int", "unsignedByte": "int", "unsignedShort": "int",
    "long": "long", "integer": "long", "nonNegativeInteger": "long", "positiveInteger": "long",
    "negativeInteger": "long", "nonPositiveInteger": "long", "unsignedInt": "long",
    "unsignedLong": "long",
    "float": "float", "double": "double",
    "decimal": "decimal",
    "date": "date", "time": "time", "dateTime": "datetime", "dateTimeStamp": "datetime",
    "base64Binary": "base64", "hexBinary": "hex",
}  # fmt: skip

#: inclusive bounds of the bounded XSD integer types
INTEGER_BOUNDS: dict[str, tuple[int | None, int | None]] = {
    "byte": (-(2**7), 2**7 - 1), "short": (-(2**15), 2**15 - 1), "int": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1), "integer": (-(2**63), 2**63 - 1),
    "unsignedByte": (0, 2**8 - 1), "unsignedShort": (0, 2**16 - 1),
    "unsignedInt": (0, 2**32 - 1), "unsignedLong": (0, 2**63 - 1),
    "nonNegativeInteger": (0, 2**63 - 1), "positiveInteger": (1, 2**63 - 1),
    "negativeInteger": (-(2**63), -1), "nonPositiveInteger": (-(2**63), 0),
}  # fmt: skip

#: the XSD's own bounds of the integer types whose value space is larger than the Avro long
#: they map to (None: unbounded)
XSD_INTEGER_BOUNDS: dict[str, tuple[int | None, int | None]] = {
    "integer": (None, None), "unsignedLong": (0, 2**64 - 1), "nonNegativeInteger": (0, None),
    "positiveInteger": (1, None), "negativeInteger": (None, -1), "nonPositiveInteger": (None, 0),
}  # fmt: skip


class BeyondAvroType(ValueError):
    """A value the XSD allows that the Avro type its XSD type maps to cannot hold."""

    hint = ("the XSD allows this value, but the Avro long cannot hold it; to carry it, declare the element"
            " or attribute as xs:decimal or xs:string in a copy of the schema")


class BeyondDateRange(ValueError):
    """A date or dateTime the XSD allows whose year is outside 0001..9999 (year 0 and
    negative years are XSD 1.1's, later ones XSD's too), which Python's date cannot hold."""

    hint = ("the XSD allows this year, but the translator holds dates in years 0001..9999; to carry it, declare"
            " the element or attribute as xs:string in a copy of the schema")


def _beyond_years(kind: str, text: str, year: str) -> BeyondDateRange:
    return BeyondDateRange(f"{text!r}: an xs:{kind} whose year {int(year)} is outside 0001..9999, the years the"
                           " translator's dates hold")


AVRO_TYPES: dict[str, Any] = {
    "string": "string", "decimal_text": "string", "boolean": "boolean",
    "int": "int", "long": "long", "float": "float", "double": "double",
    "date": {"type": "int", "logicalType": "date"},
    "time": {"type": "long", "logicalType": "time-micros"},
    "datetime": {"type": "long", "logicalType": "timestamp-micros"},
    "base64": "bytes", "hex": "bytes",
}  # fmt: skip


@dataclass(eq=False)
class Scalar:
    """A simple type as the translator sees it."""

    kind: str  # a value of BUILTIN_KINDS, "string", "decimal_text", "enum" or "list"
    builtin: str = "string"  # the nearest XSD built-in type (local name)
    white_space: str = "preserve"
    precision: int | None = None
    scale: int | None = None
    symbols: tuple[str, ...] = ()
    enum_name: str | None = None
    enum_namespace: str | None = None
    item: Scalar | None = None
    xsd_type: Any = None  # the xmlschema type, kept for facet checks (None for built-ins)
    check_facets: bool = False
    decode: Callable[[str], Any] = field(init=False, repr=False)
    encode: Callable[[Any], str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.decode = _decoder(self)
        self.encode = _encoder(self)

    @property
    def enum_fullname(self) -> str:
        return f"{self.enum_namespace}.{self.enum_name}" if self.enum_namespace else str(self.enum_name)


# -- decoding -------------------------------------------------------------------------------

# ASCII digits only (re.ASCII): the XSD's lexical forms are [0-9], and int(), Decimal() and
# date() read other scripts' digits ('\u0662\u0660\u0662\u0660-01-01' was the date 2020-01-01). A year of more
# than four digits has no leading zero (XSD 1.1 Part 2, 3.3.7.2: '00012-01-01' is no date)
_DECIMAL = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$", re.ASCII)
_INTEGER = re.compile(r"^[+-]?\d+$", re.ASCII)
_YEAR = r"-?(?:[1-9]\d{4,}|\d{4})"
_DATE = re.compile(rf"^({_YEAR})-(\d\d)-(\d\d)(Z|[+-]\d\d:\d\d)?$", re.ASCII)
_TIME = re.compile(r"^(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)?$", re.ASCII)
_DATETIME = re.compile(rf"^({_YEAR}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)?$", re.ASCII)
#: the common forms that ``date.fromisoformat`` / ``datetime.fromisoformat`` read to the same
#: value as the parsers below (a four-digit year, at most microseconds, UTC or no zone; an
#: offset is left to them: they keep its text as the zone's name), several times faster
_DATE_ISO = re.compile(r"\d{4}-\d\d-\d\d\Z", re.ASCII)
_DATETIME_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?Z?\Z", re.ASCII)
_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}
_FLOATS = {"INF": float("inf"), "+INF": float("inf"), "-INF": float("-inf"), "NaN": float("nan")}


_OFFSETS: dict[str, timezone] = {}


def _tz(text: str | None) -> timezone | None:
    """The zone of a lexical ``Z`` / ``+hh:mm``; ``+00:00`` stays distinct from ``Z`` (``UTC``)."""
    if not text:
        return None
    if text == "Z":
        return UTC
    zone = _OFFSETS.get(text)
    if zone is None:
        sign = -1 if text[0] == "-" else 1
        hours, minutes = int(text[1:3]), int(text[4:6])
        if hours > 14 or minutes > 59 or (hours == 14 and minutes):
            raise ValueError(f"time zone {text} is outside -14:00..+14:00")
        zone = timezone(sign * timedelta(hours=hours, minutes=minutes), text)
        if len(_OFFSETS) < 1000:
            _OFFSETS[text] = zone
    return zone


def _midnight_24(hours: str, minutes: str, seconds: str, fraction: str | None) -> bool:
    """Whether a time of day is the lexical ``24:00:00`` (any zero fraction), which XSD allows
    for the end of a day: the value ``00:00:00`` (of the next day, for a dateTime)."""
    return hours == "24" and minutes == seconds == "00" and not (fraction or ".").strip(".0")


def _invalid(kind: str, text: str, exc: Exception) -> ValueError:
    return ValueError(f"{text!r} is not a valid xs:{kind} ({exc})")


def parse_date(text: str) -> date:
    if _DATE_ISO.match(text):
        try:
            return date.fromisoformat(text)
        except ValueError:
            pass  # year 0, month 13...: said below
    m = _DATE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not an xs:date (YYYY-MM-DD)")
    if not 1 <= int(m[1]) <= 9999:
        raise _beyond_years("date", text, m[1])
    try:
        _tz(m[4])  # the zone is not kept (an Avro date has none), but checked: +14:01 is none
        return date(int(m[1]), int(m[2]), int(m[3]))
    except (ValueError, OverflowError) as exc:  # year 0 or beyond 9999, month 13...
        raise _invalid("date", text, exc) from None


def parse_time(text: str) -> time:
    """An ``xs:time``; a zone is kept as the value's ``tzinfo`` (the wall-clock time is not shifted)."""
    m = _TIME.match(text)
    if not m:
        raise ValueError(f"{text!r} is not an xs:time (hh:mm:ss)")
    micros = int((m[4] or ".0")[1:7].ljust(6, "0"))
    try:
        if _midnight_24(m[1], m[2], m[3], m[4]):  # 24:00:00 is 00:00:00 (XSD 1.1 Part 2, 3.3.8)
            return time(0, 0, 0, 0, _tz(m[5]))
        return time(int(m[1]), int(m[2]), int(m[3]), micros, _tz(m[5]))
    except (ValueError, OverflowError) as exc:  # hour 24, minute 60...
        raise _invalid("time", text, exc) from None


def parse_datetime(text: str) -> datetime:
    """An ``xs:dateTime``; a zone is kept as the value's ``tzinfo`` (``+01:00`` stays ``+01:00``)."""
    if _DATETIME_ISO.match(text):
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            pass  # hour 24, day 31 of April...: said below
    m = _DATETIME.match(text)
    if not m:
        raise ValueError(f"{text!r} is not an xs:dateTime (YYYY-MM-DDThh:mm:ss)")
    y, mo, d = m[1].rsplit("-", 2)
    if not 1 <= int(y) <= 9999:
        raise _beyond_years("dateTime", text, y)
    hh, mm, ss = m[2].split(":")
    micros = int((m[3] or ".0")[1:7].ljust(6, "0"))
    try:
        if _midnight_24(hh, mm, ss, m[3]):  # 24:00:00 is 00:00:00 of the next day (XSD 1.1 Part 2, 3.3.7)
            day = datetime(int(y), int(mo), int(d), 0, 0, 0, 0, _tz(m[4]))
            if (day.year, day.month, day.day) != (9999, 12, 31):
                return day + timedelta(days=1)
            year_after = True
        else:
            return datetime(int(y), int(mo), int(d), int(hh), int(mm), int(ss), micros, _tz(m[4]))
    except (ValueError, OverflowError) as exc:
        raise _invalid("dateTime", text, exc) from None
    assert year_after
    raise _beyond_years("dateTime", text, "10000")


def _integer(name: str) -> Callable[[str], int]:
    low, high = INTEGER_BOUNDS.get(name, (None, None))

    def decode(text: str) -> int:
        # ASCII digits alone (the common form) need no regular expression
        if not (text.isdigit() and text.isascii()) and not _INTEGER.match(text):
            raise ValueError(f"{text!r} is not an xs:{name}")
        value = int(text)
        if (low is not None and value < low) or (high is not None and value > high):
            xlow, xhigh = XSD_INTEGER_BOUNDS.get(name, (low, high))
            if (xlow is None or value >= xlow) and (xhigh is None or value <= xhigh):
                raise BeyondAvroType(f"{text} is beyond the Avro long that xs:{name} is mapped to ({low}..{high})")
            raise ValueError(f"{text} is out of the range of xs:{name} ({xlow if xlow is not None else ''}.."
                             f"{xhigh if xhigh is not None else ''})")
        return value

    return decode


def plain_int_digits(scalar: Scalar) -> tuple[int, int]:
    """For an integer type without facets to check: (digits, low), a text of fewer ASCII
    digits than ``digits`` decodes to ``int(text)`` when that is at least ``low`` (in range,
    whatever the whiteSpace facet; ``low`` is 1 for ``xs:positiveInteger``, else at most 0),
    which the generated converters then write inline; (0, 0) for other types."""
    if scalar.kind not in ("int", "long") or (scalar.check_facets and scalar.xsd_type is not None):
        return 0, 0
    low, high = INTEGER_BOUNDS.get(scalar.builtin, (None, None))
    return (len(str(high)), low) if low is not None and high is not None and high > 0 else (0, 0)


def _decimal(scalar: Scalar) -> Callable[[str], Any]:
    scale = scalar.scale or 0
    precision = scalar.precision or 38
    total_digits = precision - scale  # the model sets precision = totalDigits + fractionDigits
    quantum = Decimal(1).scaleb(-scale)
    context = Context(prec=precision + 1) if precision >= 28 else None  # the default context holds 28 digits
    # a money-like scale (up to 6, the rule xml encode writes by) has every digit of the scale,
    # as a COBOL PIC 9(n)V99 field; a larger one keeps the document's own digits
    pad = scale <= 6

    def decode(text: str) -> Decimal:
        # the common case from the text alone (as_tuple() costs four times Decimal(text)): as
        # many fraction characters as the scale (no more, when it is not padded), no more
        # characters (but one dot) than the digits allowed; and of those, unsigned ASCII digits
        # with at most one dot need not even the regular expression
        plain = text.replace(".", "", 1)
        dot = text.find(".")
        fraction = 0 if dot < 0 else len(text) - dot - 1
        if (fraction == scale if pad else fraction <= scale) and len(plain) <= total_digits:
            if plain.isdigit() and plain.isascii():
                return Decimal(text)
            common = True
        else:
            common = False
        if not _DECIMAL.match(text):
            raise ValueError(f"{text!r} is not an xs:decimal")
        value = Decimal(text)
        if common:
            return value
        _, digits, exponent = value.as_tuple()
        if -exponent > scale or len(digits) > total_digits:  # type: ignore[operator]  # finite: matched the regex
            total, fraction = decimal_digits(value)  # trailing zeros do not count
            if fraction > scale:
                raise ValueError(f"{text} has more than {scale} fraction digits (fractionDigits {scale})")
            if total > total_digits:
                raise ValueError(f"{text} has more than {total_digits} digits (totalDigits {total_digits})")
            if -exponent > scale:  # type: ignore[operator]  # trailing zeros beyond the scale: drop them
                return value.quantize(quantum, context=context)
        if pad and -exponent < scale:  # type: ignore[operator]
            return value.quantize(quantum, context=context)  # 12.5 -> 12.50, as copybook decode writes it
        return value  # the document's own digits (ISO 20022's 12.34 at scale 17; Avro writers pad)

    return decode


#: the characters of a float's lexical form other than INF and NaN
_FLOAT_CHARS = "+-.0123456789eE"


def _text_checks(scalar: Scalar) -> tuple[bool, Callable[[str, Any], None] | None]:
    """Whether a straight-to-Avro reading may serve ``scalar`` (its facets read the text
    alone), and the check of those facets (None: none)."""
    if not scalar.check_facets or scalar.xsd_type is None:
        return True, None
    check = _facet_checks(scalar)
    return check is None or getattr(check, "text_only", False), check


def decimal_avro_bytes(scalar: Scalar) -> Callable[[str], bytes | None] | None:
    """For a decimal type whose facets read the text alone: a function giving the Avro
    ``decimal`` bytes (big-endian two's complement of the unscaled value, as
    ``translators/xml/avro.py`` writes them) straight from a text of unsigned ASCII digits
    with exactly the scale's fraction digits within ``totalDigits`` (the digits' ``int``, no
    ``Decimal``), after the facet checks; None for any other text (then ``decode`` and the
    encoder). Those texts are the common case of ``_decimal``'s decode, which gives
    ``Decimal(text)``, whose unscaled value is that ``int``. None when the type has facets
    that read the value (bounds, enumerations).

    Per text: a test of the point's place and one ``isdigit`` over the digits; a single
    ``xs:pattern`` is matched here (its compiled ``match``, no call of the check around it),
    and the bytes come from ``int.to_bytes`` unsigned with one byte more than the value's
    bits need (the top bit clear: the two's complement of a non-negative value)."""
    if scalar.kind != "decimal":
        return None
    usable, check = _text_checks(scalar)
    if not usable:
        return None
    match = getattr(check, "pattern_match", None)  # a single xs:pattern: matched inline
    scale = scalar.scale or 0
    total_digits = (scalar.precision or 38) - scale
    longest = total_digits + (1 if scale else 0)  # the point
    point = -scale - 1

    def avro_bytes(text: str) -> bytes | None:
        if scale:
            if not (scale < len(text) <= longest and text[point] == "."):
                return None
            plain = text.replace(".", "", 1)  # the point's, or another one: then no digits alone
        elif len(text) <= longest:
            plain = text
        else:
            return None
        if not (plain.isdigit() and plain.isascii()):
            return None
        if match is not None:
            if not match(text):
                check(text, None)  # type: ignore[misc]  # raises: the pattern's own message
        elif check is not None:
            check(text, None)
        unscaled = int(plain)
        return unscaled.to_bytes(unscaled.bit_length() // 8 + 1, "big")

    return avro_bytes


_DAYS_SHIFT = date(1970, 1, 1).toordinal()
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def date_avro_days(scalar: Scalar) -> Callable[[str], int | None] | None:
    """For an ``xs:date`` type whose facets read the text alone: a function giving the Avro
    ``date`` (days since 1970-01-01) straight from a text of the common form
    (``YYYY-MM-DD``, read by ``date.fromisoformat`` as ``parse_date`` reads it), after the
    facet checks, with no ``date`` object given on to the encoder; None for any other text
    (then ``decode`` and the encoder). None when the type has facets that read the value."""
    if scalar.kind != "date":
        return None
    usable, check = _text_checks(scalar)
    if not usable:
        return None
    from_iso = date.fromisoformat

    def avro_days(text: str) -> int | None:
        # the form of _DATE_ISO, told by its separators (date.fromisoformat refuses anything
        # but ASCII digits around them: tests/translators/xml/test_xml_scalar_fast_paths.py),
        # a third of the regular expression's time
        if len(text) != 10 or text[4] != "-" or text[7] != "-" or not text.isascii():
            return None
        try:
            days = from_iso(text).toordinal() - _DAYS_SHIFT
        except ValueError:
            return None  # year 0, month 13...: decode says it
        if check is not None:
            check(text, None)
        return days

    return avro_days


def datetime_avro_micros(scalar: Scalar) -> Callable[[str], int | None] | None:
    """For an ``xs:dateTime`` type whose facets read the text alone: a function giving the
    Avro ``timestamp-micros`` straight from a UTC text of the common form
    (``YYYY-MM-DDThh:mm:ss[.ffffff]Z``, read by ``datetime.fromisoformat`` as
    ``parse_datetime`` reads it), as the encoder computes it for a datetime with a zone;
    None for any other text (no zone: local time, which the encoder computes; an offset...).
    None when the type has facets that read the value."""
    if scalar.kind != "datetime":
        return None
    usable, check = _text_checks(scalar)
    if not usable:
        return None
    from_iso = datetime.fromisoformat

    def avro_micros(text: str) -> int | None:
        # the form of _DATETIME_ISO ending in Z, told by its length and separators (as avro_days)
        size = len(text)
        if not ((size == 20 or 22 <= size <= 27 and text[19] == ".") and text[-1] == "Z" and text[10] == "T"
                and text[4] == text[7] == "-" and text[13] == text[16] == ":" and text.isascii()):
            return None
        try:
            delta = from_iso(text) - _EPOCH
        except ValueError:
            return None  # hour 24, day 31 of April...: decode says it
        if check is not None:
            check(text, None)
        return (delta.days * 86400 + delta.seconds) * 1000000 + delta.microseconds

    return avro_micros


def _float(text: str) -> float:
    special = _FLOATS.get(text)
    if special is not None:
        return special
    if not text or text.strip(_FLOAT_CHARS):
        raise ValueError(f"{text!r} is not an xs:double")
    return float(text)


def _boolean(text: str) -> bool:
    try:
        return _BOOLEANS[text]
    except KeyError:
        raise ValueError(f"{text!r} is not an xs:boolean (true, false, 1, 0)") from None


def _base64(text: str) -> bytes:
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except binascii.Error:
        raise ValueError(f"{text[:40]!r} is not xs:base64Binary") from None


def _hex(text: str) -> bytes:
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise ValueError(f"{text[:40]!r} is not xs:hexBinary") from None


#: XML's whitespace (#x20, #x9, #xA, #xD), the whitespace facets' (str.split() splits at more:
#: a no-break space or U+2003 is data, 'NEW\u00a0' no 'NEW' and '12\u00a0' no integer)
_XML_SPACE = re.compile(r"[ \t\n\r]+")


def _collapsed(text: str) -> str:
    return _XML_SPACE.sub(" ", text).strip(" ")


def _collapse(text: str) -> str:
    """``whiteSpace collapse``: runs of whitespace as one space, none around."""
    if text.isprintable() and " " not in text:  # no tab, newline or carriage return either
        return text
    return _collapsed(text)


#: the decode of a string type whose whitespace collapses, with nothing else to check (the
#: generated converters test its common case inline: decoder.py, _inline)
collapse_text = _collapse


def _normaliser(white_space: str) -> Callable[[str], str] | None:
    if white_space == "collapse":
        return _collapse
    if white_space == "replace":
        return lambda text: text.replace("\t", " ").replace("\n", " ").replace("\r", " ")
    return None


#: kinds whose lexical forms hold no whitespace: when the text as written is accepted, its
#: collapsed form (``whiteSpace collapse``) has the same value (at most a trailing newline,
#: which their parsers ignore, differs), so collapsing waits until the text is refused
_NO_SPACE_KINDS = frozenset({"int", "long", "decimal", "float", "double", "boolean", "date", "time", "datetime"})


def _raw_first(base: Callable[[str], Any]) -> Callable[[str], Any]:
    def decode(text: str) -> Any:
        try:
            return base(text)
        except ValueError:  # maybe whitespace around the value: the collapsed text decides
            return base(_collapsed(text))

    return decode


#: how a facet's value of a kind is read (xmlschema holds dates and times in its own types)
_FACET_PARSERS: dict[str, Callable[[str], Any]] = {"date": parse_date, "time": parse_time, "datetime": parse_datetime}


def _facet_checks(scalar: Scalar) -> Callable[[str, Any], None] | None:
    """The check of ``scalar``'s facets (``facets.compile_checks``); a decimal kind counts its
    digits itself (``_decimal``)."""
    from .facets import compile_checks

    return compile_checks(scalar.xsd_type, digits=scalar.kind != "decimal", parse=_FACET_PARSERS.get(scalar.kind))


def _decoder(scalar: Scalar) -> Callable[[str], Any]:
    kind = scalar.kind
    base: Callable[[str], Any]
    if kind == "list":
        item = scalar.item
        assert item is not None
        def base(text: str) -> list[Any]:
            items = _collapsed(text)
            return [item.decode(part) for part in items.split(" ")] if items else []
    elif kind in ("int", "long"):
        base = _integer(scalar.builtin)
    elif kind == "decimal":
        base = _decimal(scalar)
    elif kind == "decimal_text":
        def base(text: str) -> str:
            if not _DECIMAL.match(text):
                raise ValueError(f"{text!r} is not an xs:decimal")
            return text
    elif kind in ("float", "double"):
        base = _float
    elif kind == "boolean":
        base = _boolean
    elif kind == "date":
        base = parse_date
    elif kind == "time":
        base = parse_time
    elif kind == "datetime":
        base = parse_datetime
    elif kind == "base64":
        base = _base64
    elif kind == "hex":
        base = _hex
    elif kind == "enum":
        symbols = frozenset(scalar.symbols)

        def base(text: str) -> str:
            if text not in symbols:
                raise ValueError(f"{text!r} is not one of {', '.join(scalar.symbols)}")
            return text

        # when it is the whole decoder (nothing to normalise or check): a symbol decodes to
        # itself, which the generated converters test inline (decoder.py, _inline)
        base.enum_symbols = symbols  # type: ignore[attr-defined]
    else:
        base = str
    normalise = _normaliser(scalar.white_space)
    check = None
    if scalar.check_facets and scalar.xsd_type is not None:
        check = _facet_checks(scalar)

    # one closure per combination: this runs for every simple value of every record
    if check is None:
        if normalise is None:
            return base
        if scalar.white_space == "collapse":
            if kind in _NO_SPACE_KINDS:
                raw_first = _raw_first(base)
                if base is _float:  # float(text) for a text of these characters alone (decoder.py, _inline)
                    raw_first.float_chars = _FLOAT_CHARS  # type: ignore[attr-defined]
                return raw_first
            if base is str:
                return _collapse
        return lambda text: base(normalise(text))

    # a string of one xs:pattern and no other facet: the text itself when it matches, which
    # the generated converters test inline (decoder.py, _inline: the pattern's match, no call
    # of this decoder and its check)
    pattern_match = getattr(check, "pattern_match", None) if base is str else None

    if normalise is None:
        def decode_checked(text: str) -> Any:
            value = base(text)
            check(text, value)
            return value

        if pattern_match is not None:
            decode_checked.pattern_match = pattern_match  # type: ignore[attr-defined]
        return decode_checked

    if normalise is _collapse:
        def decode_collapsed(text: str) -> Any:
            if not text.isprintable() or " " in text:  # _collapse inline: one call less per value
                text = _collapsed(text)
            value = base(text)
            check(text, value)
            return value

        if pattern_match is not None:  # inline only for a text with nothing to collapse
            decode_collapsed.pattern_match = pattern_match  # type: ignore[attr-defined]
            decode_collapsed.collapse = True  # type: ignore[attr-defined]
        return decode_collapsed

    def decode(text: str) -> Any:
        text = normalise(text)
        value = base(text)
        check(text, value)
        return value

    return decode


# -- encoding -------------------------------------------------------------------------------


def _fraction(micros: int) -> str:
    return f".{micros:06d}".rstrip("0") if micros else ""


def format_time(value: time) -> str:
    text = f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}{_fraction(value.microsecond)}"
    return text + _format_offset(value.utcoffset(), value.tzinfo)


def format_datetime(value: datetime) -> str:
    """``xs:dateTime`` text keeping the value's own offset (``Z`` for UTC, none when naive)."""
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    return text + _fraction(value.microsecond) + _format_offset(value.utcoffset(), value.tzinfo)


def _format_offset(offset: timedelta | None, zone: Any = None) -> str:
    if offset is None:
        return ""
    if not offset:
        name = zone.tzname(None) if zone is not None and zone is not UTC else None
        return name if name in ("+00:00", "-00:00") else "Z"
    minutes = int(offset.total_seconds() // 60)
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _encoder(scalar: Scalar) -> Callable[[Any], str]:  # noqa: C901 - one branch per kind
    kind = scalar.kind
    if kind == "list":
        item = scalar.item
        assert item is not None
        return lambda value: " ".join(item.encode(v) for v in value)
    if kind in ("int", "long"):
        def encode_int(value: Any) -> str:
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise ValueError(f"{value!r} is not an integer")
            return str(int(value))
        return encode_int
    if kind == "decimal":
        scale = scalar.scale or 0
        quantum = Decimal(1).scaleb(-scale)
        context = Context(prec=(scalar.precision or 38) + 1)
        # every fraction digit of the scale when a pattern may need them or the scale is a
        # money-like one (12.5 -> 12.50); else the value's own digits (ISO 20022's scale 17)
        full_scale = scale <= 6 or has_pattern(scalar.xsd_type)

        def encode_decimal(value: Any) -> str:
            if isinstance(value, bool):
                raise ValueError(f"{value!r} is not a decimal")
            try:
                number = value if isinstance(value, Decimal) else Decimal(str(value))
                scaled = number.quantize(quantum, context=context)
            except (InvalidOperation, ValueError):
                raise ValueError(f"{value!r} is not a decimal with scale {scale}") from None
            if scaled != number:
                raise ValueError(f"{value!r} has more than {scale} fraction digits")
            return format(scaled if full_scale else number, "f")
        return encode_decimal
    if kind == "decimal_text":
        return lambda value: value if isinstance(value, str) else format(Decimal(str(value)), "f")
    if kind in ("float", "double"):
        def encode_float(value: Any) -> str:
            number = float(value)
            if number != number:
                return "NaN"
            if number in (float("inf"), float("-inf")):
                return "INF" if number > 0 else "-INF"
            return repr(number)
        return encode_float
    if kind == "boolean":
        def encode_bool(value: Any) -> str:
            if isinstance(value, str):
                return "true" if _boolean(value) else "false"
            if not isinstance(value, bool):
                raise ValueError(f"{value!r} is not a boolean")
            return "true" if value else "false"
        return encode_bool
    if kind == "date":
        return lambda value: (parse_date(value) if isinstance(value, str) else value).isoformat()
    if kind == "time":
        return lambda value: format_time(parse_time(value) if isinstance(value, str) else value)
    if kind == "datetime":
        def encode_datetime(value: Any) -> str:
            if isinstance(value, str):
                value = parse_datetime(value)
            if not isinstance(value, datetime):
                raise ValueError(f"{value!r} is not a date-time")
            return format_datetime(value)
        return encode_datetime
    if kind == "base64":
        def encode_b64(value: Any) -> str:
            raw = _base64(value) if isinstance(value, str) else bytes(value)
            return base64.b64encode(raw).decode("ascii")
        return encode_b64
    if kind == "hex":
        def encode_hex(value: Any) -> str:
            raw = _base64(value) if isinstance(value, str) else bytes(value)  # JSON: base64
            return raw.hex().upper()
        return encode_hex

    def encode_str(value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError(f"{value!r} is not a string")
        return value
    return encode_str


def has_pattern(xsd_type: Any) -> bool:
    """Whether a simple type or one of its bases restricts the lexical form with a pattern."""
    while xsd_type is not None and getattr(xsd_type, "facets", None) is not None:
        if f"{{{XS}}}pattern" in xsd_type.facets:
            return True
        xsd_type = getattr(xsd_type, "base_type", None)
    return False


def avro_type(scalar: Scalar, defined: set[str]) -> Any:
    """The Avro type of ``scalar``; named types (enums) are defined once, then referenced."""
    if scalar.kind == "list":
        assert scalar.item is not None
        return {"type": "array", "items": avro_type(scalar.item, defined)}
    if scalar.kind == "decimal":
        return {"type": "bytes", "logicalType": "decimal", "precision": scalar.precision or 38,
                "scale": scalar.scale or 0}
    if scalar.kind == "enum":
        full = scalar.enum_fullname
        if full in defined:
            return full
        defined.add(full)
        schema: dict[str, Any] = {"type": "enum", "name": scalar.enum_name, "symbols": list(scalar.symbols)}
        if scalar.enum_namespace:
            schema["namespace"] = scalar.enum_namespace
        return schema
    return AVRO_TYPES[scalar.kind]
