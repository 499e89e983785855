"""Errors of the copybook translator.

Everything a user can get wrong (a copybook that does not parse, an option that does not
exist, a record whose bytes do not fit its layout) raises a subclass of
:class:`CopybookError`, itself a :class:`~coupler.canonical.errors.CouplerError`.
"""

from __future__ import annotations

from coupler.canonical.errors import CouplerError


class CopybookError(CouplerError):
    """Base class of every copybook translator error."""


class CopybookSyntaxError(CopybookError):
    """A copybook that cannot be parsed.

    ``file``, ``line`` and ``column`` (1-based) locate the offending ``token``;
    ``expected`` says what the parser was looking for.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str = "<copybook>",
        line: int = 0,
        column: int = 0,
        token: str | None = None,
        expected: str | None = None,
        hint: str | None = None,
    ):
        self.file = file
        self.line = line
        self.column = column
        self.token = token
        self.expected = expected
        text = message
        if token is not None:
            text += f" at {token!r}" if token else " at end of input"
        if expected:
            text += f"; expected {expected}"
        super().__init__(text, where=f"{file}:{line}:{column}", hint=hint)


class CopybookLayoutError(CopybookError):
    """A copybook that parses but does not describe a valid record layout
    (a REDEFINES of an unknown item, a DEPENDING ON field that does not exist, ...)."""


class RecordDecodeError(CopybookError):
    """A record whose bytes cannot be decoded by its layout (strict mode).

    Carries the data ``file``, the ``record`` number (counted from 1, as every report
    numbers records; the constructor takes the 0-based index of the record in its file),
    the file ``offset`` of the record (or of the bad field when ``field`` is set), the
    ``field`` path, the ``raw`` bytes of the field and the ``reason``.
    """

    def __init__(
        self,
        reason: str,
        *,
        file: str = "<data>",
        record: int = 0,
        offset: int = 0,
        field: str | None = None,
        raw: bytes = b"",
    ):
        self.file = file
        self.index = record
        self.record = record + 1
        self.offset = offset
        self.field = field
        self.raw = raw
        self.reason = reason
        where = f"{file}: record {record + 1} at byte {offset}"
        if field:
            where += f", field {field}"
        msg = reason + (f" (raw bytes {raw.hex().upper()})" if raw else "")
        super().__init__(msg, where=where)

    def to_dict(self) -> dict[str, object]:
        """The error as a JSON-ready dict (one line of an ``--errors`` file)."""
        return {
            "file": self.file,
            "record": self.record,
            "offset": self.offset,
            "field": self.field,
            "raw_hex": self.raw.hex().upper(),
            "reason": self.reason,
        }


class RecordEncodeError(CopybookError):
    """A value that cannot be encoded into its field."""
