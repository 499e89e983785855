"""Message Selectors: conditions over an envelope's headers and properties.

Syntax (SQL-like, as in JMS selectors)::

    kind = 'command' and properties.region in ('EU', 'US')
    not (attempt > 2 or origin = "legacy-ftp") and format.name = 'acme.Customer'
    priority >= 5 and correlation_id is not null

Fields: ``message_id``, ``kind``, ``format`` (``name@version``), ``format.name``,
``format.version``, ``content_type``, ``correlation_id``, ``return_address``, ``origin``,
``attempt``, ``timestamp`` and ``expires_at`` (ISO 8601), ``sequence.id``,
``sequence.position``, ``properties.NAME``; any other bare name is a property.
Operators: ``=``, ``!=``/``<>``, ``<``, ``<=``, ``>``, ``>=``, ``[not] in (...)``,
``is [not] null``, combined with ``and``, ``or``, ``not`` and parentheses. A number literal
compares numerically (a value that is not a number does not match); a string literal
compares as text. A missing field matches only ``is null``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError


class SelectorError(CouplerError):
    """A selector expression that cannot be parsed."""


_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>'(?:[^']|'')*'|"(?:[^"]|"")*")
      | (?P<number>-?\d+(?:\.\d+)?(?![\w.]))
      | (?P<op><=|>=|<>|!=|=|<|>)
      | (?P<punct>[(),])
      | (?P<name>[A-Za-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z_][A-Za-z0-9_\-]*)*)
    )""",
    re.VERBOSE,
)
_KEYWORDS = {"and", "or", "not", "in", "is", "null"}


@dataclass(frozen=True)
class _Tok:
    kind: str
    value: Any
    col: int  # 1-based column


def _tokenize(text: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            col = pos + len(text[pos:]) - len(text[pos:].lstrip()) + 1
            raise SelectorError(
                f"unexpected character {text[col - 1]!r} in selector {text!r}", where=f"column {col}"
            )
        kind = m.lastgroup or ""
        raw = m.group(kind)
        col = m.start(kind) + 1
        if kind == "string":
            quote = raw[0]
            value: Any = raw[1:-1].replace(quote * 2, quote)
        elif kind == "number":
            value = float(raw)
        elif kind == "name" and raw.lower() in _KEYWORDS:
            kind, value = "kw", raw.lower()
        else:
            value = raw
        tokens.append(_Tok(kind, value, col))
        pos = m.end()
    tokens.append(_Tok("end", None, len(text) + 1))
    return tokens


Predicate = Callable[[Envelope], bool]

_HEADERS: dict[str, Callable[[Envelope], Any]] = {
    "message_id": lambda e: e.message_id,
    "kind": lambda e: e.kind.value,
    "format": lambda e: e.format.ref,
    "format.name": lambda e: e.format.name,
    "format.version": lambda e: e.format.version,
    "content_type": lambda e: e.format.content_type,
    "format.content_type": lambda e: e.format.content_type,
    "correlation_id": lambda e: e.correlation_id,
    "return_address": lambda e: e.return_address,
    "origin": lambda e: e.origin,
    "attempt": lambda e: e.attempt,
    "timestamp": lambda e: e.timestamp.isoformat(),
    "expires_at": lambda e: e.expires_at.isoformat() if e.expires_at else None,
    "sequence.id": lambda e: e.sequence.id if e.sequence else None,
    "sequence.position": lambda e: e.sequence.position if e.sequence else None,
    "sequence.size": lambda e: e.sequence.size if e.sequence else None,
}


def field_getter(name: str) -> Callable[[Envelope], Any]:
    """The function reading header or property ``name`` of an envelope (None when absent)."""
    if name in _HEADERS:
        return _HEADERS[name]
    prop = name[len("properties."):] if name.startswith("properties.") else name
    return lambda e: e.properties.get(prop)


def field_list(text: str) -> list[tuple[str, Callable[[Envelope], Any]]]:
    """The names and getters of a comma-separated list of header or property names
    (``origin, properties.order_no``: a business key); :class:`SelectorError` for an empty one."""
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise SelectorError(
            f"empty field in {text!r}",
            hint="header and property names separated by commas, e.g. origin, properties.order_no",
        )
    return [(n, field_getter(n)) for n in names]


def _compare(op: str, left: Any, right: Any) -> bool:
    if left is None:
        return False
    if isinstance(right, float):
        try:
            left = float(left)
        except (TypeError, ValueError):
            return False
    else:
        left = str(left)
    if op == "=":
        return left == right
    if op in ("!=", "<>"):
        return left != right
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    return left >= right


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    @property
    def tok(self) -> _Tok:
        return self.tokens[self.i]

    def _error(self, expected: str) -> SelectorError:
        tok = self.tok
        found = "end of selector" if tok.kind == "end" else repr(self.text[tok.col - 1 :].split()[0])
        return SelectorError(
            f"expected {expected}, found {found} in selector {self.text!r}", where=f"column {tok.col}"
        )

    def _accept(self, kind: str, value: Any = None) -> _Tok | None:
        tok = self.tok
        if tok.kind == kind and (value is None or tok.value == value):
            self.i += 1
            return tok
        return None

    def parse(self) -> Predicate:
        pred = self._or()
        if self.tok.kind != "end":
            raise self._error("'and', 'or' or the end")
        return pred

    def _or(self) -> Predicate:
        parts = [self._and()]
        while self._accept("kw", "or"):
            parts.append(self._and())
        if len(parts) == 1:
            return parts[0]
        return lambda e: any(p(e) for p in parts)

    def _and(self) -> Predicate:
        parts = [self._not()]
        while self._accept("kw", "and"):
            parts.append(self._not())
        if len(parts) == 1:
            return parts[0]
        return lambda e: all(p(e) for p in parts)

    def _not(self) -> Predicate:
        if self._accept("kw", "not"):
            inner = self._not()
            return lambda e: not inner(e)
        if self._accept("punct", "("):
            inner = self._or()
            if not self._accept("punct", ")"):
                raise self._error("')'")
            return inner
        return self._comparison()

    def _literal(self) -> Any:
        tok = self.tok
        if tok.kind in ("string", "number"):
            self.i += 1
            return tok.value
        raise self._error("a 'string' or a number")

    def _comparison(self) -> Predicate:
        name_tok = self._accept("name")
        if name_tok is None:
            raise self._error("a field name (e.g. kind, format.name, properties.region)")
        get = field_getter(name_tok.value)
        if self._accept("kw", "is"):
            negate = bool(self._accept("kw", "not"))
            if not self._accept("kw", "null"):
                raise self._error("'null'")
            return (lambda e: get(e) is not None) if negate else (lambda e: get(e) is None)
        negate = bool(self._accept("kw", "not"))
        if self._accept("kw", "in"):
            if not self._accept("punct", "("):
                raise self._error("'(' after 'in'")
            values = [self._literal()]
            while self._accept("punct", ","):
                values.append(self._literal())
            if not self._accept("punct", ")"):
                raise self._error("',' or ')'")

            def member(e: Envelope) -> bool:
                value = get(e)
                return value is not None and any(_compare("=", value, v) for v in values)

            return (lambda e: get(e) is not None and not member(e)) if negate else member
        if negate:
            raise self._error("'in' after 'not'")
        op = self._accept("op")
        if op is None:
            raise self._error(f"an operator (=, !=, <, <=, >, >=, in, is) after {name_tok.value!r}")
        value = self._literal()
        return lambda e: _compare(op.value, get(e), value)


@dataclass(frozen=True)
class Selector:
    """A parsed Message Selector; call it with an envelope."""

    text: str
    predicate: Predicate

    @classmethod
    def parse(cls, text: str) -> Selector:
        if not text or not text.strip():
            raise SelectorError("empty selector", where="column 1", hint="e.g. kind = 'command'")
        return cls(text, _Parser(text).parse())

    def __call__(self, envelope: Envelope) -> bool:
        return self.predicate(envelope)

    def __str__(self) -> str:
        return self.text


def as_selector(selector: Selector | str | None) -> Selector | None:
    """Accept a parsed selector, its text, or None."""
    if selector is None or isinstance(selector, Selector):
        return selector
    return Selector.parse(selector)
