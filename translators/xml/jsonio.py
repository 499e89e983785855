"""Records as JSON lines: decimals as strings, dates and times ISO 8601, bytes base64.

The encoder reads these forms back (it accepts strings for decimals, dates, times and
bytes), so ``xml decode --to jsonl`` and ``xml encode`` round-trip.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import date, datetime, time
from decimal import Decimal
from typing import IO, Any

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


def dumps(record: Any) -> str:
    """One record as one line of JSON."""
    return json.dumps(record, default=_default, ensure_ascii=False, separators=(",", ":"))


def read_jsonl(stream: IO[str], *, name: str = "<input>") -> Iterator[dict[str, Any]]:
    """The records of a JSON-lines stream (blank lines skipped); bad JSON names the line."""
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise XmlValidationError(f"not JSON: {exc.msg}", source=name, line=number) from None
        if not isinstance(record, dict):
            raise XmlValidationError("each line must be a JSON object", source=name, line=number)
        yield record
