"""Casts between Avro types: string <-> number <-> date (with formats), decimals exact.

:func:`make_cast` returns the function converting a value of one type into another, or
raises :class:`CastUnsupported` (at load time) when no cast exists. A cast is used in both
directions by asking for the reverse pair with the same ``fmt``; ``fmt`` is the lexical
form of the text (or integer) side:

* numbers as text: a Python format spec (``"06d"``, ``".2f"``, ``"+.3f"``);
* dates, times and timestamps as text or integers: a ``strftime`` pattern (``"%Y%m%d"``);
* booleans as text: ``"TRUE|FALSE"`` (the true and false words), default ``true|false``;
* bytes as text: ``hex``, ``base64`` or a codec name (default ``utf-8``).

Decimals never go through floats: text is read with :class:`~decimal.Decimal`, and a value
that does not fit the target's scale or precision is an error, never rounded.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from datetime import UTC, date, datetime, time
from decimal import Decimal, InvalidOperation
from typing import Any

from .avrotypes import AType

TEXT = {"string", "enum", "uuid"}
INTEGER = {"int", "long"}
REAL = {"float", "double"}
TEMPORAL = {"date", "time", "timestamp"}
SCALAR = TEXT | INTEGER | REAL | TEMPORAL | {"decimal", "boolean", "bytes", "fixed"}
_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
_ISO = {"date": "%Y-%m-%d", "time": "%H:%M:%S"}
_INT = re.compile(r"^[+-]?[0-9]+$")
_DECIMAL = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")

Cast = Callable[[Any], Any]


class CastUnsupported(Exception):
    """No cast exists between two types (with this format)."""


def make_cast(src: AType, dst: AType, fmt: str | None = None) -> Cast:
    """The function converting a ``src`` value to ``dst``; :class:`CastUnsupported` if none."""
    s, d = _group(src), _group(dst)
    if fmt is not None and not isinstance(fmt, str):
        raise CastUnsupported("format must be a string")
    if s == "text" and d == "text":
        return _to_text_kind(dst)
    if s == d and s in ("integer", "real", "boolean", "date", "time", "timestamp"):
        return _finish(dst)
    if s == "decimal" and d == "decimal":
        return _decimal_to(dst)
    if s == "bytes" and d == "bytes":
        return lambda v: bytes(v)
    # text <-> x
    if s == "text":
        return _chain(_parse_text(dst, fmt), _finish(dst))
    if d == "text":
        return _chain(_format_text(src, fmt), _to_text_kind(dst))
    # numbers
    if s in ("integer", "decimal", "real") and d in ("integer", "decimal", "real") and fmt is None:
        return _number_to(dst)
    # integer <-> date/time/timestamp with a pattern
    if s in ("integer", "decimal") and d in TEMPORAL:
        if not fmt:
            raise CastUnsupported(f"a {src.describe()} becomes a {d} only with a format (a strftime pattern such as \"%Y%m%d\")")
        parse = _parse_text(dst, fmt)
        width = len(_sample(d).strftime(fmt))
        return lambda v: parse(str(_integral(v)).zfill(width))
    if s in TEMPORAL and d in ("integer", "decimal"):
        if not fmt:
            raise CastUnsupported(f"a {s} becomes a {dst.describe()} only with a format (a strftime pattern such as \"%Y%m%d\")")
        render = _format_text(src, fmt)
        return _chain(lambda v: int(render(v)), _number_to(dst))
    if s == "boolean" and d == "integer":
        return lambda v: 1 if v else 0
    if s == "integer" and d == "boolean":
        return lambda v: bool(v)
    raise CastUnsupported(f"no cast from {src.describe()} to {dst.describe()}" + (f" with format {fmt!r}" if fmt else ""))


def _group(t: AType) -> str:
    if t.kind in TEXT:
        return "text"
    if t.kind in INTEGER:
        return "integer"
    if t.kind in REAL:
        return "real"
    if t.kind == "fixed":
        return "bytes"
    return t.kind


def _sample(kind: str) -> Any:
    return {"date": date(2000, 1, 1), "time": time(0, 0), "timestamp": datetime(2000, 1, 1, tzinfo=UTC)}[kind]


def _chain(first: Cast, second: Cast) -> Cast:
    return lambda v: second(first(v))


#: the most digits of a whole number made from a decimal, as ``int("9" * 4301)`` refuses
#: more: ``int(Decimal("1e999999999"))`` (a JSON number) would build a number of a billion
#: digits, for minutes and gigabytes, before any range check could refuse it
MAX_DIGITS = 4300


def _integral(v: Any) -> int:
    if isinstance(v, Decimal):
        if v != v.to_integral_value():
            raise ValueError(f"{v} is not a whole number")
        if v.is_finite() and v.adjusted() >= MAX_DIGITS:
            raise ValueError(f"{v} has more than {MAX_DIGITS} digits")
        return int(v)
    return int(v)


def _to_text_kind(dst: AType) -> Cast:
    if dst.kind == "enum":
        symbols = set(dst.symbols)

        def to_enum(v: Any) -> str:
            text = str(v)
            if text not in symbols:
                raise ValueError(f"{text!r} is not a symbol of enum {dst.name} ({', '.join(dst.symbols)})")
            return text

        return to_enum
    return lambda v: v if isinstance(v, str) else str(v)


def _finish(dst: AType) -> Cast:
    """Range and scale checks of the target type (identity otherwise)."""
    if dst.kind in _RANGES:
        low, high = _RANGES[dst.kind]

        def ranged(v: Any) -> int:
            n = _integral(v)
            if not low <= n <= high:
                raise ValueError(f"{n} is out of the range of an Avro {dst.kind}")
            return n

        return ranged
    if dst.kind == "decimal":
        return _decimal_to(dst)
    if dst.kind in REAL:
        return float
    if dst.kind == "timestamp":
        return lambda v: v if v.tzinfo else v.replace(tzinfo=UTC)
    return lambda v: v


def _decimal_to(dst: AType) -> Cast:
    scale, precision = dst.scale or 0, dst.precision or 38
    quantum = Decimal(1).scaleb(-scale)

    def to_decimal(v: Any) -> Decimal:
        d = v if isinstance(v, Decimal) else Decimal(v)
        try:
            q = d.quantize(quantum)
        except InvalidOperation:
            raise ValueError(f"{d} does not fit decimal({precision},{scale})") from None
        if q != d:
            raise ValueError(f"{d} has more than {scale} fraction digits (decimal({precision},{scale})); it is not rounded")
        if len(q.as_tuple().digits) > precision and q != 0:
            raise ValueError(f"{d} has more than {precision} digits (decimal({precision},{scale}))")
        return q

    return to_decimal


def _number_to(dst: AType) -> Cast:
    if dst.kind == "decimal":
        inner = _decimal_to(dst)
        return lambda v: inner(Decimal(repr(v)) if isinstance(v, float) else Decimal(v))
    if dst.kind in INTEGER:
        return _finish(dst)
    return float


def _parse_text(dst: AType, fmt: str | None) -> Cast:
    kind = _group(dst)
    if kind == "integer":

        def parse_int(s: str) -> int:
            text = s.strip()
            if not _INT.match(text):
                raise ValueError(f"{s!r} is not a whole number")
            return int(text)

        return parse_int
    if kind == "decimal":

        def parse_decimal(s: str) -> Decimal:
            try:
                return Decimal(_number_text(s))
            except InvalidOperation:
                raise ValueError(f"{s!r} is not a decimal number") from None

        return parse_decimal
    if kind == "real":
        return lambda s: float(s.strip())
    if kind == "boolean":
        true, false = _bool_words(fmt)

        def parse_bool(s: str) -> bool:
            text = s.strip()
            if text == true:
                return True
            if text == false:
                return False
            raise ValueError(f"{s!r} is neither {true!r} nor {false!r}")

        return parse_bool
    if kind in ("date", "time"):
        pattern = _pattern(fmt, _ISO[kind])

        def parse_temporal(s: str) -> Any:
            parsed = datetime.strptime(s.strip(), pattern)
            return parsed.date() if kind == "date" else parsed.time()

        return parse_temporal
    if kind == "timestamp":
        if fmt:
            pattern = _pattern(fmt, "")

            def parse_timestamp(s: str) -> datetime:
                parsed = datetime.strptime(s.strip(), pattern)
                return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)

            return parse_timestamp
        return lambda s: datetime.fromisoformat(s.strip())
    if kind == "bytes":
        return _bytes_codec(fmt)[0]
    raise CastUnsupported(f"text does not become {dst.describe()}")


def _format_text(src: AType, fmt: str | None) -> Cast:
    kind = _group(src)
    if kind in ("integer", "decimal", "real"):
        spec = fmt if fmt is not None else ("f" if kind == "decimal" else "")
        try:
            format(Decimal("1") if kind == "decimal" else (1 if kind == "integer" else 1.0), spec)
        except ValueError as exc:
            raise CastUnsupported(f"format {fmt!r} is not a Python format spec for {src.describe()}: {exc}") from None
        if kind == "real" and fmt is None:
            return repr
        return lambda v: format(v, spec)
    if kind == "boolean":
        true, false = _bool_words(fmt)
        return lambda v: true if v else false
    if kind in ("date", "time"):
        pattern = _pattern(fmt, _ISO[kind])
        return lambda v: v.strftime(pattern)
    if kind == "timestamp":
        if fmt:
            pattern = _pattern(fmt, "")
            return lambda v: (v.astimezone(UTC) if v.tzinfo else v).strftime(pattern)
        return lambda v: v.isoformat()
    if kind == "bytes":
        return _bytes_codec(fmt)[1]
    raise CastUnsupported(f"{src.describe()} does not become text")


def _pattern(fmt: str | None, default: str) -> str:
    if fmt is None:
        return default
    if "%" not in fmt:
        raise CastUnsupported(f"format {fmt!r} is not a strftime pattern (e.g. \"%Y%m%d\")")
    return fmt


def _bool_words(fmt: str | None) -> tuple[str, str]:
    if fmt is None:
        return "true", "false"
    true, sep, false = fmt.partition("|")
    if not sep or not true or not false or true == false:
        raise CastUnsupported(f"format {fmt!r} for a boolean must be TRUE_WORD|FALSE_WORD, e.g. \"Y|N\"")
    return true, false


def _bytes_codec(fmt: str | None) -> tuple[Cast, Cast]:
    name = (fmt or "utf-8").lower()
    if name == "hex":
        return (lambda s: binascii.unhexlify(s.strip())), (lambda b: bytes(b).hex().upper())
    if name == "base64":
        return (lambda s: base64.b64decode(s.strip(), validate=True)), (lambda b: base64.b64encode(bytes(b)).decode("ascii"))
    try:
        "".encode(name)
    except LookupError:
        raise CastUnsupported(f"format {fmt!r} for bytes must be hex, base64 or a codec name") from None
    return (lambda s: s.encode(name)), (lambda b: bytes(b).decode(name))


def _number_text(s: str) -> str:
    text = s.strip()
    if not _DECIMAL.match(text):
        raise InvalidOperation
    return text


def is_scalar(t: AType) -> bool:
    return t.kind in SCALAR
