"""Declarative field mappings (TOML) between legacy records and canonical entities.

- :func:`load_mapping` loads a mapping file and checks it against the legacy schema (a
  copybook, an XSD element, an Avro schema) and the canonical entity (from the registry);
  errors name the file and the line.
- :class:`Mapping` maps records both ways: ``mapping.direction("to_canonical").apply(rec)``
  and ``"to_legacy"`` (when every rule is invertible).
- :mod:`.formats` reads and writes records of ``copybook:``, ``xml:``, ``avro:`` and
  ``jsonl`` specs; :mod:`.translate` chains formats and mappings (``coupler translate``).

The file format is documented in ``docs/mappings.md``.
"""

from .errors import MappingError, TranslateError
from .loader import load_mapping, parse_mapping
from .mapping import TO_CANONICAL, TO_LEGACY, Direction, Mapping

__all__ = [
    "TO_CANONICAL",
    "TO_LEGACY",
    "Direction",
    "Mapping",
    "MappingError",
    "TranslateError",
    "load_mapping",
    "parse_mapping",
]
