"""XML Message Translator: XSD -> Avro schema, XML <-> records (whole documents or streamed).

Public API:

- :func:`load_schema` loads an XSD (imports/includes resolved locally, never over the network);
- :class:`XsdModel` (``XsdModel.load(path)``) compiles a global element into an Avro schema
  (:meth:`XsdModel.avro_schema`), a decoder (:meth:`XsdModel.decoder`) and an encoder
  (:meth:`XsdModel.encoder`);
- :func:`parse_document` parses XML bytes or files safely (no entities, no network).
"""

from .errors import XmlError, XmlSecurityError, XmlValidationError, XsdError
from .security import load_schema, parse_document, safe_parser
from .xsd import XsdModel

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
