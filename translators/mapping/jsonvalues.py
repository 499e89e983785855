"""JSON (and TOML) values <-> typed record values of an Avro schema.

:func:`coerce` reads a JSON-ish value as the Avro type says (decimals exact from numbers or
strings, dates and times from ISO 8601 strings, bytes from base64); :func:`dumps` writes a
record as one JSON line (decimals as exact JSON numbers, dates ISO 8601, bytes base64,
infinite and NaN floats as the strings ``"Infinity"``, ``"-Infinity"``, ``"NaN"``, as Jackson
writes them, which :func:`coerce` reads back).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from datetime import UTC, date, datetime, time
from decimal import Decimal, InvalidOperation
from typing import Any

from coupler.canonical.textformats import json_loads

from .avrotypes import AType, SchemaTypes
from .casts import INTEGER, REAL, TEXT, make_cast

#: (is NaN, is positive) -> the JSON string of an infinite or NaN float, as Jackson writes it
_SPECIAL_FLOATS = {(True, False): '"NaN"', (False, True): '"Infinity"', (False, False): '"-Infinity"'}
_ANY_DECIMAL = AType("decimal", {}, precision=38, scale=0)


def coerce(value: Any, atype: AType, types: SchemaTypes, path: str = "") -> Any:
    """``value`` as a value of ``atype``; ValueError naming ``path`` when it cannot be."""
    if value is None:
        return None
    kind = atype.kind
    here = path or "value"
    if kind == "record":
        if not isinstance(value, dict):
            raise ValueError(f"{here}: expected an object for record {atype.name}, got {_what(value)}")
        out = {}
        for key, item in value.items():
            f = atype.fields.get(key)
            if f is None:
                if key.startswith("-"):  # XML polymorphic tag (-type)
                    out[key] = item
                    continue
                raise ValueError(f"{here}: record {atype.name} has no field {key!r}")
            out[key] = coerce(item, types.type_of(f["type"]), types, f"{path}.{key}" if path else key)
        return out
    if kind == "array":
        if not isinstance(value, list):
            raise ValueError(f"{here}: expected an array, got {_what(value)}")
        item = types.type_of(atype.items)
        return [coerce(v, item, types, f"{here}[{i}]") for i, v in enumerate(value)]
    if kind == "map":
        if not isinstance(value, dict):
            raise ValueError(f"{here}: expected an object, got {_what(value)}")
        item = types.type_of(atype.items)
        return {k: coerce(v, item, types, f"{here}.{k}") for k, v in value.items()}
    if kind in ("union", "unknown"):
        return value
    try:
        return _scalar(value, atype)
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise ValueError(f"{here}: {exc}") from None


def _scalar(value: Any, atype: AType) -> Any:
    kind = atype.kind
    if kind in TEXT:
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {_what(value)}")
        return make_cast(AType("string", "string"), atype)(value)
    if kind == "boolean":
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {_what(value)}")
        return value
    if kind in INTEGER:
        if isinstance(value, bool) or not isinstance(value, int | Decimal):
            raise ValueError(f"expected a whole number, got {_what(value)}")
        return make_cast(AType("long", "long"), atype)(value)
    if kind in REAL:
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
            raise ValueError(f"expected a number, got {_what(value)}")
        return float(value)
    if kind == "decimal":
        if isinstance(value, bool):
            raise ValueError("expected a decimal number, got a boolean")
        if isinstance(value, float):
            value = Decimal(repr(value))
        try:
            number = value if isinstance(value, Decimal) else Decimal(str(value).strip())
        except InvalidOperation:
            raise ValueError(f"{value!r} is not a decimal number") from None
        return make_cast(_ANY_DECIMAL, atype)(number)
    if kind == "date":
        if isinstance(value, date) and not isinstance(value, datetime):
            return value
        return date.fromisoformat(_text(value))
    if kind == "time":
        return value if isinstance(value, time) else time.fromisoformat(_text(value))
    if kind == "timestamp":
        if isinstance(value, datetime):
            moment = value
        else:
            moment = datetime.fromisoformat(_text(value))
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    if kind in ("bytes", "fixed"):
        if isinstance(value, bytes | bytearray):
            return bytes(value)
        try:
            return base64.b64decode(_text(value), validate=True)
        except binascii.Error:
            raise ValueError("expected base64 text") from None
    raise ValueError(f"cannot read a {atype.describe()} from {_what(value)}")


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {_what(value)}")
    return value


def _what(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(type(value), type(value).__name__)


def dumps(value: Any) -> str:
    """One record as compact JSON: decimals exact, dates ISO 8601, bytes base64."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):  # INF, -INF, NaN: strings (JSON has no such numbers)
        return json.dumps(value) if math.isfinite(value) else _SPECIAL_FLOATS[value != value, value > 0]
    if isinstance(value, datetime | date | time):
        return json.dumps(value.isoformat())
    if isinstance(value, bytes | bytearray):
        return json.dumps(base64.b64encode(bytes(value)).decode("ascii"))
    return json.dumps(str(value), ensure_ascii=False)


def loads(line: str | bytes) -> Any:
    """One JSON line, numbers with a fraction read as exact decimals; ValueError when it is not
    JSON, nested too deeply included."""
    return json_loads(line, parse_float=Decimal)
