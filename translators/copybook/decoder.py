"""Record decoder: layout + field codecs -> Python dicts, one per record.

:class:`RecordDecoder` decodes the bytes of one record into a dict whose keys are the
ones of the Avro schema (``avro.py``): groups are nested dicts, OCCURS are lists truncated
to their DEPENDING ON count, null values are ``None`` (omitted by :func:`to_json`).
``variable_size_occurs`` makes arrays take only ``count`` elements, so the fields after
them move (truly variable-length records). Multisegment files: ``segment_field`` with
``redefine_segment_id_map:N = "GROUP => ID1,ID2"`` keeps only the REDEFINES branch of the
record's segment; ``segment_filter`` drops the other records; ``generate_record_id``
adds ``File_Id``, ``Record_Id``, ``Record_Byte_Length`` and ``segment_id_level0..N``
(``segment_id_root``) with ``segment_id_prefix`` add ``Seg_Id0..N`` as Cobrix does;
``debug`` adds ``<FIELD>_debug`` with the raw bytes of each field in hex.

Bad data never stops a file. The ``lenient`` policy (the default, as Cobrix) makes a
field that cannot be decoded null and counts it; ``strict`` turns the record into a
:class:`BadRecord` carrying a :class:`~.errors.RecordDecodeError` (file, record number,
byte offset, field, raw bytes in hex, reason) for an error output.

Files: :func:`decode_files` frames and decodes whole files. Other readers that frame
records themselves (the multi-version reader, the Spark data source) use the two framing
helpers it uses: :func:`variable_size_records` (records cut by decoding, for
``variable_size_occurs``) and :func:`length_field_framing` (``record_length_field``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coupler.canonical.plain import NEW, Plain

from .avro import as_options, option, output_fields, outputs_by_node, segment_levels
from .errors import CopybookError, RecordDecodeError
from .layout import Field, Group, Layout, Node

#: the most digits an Arrow decimal (decimal256), and so a Parquet file written through Arrow,
#: holds; a field with more is decoded by the per-record decoder, into JSON lines or Avro
ARROW_MAX_DIGITS = 76

if TYPE_CHECKING:  # imported with segment-children only (start-up)
    from .hierarchy import Hierarchy


def _flag(options: Any, key: str, default: bool) -> bool:
    value = option(options, key, default)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "y")
    return bool(value)


def parse_options(pairs: Mapping[str, str] | None = None) -> Any:
    """Cobrix options (``{"ebcdic_code_page": "cp273", ...}``) -> the validated options object.

    Unknown names are an error that suggests the nearest known name (``options.py``).
    """
    from .options import CopybookOptions

    return CopybookOptions.from_mapping(dict(pairs or {}))


def decode_context(options: Any) -> Any:
    """The :class:`~.picture.DecodeContext` of ``options`` (a mapping or an options object)."""
    from .picture import DecodeContext

    if options is not None and not isinstance(options, Mapping):
        return DecodeContext.from_options(options)
    defaults = DecodeContext()
    return DecodeContext(
        encoding=str(option(options, "encoding", defaults.encoding)).lower(),  # type: ignore[arg-type]
        ebcdic_code_page=str(option(options, "ebcdic_code_page", defaults.ebcdic_code_page)),
        ascii_charset=option(options, "ascii_charset", None),
        string_trimming_policy=str(option(options, "string_trimming_policy", "both")).lower(),  # type: ignore[arg-type]
        improved_null_detection=_flag(options, "improved_null_detection", True),
        floating_point_format=str(option(options, "floating_point_format", "IBM")),  # type: ignore[arg-type]
        strict_sign_overpunching=_flag(options, "strict_sign_overpunching", True),
    )


#: what Java's String.trim() removes (segment ids are compared trimmed, as Cobrix does)
_JAVA_TRIM = "".join(chr(i) for i in range(0x21))


class Float32(float):
    """A COMP-1 value: printed with the shortest digits of a 32-bit float (as Java does)."""


class BadRecord(Plain):
    """A record rejected under the strict policy (or truncated), with the reason."""

    error: RecordDecodeError

    def __init__(self, error: RecordDecodeError) -> None:
        self.error = error


class DecodeStats(Plain, hidden=('on_bad_field',), uncompared=('offset', 'on_bad_field',)):
    """Counters of a decoding run."""

    records: int = 0
    errors: int = 0
    bad_fields: int = 0
    filtered: int = 0
    bytes: int = 0
    #: file byte offset of the record read last by ``decode_files`` (where a later stage's
    #: error about that record happened): a cursor, not a counter, so not compared
    offset: int = 0
    bad_field_names: dict[str, int]
    #: called with a :class:`RecordDecodeError` for every field the lenient policy made null
    #: (record number, byte offset of the field in the file, field path, raw bytes, reason)
    on_bad_field: Any = None

    def __init__(
        self, records: int = 0, errors: int = 0, bad_fields: int = 0, filtered: int = 0, bytes: int = 0,
        offset: int = 0, bad_field_names: dict[str, int] = NEW, on_bad_field: Any = None,
    ) -> None:
        self.records = records
        self.errors = errors
        self.bad_fields = bad_fields
        self.filtered = filtered
        self.bytes = bytes
        self.offset = offset
        self.bad_field_names = {} if bad_field_names is NEW else bad_field_names
        self.on_bad_field = on_bad_field


class _BadField(Exception):
    def __init__(self, node: Node, raw: bytes, reason: str, offset: int, path: str):
        self.node = node
        self.path = path  # with the OCCURS subscripts of the element (REC.T[2].V)
        self.raw = raw
        self.reason = reason
        self.offset = offset
        #: (record number, file offset) of the child record it is in (hierarchical records)
        self.place: tuple[int, int] | None = None


def _segment_map(options: Any) -> dict[str, set[str]]:
    """``redefine_segment_id_map:N`` / ``redefine-segment-id-map:N`` -> {GROUP: {ids}}."""
    out: dict[str, set[str]] = {}
    items: Iterable[tuple[str, Any]]
    if isinstance(options, Mapping):
        items = options.items()
    else:
        raw = getattr(options, "redefine_segment_id_map", None) or {}
        items = [(f"redefine_segment_id_map:{i}", v) for i, v in enumerate(raw.items() if isinstance(raw, Mapping) else raw)]
    for key, value in items:
        norm = key.lower().replace("-", "_")
        if not norm.startswith("redefine_segment_id_map"):
            continue
        if isinstance(value, tuple):  # (group, ids) from an options object
            group, ids = value
            out.setdefault(str(group).replace("-", "_").upper(), set()).update(
                [ids] if isinstance(ids, str) else ids
            )
            continue
        if "=>" not in str(value):
            raise CopybookError(
                f"{key}: {value!r} is not 'GROUP => ID1,ID2'", where=key,
                hint="e.g. redefine_segment_id_map:0=STATIC-DETAILS => C,D",
            )
        group, ids = str(value).split("=>", 1)
        out.setdefault(group.strip().replace("-", "_").upper(), set()).update(
            i.strip() for i in ids.split(",") if i.strip()
        )
    return out


class RecordDecoder:
    """Decodes records of one layout under one set of options."""

    def __init__(self, layout: Layout, options: Any = None, *, policy: str = "lenient"):
        if policy not in ("lenient", "strict"):
            raise CopybookError(f"unknown bad-data policy {policy!r}", hint="use lenient or strict")
        options = as_options(options)
        self.layout = layout
        self.options = options
        self.ctx = decode_context(options)
        self.outputs = output_fields(layout, options)
        self.variable_occurs = _flag(options, "variable_size_occurs", False)
        self.debug = str(option(options, "debug", "none")).lower() not in ("false", "none", "0", "")
        self.strict = policy == "strict"
        #: [table, index from 0] of each OCCURS element being decoded, outermost first
        self._subscripts: list[list[Any]] = []
        self.generate_ids = _flag(options, "generate_record_id", False)
        self.levels = segment_levels(options)
        self.prefix = str(option(options, "segment_id_prefix", "") or "")
        seg = option(options, "segment_field", None)
        self.segment_field = layout.find(seg) if seg else None
        flt = option(options, "segment_filter", None)
        if isinstance(flt, str):
            flt = [s.strip() for s in flt.split(",") if s.strip()]
        self.segment_filter = set(flt) if flt else None
        self.segment_map = _segment_map(options)
        self._seg_ids: list[str | None] = [None] * len(self.levels)
        self._seg_counters = [0] * len(self.levels)
        self._out_by_node = outputs_by_node(self.outputs)  # which output names belong to which layout node
        self._wanted = self._wanted_nodes()
        self._plans: dict[int, list[tuple[Any, ...]]] = {}
        targets = {n.occurs.depending_on.upper() for n in layout.walk() if n.occurs and n.occurs.depending_on}
        #: fields whose value an OCCURS DEPENDING ON reads (id -> counter key)
        self._counter_keys = {id(f): f.identifier.upper() for f in layout.fields() if f.identifier.upper() in targets}
        #: OCCURS DEPENDING ON item (id) -> {counter value: count} from occurs_mappings
        self._occurs_maps = occurs_maps(layout, options)
        self._min_sizes: dict[int, int] = {}
        check_record_length(layout, options)
        #: hierarchical records (``segment-children``): the segment tree, else None (the
        #: module imported only then: start-up of ``coupler copybook decode``)
        self.hierarchy: Hierarchy | None = None
        if getattr(options, "segment_children", ()):
            from .hierarchy import Hierarchy

            self.hierarchy = Hierarchy.resolve(layout, options)
        #: the (segment id, payload) records of the group being decoded, the index of the
        #: record whose group is being decoded and the segment ids from it up to the root
        self._group: list[tuple[str | None, bytes]] | None = None
        self._gidx = 0
        self._parent_ids: list[str | None] = []
        self._places: list[tuple[int, int]] | None = None

    def _wanted_nodes(self) -> set[int]:
        """Nodes that must be decoded: the output ones, their ancestors, and ODO counters."""
        wanted: set[int] = set(self._out_by_node)
        counters = {n.identifier.upper() for n in self.layout.walk() if n.occurs and n.occurs.depending_on}
        for f in self.layout.fields():
            if f.is_dependee or f.identifier.upper() in counters:
                wanted.add(id(f))

        def mark(node: Node) -> bool:
            hit = id(node) in wanted
            if isinstance(node, Group):
                for child in node.children:
                    hit = mark(child) or hit
            if hit:
                wanted.add(id(node))
            return hit

        for r in self.layout.records:
            mark(r)
        return wanted

    # -- public
    def segment_id(self, data: bytes) -> str | None:
        if self.segment_field is None or not isinstance(self.segment_field, Field):
            return None
        f = self.segment_field
        raw = data[f.offset:f.offset + f.size]
        try:
            value = f.field_type.decode(raw, self.ctx)
        except CopybookError:
            return None
        return None if value is None else str(value).strip(_JAVA_TRIM)

    def decode(
        self,
        data: bytes,
        *,
        file: str = "<data>",
        file_id: int = 0,
        record_id: int = 0,
        offset: int = 0,
        stats: DecodeStats | None = None,
        group: Any = None,
    ) -> dict[str, Any] | BadRecord | None:
        """The record as a dict; ``None`` when ``segment_filter`` drops it; a
        :class:`BadRecord` under the strict policy when a field cannot be decoded.

        Hierarchical records: ``group`` is the :class:`~.hierarchy.RecordGroup` of a root
        record (``data`` is then ignored); its children nest in the row."""
        stats = stats if stats is not None else DecodeStats()
        if group is not None:
            data = group.payload
        seg = self.segment_id(data) if self.segment_field is not None else None
        if self.hierarchy is not None:
            self._group = group.records if group is not None else [(seg, data)]
            self._gidx = 0
            self._parent_ids = [seg]
        seg_ids = self._advance_segments(seg, file_id, record_id) if self.levels else []
        if self.segment_filter is not None and seg not in self.segment_filter:
            stats.filtered += 1
            return None
        out: dict[str, Any] = {}
        if self.generate_ids:
            out["File_Id"] = file_id
            out["Record_Id"] = record_id
            out["Record_Byte_Length"] = group.byte_length if group is not None else len(data)
        for k, sid in enumerate(seg_ids):
            out[f"Seg_Id{k}"] = sid
        self._counters: dict[str, Any] = {}
        self._seg = seg
        self._stats = stats
        # a row of hierarchical records: errors name the record they are in, not the Record_Id
        self._where = (file, group.first, offset) if group is not None else (file, record_id, offset)
        self._places = group.places if group is not None else None
        try:
            for rec in self.layout.records:
                value, _used = self._node(rec, data, rec.offset)
                self._emit(out, rec, value)
        except _BadField as bad:
            stats.errors += 1
            number, base = bad.place or self._where[1:]
            return BadRecord(RecordDecodeError(
                bad.reason, file=file, record=number, offset=base + bad.offset,
                field=bad.path, raw=bad.raw,
            ))
        stats.records += 1
        return out

    def record_size(self, data: bytes) -> int:
        """How many bytes the record at the start of ``data`` takes (variable-size OCCURS)."""
        self._counters = {}
        self._seg = None
        self._group = None  # the size of one record, whatever its segment tree
        saved, self.strict = self.strict, False
        saved_stats, self._stats = getattr(self, "_stats", None), DecodeStats()
        try:
            total = 0
            for rec in self.layout.records:
                _value, used = self._node(rec, data, rec.offset)
                total = max(total, rec.offset + used)
            return total
        finally:
            self.strict = saved
            if saved_stats is not None:
                self._stats = saved_stats

    # -- internals
    def _advance_segments(self, seg: str | None, file_id: int, record_id: int) -> list[str | None]:
        if seg is not None and seg in self.levels:
            level = self.levels.index(seg)
            if level == 0:
                self._seg_ids = [None] * len(self.levels)
                self._seg_counters = [0] * len(self.levels)
                self._seg_ids[0] = f"{self.prefix}_{file_id}_{record_id}"
            elif self._seg_ids[level - 1] is not None:
                self._seg_counters[level] += 1
                for deeper in range(level + 1, len(self.levels)):
                    self._seg_ids[deeper] = None
                    self._seg_counters[deeper] = 0
                self._seg_ids[level] = f"{self._seg_ids[level - 1]}_L{level}_{self._seg_counters[level]}"
            ids = list(self._seg_ids)
            for deeper in range(level + 1, len(ids)):
                ids[deeper] = None
            return ids
        # a segment of no configured level belongs to the current root
        return list(self._seg_ids)

    def _emit(self, out: dict[str, Any], node: Node, value: Any) -> None:
        """Put a decoded top-level node into the record (collapsing the root if asked)."""
        o = self._out_by_node.get(id(node))
        if o is not None:
            if value is not None:
                out[o.name] = value
            return
        # a collapsed root: its children are top-level outputs
        if isinstance(node, Group) and isinstance(value, dict):
            out.update(value)

    def _node(self, node: Node, data: bytes, pos: int) -> tuple[Any, int]:
        """Decode ``node`` (all its occurrences) at ``pos``: (value, bytes used)."""
        if id(node) not in self._wanted:
            return None, node.total_size
        if node.occurs:
            count = node.occurs.max
            if node.occurs.depending_on:
                count = self._count(node, pos, data)
            items = []
            at = pos
            # the element being decoded, for the paths of its bad fields (REC.T[2].V)
            subscript = [node, 0]
            self._subscripts.append(subscript)
            try:
                for k in range(count):
                    subscript[1] = k
                    value, used = self._one(node, data, at)
                    items.append(value)
                    at += used if self.variable_occurs else node.size
            finally:
                self._subscripts.pop()
            used_total = (at - pos) if self.variable_occurs else node.total_size
            return items, used_total
        return self._one(node, data, pos)

    def _count(self, node: Node, pos: int, data: bytes) -> int:
        assert node.occurs and node.occurs.depending_on
        raw = self._counters.get(node.occurs.depending_on.upper())
        mapping = self._occurs_maps.get(id(node))
        if mapping is not None:
            key = "" if raw is None else str(raw).strip()
            if key not in mapping:
                self._bad(node, b"", f"{node.occurs.depending_on} = {key!r} is not in occurs_mappings"
                          f" for {node.identifier} (known: {', '.join(map(repr, mapping))})", pos)
                return 0
            raw = mapping[key]
        try:
            count = int(raw) if raw is not None else 0
        except (TypeError, ValueError):
            count = 0
        if count < 0 or count > node.occurs.max or count < node.occurs.min:
            reason = (
                f"OCCURS DEPENDING ON {node.occurs.depending_on} = {raw} is outside"
                f" {node.occurs.min}..{node.occurs.max}"
            )
            self._bad(node, data[pos:pos + 0], reason, pos)
            count = min(max(count, 0), node.occurs.max)
        # checked before anything is allocated: the items must fit in the record's bytes
        each = self._min_size(node)
        room = max(len(data) - pos, 0) // each
        if count > room:
            self._bad(
                node, b"",
                f"OCCURS DEPENDING ON {node.occurs.depending_on} = {count} needs at least {count * each}"
                f" bytes from byte {pos}, the record has {len(data)}",
                pos,
            )
            count = room  # lenient: the table is cut to the items the record holds
        return count

    def _min_size(self, node: Node) -> int:
        """The fewest bytes one occurrence of ``node`` can take (at least 1): its size, or
        with variable-size OCCURS its size when every nested table holds its minimum."""
        key = id(node)
        size = self._min_sizes.get(key)
        if size is None:
            size = max(_min_size(node) if self.variable_occurs else node.size, 1)
            self._min_sizes[key] = size
        return size

    def _path(self, node: Node) -> str:
        """The dotted path of ``node`` with the subscript of every OCCURS element it is in,
        1-based as COBOL's (and as records are numbered): ``REC.T[2].U[1].V``. A table
        whose DEPENDING ON count is bad is named without a subscript of its own."""
        if not self._subscripts:
            return node.dotted_path
        parts = list(node.path)
        for table, k in self._subscripts:
            depth = len(table.path)
            if depth and node.path[:depth] == table.path:  # an element of ``table`` (not a hierarchy child)
                parts[depth - 1] += f"[{k + 1}]"
        return ".".join(parts)

    def _bad(self, node: Node, raw: bytes, reason: str, pos: int) -> None:
        if self.strict:
            raise _BadField(node, raw, reason, pos, self._path(node))
        self._stats.bad_fields += 1
        key = node.dotted_path  # counted per field, whatever the element
        self._stats.bad_field_names[key] = self._stats.bad_field_names.get(key, 0) + 1
        if self._stats.on_bad_field is not None:
            file, record_id, offset = getattr(self, "_where", ("<data>", 0, 0))
            self._stats.on_bad_field(RecordDecodeError(
                reason, file=file, record=record_id, offset=offset + pos, field=self._path(node), raw=bytes(raw),
            ))

    def _plan(self, group: Group) -> list[tuple[Any, ...]]:
        """What decoding ``group`` takes, computed once per group: for each child its offset
        in the group, output name, whether it is decoded, its segment ids and whether it is
        a plain (non-OCCURS) field."""
        plan = []
        for child in group.children:
            out = self._out_by_node.get(id(child))
            seg_ids = self.segment_map.get(child.identifier.upper()) if self.segment_map else None
            nested = self.hierarchy is not None and id(child) in self.hierarchy.child_ids
            plan.append((
                child, child.offset - group.offset, out.name if out is not None and not nested else None,
                id(child) in self._wanted and not nested, seg_ids,
                isinstance(child, Field) and not child.occurs, child.redefines is None, child.total_size,
            ))
        self._plans[id(group)] = plan
        return plan

    def _one(self, node: Node, data: bytes, pos: int) -> tuple[Any, int]:
        if isinstance(node, Field):
            return self._field(node, data, pos), node.size
        assert isinstance(node, Group)
        result: dict[str, Any] = {}
        shift = 0  # bytes the variable-size arrays so far did not use
        variable = self.variable_occurs
        plan = self._plans.get(id(node)) or self._plan(node)
        for child, delta, name, wanted, seg_ids, plain, not_redefines, total in plan:
            start = pos + delta + shift
            if not wanted or (seg_ids is not None and (self._seg is None or self._seg not in seg_ids)):
                value, used = None, total
            elif plain:
                value, used = self._field(child, data, start), total
            else:
                value, used = self._node(child, data, start)
            if variable and not_redefines:
                shift += used - total
            if name is not None and value is not None:
                result[name] = value
                if self.debug and isinstance(child, Field):
                    result[name + "_debug"] = data[start:start + total].hex().upper()
        size = node.size + shift
        if self.hierarchy is not None and self._group is not None and id(node) in self.hierarchy.children_of:
            for kid in self.hierarchy.children_of[id(node)]:
                out = self._out_by_node.get(id(kid))
                if out is not None:
                    result[out.name] = self._children(kid)
        return (result if result else None), size

    def _children(self, kid: Group) -> list[Any]:
        """The records of segment group ``kid`` under the record being decoded (Cobrix: the
        records after it that map to ``kid``, up to one of a segment on the path to the root)."""
        assert self._group is not None and self.hierarchy is not None
        name = kid.identifier.upper()
        found = []
        saved = (self._seg, self._counters, self._gidx, self._parent_ids, self._where)
        try:
            for i in range(saved[2] + 1, len(self._group)):
                seg, data = self._group[i]
                if seg is not None and self.hierarchy.group_of_segment.get(seg) == name:
                    self._seg, self._counters, self._gidx = seg, {}, i
                    self._parent_ids = [seg, *saved[3]]
                    place = self._places[i] if self._places is not None else saved[4][1:]
                    self._where = (saved[4][0], *place)
                    try:
                        value, _used = self._one(kid, data, kid.offset)
                    except _BadField as bad:
                        bad.place = bad.place or place
                        raise
                    found.append(value if value is not None else {})
                elif seg in saved[3]:
                    break
        finally:
            self._seg, self._counters, self._gidx, self._parent_ids, self._where = saved
        return found

    def _segment_allows(self, node: Node) -> bool:
        if not self.segment_map:
            return True
        ids = self.segment_map.get(node.identifier.upper())
        if ids is None:
            return True
        return self._seg is not None and self._seg in ids

    def _field(self, node: Field, data: bytes, pos: int) -> Any:
        ft = node.field_type
        size = ft.size
        raw = data[pos:pos + size]
        if len(raw) == size:
            try:
                value = ft.decode(raw, self.ctx)
            except CopybookError as exc:
                self._bad(node, raw, getattr(exc, "reason", None) or exc.message, pos)
                value = None
            key = self._counter_keys.get(id(node))
            if key is not None:
                self._counters[key] = value
            if size == 4 and isinstance(value, float):
                value = Float32(value)
            return value
        if len(raw) < size:
            # the record ends inside this field (a short variable-length record): text is
            # decoded from the bytes there are, as Cobrix does; other fields are null
            if not raw or ft.kind != "string":
                return None
            ft = ft._replace(size=len(raw))
        try:
            value = ft.decode(raw, self.ctx)
        except CopybookError as exc:
            self._bad(node, raw, getattr(exc, "reason", None) or exc.message, pos)
            value = None
        self._counters[node.identifier.upper()] = value
        if isinstance(value, float) and ft.size == 4:
            value = Float32(value)
        return value


def check_record_length(layout: Layout, options: Any) -> None:
    """Refuse a ``record_length`` shorter than the copybook's record (with every OCCURS
    DEPENDING ON at its minimum): the fields past its end would decode as garbage or null."""
    length = getattr(options, "record_length", None)
    if not length:
        return
    payload = length - options.record_start_offset - options.record_end_offset
    least = max((r.offset + _min_size(r) * (r.occurs.min if r.occurs else 1) for r in layout.records), default=0)
    if payload < least:
        raise CopybookError(
            f"record_length {length} leaves {payload} bytes per record, but the copybook's record"
            f" takes {least if least == layout.size else f'at least {least}'}",
            where="option record_length",
            hint=f"use record_length={layout.size} (the copybook's size), or the copybook of these records",
        )


def _min_size(node: Node) -> int:
    """Bytes of one occurrence of ``node`` when every OCCURS DEPENDING ON inside holds its
    minimum (a lower bound: redefinitions take at least the item they redefine)."""
    if isinstance(node, Field):
        return node.size
    assert isinstance(node, Group)
    total = 0
    for child in node.children:
        if child.redefines is not None or child.renames:
            continue
        one = _min_size(child)
        if child.occurs is not None:
            total += one * (child.occurs.min if child.occurs.depending_on else child.occurs.max)
        else:
            total += one
    return total


def occurs_maps(layout: Layout, options: Any) -> dict[int, dict[str, int]]:
    """``occurs_mappings`` resolved against the layout: id of each OCCURS DEPENDING ON item ->
    {counter value: count}. A key names the OCCURS item (as Cobrix) or its counter field
    (then it applies to every array that counter sizes). A text counter without a mapping,
    or a key that names neither, is an error."""
    from .errors import CopybookLayoutError
    from .layout import depending_on_counter, identifier

    raw = dict(getattr(options, "occurs_mapping", None) or {})
    arrays = [n for n in layout.walk() if n.occurs and n.occurs.depending_on]
    out: dict[int, dict[str, int]] = {}
    for name, mapping in raw.items():
        key = identifier(name).upper()
        hits = [n for n in arrays if n.identifier.upper() == key] or [
            n for n in arrays if n.occurs and n.occurs.depending_on and n.occurs.depending_on.upper() == key
        ]
        if not hits:
            known = sorted({n.name for n in arrays})
            raise CopybookLayoutError(
                f"occurs_mappings names {name!r}, which is no OCCURS DEPENDING ON item (or counter) of the copybook",
                where="option occurs_mappings",
                hint=f"OCCURS DEPENDING ON items: {', '.join(known) or 'none'}",
            )
        for n in hits:
            out[id(n)] = {str(k).strip(): int(v) for k, v in mapping.items()}
    for n in arrays:
        counter = depending_on_counter(layout, n)
        if id(n) not in out and counter.field_type.kind not in ("integer", "decimal"):
            raise CopybookLayoutError(
                f"{n.name} OCCURS DEPENDING ON {counter.name}, which is not numeric",
                where=n.where, hint=f'map its values to counts: -o occurs_mappings={{"{n.name}": {{"A": 1}}}}',
            )
    return out


# ---------------------------------------------------------------------------------------
# files


def decode_files(
    layout: Layout,
    paths: Iterable[Path],
    options: Any = None,
    *,
    stats: DecodeStats | None = None,
    policy: str = "lenient",
    first_file_id: int = 0,
) -> Iterator[dict[str, Any] | BadRecord]:
    """Decode data files record by record (streamed), framing them as ``options`` say.

    ``File_Id`` (``generate_record_id``) counts the files from ``first_file_id``."""
    from . import framing

    stats = stats if stats is not None else DecodeStats()
    decoder = RecordDecoder(layout, options, policy=policy)
    options = decoder.options
    for file_id, path in enumerate(paths, start=first_file_id):
        name = str(path)
        try:
            with open(path, "rb") as stream:
                if (
                    options.variable_size_occurs and options.record_format == "F"
                    and options.record_length is None and not options.record_length_field
                    and layout.has_depending_on
                ):
                    frames: Iterable[Any] = variable_size_records(stream, decoder)
                else:
                    frames = framing.iter_records(
                        stream, options, record_size=layout.size, file=name,
                        **length_field_framing(layout, decoder),
                    )
                for frame in hierarchical_frames(frames, decoder):
                    stats.bytes += getattr(frame, "byte_length", None) or len(frame.payload)
                    stats.offset = frame.offset
                    if isinstance(frame, framing.TruncatedRecord):
                        stats.errors += 1
                        err = frame.error(name)
                        yield BadRecord(RecordDecodeError(
                            err.message, file=name, record=frame.number, offset=frame.offset,
                            raw=frame.payload[:64],
                        ))
                        continue
                    rec = decoder.decode(
                        frame.payload, file=name, file_id=file_id, record_id=frame.number,
                        offset=frame.offset, stats=stats, group=frame if decoder.hierarchy else None,
                    )
                    if rec is not None:
                        yield rec
        except framing.FramingError as exc:
            stats.errors += 1
            yield BadRecord(RecordDecodeError(
                exc.message, file=name, record=getattr(exc, "index", None) or 0,
                offset=getattr(exc, "offset", 0) or 0,
            ))
        except OSError as exc:
            raise CopybookError(f"cannot read {name}: {exc.strerror or exc}", where=name) from exc


def hierarchical_frames(frames: Iterable[Any], decoder: RecordDecoder) -> Iterable[Any]:
    """``frames`` unchanged, or for hierarchical records (``segment-children``) grouped into
    :class:`~.hierarchy.RecordGroup` s (a root record and the records after it), which
    ``decoder.decode(..., group=...)`` turns into one row each."""
    if decoder.hierarchy is None:
        return frames
    from .hierarchy import group_records

    return group_records(frames, decoder.segment_id, decoder.hierarchy.root_ids)


def length_field_framing(layout: Layout, decoder: RecordDecoder) -> dict[str, Any]:
    """The keyword arguments of :func:`~coupler.translators.copybook.framing.iter_records`
    that take each record's length from the ``record_length_field`` option: a
    ``length_reader`` decoding that field from the record's first ``length_prefix`` bytes.
    Empty when the option is not set, so the result can always be passed on::

        framing.iter_records(stream, options, record_size=layout.size, **length_field_framing(layout, decoder))

    Raises :class:`CopybookError` when the named field is not numeric.
    """
    name = decoder.options.record_length_field
    if not name:
        return {}
    node = layout.find(name)
    if not isinstance(node, Field) or node.field_type.kind not in ("integer", "decimal"):
        raise CopybookError(
            f"record_length_field {name} is not a numeric field", where="option record_length_field"
        )

    def reader(head: bytes) -> int:
        value = node.field_type.decode(head[node.offset:node.offset + node.size], decoder.ctx)
        if value is None:
            raise CopybookError(f"record length field {name} is null")
        return int(value)

    return {"length_reader": reader, "length_prefix": node.offset + node.size}


class DecodedFrame:
    """A record cut by decoding (variable-size OCCURS in a fixed-format file): its 0-based
    ``number``, the file byte ``offset`` of its first byte and its ``payload``, as
    :class:`~coupler.translators.copybook.framing.FramedRecord` has them."""

    __slots__ = ("number", "offset", "payload")

    def __init__(self, number: int, offset: int, payload: bytes):
        self.number = number
        self.offset = offset
        self.payload = payload


def variable_size_records(stream: Any, decoder: RecordDecoder) -> Iterator[DecodedFrame]:
    """The records of ``stream`` (a binary file object) when their length is what their OCCURS
    DEPENDING ON counters make it (Cobrix's ``variable_size_occurs`` on a fixed-format file,
    without ``record_length``): each record ends where ``decoder`` finds the end of its
    layout. ``file_start_offset`` is skipped; read in chunks, never whole."""
    window = max(decoder.layout.size, 1)
    buf = b""
    base = 0
    number = 0
    eof = False
    start = decoder.options.file_start_offset
    if start:
        stream.read(start)
        base = start
    while True:
        if not eof and len(buf) < window:
            more = stream.read(max(window * 64, 1 << 16))
            eof = not more
            buf += more
        if not buf:
            return
        used = decoder.record_size(buf[:window])
        used = max(1, min(used, len(buf)))
        yield DecodedFrame(number, base, buf[:used])
        buf = buf[used:]
        base += used
        number += 1


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex().upper()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def to_json(record: Mapping[str, Any]) -> str:
    """One JSON line: nulls omitted, decimals printed exactly with their scale."""
    return _dump(_clean(record))


_UNICODE_ESCAPE = re.compile(r"(\\+)u00([0-9a-f]{2})")


_dumps: Callable[[Any], str] | None = None


def _json_text(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``, :mod:`json` imported on first use: a decode to
    Parquet or Avro never needs it (5 M instructions of the start-up, docs/performance.md)."""
    global _dumps
    if _dumps is None:
        from functools import partial
        from json import dumps

        _dumps = partial(dumps, ensure_ascii=False)
    return _dumps(value)


def _json_str(text: str) -> str:
    """A JSON string as Spark/Jackson writes it (``\\u001A`` with upper-case hex)."""
    out = _json_text(text)
    if "\\u00" not in out:
        return out
    return _UNICODE_ESCAPE.sub(
        lambda m: m.group(1) + "u00" + (m.group(2).upper() if len(m.group(1)) % 2 else m.group(2)), out
    )


def java_float_text(value: float, *, single: bool = False) -> str:
    """``value`` as Java's ``Float.toString``/``Double.toString`` print it (Spark's JSON)."""
    import numpy as np

    if math.isnan(value):
        return '"NaN"'
    if math.isinf(value):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    x = np.float32(value) if single else np.float64(value)
    magnitude = abs(float(x))
    if magnitude == 0 or 1e-3 <= magnitude < 1e7:
        return np.format_float_positional(x, unique=True, trim="0")
    mantissa, exponent = np.format_float_scientific(x, unique=True, trim="0").split("e")
    return f"{mantissa}E{int(exponent)}"


def _dump(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{_json_str(k)}:{_dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dump(v) for v in value) + "]"
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_float_text(value, single=isinstance(value, Float32))
    if isinstance(value, bytes):
        return _json_str(value.hex().upper())
    if isinstance(value, str):
        return _json_str(value)
    return _json_text(value)


def write_avro(records: Iterable[Mapping[str, Any]], schema: dict[str, Any], path: Path) -> int:
    """Write records into an Avro container file; returns the number written."""
    import fastavro

    parsed = fastavro.parse_schema(schema)
    count = 0
    fix = _decimal_fixer(schema)

    def counted() -> Iterator[Mapping[str, Any]]:
        nonlocal count
        for r in records:
            count += 1
            yield fix(r) if fix else r

    with open(path, "wb") as out:
        fastavro.writer(out, parsed, counted())
    return count


def _decimal_fixer(schema: dict[str, Any]) -> Any:
    """A function making the integers of ``decimal`` fields Decimals (integers of more than
    18 digits decode to ``int``; fastavro writes the decimal type from Decimals only) and the
    null elements of an OCCURS group (every field of the element null) records of nulls (the
    schema's items are records, not ``["null", record]``; the vectorised writer does the
    same), or None when the schema has no such field."""

    def plan(t: Any) -> Any:
        if isinstance(t, list):
            return next((p for p in map(plan, t) if p is not None), None)
        if isinstance(t, dict):
            if t.get("logicalType") == "decimal":
                return "decimal"
            if t.get("type") == "record":
                inner = {f["name"]: plan(f["type"]) for f in t["fields"]}
                inner = {k: v for k, v in inner.items() if v is not None}
                return inner or None
            if t.get("type") == "array":
                items = t["items"]
                records = isinstance(items, dict) and items.get("type") == "record"
                item = plan(items)
                return ("array", item, records) if item is not None or records else None
        return None

    def apply(value: Any, p: Any) -> Any:
        if value is None:
            return None
        if p == "decimal":
            return Decimal(value) if isinstance(value, int) else value
        if isinstance(p, tuple):
            _, item, records = p
            return [{} if v is None and records else v if item is None else apply(v, item) for v in value]
        out = dict(value)
        for key, sub in p.items():
            if key in out:
                out[key] = apply(out[key], sub)
        return out

    top = plan(schema)
    return (lambda record: apply(record, top)) if top else None


def write_parquet(records: Iterable[Mapping[str, Any]], schema: dict[str, Any], path: Path, *, batch: int = 10_000) -> int:
    """Write records into a Parquet file (in batches, streamed); returns the number written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow_schema = _arrow_schema(schema)
    count = 0
    writer = pq.ParquetWriter(str(path), arrow_schema)
    try:
        chunk: list[Mapping[str, Any]] = []
        for r in records:
            chunk.append(r)
            if len(chunk) >= batch:
                writer.write_table(pa.Table.from_pylist(chunk, schema=arrow_schema))
                count += len(chunk)
                chunk = []
        if chunk:
            writer.write_table(pa.Table.from_pylist(chunk, schema=arrow_schema))
            count += len(chunk)
    finally:
        writer.close()
    return count


def _arrow_schema(schema: dict[str, Any]) -> Any:
    import pyarrow as pa

    def conv(t: Any, name: str) -> Any:
        if isinstance(t, list):
            return conv(next(x for x in t if x != "null"), name)
        if isinstance(t, dict):
            if t.get("logicalType") == "decimal":
                p = int(t["precision"])
                if p > ARROW_MAX_DIGITS:
                    raise CopybookError(f"{p} digits, more than the {ARROW_MAX_DIGITS} a Parquet decimal holds",
                                        where=name, hint="decode it --to jsonl or --to avro")
                return pa.decimal128(p, int(t["scale"])) if p <= 38 else pa.decimal256(p, int(t["scale"]))
            if t["type"] == "record":
                return pa.struct([pa.field(f["name"], conv(f["type"], f"{name}.{f['name']}")) for f in t["fields"]])
            if t["type"] == "array":
                return pa.list_(conv(t["items"], name))
            return conv(t["type"], name)
        return {
            "string": pa.string(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
            "double": pa.float64(), "bytes": pa.binary(), "boolean": pa.bool_(),
        }[t]

    # a field without a null branch (File_Id, Record_Id...) is not nullable, as in the batch decoder
    return pa.schema([
        pa.field(f["name"], conv(f["type"], f["name"]), nullable=isinstance(f["type"], list) and "null" in f["type"])
        for f in schema["fields"]
    ])
