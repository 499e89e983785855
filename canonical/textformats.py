"""TOML and JSON text read into Python values, with one reason and the line and column where
the text went wrong: the one way every loader (site files, mapping files, layout families,
schema files) reads them, so each says ``file:line:column: not valid TOML: ...`` alike, and
the one way JSON from outside is read (:func:`json_loads`: a line of a file, a message body,
a header a foreign client wrote).

Neither ``tomllib`` nor ``json`` has a nesting limit of its own: they read nested arrays and
tables by recursion until Python's stack ends them (a ``RecursionError``); here that is a
:class:`TextFormatError` too, a one-line refusal instead of an internal error.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

__all__ = ["TextFormatError", "json_loads", "load_json", "load_toml"]

#: tomllib puts the place at the end of its message: "Expected '=' ... (at line 3, column 5)"
_TOML_AT = re.compile(r" ?\(at line (\d+), column (\d+)\)")


class TextFormatError(ValueError):
    """Text that is not valid TOML or JSON: ``reason`` (one line) and, where known, the 1-based
    ``line`` and ``column``; :meth:`at` names the place in a file."""

    def __init__(self, reason: str, line: int | None = None, column: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.line = line
        self.column = column

    def at(self, file: str | Path) -> str:
        """``file:line:column``, or ``file`` when the place is not known."""
        return f"{file}:{self.line}:{self.column}" if self.line is not None else str(file)


def load_toml(text: str) -> dict[str, Any]:
    """The table ``text`` holds, or :class:`TextFormatError`."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = _TOML_AT.search(str(exc))
        reason = f"not valid TOML: {_TOML_AT.sub('', str(exc))}"
        raise TextFormatError(reason, *((int(m.group(1)), int(m.group(2))) if m else ())) from None
    except RecursionError:
        raise TextFormatError(_TOML_TOO_DEEP) from None


def json_loads(text: str | bytes, **options: Any) -> Any:
    """``json.loads(text, **options)``, but JSON nested too deeply for the parser, or a number
    whose exponent no decimal holds (with ``parse_float=Decimal``: ``1E99999999999999999999``),
    is a :class:`TextFormatError` (a ``ValueError``, what callers already catch for bad JSON),
    not a ``RecursionError`` or ``decimal.InvalidOperation``; bad JSON is
    ``json.JSONDecodeError`` as ever."""
    try:
        return json.loads(text, **options)
    except RecursionError:
        raise TextFormatError(_JSON_TOO_DEEP) from None
    except ArithmeticError:
        raise TextFormatError("a number's exponent is beyond what a decimal holds") from None


def load_json(text: str) -> Any:
    """The value ``text`` holds, or :class:`TextFormatError` naming the line and column."""
    try:
        return json_loads(text)
    except json.JSONDecodeError as exc:
        raise TextFormatError(f"not valid JSON: {exc.msg}", exc.lineno, exc.colno) from None


_TOML_TOO_DEEP = "TOML nested too deeply (arrays or inline tables inside each other hundreds of times)"
_JSON_TOO_DEEP = "JSON nested too deeply (arrays or objects inside each other thousands of times)"
