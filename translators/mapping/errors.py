"""Errors of the mapping translator (all :class:`CouplerError` subclasses)."""

from __future__ import annotations

from coupler.canonical.errors import CouplerError, TranslationError


class MappingError(CouplerError):
    """A mapping file that cannot be loaded (bad TOML, unknown field, type mismatch) or a
    record it cannot map; ``where`` names the mapping file and line, or the record."""


#: a ``coupler translate`` format specification or input that cannot be used: the one
#: :class:`~coupler.canonical.errors.TranslationError` (this name kept for code that catches it)
TranslateError = TranslationError
