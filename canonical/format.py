"""The Format Indicator (Data Format Flexibility): ``name@version`` plus a content type."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import FormatIndicatorError

#: content types the bus knows by name; any ``type/subtype`` string is accepted
AVRO_BINARY = "avro/binary"
JSON = "application/json"
XML = "application/xml"
COBOL_RECORD = "application/x-cobol-record"
OCTET_STREAM = "application/octet-stream"

_NAME = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_PATTERN = re.compile(rf"^(?P<name>{_NAME})@(?P<version>[1-9][0-9]*)(?:;(?P<ct>[^;\s]+/[^;\s]+))?$")
_EXPECTED = "expected NAME@VERSION[;CONTENT/TYPE], e.g. acme.Customer@2 or acme.Customer@2;application/json"


@dataclass(frozen=True, order=True)
class FormatIndicator:
    """Which canonical entity, in which version, in which encoding a body holds."""

    name: str
    version: int
    content_type: str = AVRO_BINARY

    def __post_init__(self) -> None:
        if not re.fullmatch(_NAME, self.name or ""):
            raise FormatIndicatorError(f"bad format name {self.name!r}: {_EXPECTED}")
        if not isinstance(self.version, int) or isinstance(self.version, bool) or self.version < 1:
            raise FormatIndicatorError(f"bad format version {self.version!r}: {_EXPECTED}")
        if "/" not in self.content_type:
            raise FormatIndicatorError(f"bad content type {self.content_type!r}: expected type/subtype")

    @classmethod
    def parse(cls, text: str, content_type: str | None = None) -> FormatIndicator:
        """Parse ``name@version`` or ``name@version;content/type``.

        ``content_type`` applies when the text carries none (default ``avro/binary``).
        """
        m = _PATTERN.match(text.strip()) if isinstance(text, str) else None
        if not m:
            raise FormatIndicatorError(f"malformed format indicator {text!r}: {_EXPECTED}")
        ct = m.group("ct") or content_type or AVRO_BINARY
        return cls(m.group("name"), int(m.group("version")), ct)

    @property
    def ref(self) -> str:
        """``name@version`` without the content type."""
        return f"{self.name}@{self.version}"

    def with_content_type(self, content_type: str) -> FormatIndicator:
        return FormatIndicator(self.name, self.version, content_type)

    def __str__(self) -> str:
        if self.content_type == AVRO_BINARY:
            return self.ref
        return f"{self.ref};{self.content_type}"
