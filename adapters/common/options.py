"""Typed reading of an adapter's ``[adapters.options]`` with errors that name the key path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import AdapterConfigError

_MISSING: Any = object()


class Options:
    """The options of adapter ``name``; every getter raises :class:`AdapterConfigError`.

    Keys that were never read are reported by :meth:`check_unknown`, so a typo in
    site.toml is an error rather than a silently ignored setting.
    """

    def __init__(self, adapter: str, values: dict[str, Any]):
        self.adapter = adapter
        self.values = dict(values)
        self._read: set[str] = set()

    def _where(self, key: str) -> str:
        return f"adapters[{self.adapter}].options.{key}"

    def _get(self, key: str, default: Any) -> Any:
        self._read.add(key)
        if key in self.values:
            return self.values[key]
        if default is _MISSING:
            raise AdapterConfigError("is required", where=self._where(key))
        return default

    def string(self, key: str, default: Any = _MISSING, choices: Sequence[str] = ()) -> Any:
        value = self._get(key, default)
        if value is None:
            return None
        if not isinstance(value, str):
            raise AdapterConfigError(f"must be a string, not {value!r}", where=self._where(key))
        if choices and value not in choices:
            raise AdapterConfigError(
                f"must be one of {', '.join(choices)}, not {value!r}", where=self._where(key)
            )
        return value

    def number(self, key: str, default: Any = _MISSING, minimum: float | None = None) -> Any:
        value = self._get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise AdapterConfigError(f"must be a number, not {value!r}", where=self._where(key))
        if minimum is not None and value < minimum:
            raise AdapterConfigError(f"must be at least {minimum:g}, not {value!r}", where=self._where(key))
        return float(value)

    def integer(self, key: str, default: Any = _MISSING, minimum: int | None = None) -> Any:
        value = self._get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise AdapterConfigError(f"must be an integer, not {value!r}", where=self._where(key))
        if minimum is not None and value < minimum:
            raise AdapterConfigError(f"must be at least {minimum}, not {value!r}", where=self._where(key))
        return value

    def boolean(self, key: str, default: Any = _MISSING) -> Any:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise AdapterConfigError(f"must be true or false, not {value!r}", where=self._where(key))
        return value

    def strings(self, key: str, default: Any = _MISSING) -> list[str]:
        value = self._get(key, default)
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise AdapterConfigError(f"must be a list of strings, not {value!r}", where=self._where(key))
        return list(value)

    def mode(self, key: str, default: Any = None) -> int | None:
        """A permission mode: an integer or an octal string such as ``"0640"``."""
        value = self._get(key, default)
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = int(value, 8)
            except ValueError:
                value = -1
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 0o7777:
            raise AdapterConfigError(
                f"must be a permission mode such as \"0640\", not {self.values.get(key)!r}",
                where=self._where(key),
            )
        return value

    def check_unknown(self) -> None:
        unknown = sorted(set(self.values) - self._read)
        if unknown:
            raise AdapterConfigError(
                f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}",
                where=f"adapters[{self.adapter}].options",
                hint="see docs/adapters/ for the options of this adapter type",
            )
