"""Message Translators of the socket adapter: frame payload <-> bus document.

One translator per adapter (site.toml ``[adapters.options] translator = ...``):

``raw``
    the payload bytes are the document body (format: the adapter's ``format``, default
    ``socket.Payload@1;application/octet-stream``).
``text``
    like raw, but checks that the payload is text in ``encoding`` (default utf-8).
``hl7``
    an HL7 v2 message (format ``hl7.V2@1;application/hl7-v2``); it must start with MSH.
``copybook``
    a fixed-width record described by a copybook (``copybook``; or ``copybook_in`` for the
    records read from the socket and ``copybook_out`` for those written, when request and
    reply layouts differ), through :mod:`coupler.translators.copybook`; the document is the
    record as JSON.
``module:attribute``
    any object with ``decode(payload: bytes) -> Document`` and
    ``encode(document: Document) -> bytes``, or a factory called with the adapter options
    that returns one.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from coupler.bus.api import Document
from coupler.canonical import FormatIndicator
from coupler.canonical.errors import TranslationError  # noqa: F401  (re-exported: payload translators raise it)
from coupler.canonical.textformats import json_loads

from .hl7v2 import read_header

DEFAULT_FORMAT = FormatIndicator("socket.Payload", 1, "application/octet-stream")
HL7_FORMAT = FormatIndicator("hl7.V2", 1, "application/hl7-v2")


@runtime_checkable
class PayloadTranslator(Protocol):
    def decode(self, payload: bytes) -> Document:
        """A frame payload from the legacy system -> the document put on the bus."""
        ...

    def encode(self, document: Document) -> bytes:
        """A document from the bus -> the payload written to the legacy system."""
        ...


@dataclass(frozen=True)
class RawTranslator:
    format: FormatIndicator = DEFAULT_FORMAT

    def decode(self, payload: bytes) -> Document:
        return Document(self.format, payload)

    def encode(self, document: Document) -> bytes:
        return document.body


@dataclass(frozen=True)
class TextTranslator:
    format: FormatIndicator = DEFAULT_FORMAT.with_content_type("text/plain")
    encoding: str = "utf-8"

    def decode(self, payload: bytes) -> Document:
        try:
            payload.decode(self.encoding)
        except UnicodeDecodeError as exc:
            raise TranslationError(
                f"payload is not {self.encoding} text: {exc.reason}", where=f"payload byte {exc.start}"
            ) from None
        return Document(self.format, payload)

    def encode(self, document: Document) -> bytes:
        return document.body


@dataclass(frozen=True)
class HL7Translator:
    format: FormatIndicator = HL7_FORMAT
    encoding: str = "utf-8"

    def decode(self, payload: bytes) -> Document:
        header = read_header(payload, self.encoding)
        props = {"hl7.message_type": header.message_type, "hl7.control_id": header.control_id}
        return Document(self.format, payload, props)

    def encode(self, document: Document) -> bytes:
        read_header(document.body, self.encoding)
        return document.body


class CopybookTranslator:
    """A fixed-width record <-> the record as JSON, through the copybook translator.

    Options: ``copybook`` (the .cpy file) and ``copybook_options`` (the copybook
    translator's options, e.g. ``{encoding = "ascii"}``).
    """

    def __init__(self, options: dict[str, Any], fmt: FormatIndicator):
        from coupler.translators.copybook.decoder import RecordDecoder
        from coupler.translators.copybook.encoder import RecordEncoder
        from coupler.translators.copybook.layout import build_layout
        from coupler.translators.copybook.parser import parse_file

        path = options.get("copybook")
        path_in, path_out = options.get("copybook_in") or path, options.get("copybook_out") or path
        if not (path_in and path_out):
            raise TranslationError(
                "translator 'copybook' needs the option copybook (a .cpy file), or copybook_in and copybook_out",
                where="options.copybook",
            )
        self.format = fmt if fmt.content_type == "application/json" else fmt.with_content_type("application/json")
        copybook_options = dict(options.get("copybook_options") or {})
        self.decoder = RecordDecoder(build_layout(parse_file(Path(path_in))), copybook_options, policy="strict")
        self.encoder = RecordEncoder(build_layout(parse_file(Path(path_out))), copybook_options)

    def decode(self, payload: bytes) -> Document:
        record = self.decoder.decode(payload)
        if not isinstance(record, dict):
            raise TranslationError(f"the record cannot be decoded: {record}")
        return Document(self.format, json.dumps(record, default=str, sort_keys=True).encode())

    def encode(self, document: Document) -> bytes:
        try:
            record = json_loads(document.body)
        except ValueError as exc:
            raise TranslationError(f"document {document.format} is not JSON: {exc}") from None
        return bytes(self.encoder.encode(record))


def make_translator(options: dict[str, Any], fmt: FormatIndicator | None) -> PayloadTranslator:
    """The translator named by ``options['translator']`` (default ``raw``)."""
    kind = str(options.get("translator") or "raw")
    encoding = str(options.get("encoding") or "utf-8")
    if kind == "raw":
        return RawTranslator(fmt or DEFAULT_FORMAT)
    if kind == "text":
        return TextTranslator(fmt or DEFAULT_FORMAT.with_content_type("text/plain"), encoding)
    if kind == "hl7":
        return HL7Translator(fmt or HL7_FORMAT, encoding)
    if kind == "copybook":
        return CopybookTranslator(options, fmt or DEFAULT_FORMAT.with_content_type("application/json"))
    if ":" in kind:
        module_name, _, attr = kind.partition(":")
        try:
            obj: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError) as exc:
            raise TranslationError(f"cannot load translator {kind!r}: {exc}", where="options.translator") from exc
        if not isinstance(obj, PayloadTranslator) and callable(obj):
            obj = obj(options)
        if not isinstance(obj, PayloadTranslator):
            raise TranslationError(
                f"translator {kind!r} has no decode(payload) and encode(document)", where="options.translator"
            )
        return obj
    raise TranslationError(
        f"unknown translator {kind!r}",
        where="options.translator",
        hint="use raw, text, hl7, copybook or module:attribute",
    )
