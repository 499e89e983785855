"""XML Message Translator: XSD -> Avro schema, XML <-> records (whole documents or streamed).

Public API:

- :func:`load_schema` loads an XSD (imports/includes resolved locally, never over the network);
- :class:`XsdModel` (``XsdModel.load(path)``) compiles a global element into an Avro schema
  (:meth:`XsdModel.avro_schema`), a decoder (:meth:`XsdModel.decoder`) and an encoder
  (:meth:`XsdModel.encoder`);
- :func:`parse_document` parses XML bytes or files safely (no entities, no network).
"""

from typing import TYPE_CHECKING, Any

from .errors import XmlError, XmlSecurityError, XmlValidationError, XsdError
from .security import load_schema, parse_document, safe_parser

if TYPE_CHECKING:
    from .xsd import XsdModel


def __getattr__(name: str) -> Any:
    """``XsdModel`` is imported when first asked for: it needs xmlschema, which every
    ``coupler`` command would otherwise load at start-up (the plugins import this package)."""
    if name == "XsdModel":
        from .xsd import XsdModel

        return XsdModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "XmlError",
    "XmlSecurityError",
    "XmlValidationError",
    "XsdError",
    "XsdModel",
    "load_schema",
    "parse_document",
    "safe_parser",
]
