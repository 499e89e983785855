"""The expression language of Coupler: Message Selectors (conditions) and field expressions
(keys), over an envelope's headers, properties and body. docs/expressions.md is the users'
reference.

Syntax (SQL-like, as in JMS selectors)::

    kind = 'command' and properties.region in ('EU', 'US')
    not (attempt > 2 or origin = "legacy-ftp") and format.name = 'acme.Customer'
    body.customer.region = 'EU' and body.amount > 100
    xpath('/order/customer/@region') = 'EU'

Fields: the headers ``message_id``, ``kind``, ``format`` (``name@version``), ``format.name``,
``format.version``, ``content_type``, ``correlation_id``, ``return_address``, ``origin``,
``attempt``, ``timestamp`` and ``expires_at`` (ISO 8601), ``sequence.id``,
``sequence.position``, ``sequence.size``; ``properties.NAME``; ``body.a.b`` (a field of the
body: Avro binary decoded with the message's format from the schema registry, or JSON; a
number segment indexes an array, ``body.items.0.sku``); ``xpath('EXPR')`` (XPath 1.0 over an
XML body; the text of the first node, or the value of a number/string/boolean expression).

In a route's or a step's condition (site.toml) a bare name must be a header: ``status =
'ACTIVE'`` is refused (write ``properties.status`` or ``body.status``). Selectors given to
the transport (``receive(selector=...)``, subscriptions) keep the JMS rule: any other bare
name is a property.

Operators: ``=``, ``!=``/``<>``, ``<``, ``<=``, ``>``, ``>=``, ``[not] in (...)``,
``is [not] null``, combined with ``and``, ``or``, ``not`` and parentheses. A number literal
compares numerically (a value that is not a number does not match); a string literal
compares as text (``true``/``false`` for a boolean field). A missing field matches only
``is null``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError, one_line


class SelectorError(CouplerError):
    """A selector expression that cannot be parsed."""


_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>'(?:[^']|'')*'|"(?:[^"]|"")*")
      | (?P<number>-?\d+(?:\.\d+)?(?![\w.]))
      | (?P<op><=|>=|<>|!=|=|<|>)
      | (?P<punct>[(),])
      | (?P<name>[A-Za-z_][A-Za-z0-9_\-]*(?:\.(?:[A-Za-z_][A-Za-z0-9_\-]*|\d+))*)
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
    end = len(text.rstrip())  # the rest is blank (not a copy of the rest tested per token: quadratic)
    while pos < end:
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


def field_getter(name: str, body: BodyReader | None = None, *, bare_properties: bool = True) -> Callable[[Envelope], Any]:
    """The function reading field ``name`` of an envelope (None when absent): a header,
    ``properties.NAME``, ``body.PATH`` (with a ``body`` reader), or with ``bare_properties`` any
    other bare name as a property; otherwise an unknown bare name is a :class:`SelectorError`."""
    if name in _HEADERS:
        return _HEADERS[name]
    if name == "body" or name.startswith("body."):
        path = tuple(name.split(".")[1:])
        reader = body or BodyReader()
        return lambda e: reader.field(e, path)
    if name.startswith("properties."):
        prop = name[len("properties."):]
        return lambda e: e.properties.get(prop)
    if not bare_properties:
        raise SelectorError(
            f"{name!r} is not a header: write body.{name} for a field of the body or properties.{name} "
            "for a property",
            hint="docs/expressions.md lists the headers",
        )
    return lambda e: e.properties.get(name)


#: the body decoded last in each thread, by kind: ``(body, format, registry, value)``, shared by
#: every reader (the steps of a route each have one: a filter and a step setting a property
#: from the same body, on the same message or on a copy of it, decode it once)
_LAST = threading.local()


class BodyReader:
    """Reads fields of message bodies for the expression language: ``avro/binary`` decoded
    with the message's format from the schema registry, JSON, XML for ``xpath(...)``. The body
    of the message being evaluated is decoded once (per thread), whatever the number of fields
    and of readers."""

    def __init__(self, registry: Callable[[], Any] | None = None):
        self._registry = registry

    def _cached(self, e: Envelope, kind: str, decode: Callable[[Envelope], Any]) -> Any:
        # the same body object (bytes are immutable; the reference held keeps it alive, so its
        # identity is not reused) read as the same format with the same registry
        last = getattr(_LAST, kind, None)
        if last is not None and last[0] is e.body and last[2] is self._registry and last[1] == e.format:
            return last[3]
        value = decode(e)
        setattr(_LAST, kind, (e.body, e.format, self._registry, value))
        return value

    def record(self, e: Envelope) -> Any:
        """The decoded body (a dict, list or value); :class:`SelectorError` when it cannot be."""
        return self._cached(e, "record", self._decode)

    def _decode(self, e: Envelope) -> Any:
        ct = e.format.content_type
        try:
            if ct == "avro/binary":
                registry = self._registry() if self._registry is not None else None
                if registry is None:
                    raise SelectorError(f"cannot read body fields of {e.format.ref}: no schema registry")
                return registry.decode(e.body, e.format)
            if ct == "application/json" or ct.endswith("+json"):
                return json.loads(e.body)
        except SelectorError:
            raise
        except Exception as exc:
            raise SelectorError(f"message {e.message_id}: its body is not {e.format.ref}: {exc}") from None
        raise SelectorError(
            f"message {e.message_id}: body fields need an Avro or JSON body, not {ct}",
            hint="use xpath('...') for an XML body",
        )

    def field(self, e: Envelope, path: tuple[str, ...]) -> Any:
        value = self.record(e)
        for part in path:
            if isinstance(value, dict):
                value = value.get(part)
            elif isinstance(value, list) and part.isdigit():
                value = value[int(part)] if int(part) < len(value) else None
            else:
                return None
        return value

    def tree(self, e: Envelope) -> Any:
        return self._cached(e, "tree", self._parse_xml)

    @staticmethod
    def _parse_xml(e: Envelope) -> Any:
        from lxml import etree

        parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
        try:
            return etree.fromstring(e.body, parser)
        except etree.XMLSyntaxError as exc:
            raise SelectorError(f"message {e.message_id}: its body is not XML: {one_line(exc)}") from None

    def xpath(self, expression: str) -> Callable[[Envelope], Any]:
        from lxml import etree

        try:
            compiled = etree.XPath(expression)
        except etree.XPathSyntaxError as exc:
            raise SelectorError(f"bad XPath {expression!r}: {exc}") from None

        def get(e: Envelope) -> Any:
            result = compiled(self.tree(e))
            if isinstance(result, list):
                if not result:
                    return None
                first = result[0]
                return first if isinstance(first, str) else ("".join(first.itertext()) if hasattr(first, "itertext") else str(first))
            if isinstance(result, bool):
                return "true" if result else "false"
            return result

        return get


def field_list(text: str, body: BodyReader | None = None) -> list[tuple[str, Callable[[Envelope], Any]]]:
    """The names and getters of a comma-separated list of fields (``origin, properties.order_no,
    body.customer.id``: a business key); :class:`SelectorError` for an empty one."""
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise SelectorError(
            f"empty field in {text!r}",
            hint="header, property and body fields separated by commas, e.g. origin, properties.order_no",
        )
    return [(n, field_getter(n, body)) for n in names]


def _compare(op: str, left: Any, right: Any) -> bool:
    if left is None:
        return False
    if isinstance(right, float):
        try:
            left = float(left)
        except (TypeError, ValueError):
            return False
    elif isinstance(left, bool):
        left = "true" if left else "false"
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


#: the most parentheses and ``not`` a selector may nest (each level is a call of the parser,
#: and of the predicate it makes: thousands of them ended in a RecursionError)
MAX_NESTING = 100


class _Parser:
    def __init__(self, text: str, body: BodyReader | None = None, bare_properties: bool = True):
        self.body = body
        self.bare_properties = bare_properties
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.depth = 0  # the parentheses and 'not' around the current token

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
        tok = self.tok
        if not (tok.kind == "kw" and tok.value == "not" or tok.kind == "punct" and tok.value == "("):
            return self._comparison()
        if self.depth >= MAX_NESTING:
            raise SelectorError(f"more than {MAX_NESTING} parentheses and 'not' nested in selector {self.text!r}",
                                where=f"column {tok.col}", hint="write the condition with fewer nested parts")
        self.depth += 1
        self.i += 1
        if tok.kind == "kw":
            inner = self._not()
            self.depth -= 1
            return lambda e: not inner(e)
        inner = self._or()
        if not self._accept("punct", ")"):
            raise self._error("')'")
        self.depth -= 1
        return inner

    def _literal(self) -> Any:
        tok = self.tok
        if tok.kind in ("string", "number"):
            self.i += 1
            return tok.value
        raise self._error("a 'string' or a number")

    def field(self) -> Callable[[Envelope], Any]:
        """A field: a header, ``properties.X``, ``body.X.Y`` or ``xpath('...')``."""
        name_tok = self._accept("name")
        if name_tok is None:
            raise self._error("a field name (e.g. kind, properties.region, body.customer.region)")
        if name_tok.value == "xpath" and self._accept("punct", "("):
            expr = self.tok
            if expr.kind != "string":
                raise self._error("an XPath expression in quotes")
            self.i += 1
            if not self._accept("punct", ")"):
                raise self._error("')'")
            return (self.body or BodyReader()).xpath(expr.value)
        try:
            return field_getter(name_tok.value, self.body, bare_properties=self.bare_properties)
        except SelectorError as exc:
            raise SelectorError(f"{exc.message} (in {self.text!r})", where=f"column {name_tok.col}", hint=exc.hint) from None

    def _comparison(self) -> Predicate:
        name_tok = self.tok
        get = self.field()
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
    def parse(cls, text: str, *, body: BodyReader | None = None, bare_properties: bool = True) -> Selector:
        """Parse ``text``; ``body`` reads body fields (default: JSON bodies only, no registry);
        without ``bare_properties`` a bare name that is not a header is refused."""
        if not text or not text.strip():
            raise SelectorError("empty selector", where="column 1", hint="e.g. kind = 'command'")
        return cls(text, _Parser(text, body, bare_properties).parse())

    def __call__(self, envelope: Envelope) -> bool:
        return self.predicate(envelope)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Expression:
    """A field of the expression language as a value (a key, a property set from the body):
    ``body.customer.id``, ``properties.region``, ``correlation_id``, ``xpath('/order/@id')``."""

    text: str
    getter: Callable[[Envelope], Any]

    @classmethod
    def parse(cls, text: str, *, body: BodyReader | None = None) -> Expression:
        parser = _Parser(text, body, bare_properties=False)
        if parser.tok.kind == "end":
            raise SelectorError("empty expression", hint="e.g. body.customer.id")
        get = parser.field()
        if parser.tok.kind != "end":
            raise parser._error("the end of the expression (one field)")
        return cls(text, get)

    def __call__(self, envelope: Envelope) -> Any:
        return self.getter(envelope)

    def text_of(self, envelope: Envelope) -> str | None:
        """The value as text (None when absent)."""
        value = self.getter(envelope)
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        if isinstance(value, dict | list):
            return json.dumps(value, sort_keys=True, default=str)
        return str(value)


def as_selector(selector: Selector | str | None) -> Selector | None:
    """Accept a parsed selector, its text, or None."""
    if selector is None or isinstance(selector, Selector):
        return selector
    return Selector.parse(selector)
