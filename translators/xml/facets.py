"""Facet checks compiled from a simple type's restriction chain (patterns, lengths, bounds,
enumerations), so that streaming decoding does not call xmlschema for every value.

A facet this module does not compile (assertions, XSD 1.1 extras) makes the check fall back
to xmlschema's own validation of the value.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

XS = "{http://www.w3.org/2001/XMLSchema}"
_HANDLED = {f"{XS}{n}" for n in (
    "pattern", "length", "minLength", "maxLength", "minInclusive", "maxInclusive", "minExclusive",
    "maxExclusive", "enumeration", "whiteSpace", "totalDigits", "fractionDigits")}

#: a check is given the (normalised) text and its decoded value; one marked ``text_only`` reads
#: the text alone (patterns, lengths of a value that is no string, bytes or list, xmlschema's
#: own validation): it may be given ``None`` for the value
Check = Callable[[str, Any], None]


def compile_checks(xsd_type: Any, *, digits: bool = True,
                   parse: Callable[[str], Any] | None = None) -> Check | None:
    """One function checking text (normalised) and its decoded value against every facet.

    ``digits``: check ``totalDigits`` and ``fractionDigits`` (False where the decoder counts
    them itself: a decimal with both, ``scalars._decimal``); ``parse``: the decoder's own
    reading of a bound's or enumeration value's text, for the values (dates, times) that
    xmlschema holds in types of its own, which do not compare with Python's ``date`` and
    ``time`` (a date's maxInclusive was never checked, and a date's enumeration refused every
    value)."""
    from xmlschema.validators import (
        XsdAtomicBuiltin,  # here: importing this module loads no xmlschema
    )

    checks: list[Check] = []
    fallback = False
    current = xsd_type
    seen: set[str] = set()  # a restriction's facet, not its base's (the nearer is the narrower)
    while current is not None and not isinstance(current, XsdAtomicBuiltin):
        facets = getattr(current, "facets", None) or {}
        for name, facet in facets.items():
            if name not in _HANDLED:
                fallback = True
            elif name == f"{XS}pattern":
                checks.append(_patterns(facet.patterns, [p for p in facet.regexps] if hasattr(facet, "regexps") else []))
            elif name in (f"{XS}length", f"{XS}minLength", f"{XS}maxLength"):
                checks.append(_length(name[len(XS):], int(facet.value)))
            elif name in (f"{XS}minInclusive", f"{XS}maxInclusive", f"{XS}minExclusive", f"{XS}maxExclusive"):
                checks.append(_bound(name[len(XS):], _own_value(facet.value, parse)))
            elif name in (f"{XS}totalDigits", f"{XS}fractionDigits") and digits and name not in seen:
                checks.append(_digits(name[len(XS):], int(facet.value)))
            seen.add(name)
        current = getattr(current, "base_type", None)
    enumeration = getattr(xsd_type, "enumeration", None)
    if enumeration:
        allowed = {_own_value(v, parse) for v in enumeration}
        shown = ", ".join(str(v) for v in enumeration[:10])

        def enum_check(text: str, value: Any) -> None:
            if value not in allowed and text not in allowed:
                raise ValueError(f"{text!r} is not one of {shown}")

        checks.append(enum_check)
    if fallback:
        def xmlschema_check(text: str, value: Any) -> None:
            if not xsd_type.is_valid(text):
                reason = next(iter(xsd_type.iter_errors(text)), None)
                raise ValueError(getattr(reason, "reason", None) or f"{text!r} is not valid for {xsd_type}")

        xmlschema_check.text_only = True  # type: ignore[attr-defined]
        checks.append(xmlschema_check)
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]

    def all_checks(text: str, value: Any) -> None:
        for check in checks:
            check(text, value)

    if all(getattr(check, "text_only", False) for check in checks):
        all_checks.text_only = True  # type: ignore[attr-defined]
    return all_checks


def _patterns(patterns: list[Any], sources: list[str]) -> Check:
    def refuse(text: str) -> None:
        shown = " | ".join(sources) or " | ".join(p.pattern for p in patterns)
        raise ValueError(f"{text!r} does not match the pattern {shown}")

    if len(patterns) == 1:  # the common case: no loop per value
        match = patterns[0].match

        def check_one(text: str, value: Any) -> None:
            if not match(text):
                refuse(text)

        check_one.text_only = True  # type: ignore[attr-defined]
        check_one.pattern_match = match  # type: ignore[attr-defined]  # for a caller matching inline (scalars.decimal_avro_bytes)
        return check_one

    def check(text: str, value: Any) -> None:
        for pattern in patterns:
            if pattern.match(text):
                return
        refuse(text)

    check.text_only = True  # type: ignore[attr-defined]
    return check


def _own_value(value: Any, parse: Callable[[str], Any] | None) -> Any:
    """A facet's value as the decoder gives values: xmlschema's dates and times (elementpath's
    types, not Python's) read again from their text by ``parse``; any other value as it is."""
    if parse is None or isinstance(value, str | int | float | Decimal):
        return value
    try:
        return parse(str(value))
    except ValueError:
        return value  # a value the decoder cannot hold (year 0): compared as it is


def decimal_digits(value: Decimal) -> tuple[int, int]:
    """(totalDigits, fractionDigits) of a decimal as XSD counts them (in the value space:
    leading zeros of the integer part and trailing zeros of the fraction do not count)."""
    integer, _, fraction = format(value.copy_abs(), "f").partition(".")
    integer, fraction = integer.lstrip("0"), fraction.rstrip("0")
    return len(integer) + len(fraction), len(fraction)


def _digits(kind: str, limit: int) -> Check:
    """``totalDigits`` / ``fractionDigits`` of an integer or of a decimal kept as its text, as
    XSD counts them in the value space (leading and trailing zeros do not count)."""
    def check(text: str, value: Any) -> None:
        try:
            number = Decimal(text.strip())
        except ArithmeticError:
            return  # not a number: the decoder refuses it
        total, fraction = decimal_digits(number)
        if kind == "totalDigits" and total > limit:
            raise ValueError(f"{text} has more than {limit} digits (totalDigits {limit})")
        if kind == "fractionDigits" and fraction > limit:
            raise ValueError(f"{text} has more than {limit} fraction digits (fractionDigits {limit})")

    check.text_only = True  # type: ignore[attr-defined]
    return check


def _length(kind: str, limit: int) -> Check:
    def check(text: str, value: Any) -> None:
        size = len(value) if isinstance(value, str | bytes | list) else len(text)
        if (kind == "length" and size != limit) or (kind == "minLength" and size < limit) or (
            kind == "maxLength" and size > limit
        ):
            raise ValueError(f"{text[:40]!r} has length {size}, {kind} is {limit}")

    check.text_only = True  # type: ignore[attr-defined]  # the text's length unless the value is a string, bytes or a list
    return check


#: a dateTime without a zone is some time in -14:00..+14:00 (XSD 1.1 Part 2, D.2.3)
_ZONES = (timezone(timedelta(hours=14)), timezone(timedelta(hours=-14)))
_DAY = date(1972, 12, 31)


def _bound(kind: str, limit: Any) -> Check:
    compare = {
        "minInclusive": lambda v, lim: v >= lim, "maxInclusive": lambda v, lim: v <= lim,
        "minExclusive": lambda v, lim: v > lim, "maxExclusive": lambda v, lim: v < lim,
    }[kind]

    def check(text: str, value: Any) -> None:
        try:
            ok = compare(value, limit)
        except TypeError:
            # one with a zone, one without: the facet holds when it holds whatever the missing
            # zone (XSD's partial order: an indeterminate comparison does not satisfy it); times
            # compared as dateTimes of one day (XSD 1.1 Part 2, 3.3.8)
            mine, bound = value, limit
            if isinstance(mine, str) and isinstance(bound, Decimal | int):  # a decimal kept as its text
                ok = compare(Decimal(mine.strip()), bound)
                if not ok:
                    raise ValueError(f"{text} violates {kind} {limit}") from None
                return
            if isinstance(mine, time) and isinstance(bound, time):
                mine, bound = datetime.combine(_DAY, mine), datetime.combine(_DAY, bound)
            if not (isinstance(mine, datetime) and isinstance(bound, datetime)):
                raise ValueError(f"{text} cannot be compared with {kind} {limit}") from None
            if mine.tzinfo is None:
                ok = all(compare(mine.replace(tzinfo=zone), bound) for zone in _ZONES)
            else:
                ok = all(compare(mine, bound.replace(tzinfo=zone)) for zone in _ZONES)
        if not ok:
            raise ValueError(f"{text} violates {kind} {limit}")

    return check
