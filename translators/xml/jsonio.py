"""Records as JSON lines: dates and times ISO 8601, bytes base64, decimals as numbers or strings.

``xml decode --to jsonl`` writes a decimal as an exact JSON number with the digits of its
value (``dumps(record, decimal_numbers=True)``), as ``copybook decode`` does; messages on the
bus keep decimals as strings (the default). :func:`read_jsonl` reads numbers with a fraction
as exact decimals, and the encoder accepts both forms (and strings for dates, times and
bytes), so ``xml decode --to jsonl`` and ``xml encode`` round-trip.

An ``xs:double``/``xs:float`` that is infinite or not a number is written as the JSON string
``"Infinity"``, ``"-Infinity"`` or ``"NaN"`` (JSON has no such numbers; the bare tokens Python
would write are refused by strict parsers). These are the strings Jackson writes for them
(Spark's JSON writer, NiFi, Camel), which Spark's JSON reader and Java's ``Double.parseDouble``
read back; the encoder reads them (and the XSD forms ``"INF"``, ``"-INF"``) as the same value.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Callable, Iterator
from datetime import date, datetime, time
from decimal import Decimal
from typing import IO, Any

from coupler.canonical.textformats import json_loads

from .errors import XmlValidationError
from .scalars import format_datetime, format_time


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime):
        return format_datetime(value)
    if isinstance(value, time):
        return format_time(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


# a decimal is first written as this string, then unquoted: XML text cannot hold U+0000, so
# no string of a decoded document can look like it
_MARK = "\x00D"
_MARKED = re.compile(r'"\\u0000D(-?[0-9.]+)"')


def _number_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return _MARK + format(value, "f")
    return _default(value)


def special_float(value: float) -> str:
    """An infinite or NaN float as Jackson writes it: ``Infinity``, ``-Infinity`` or ``NaN``."""
    if value != value:
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _finite(value: Any) -> Any:
    """``value`` with every infinite or NaN float replaced by its string."""
    if isinstance(value, float):
        return value if math.isfinite(value) else special_float(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _dumps(record: Any, default: Callable[[Any], Any]) -> str:
    try:  # a record without special floats (nearly all) is written in one pass
        return json.dumps(record, default=default, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError as exc:  # "Out of range float values are not JSON compliant"
        if "JSON compliant" not in str(exc):
            raise
        return json.dumps(_finite(record), default=default, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(record: Any, *, decimal_numbers: bool = False) -> str:
    """One record as one line of JSON; decimals as exact JSON numbers with ``decimal_numbers``;
    infinite and NaN floats as the strings ``"Infinity"``, ``"-Infinity"``, ``"NaN"``."""
    if not decimal_numbers:
        return _dumps(record, _default)
    text = _dumps(record, _number_default)
    return _MARKED.sub(r"\1", text) if "\\u0000D" in text else text


def read_jsonl(stream: IO[str], *, name: str = "<input>") -> Iterator[dict[str, Any]]:
    """The records of a JSON-lines stream (blank lines skipped); bad JSON names the line."""
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            record = json_loads(line, parse_float=Decimal)
        except ValueError as exc:  # bad, nested too deeply, or an exponent no decimal holds
            raise XmlValidationError(f"not JSON: {getattr(exc, 'msg', exc)}", source=name, line=number) from None
        if not isinstance(record, dict):
            raise XmlValidationError("each line must be a JSON object", source=name, line=number)
        yield record
