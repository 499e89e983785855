"""Record encoder: dicts (as the decoder makes them) -> record bytes.

:class:`RecordEncoder` is the inverse of :class:`~.decoder.RecordDecoder`: the same keys
(the same FILLER and ``schema_retention_policy`` options), groups as dicts, OCCURS as
lists. A field that is missing or ``None`` keeps the bytes of ``base`` when one is given,
else its initial value (spaces for text, 0x00 - a null under improved null detection -
for the rest). Keys the layout does not know (``File_Id``, ``Seg_Id0``, ``*_debug``) are
ignored. Of the branches of a REDEFINES block one is written; the others describe the same
bytes. Which one: with ``segment_field`` and ``redefine_segment_id_map`` the branch of the
record's segment (the others are not written, and a variable-length record ends after the
last item written, as the segment's own records do); else the first of ``encode_branches``
that is present; else the first present (not null). So ``encode(decode(x)) == x`` holds for
the records of a multi-segment file. With ``record_format=V`` each record gets its RDW.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from decimal import Decimal
from typing import Any

from coupler.canonical.textformats import json_loads

from .avro import as_options, output_fields, outputs_by_node
from .decoder import decode_context
from .errors import CopybookError, RecordEncodeError
from .layout import Field, Group, Layout, Node

#: a REDEFINES block none of whose branches is written (the segment maps none of them)
_NOTHING = Group(name="", identifier="", level=0, path=())


class RecordEncoder:
    """Encodes dicts into records of one layout under one set of options."""

    def __init__(self, layout: Layout, options: Any = None):
        self.layout = layout
        self.options = as_options(options)
        self.ctx = decode_context(self.options)
        self.outputs = output_fields(layout, self.options)
        self.variable_occurs = bool(self.options.variable_size_occurs)
        self._out_by_node = outputs_by_node(self.outputs)  # which output names belong to which layout node
        from .decoder import _segment_map

        self.segment_map = _segment_map(self.options)
        seg = self.options.segment_field
        self.segment_field = layout.find(seg) if seg and self.segment_map else None
        if getattr(self.options, "segment_children", ()):
            raise RecordEncodeError(
                "hierarchical rows (segment-children) cannot be encoded: a child record's fields outside"
                " its segment group (the segment id, common keys) are not in the row",
                where="option segment-children",
                hint="decode without segment-children (one row per record) to encode the records back",
            )
        self.preferred = {b.replace("-", "_").upper() for b in self.options.encode_branches}
        known = {n.identifier.upper() for n in layout.walk() if n.redefines or n.is_redefined}
        unknown = sorted(self.preferred - known)
        if unknown:
            raise RecordEncodeError(
                f"encode_branches names {', '.join(unknown)}, which is no REDEFINES branch of the copybook",
                where="option encode_branches",
            )
        self._seg: str | None = None
        self._end = 0
        space = self.ctx.text_codec.encode(" ") if hasattr(self.ctx.text_codec, "encode") else b" "
        self._space = space[:1] or b" "
        self._initial = self._initial_record()

    def _initial_record(self) -> bytes:
        buf = bytearray(self.layout.size)
        for f in self.layout.fields():
            if f.field_type.kind == "string" and f.redefines is None and not f.renames:
                count = f.occurs.max if f.occurs else 1
                for k in range(count):
                    start = f.offset + k * f.size
                    buf[start:start + f.field_type.size] = self._space * f.field_type.size
        return bytes(buf)

    def encode(self, record: Mapping[str, Any], *, base: bytes | None = None) -> bytes:
        """The bytes of ``record`` (``base``: the bytes to start from, e.g. the original record)."""
        self._seg = None
        if self.segment_field is not None:
            # the segment id as the decoder reads it: from the bytes a first pass writes
            probe = self._encode(record, base)
            f = self.segment_field
            try:
                assert isinstance(f, Field)
                value = f.field_type.decode(probe[f.offset:f.offset + f.size], self.ctx)
            except CopybookError:
                value = None
            self._seg = None if value is None else str(value).strip("".join(chr(i) for i in range(0x21)))
        data = self._encode(record, base)
        if self._seg is not None and self.options.record_format in ("V", "VB") and self._end < len(data):
            data = data[:self._end]
        return data

    def _encode(self, record: Mapping[str, Any], base: bytes | None) -> bytes:
        self._end = 0
        buf = bytearray(base if base is not None else self._initial)
        if len(buf) < self.layout.size:
            buf.extend(self._initial[len(buf):])
        end = 0
        for rec in self.layout.records:
            if rec.renames:
                continue
            out = self._out_by_node.get(id(rec))
            if out is not None:
                value = record.get(out.name)
            elif isinstance(rec, Group):
                value = record  # a collapsed root: its children are the top-level keys
            else:
                value = None
            used = self._node(rec, value, buf, rec.offset, record_path=rec.identifier)
            end = max(end, rec.offset + used)
        if self.variable_occurs and self.layout.has_depending_on:
            del buf[end:]
        return bytes(buf)

    def _node(self, node: Node, value: Any, buf: bytearray, pos: int, *, record_path: str) -> int:
        if node.occurs:
            items = value if isinstance(value, list) else []
            if value is not None and not isinstance(value, list):
                raise RecordEncodeError(f"{node.dotted_path}: an OCCURS item needs a list, got {type(value).__name__}")
            if len(items) > node.occurs.max:
                raise RecordEncodeError(
                    f"{node.dotted_path}: {len(items)} elements, at most {node.occurs.max} allowed"
                )
            at = pos
            for item in items:
                used = self._one(node, item, buf, at)
                at += used if self.variable_occurs else node.size
            if self.variable_occurs and node.occurs.depending_on:
                return at - pos
            return node.total_size
        return self._one(node, value, buf, pos)

    def _one(self, node: Node, value: Any, buf: bytearray, pos: int) -> int:
        if isinstance(node, Field):
            self._end = max(self._end, pos + node.size)
            if value is not None:
                try:
                    data = node.field_type.encode(value, self.ctx)
                except CopybookError as exc:
                    raise RecordEncodeError(f"{node.dotted_path}: {exc.message}", where=node.where) from exc
                if pos + len(data) > len(buf):
                    buf.extend(b"\x00" * (pos + len(data) - len(buf)))
                buf[pos:pos + len(data)] = data
            return node.size
        assert isinstance(node, Group)
        values = value if isinstance(value, Mapping) else {}
        shift = 0
        written = False  # a branch of the current REDEFINES block has been written
        children = [c for c in node.children if not c.renames]  # level-66 views write nothing
        for i, child in enumerate(children):
            start = pos + (child.offset - node.offset) + shift
            out = self._out_by_node.get(id(child))
            child_value = values.get(out.name) if out is not None else None
            if child.redefines is None:
                written = False
                block = [child]
                for nxt in children[i + 1:]:
                    if nxt.redefines is None:
                        break
                    block.append(nxt)
                choice = self._choose(block, values) if len(block) > 1 else None
            if choice is not None:
                if child is not choice:
                    continue
            elif written:
                continue
            used = self._node(child, child_value, buf, start, record_path="")
            if child_value is not None:
                written = True
            if child.redefines is None and self.variable_occurs:
                shift += used - child.total_size
        return node.size + shift

    def _choose(self, block: list[Node], values: Mapping[str, Any]) -> Node | None:
        """The branch of a REDEFINES block to write (None: the first present one)."""
        if self._seg is not None:
            mapped = [b for b in block if b.identifier.upper() in self.segment_map]
            if mapped:
                for b in mapped:
                    if self._seg in self.segment_map[b.identifier.upper()]:
                        return b
                unmapped = [b for b in block if b not in mapped]
                return unmapped[0] if unmapped else _NOTHING
        for b in block:
            out = self._out_by_node.get(id(b))
            if b.identifier.upper() in self.preferred and out is not None and values.get(out.name) is not None:
                return b
        return None

    def framed(self, record: Mapping[str, Any], *, base: bytes | None = None) -> bytes:
        """The record with its RDW when ``record_format`` is V (else the bare record)."""
        data = self.encode(record, base=base)
        opts = self.options
        if opts.record_format != "V":
            return data
        length = len(data) - opts.rdw_adjustment + (4 if opts.is_rdw_part_of_record_length else 0)
        if not 0 < length < 65536:
            raise RecordEncodeError(f"record of {len(data)} bytes does not fit an RDW")
        rdw = length.to_bytes(2, "big") + b"\x00\x00" if opts.is_rdw_big_endian else b"\x00\x00" + length.to_bytes(2, "little")
        return rdw + data


def encode_records(
    layout: Layout, records: Iterable[Mapping[str, Any]], options: Any = None
) -> Iterator[bytes]:
    """The framed bytes of each record."""
    encoder = RecordEncoder(layout, options)
    for record in records:
        yield encoder.framed(record)


def encode_json_lines(layout: Layout, lines: Iterable[str], options: Any = None) -> Iterator[bytes]:
    """JSON lines (numbers with a point read as exact decimals) -> framed record bytes."""
    encoder = RecordEncoder(layout, options)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json_loads(line, parse_float=Decimal)
        except ValueError as exc:  # bad, nested too deeply, or an exponent no decimal holds
            raise RecordEncodeError(f"line {number} is not JSON: {getattr(exc, 'msg', exc)}",
                                    where=f"line {number}") from None
        if not isinstance(record, dict):
            raise RecordEncodeError(f"line {number} is not a JSON object", where=f"line {number}")
        try:
            yield encoder.framed(record)
        except RecordEncodeError as exc:
            raise RecordEncodeError(exc.message, where=f"line {number}") from exc
