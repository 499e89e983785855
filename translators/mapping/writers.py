"""Translator types: how a mapped legacy record becomes the bytes an outbound adapter takes.

An outbound adapter with a ``mapping`` gets each canonical document mapped into the legacy
record (a dict), written by a translator type: ``copybook`` (the fixed-width record bytes,
from the mapping's ``legacy = "copybook:FILE.cpy"``), ``xml`` (an XML document of the
mapping's ``legacy = "xml:FILE.xsd#ELEMENT"``, validated against the XSD) or ``json`` (the
record as JSON, for adapters that encode it themselves). These three are Coupler's own and
are registered through the plugin hook ``coupler_translator_types`` like a third party's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coupler.canonical.errors import CouplerError

#: writes one mapped legacy record
RecordWriter = Callable[[dict[str, Any]], bytes]


@dataclass(frozen=True)
class TranslatorType:
    """A translator type: ``build(mapping)`` returns the writer of that mapping's records."""

    name: str
    content_type: str
    build: Callable[[Any], RecordWriter]

    def __call__(self, mapping: Any) -> RecordWriter:
        return self.build(mapping)


def _json(mapping: Any) -> RecordWriter:
    from coupler.translators.xml.jsonio import dumps

    return lambda record: dumps(record).encode("utf-8")


def _spec(mapping: Any, kind: str) -> Any:
    from coupler.translators.mapping.formats import parse_spec

    text = mapping.legacy_spec or ""
    if not text:
        raise CouplerError(f"translator {kind!r} needs the mapping's legacy side (legacy = \"{kind}:FILE\")",
                           hint='use translator = "json"')
    spec = parse_spec(text, base_dir=Path(mapping.file).parent,
                      options={k: str(v) for k, v in mapping.legacy_options.items()},
                      schema_roots=getattr(mapping, "schema_roots", ()))
    if spec.kind != kind:
        raise CouplerError(f"translator {kind!r} cannot write the mapping's legacy side {text!r}",
                           hint=f"use translator = {spec.kind!r} or \"json\"")
    return spec


def _copybook(mapping: Any) -> RecordWriter:
    from coupler.translators.copybook.decoder import parse_options
    from coupler.translators.copybook.encoder import RecordEncoder
    from coupler.translators.copybook.layout import build_layout
    from coupler.translators.copybook.parser import parse_file

    spec = _spec(mapping, "copybook")
    encoder = RecordEncoder(build_layout(parse_file(spec.path)), parse_options(spec.options))
    return lambda record: bytes(encoder.encode(record))


def _xml(mapping: Any) -> RecordWriter:
    from coupler.translators.xml import XsdModel

    spec = _spec(mapping, "xml")
    encoder = XsdModel.load(spec.path, schema_roots=spec.schema_roots).encoder(spec.element)
    return lambda record: encoder.encode(record, label="record")


#: Coupler's own translator types
BUILTIN_TRANSLATORS: dict[str, TranslatorType] = {
    "copybook": TranslatorType("copybook", "application/x-cobol-record", _copybook),
    "xml": TranslatorType("xml", "application/xml", _xml),
    "json": TranslatorType("json", "application/json", _json),
}
