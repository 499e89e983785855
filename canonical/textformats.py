"""TOML and JSON text read into Python values, with one reason and the line and column where
the text went wrong: the one way every loader (site files, mapping files, layout families,
schema files) reads them, so each says ``file:line:column: not valid TOML: ...`` alike.

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

__all__ = ["TextFormatError", "load_json", "load_toml"]

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
        raise TextFormatError("cannot be read: arrays or inline tables nested hundreds of levels deep") from None


def load_json(text: str) -> Any:
    """The value ``text`` holds, or :class:`TextFormatError`."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TextFormatError(f"not valid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except RecursionError:
        raise TextFormatError("cannot be read: arrays or objects nested hundreds of levels deep") from None
