"""Errors of the mapping translator (all :class:`CouplerError` subclasses)."""

from __future__ import annotations

from coupler.canonical.errors import CouplerError


class MappingError(CouplerError):
    """A mapping file that cannot be loaded (bad TOML, unknown field, type mismatch) or a
    record it cannot map; ``where`` names the mapping file and line, or the record."""


class TranslateError(CouplerError):
    """A ``coupler translate`` format specification or input that cannot be used."""
