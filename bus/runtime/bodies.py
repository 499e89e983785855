"""A message body for people: decoded through its Format Indicator, never binary on screen.

Used by the console (dead letters, channel messages), ``coupler ctl dlq show`` and
``coupler channel get`` on a terminal. ``avro/binary`` bodies are decoded with the site's
schema registry and shown as JSON; JSON and XML are pretty-printed; COBOL records
(``application/x-cobol-record``) are decoded with the copybook of the site's adapter that
publishes that format (or that created the message) - its ``copybook`` option or the
``legacy = "copybook:..."`` of its mapping, with the mapping's ``[legacy_options]`` (code
page, encoding) - and shown as JSON; other text is shown as it is, and anything else as a
hex dump (whose text column is in the record's code page when the copybook is known).
:func:`encode_body` turns an edited text back into a body of the same format (edit and
replay): an edited COBOL record is encoded with the same copybook and options over the
original bytes, so a record replayed unedited is the same bytes.
"""

from __future__ import annotations

import base64
import json
import re
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError

if TYPE_CHECKING:
    from coupler.bus.config.loader import SiteConfig

AVRO = "avro/binary"
COBOL = "application/x-cobol-record"
#: bytes shown of a body that is not text
HEX_LIMIT = 4096


class BodyError(CouplerError):
    """An edited body that does not fit its format."""


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:\d{2}|Z)?$")


def _times(value: Any) -> Any:
    """``value`` with ISO time stamps (as :func:`decode_body` shows Avro timestamps) as datetimes."""
    if isinstance(value, dict):
        return {k: _times(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_times(v) for v in value]
    if isinstance(value, str) and _ISO.match(value):
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value


def _is_xml(content_type: str) -> bool:
    return content_type.endswith("/xml") or content_type.endswith("+xml")


def decode_body(envelope: Envelope, site: SiteConfig | None = None, registry: Any = None) -> dict[str, Any]:
    """``{"as": avro|json|xml|copybook|text|hex, "text": ..., "error": None | why not decoded}``."""
    fmt = envelope.format
    body = envelope.body
    error = None
    try:
        if fmt.content_type == AVRO:
            record = (registry or _registry(site)).decode(body, fmt)
            return {"as": "avro", "text": json.dumps(record, indent=2, default=_json_default, ensure_ascii=False), "error": None}
        if fmt.content_type == "application/json":
            return {"as": "json", "text": json.dumps(json.loads(body), indent=2, ensure_ascii=False), "error": None}
        if _is_xml(fmt.content_type):
            from lxml import etree

            parser = etree.XMLParser(resolve_entities=False, no_network=True, remove_blank_text=True)
            tree = etree.fromstring(body, parser)
            return {"as": "xml", "text": etree.tostring(tree, pretty_print=True, encoding="unicode"), "error": None}
        if fmt.content_type == COBOL and site is not None:
            copybook = _copybook_for(envelope, site)
            if copybook is not None:
                return {"as": "copybook", "text": _decode_record(*copybook, body), "error": None,
                        "copybook": copybook[0].name}
            error = "no adapter of the site names a copybook for this format"
    except Exception as exc:  # a body that does not fit its format is shown as it is
        error = str(exc) if isinstance(exc, CouplerError) else f"{type(exc).__name__}: {exc}"
    codec = None
    if fmt.content_type == COBOL and site is not None:
        found = _copybook_for_quietly(envelope, site)
        if found is not None:
            codec = _text_codec(found[1])
            return {"as": "hex", "text": hexdump(body[:HEX_LIMIT], codec) + (f"\n... {len(body)} bytes in all" if len(body) > HEX_LIMIT else ""),
                    "error": error}
    try:
        text = body.decode("utf-8")
        if all(c.isprintable() or c in "\r\n\t" for c in text):
            return {"as": "text", "text": text, "error": error}
    except UnicodeDecodeError:
        pass
    return {"as": "hex", "text": hexdump(body[:HEX_LIMIT]) + (f"\n... {len(body)} bytes in all" if len(body) > HEX_LIMIT else ""), "error": error}


def encode_body(fmt: FormatIndicator, text: str, registry: Any = None, site: SiteConfig | None = None,
                original: Envelope | None = None) -> bytes:
    """The body of format ``fmt`` an operator edited as ``text`` (as :func:`decode_body`
    showed it); :class:`BodyError` when it does not fit. ``original``: the message edited (a
    COBOL record is re-encoded with its copybook over its bytes)."""
    if fmt.content_type == COBOL and site is not None and original is not None:
        copybook = _copybook_for(original, site)
        if copybook is not None:
            return _encode_record(*copybook, text, original.body)
    if fmt.content_type == AVRO:
        try:
            record = json.loads(text)
        except ValueError as exc:
            raise BodyError(f"the edited body is not JSON: {exc}", hint=f"edit the {fmt.ref} record as JSON") from None
        registry = registry or _registry(site)
        try:
            return bytes(registry.encode(record, fmt))
        except CouplerError as exc:
            try:  # time stamps are shown (and edited) as ISO text
                return bytes(registry.encode(_times(record), fmt))
            except CouplerError:
                pass
            raise BodyError(f"the edited body is not a valid {fmt.ref}: {exc.message}") from None
    if fmt.content_type == "application/json":
        try:
            json.loads(text)
        except ValueError as exc:
            raise BodyError(f"the edited body is not JSON: {exc}") from None
    return text.encode("utf-8")


def hexdump(data: bytes, codec: Any = None) -> str:
    """Offset, hex and text columns; the text in ``codec``'s code page (an EBCDIC record's
    letters as letters), else ASCII."""
    lines = []
    for offset in range(0, len(data), 16):
        chunk = data[offset:offset + 16]
        text = "".join(_char(b, codec) for b in chunk)
        lines.append(f"{offset:08x}  {chunk.hex(' '):<47}  {text}")
    return "\n".join(lines)


def _registry(site: SiteConfig | None) -> Any:
    from coupler.canonical.registry import SchemaRegistry

    return SchemaRegistry.default(site.schema_paths if site is not None else ())


def _char(byte: int, codec: Any) -> str:
    if codec is None:
        return chr(byte) if 32 <= byte < 127 else "."
    try:
        ch = codec.decode(bytes([byte]))
    except Exception:  # noqa: BLE001 - a byte the code page does not map
        return "."
    return ch if len(ch) == 1 and ch.isprintable() else "."


def _text_codec(options: dict[str, str]) -> Any:
    from coupler.translators.copybook.decoder import decode_context, parse_options

    return decode_context(parse_options(options)).text_codec


def _site_path(site: SiteConfig, name: str) -> Path:
    path = Path(name).expanduser()
    return path if path.is_absolute() else site.path.parent / path


def _copybook_for(envelope: Envelope, site: SiteConfig) -> tuple[Path, dict[str, str]] | None:
    """The copybook (and its options) of the adapter that publishes ``envelope``'s format or
    created it: its ``copybook`` option, or the ``legacy = "copybook:..."`` of its mapping."""
    for ad in site.adapters:
        fmt_name = FormatIndicator.parse(ad.format).name if ad.format else None
        if fmt_name != envelope.format.name and ad.name != envelope.origin:
            continue
        book = ad.options.get("copybook")
        if isinstance(book, str):
            options = {k: str(v) for k, v in ad.options.items() if k in ("encoding", "ebcdic_code_page", "ascii_charset")}
            return _site_path(site, book), options
        if ad.mapping:
            from coupler.translators.mapping import load_mapping
            from coupler.translators.mapping.formats import parse_spec

            mapping_file = _site_path(site, ad.mapping)
            mapping = load_mapping(mapping_file, registry=_registry(site),
                                   schema_roots=site.schema_roots)
            if mapping.legacy_spec and mapping.legacy_spec.startswith("copybook:"):
                spec = parse_spec(mapping.legacy_spec, base_dir=mapping_file.parent, options=mapping.legacy_options)
                if spec.path is not None:
                    return spec.path, dict(spec.options)
    return None


def _copybook_for_quietly(envelope: Envelope, site: SiteConfig) -> tuple[Path, dict[str, str]] | None:
    try:
        return _copybook_for(envelope, site)
    except CouplerError:
        return None


def _decode_record(copybook: Path, options: dict[str, str], body: bytes) -> str:
    from coupler.translators.copybook import decoder, layout, parser

    lay = layout.build_layout(parser.parse_file(copybook))
    value = decoder.RecordDecoder(lay, decoder.parse_options(options), policy="strict").decode(body, file=copybook.name, offset=0)
    if isinstance(value, decoder.BadRecord):
        raise CouplerError(f"the record cannot be decoded with {copybook.name}: {value.error}")
    if value is None:
        raise CouplerError(f"{copybook.name}: no segment of the copybook takes this record")
    return json.dumps(json.loads(decoder.to_json(value)), indent=2, ensure_ascii=False)


def _encode_record(copybook: Path, options: dict[str, str], text: str, original: bytes) -> bytes:
    """The edited record (JSON, as :func:`_decode_record` showed it) as record bytes of the
    copybook, over the original bytes (a field the edit removed keeps its bytes)."""
    from decimal import Decimal

    from coupler.translators.copybook import decoder, encoder, layout, parser

    try:
        record = json.loads(text, parse_float=Decimal)
    except ValueError as exc:
        raise BodyError(f"the edited record is not JSON: {exc}", hint=f"edit the record of {copybook.name} as JSON") from None
    if not isinstance(record, dict):
        raise BodyError("the edited record must be a JSON object", hint=f"the fields of {copybook.name}")
    lay = layout.build_layout(parser.parse_file(copybook))
    try:
        return bytes(encoder.RecordEncoder(lay, decoder.parse_options(options)).encode(record, base=original))
    except CouplerError as exc:
        raise BodyError(f"the edited record does not fit {copybook.name}: {exc}") from None
