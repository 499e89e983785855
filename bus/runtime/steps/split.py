"""Splitter: one message in, its parts out, one at a time (a 1 GB body is never copied whole).

Each part carries Message Sequence headers (``sequence``: the id of the split message, the
part's position, ``end`` on the last part) so an Aggregator or a channel's ``reassemble`` can
put them back together; its message id is ``<split message id>-<position>`` (the same parts on
a redelivery) and its correlation id the split message's (or its id).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

from coupler.bus.config.models import Indicator
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.envelope import Sequence
from coupler.canonical.errors import CouplerError, one_line
from coupler.canonical.options import Bool, Int, OptionsModel, Str, option

from .base import Step, StepContext, StepError, StepSetup
from .outcomes import Continue, Outcome


class SplitOptions(OptionsModel):
    array: Str | None = option(
        "Split the array at this body field of an Avro or JSON body (`body.items`): each element is a part.",
        default=None,
    )
    part_format: Indicator | None = option(
        "The format of each part (NAME@V[;content-type]). With `array` an Avro body's elements are written as "
        "that registry format in Avro binary (default: JSON parts of format `<message's format name>.item`); "
        "otherwise the parts' bytes are as split, labelled with this format (default: the message's format; "
        "a file of JSON lines: `part_format = \"acme.Order@1;application/json\"`).",
        default=None,
    )
    xpath: Str | None = option(
        "Split an XML body at the elements of this path (`/orders/order`, or `//order` at any depth), "
        "streamed: each element, with its namespace declarations, is a part.",
        default=None,
    )
    lines: Bool = option("Split a text body into lines (each line without its line end is a part).", default=False)
    skip_empty: Bool = option("With `lines`: no part for an empty line.", default=True)
    record_length: Int | None = option(
        "Split a body of fixed-size records (a copybook file's records) into parts of this many bytes.",
        default=None, ge=1,
    )
    records: dict[str, Str | Int | Bool] | None = option(
        "Split a body of COBOL records framed as the copybook options say (Cobrix's names, "
        "docs/copybook.md): `record_format` V (RDW), VB (blocked), F/FB (with `record_length`) or D "
        "(text lines), `is_rdw_big_endian`, `rdw_adjustment`, `file_start_offset`, ...; each record's "
        "payload (descriptor words removed) is a part.",
        example='records = { record_format = "V", is_rdw_big_endian = true }',
        default=None,
    )


class Split(Step):
    """Splitter (array field, XPath, lines, fixed-size records), streaming its parts."""

    type_name = "split"
    options_model = SplitOptions

    def __init__(self, options: SplitOptions, setup: StepSetup):
        super().__init__(options, setup)
        chosen = [k for k in ("array", "xpath", "lines", "record_length", "records") if getattr(options, k)]
        if len(chosen) != 1:
            raise setup.problem("type", "a split needs exactly one of `array`, `xpath`, `lines`, `record_length` "
                                "or `records`" + (f" (it has {', '.join(chosen)})" if chosen else ""))
        self.how = chosen[0]
        if options.array is not None:
            if not (options.array == "body" or options.array.startswith("body.")):
                raise setup.problem("array", f"{options.array!r} is not a body field (body.items)")
            self.array = setup.expression(options.array, "array")
        self.part_format = FormatIndicator.parse(options.part_format) if options.part_format else None
        if options.xpath is not None:
            self.path = _element_path(options.xpath, setup)
        if options.records is not None:
            from coupler.translators.copybook.options import CopybookOptions

            try:
                self.framing = CopybookOptions.from_mapping({k: str(v).lower() if isinstance(v, bool) else str(v)
                                                             for k, v in options.records.items()})
            except CouplerError as exc:
                raise setup.problem("records", exc.message) from None
            if self.framing.record_length_field:
                raise setup.problem("records", "record_length_field needs the copybook: split with record_format V or F")
            if self.framing.record_format in ("F", "FB") and not self.framing.record_length:
                raise setup.problem("records", f"record_format {self.framing.record_format} needs record_length")

    def process(self, message: Envelope, ctx: StepContext) -> Outcome:
        parts: Iterator[tuple[bytes, FormatIndicator]]
        fmt = self.part_format or message.format
        if self.how == "lines":
            parts = ((b, fmt) for b in _lines(message.body, self.options.skip_empty))
        elif self.how == "record_length":
            n = self.options.record_length
            assert n is not None
            parts = ((message.body[i:i + n], fmt) for i in range(0, len(message.body), n))
        elif self.how == "xpath":
            parts = ((b, fmt) for b in _xml_elements(message, self.path))
        elif self.how == "records":
            parts = ((b, fmt) for b in _framed(message, self.framing))
        else:
            parts = self._elements(message)
        return Continue(_sequence(message, parts), f"split by {self.how}")

    def _elements(self, message: Envelope) -> Iterator[tuple[bytes, FormatIndicator]]:
        items = self.array(message)
        if items is None:
            return
        if not isinstance(items, list):
            raise StepError(f"{self.options.array} of message {message.message_id} is not an array")
        fmt = self.part_format
        if fmt is not None and fmt.content_type == "avro/binary":
            registry = self.setup.registry()
            for item in items:
                yield registry.encode(item, fmt), fmt
            return
        out = fmt or FormatIndicator(f"{message.format.name}.item", message.format.version, "application/json")
        for item in items:
            yield json.dumps(item, sort_keys=True, default=str).encode(), out


def _sequence(message: Envelope, parts: Iterator[tuple[bytes, FormatIndicator]]) -> Iterator[Envelope]:
    """The parts as envelopes; one part of look-ahead marks the last one ``end``. A part is a
    copy of one template (the split message's headers, history and properties, the time of the
    split) with its body, id and sequence headers."""
    template: Envelope | None = None
    position = 0
    pending: tuple[bytes, FormatIndicator] | None = None
    for part in parts:
        if pending is not None:
            template = _template(message, pending[1], template)
            yield _part(message, template, pending[0], position, end=False)
            position += 1
        pending = part
    if pending is not None:
        template = _template(message, pending[1], template)
        yield _part(message, template, pending[0], position, end=True)


def _template(message: Envelope, fmt: FormatIndicator, last: Envelope | None) -> Envelope:
    if last is not None and last.format is fmt:
        return last
    return Envelope(
        format=fmt, kind=message.kind, correlation_id=message.correlation_id or message.message_id,
        return_address=message.return_address, expires_at=message.expires_at, history=message.history,
        origin=message.origin, properties=message.properties,
    )


def _part(message: Envelope, template: Envelope, body: bytes, position: int, *, end: bool) -> Envelope:
    return template.replace(body=body, message_id=f"{message.message_id}-{position}",
                            sequence=Sequence(message.message_id, position, position + 1 if end else None, end))


def _lines(body: bytes, skip_empty: bool) -> Iterator[bytes]:
    view = memoryview(body)
    start = 0
    size = len(body)
    while start < size:
        end = body.find(b"\n", start)
        stop = size if end < 0 else end
        line = view[start:stop - 1] if stop > start and body[stop - 1] == 13 else view[start:stop]
        if len(line) or not skip_empty:
            yield bytes(line)
        start = stop + 1


def _framed(message: Envelope, framing: Any) -> Iterator[bytes]:
    """The record payloads of a COBOL data body, read in chunks (translators/copybook/framing.py)."""
    from coupler.translators.copybook.framing import TruncatedRecord, iter_records

    for record in iter_records(io.BytesIO(message.body), framing, file=f"message {message.message_id}"):
        if isinstance(record, TruncatedRecord):
            raise StepError(str(record.error(f"message {message.message_id}")))
        yield record.payload


def _element_path(text: str, setup: StepSetup) -> tuple[bool, tuple[str, ...]]:
    """``(anywhere, names)`` of ``/a/b`` (from the root) or ``//b`` (at any depth)."""
    anywhere = text.startswith("//")
    names = tuple(n for n in text.strip("/").split("/"))
    if not text.startswith("/") or not all(names) or any(c in n for n in names for c in "[]()@*:|"):
        raise setup.problem("xpath", f"{text!r}: a split path is /a/b/c or //c (element names; "
                                     "{namespace}name for a namespace)")
    return anywhere, names


def _local(tag: Any) -> str:
    return tag if isinstance(tag, str) else ""


def _xml_elements(message: Envelope, path: tuple[bool, tuple[str, ...]]) -> Iterator[bytes]:
    from lxml import etree

    anywhere, names = path

    def wanted(stack: list[str]) -> bool:
        if anywhere:
            return len(stack) >= len(names) and tuple(_match(t) for t in stack[-len(names):]) == names
        return tuple(_match(t) for t in stack) == names

    def _match(tag: str) -> str:  # {ns}local matches a path name "{ns}local" or "local"
        for name in names:
            if tag == name or (tag.endswith("}" + name) and not name.startswith("{")):
                return name
        return tag

    stack: list[str] = []
    try:
        for event, elem in etree.iterparse(io.BytesIO(message.body), events=("start", "end"),
                                           resolve_entities=False, no_network=True, huge_tree=True):
            if event == "start":
                stack.append(_local(elem.tag))
                continue
            if wanted(stack):
                yield etree.tostring(elem)
                elem.clear(keep_tail=False)
                parent = elem.getparent()
                if parent is not None:  # drop what was already split off
                    while elem.getprevious() is not None:
                        del parent[0]
            stack.pop()
    except etree.XMLSyntaxError as exc:
        raise StepError(f"message {message.message_id}: its body is not XML: {one_line(exc)}") from None


__all__ = ["Split"]
