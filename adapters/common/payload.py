"""How a file becomes messages: payload modes.

``whole``
    the file is one message (files over the claim-check threshold are not read into memory:
    see :mod:`.claims`);
``lines``
    one message per line (the line ending is not part of the body);
``fixed``
    one message per fixed-length record of ``record_length`` bytes (raw COBOL records,
    ``application/x-cobol-record``);
``copybook``
    one message per COBOL record; the record length comes from the ``copybook``; each
    record is decoded to a JSON object by the copybook translator when it offers a decoder,
    and published as raw record bytes otherwise;
``xml``
    one message per repeated XML element ``element`` (streamed with lxml ``iterparse``,
    entities and network off).

Every splitter reads its input as a stream and yields bodies one at a time.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from coupler.canonical.errors import one_line

from .errors import AdapterConfigError, PayloadError

#: how a file becomes messages (option ``payload``)
PayloadMode = Literal["whole", "lines", "fixed", "copybook", "xml"]
MODES: tuple[str, ...] = typing.get_args(PayloadMode)
_CHUNK = 1 << 20


@dataclass
class PayloadSettings:
    mode: str = "whole"
    record_length: int | None = None
    copybook: Path | None = None
    element: str | None = None
    encoding_check: str | None = None  # lines: a text encoding every line must decode with
    skip_empty_lines: bool = True
    content_type: str | None = None


class Splitter:
    """Splits a binary stream into message bodies."""

    content_type = "application/octet-stream"

    def split(self, stream: BinaryIO, source: str) -> Iterator[bytes]:
        for _, body in self.records(stream, source):
            yield body

    def records(self, stream: BinaryIO, source: str) -> Iterator[tuple[int | None, bytes]]:
        """Each body with the byte offset in the stream where its record starts (None where
        the mode knows no byte offset: an XML element is re-serialised)."""
        raise NotImplementedError


class WholeSplitter(Splitter):
    def records(self, stream: BinaryIO, source: str) -> Iterator[tuple[int | None, bytes]]:
        yield 0, stream.read()


class LineSplitter(Splitter):
    content_type = "text/plain"

    def __init__(self, encoding: str | None, skip_empty: bool):
        self.encoding = encoding
        self.skip_empty = skip_empty

    def records(self, stream: BinaryIO, source: str) -> Iterator[tuple[int | None, bytes]]:
        offset = 0
        for number, line in enumerate(stream, start=1):
            start, offset = offset, offset + len(line)
            body = line.rstrip(b"\n").rstrip(b"\r")
            if self.skip_empty and not body.strip():
                continue
            if self.encoding:
                try:
                    body.decode(self.encoding)
                except UnicodeDecodeError as exc:
                    raise PayloadError(
                        f"line is not {self.encoding}: {exc.reason} at column {exc.start + 1}",
                        where=f"{source}:{number}",
                    ) from exc
            yield start, body


class FixedSplitter(Splitter):
    content_type = "application/x-cobol-record"

    def __init__(self, record_length: int, decode: Callable[[bytes, int], bytes | None] | None = None):
        self.record_length = record_length
        self.decode = decode
        if decode is not None:
            self.content_type = "application/json"

    def records(self, stream: BinaryIO, source: str) -> Iterator[tuple[int | None, bytes]]:
        offset = 0
        n = self.record_length
        while True:
            record = stream.read(n)
            if not record:
                return
            while len(record) < n:  # a pipe or a socket may return short reads
                more = stream.read(n - len(record))
                if not more:
                    raise PayloadError(
                        f"the file ends inside a record: {len(record)} of {n} bytes",
                        where=f"{source}: byte {offset}",
                        hint="the file is truncated, or record_length / the copybook does not match it",
                    )
                record += more
            body = self.decode(record, offset) if self.decode else record
            if body is not None:
                yield offset, body
            offset += n


class XmlElementSplitter(Splitter):
    content_type = "application/xml"

    def __init__(self, element: str):
        self.element = element

    def records(self, stream: BinaryIO, source: str) -> Iterator[tuple[int | None, bytes]]:
        from lxml import etree

        tag = self.element if self.element.startswith("{") else None
        try:
            events = etree.iterparse(
                stream, events=("end",), resolve_entities=False, no_network=True,
                load_dtd=False, huge_tree=False,
            )
            for _, elem in events:
                local = etree.QName(elem).localname if isinstance(elem.tag, str) else None
                if (tag and elem.tag == tag) or (not tag and local == self.element):
                    yield None, etree.tostring(elem)
                    elem.clear()
                    parent = elem.getparent()
                    if parent is not None:  # drop the siblings already yielded
                        while elem.getprevious() is not None:
                            del parent[0]
        except etree.XMLSyntaxError as exc:
            raise PayloadError(f"not well-formed XML: {one_line(exc.msg)}", where=f"{source}:{exc.lineno}") from exc


def splitter_for(settings: PayloadSettings, *, where: str) -> Splitter:
    """The splitter of a payload mode (the copybook is parsed here, once)."""
    mode = settings.mode
    if mode == "whole":
        return WholeSplitter()
    if mode == "lines":
        return LineSplitter(settings.encoding_check, settings.skip_empty_lines)
    if mode == "fixed":
        if not settings.record_length:
            raise AdapterConfigError("payload mode fixed needs record_length", where=where)
        return FixedSplitter(settings.record_length)
    if mode == "xml":
        if not settings.element:
            raise AdapterConfigError("payload mode xml needs element (the repeated element's name)", where=where)
        return XmlElementSplitter(settings.element)
    if mode == "copybook":
        if settings.copybook is None:
            raise AdapterConfigError("payload mode copybook needs copybook (a .cpy file)", where=where)
        length, decode = copybook_codec(settings.copybook, settings.record_length)
        return FixedSplitter(length, decode)
    raise AdapterConfigError(f"unknown payload mode {mode!r}; one of {', '.join(MODES)}", where=where)


def copybook_codec(path: Path, record_length: int | None) -> tuple[int, Callable[[bytes, int], bytes | None] | None]:
    """Record length of copybook ``path`` and a strict record decoder (record -> JSON bytes)."""
    from coupler.translators.copybook import decoder as decoder_module
    from coupler.translators.copybook import layout as layout_module
    from coupler.translators.copybook import parser

    lay = layout_module.build_layout(parser.parse_file(path))
    length = record_length or lay.size
    decoder = decoder_module.RecordDecoder(lay, None, policy="strict")

    def decode(record: bytes, offset: int) -> bytes | None:
        value = decoder.decode(record, file=str(path), offset=offset)
        if value is None:  # dropped by a segment filter
            return None
        if isinstance(value, decoder_module.BadRecord):
            raise PayloadError(f"record cannot be decoded: {value.error}", where=f"byte {offset}")
        return decoder_module.to_json(value).encode()

    return length, decode
