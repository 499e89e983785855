"""The legacy side of a mapping, one message at a time: bytes an adapter read -> the legacy
record the mapping takes.

An adapter hands the bus what it read from the legacy system: the record's own bytes (a
fixed-width COBOL record, an XML document) or, when it decoded them itself, the record as
JSON. :class:`LegacyReader` turns either into the typed record of the mapping's legacy
schema (decimals, dates, ... as :mod:`coupler.translators.mapping` expects them):

* ``application/json`` bodies are parsed and typed by the legacy schema;
* other bodies are read as the mapping's ``legacy`` spec says: ``copybook:FILE.cpy`` (with
  the mapping's ``[legacy_options]``, e.g. ``encoding = "ascii"``) decodes one record,
  ``xml:FILE.xsd#ELEMENT`` decodes and validates one document, ``xml:FILE.xsd@ROOT/RECORD``
  one ``RECORD`` element (what a file drop's ``payload = "xml"`` publishes).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from coupler.canonical.errors import CouplerError
from coupler.canonical.textformats import json_loads

from .avrotypes import SchemaTypes
from .errors import TranslateError
from .formats import parse_spec
from .jsonvalues import coerce
from .mapping import Mapping

JSON = "application/json"


class LegacyReader:
    """Reads one legacy record of ``mapping`` from a message body (see the module docstring)."""

    def __init__(self, mapping: Mapping):
        self.mapping = mapping
        self.types = SchemaTypes(mapping.legacy_schema, "legacy")
        self.kind: str | None = None
        self._decode: Any = None
        text = mapping.legacy_spec
        if not text:
            return
        spec = parse_spec(text, base_dir=Path(mapping.file).parent,
                          options={k: str(v) for k, v in mapping.legacy_options.items()}, schema_roots=mapping.schema_roots)
        self.kind = spec.kind
        assert spec.path is not None or spec.kind in ("avro", "jsonl")
        path = spec.path or Path()
        if spec.kind == "copybook":
            from coupler.translators.copybook.decoder import RecordDecoder, parse_options
            from coupler.translators.copybook.layout import build_layout
            from coupler.translators.copybook.parser import parse_file

            decoder = RecordDecoder(build_layout(parse_file(path)), parse_options(spec.options), policy="strict")
            self._decode = lambda body, label, record=0, offset=0: self._copybook(decoder, body, label, record, offset)
        elif spec.kind == "xml" and spec.record_path:  # one message = one repeated element
            from coupler.translators.xml import XsdModel

            steps = [s for s in spec.record_path.split("/") if s]
            record_decoder = XsdModel.load(path, schema_roots=spec.schema_roots).decoder(steps[0])
            tags, convert = record_decoder.resolve_path(spec.record_path)[-1]
            self._decode = lambda body, label: self._element(tags, lambda e: record_decoder.convert(e, convert, source=label),
                                                             body, label)
        elif spec.kind == "xml":
            from coupler.translators.xml import XsdModel

            xml_decoder = XsdModel.load(path, schema_roots=spec.schema_roots).decoder(spec.element)
            self._decode = lambda body, label: xml_decoder.decode_document(io.BytesIO(body), name=label)

    def decode(self, body: bytes, content_type: str, *, label: str = "<message>", record: int = 0,
               offset: int = 0) -> dict[str, Any]:
        """The legacy record in ``body``; :class:`CouplerError` when it is not one. ``label``
        names where the record came from (a file), ``record`` (0-based) and ``offset`` its
        place in it, so that a copybook error names the record and byte as the file has them."""
        if content_type == JSON or self._decode is None:
            return self._json(body, label)
        if self.kind == "copybook":
            return self._decode(body, label, record, offset)
        return self._decode(body, label)

    def _json(self, body: bytes, label: str) -> dict[str, Any]:
        try:
            record = json_loads(body)
        except ValueError as exc:  # not JSON, not UTF-8, or nested too deeply
            raise TranslateError(f"{label} is not JSON: {exc}") from None
        if not isinstance(record, dict):
            raise TranslateError(f"{label} is not a JSON object")
        try:
            return coerce(record, self.types.root, self.types)
        except ValueError as exc:
            raise TranslateError(f"{label} does not fit the legacy schema of {Path(self.mapping.file).name}: {exc}") from None

    @staticmethod
    def _element(tags: set[str], convert: Any, body: bytes, label: str) -> dict[str, Any]:
        from coupler.translators.xml import parse_document

        root = parse_document(body, name=label).getroot()
        if root.tag not in tags:
            raise TranslateError(f"{label}: <{root.tag}> is not the record element ({', '.join(sorted(tags))})")
        return convert(root)  # only located XmlValidationErrors escape Decoder.convert

    @staticmethod
    def _copybook(decoder: Any, body: bytes, label: str, number: int = 0, offset: int = 0) -> dict[str, Any]:
        from coupler.translators.copybook.decoder import BadRecord

        try:
            record = decoder.decode(body, file=label, record_id=number, offset=offset)
        except CouplerError:
            raise
        except (ValueError, IndexError) as exc:
            raise TranslateError(f"{label} is not a record of the copybook: {exc}") from None
        if isinstance(record, BadRecord):
            raise record.error  # names the file, the record and the byte once
        if record is None:
            raise TranslateError(f"{label} is dropped by the copybook's segment filter")
        return record
