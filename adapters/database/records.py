"""Rows as canonical records and back.

A row becomes a JSON object keyed by column name: numbers stay numbers, ``NUMERIC`` /
``DECIMAL`` become strings of their exact digits (never rounded through a binary float),
dates and times ISO 8601 text, binary columns base64, UUIDs and network addresses text. A
float that is NaN or infinite has no JSON form, nor a value the driver could not load into
Python (:class:`Unloaded`: a timestamp of ``infinity`` or of 294276 AD, a date BC, JSON nested
thousands deep): the row cannot be converted and goes to the Invalid Message Channel. With a declared Avro format (``format = "acme.Order@1"``, content type
``avro/binary``) the row is encoded with the registry's schema instead and validated by it.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import ipaddress
import json
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from coupler.canonical import FormatIndicator
from coupler.canonical.errors import CouplerError
from coupler.canonical.format import AVRO_BINARY, JSON
from coupler.canonical.textformats import json_loads


class RowError(CouplerError):
    """A row (or a record) that cannot be converted."""


class Unloaded:
    """A column value the database driver could not load into Python (a timestamp of
    ``infinity``, a date before year 1, JSON nested deeper than Python parses), kept as its
    text with the driver's reason: the row that holds it cannot be converted, and goes to the
    Invalid Message Channel instead of failing the poll of every row with it
    (:func:`~.connection.make_engine` registers the loaders that make these)."""

    __slots__ = ("text", "reason")

    def __init__(self, text: str, reason: str):
        self.text = text
        self.reason = reason

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Unloaded({self.text!r}, {self.reason!r})"


#: values written as their text: UUIDs, network addresses (inet, cidr)
_AS_TEXT = (uuid.UUID, ipaddress.IPv4Address, ipaddress.IPv6Address, ipaddress.IPv4Interface, ipaddress.IPv6Interface,
              ipaddress.IPv4Network, ipaddress.IPv6Network)


def json_value(value: Any, column: str) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise RowError(f"column {column}: {value} has no JSON form")
        return value
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise RowError(f"column {column}: {value} has no JSON form")
        return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, _AS_TEXT):
        return str(value)
    if isinstance(value, Unloaded):
        raise RowError(f"column {column}: {value.text[:80]!r} cannot be read: {value.reason}")
    if isinstance(value, list | tuple):
        return [json_value(v, column) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v, column) for k, v in value.items()}
    raise RowError(f"column {column}: a {type(value).__name__} has no JSON form")


def _default(value: Any) -> Any:
    """What :func:`json.dumps` cannot write itself (the encoder's ``default``): the usual
    column types tested first by exact type (called for every such value of every row)."""
    kind = type(value)
    if kind is decimal.Decimal:
        if not value.is_finite():
            raise ValueError("a decimal that is not finite")
        return str(value)
    if kind is dt.date or kind is dt.datetime:
        return value.isoformat()
    try:
        return json_value(value, "?")
    except RowError as exc:  # the caller converts the row value by value to name the column
        raise TypeError(exc.message) from None


def row_record(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row as a JSON-ready record (:class:`RowError` when a value has no JSON form)."""
    return {name: json_value(value, name) for name, value in row.items()}


class RowEncoder:
    """Rows -> message bodies of the adapter's format (JSON, or Avro through the registry)."""

    def __init__(self, fmt: FormatIndicator, registry: Any):
        """``registry``: the site's (:func:`coupler.bus.api.site_registry`)."""
        self.format = fmt
        self.avro = fmt.content_type == AVRO_BINARY
        self.registry = registry
        #: one encoder for every row (json.dumps with options builds a new one per call): the C
        #: encoder itself when there is one (``JSONEncoder.encode`` builds it again per call);
        #: no check for circular references (a row's values are never circular)
        encoder = json.JSONEncoder(default=_default, allow_nan=False, separators=(",", ":"), check_circular=False)
        c_encoder = getattr(json.encoder, "c_make_encoder", None)
        self._json: Callable[[Any], str] = encoder.encode
        if c_encoder is not None:
            chunks = c_encoder(None, _default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, False)
            self._json = lambda data: "".join(chunks(data, 0))
        if self.avro:
            try:
                self.registry.resolve(fmt)
            except CouplerError as exc:
                raise RowError(f"format {fmt.ref}: {exc.message}", hint="declare the schema, or use "
                               f"format = \"{fmt.ref};application/json\"") from None

    def encode_rows(self, rows: Sequence[Mapping[str, Any]], single: bool) -> bytes:
        if self.avro:
            if not single:
                raise RowError("Avro bodies carry one row each (rows_per_message = 1)")
            for name, value in rows[0].items():
                if isinstance(value, Unloaded):  # its reason, not the schema's "not a string"
                    json_value(value, name)
            try:
                return bytes(self.registry.encode(dict(rows[0]), self.format))
            except CouplerError as exc:
                raise RowError(exc.message) from None
        data: Any = rows[0] if single else list(rows)
        try:  # the C encoder; only the values JSON has no type for reach _default
            return self._json(data).encode()
        except (ValueError, TypeError):  # say which column: convert value by value
            records = [row_record(r) for r in rows]
            return json.dumps(records[0] if single else records, allow_nan=False, separators=(",", ":")).encode()


def body_records(body: bytes, fmt: FormatIndicator, registry: Any) -> list[dict[str, Any]]:
    """The records of a message body: a JSON object or array of objects, or one Avro record
    (decoded with ``registry``, the site's)."""
    if fmt.content_type == AVRO_BINARY:
        try:
            return [registry.decode(body, fmt)]
        except CouplerError as exc:
            raise RowError(exc.message) from None
    if fmt.content_type not in (JSON, "text/json") and not fmt.content_type.endswith("+json"):
        raise RowError(f"a {fmt.content_type} body cannot be written to a table",
                       hint="map it to a canonical record first (site.toml `mapping`), JSON or Avro")
    try:
        data = json_loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RowError(f"the body is not JSON: {exc}") from None
    records = data if isinstance(data, list) else [data]
    if not records or not all(isinstance(r, dict) for r in records):
        raise RowError("the body must be a JSON object, or an array of objects (one per row)")
    return records
