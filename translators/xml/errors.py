"""Errors of the XML translator (all :class:`CouplerError` subclasses)."""

from __future__ import annotations

from coupler.canonical.errors import CouplerError


class XmlError(CouplerError):
    """Base class of the XML translator's errors."""


class XsdError(XmlError):
    """An XSD that cannot be loaded or mapped to Avro (bad schema, blocked import, unknown element)."""


class XmlSecurityError(XmlError):
    """A document refused for safety: entity declarations (XXE, entity expansion) or a DTD fetch."""


class XmlValidationError(XmlError):
    """A document or record that does not match the schema; ``where`` names the line and the path."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        source: str | None = None,
        hint: str | None = None,
    ):
        self.path = path
        self.line = line
        self.source = source
        parts = []
        if source or line is not None:
            parts.append(f"{source or '<input>'}" + (f":{line}" if line is not None else ""))
        if path:
            parts.append(path)
        super().__init__(message, where=" ".join(parts) or None, hint=hint)
