"""Facet checks compiled from a simple type's restriction chain (patterns, lengths, bounds,
enumerations), so that streaming decoding does not call xmlschema for every value.

A facet this module does not compile (assertions, XSD 1.1 extras) makes the check fall back
to xmlschema's own validation of the value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xmlschema.validators import XsdAtomicBuiltin

XS = "{http://www.w3.org/2001/XMLSchema}"
_HANDLED = {f"{XS}{n}" for n in (
    "pattern", "length", "minLength", "maxLength", "minInclusive", "maxInclusive", "minExclusive",
    "maxExclusive", "enumeration", "whiteSpace", "totalDigits", "fractionDigits")}

#: a check is given the (normalised) text and its decoded value; one marked ``text_only`` reads
#: the text alone (patterns, lengths of a value that is no string, bytes or list, xmlschema's
#: own validation): it may be given ``None`` for the value
Check = Callable[[str, Any], None]


def compile_checks(xsd_type: Any) -> Check | None:
    """One function checking text (normalised) and its decoded value against every facet."""
    checks: list[Check] = []
    fallback = False
    current = xsd_type
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
                checks.append(_bound(name[len(XS):], facet.value))
        current = getattr(current, "base_type", None)
    enumeration = getattr(xsd_type, "enumeration", None)
    if enumeration:
        allowed = set(enumeration)
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


def _length(kind: str, limit: int) -> Check:
    def check(text: str, value: Any) -> None:
        size = len(value) if isinstance(value, str | bytes | list) else len(text)
        if (kind == "length" and size != limit) or (kind == "minLength" and size < limit) or (
            kind == "maxLength" and size > limit
        ):
            raise ValueError(f"{text[:40]!r} has length {size}, {kind} is {limit}")

    check.text_only = True  # type: ignore[attr-defined]  # the text's length unless the value is a string, bytes or a list
    return check


def _bound(kind: str, limit: Any) -> Check:
    def check(text: str, value: Any) -> None:
        try:
            ok = {
                "minInclusive": lambda: value >= limit, "maxInclusive": lambda: value <= limit,
                "minExclusive": lambda: value > limit, "maxExclusive": lambda: value < limit,
            }[kind]()
        except TypeError:
            ok = True  # value and bound of different Python types (e.g. aware vs naive): xmlschema decides in document mode
        if not ok:
            raise ValueError(f"{text} violates {kind} {limit}")

    return check
