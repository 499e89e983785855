"""The vectorised batch decoder: many fixed-length records into one Arrow record batch.

:class:`BatchDecoder` walks the layout's output tree once per *batch*, not once per record:
each elementary field becomes one column computed by a NumPy kernel (:mod:`.kernels`)
over a ``(records, size)`` view of the batch, OCCURS become list arrays over the same
bytes reshaped, groups become struct arrays. The keys, types and values are those of the
per-record decoder and of :func:`~.avro.avro_schema`.

It serves layouts whose fields sit at fixed offsets: fixed-length records, with OCCURS
DEPENDING ON counters outside any OCCURS when the arrays keep their maximum size
(``variable_size_occurs=false``, the default). Segment-dependent REDEFINES, segment ids
and debug fields are left to the per-record decoder; :meth:`BatchDecoder.supports` says
which applies.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from coupler.canonical.plain import Plain

from . import kernels
from .avro import field_avro_type, output_fields
from .decoder import ARROW_MAX_DIGITS
from .kernels import FusedColumn, FusedKernel, FusedResult, arrow_type, decode_column, decode_live
from .layout import Field, Layout, OutputNode, check_bounds
from .options import CopybookOptions
from .picture import DecodeContext

#: records per batch: large enough to amortise the Python work of a batch (wrapping the
#: kernel's buffers as Arrow arrays, lists and structs), small enough that memory stays flat;
#: the compiled kernel keeps its own working set in the caches (tiles of 64 records). On the
#: benchmark layout, in process, CPU MB/s at load 25: 4,096 records 529, 8,192 599, 16,384
#: 663, 32,768 634 (with the earlier, untiled kernel 8,192 was ~25 % faster than 65,536)
DEFAULT_BATCH_RECORDS = 16_384


class BadField(Plain, frozen=True):
    """A field of one record that cannot be decoded (its value is null in the batch)."""

    record: int  # index of the record in the input, from 0
    path: str  # dotted path of the field, with the 1-based subscripts of its OCCURS elements (REC.T[2].V)
    offset: int  # byte offset of the field inside the record
    raw: bytes
    reason: str

    def __init__(self, record: int, path: str, offset: int, raw: bytes, reason: str) -> None:
        self.__dict__.update(record=record, path=path, offset=offset, raw=raw, reason=reason)


class DecodedBatch(Plain):
    batch: pa.RecordBatch
    bad: list[BadField]

    def __init__(self, batch: pa.RecordBatch, bad: list[BadField]) -> None:
        self.batch = batch
        self.bad = bad


def _as_options(options: CopybookOptions | Mapping[str, Any] | None) -> CopybookOptions:
    if isinstance(options, CopybookOptions):
        return options
    return CopybookOptions.from_mapping(options or {})


class BatchDecoder:
    """Decodes ``(records, record_size)`` byte arrays into Arrow record batches."""

    def __init__(self, layout: Layout, options: CopybookOptions | Mapping[str, Any] | None = None, *,
                 compiled: bool | None = None):
        self.layout = layout
        self.options = _as_options(options)
        reason = self.unsupported_reason(layout, self.options)
        if reason:
            raise ValueError(f"the batch decoder cannot decode this layout: {reason}")
        check_bounds(layout)  # every OCCURS at its maximum: bounded before anything is laid out
        self.ctx = DecodeContext.from_options(self.options)
        self.outputs = output_fields(layout, self.options)
        self.record_size = self.options.record_length or layout.size
        self.schema = pa.schema([self._arrow_field(o) for o in self.outputs])
        self._struct_fields: dict[int, list[pa.Field]] = {}
        #: (records, elements) -> the offsets of full OCCURS arrays, as an Arrow int32 array
        self._full_offsets: dict[tuple[int, int], pa.Array] = {}
        #: the fused compiled kernel for the fields it knows (None: NumPy kernels only);
        #: ``compiled=None`` uses it when it is built (``kernels.COMPILED``)
        self.fused: FusedKernel | None = None
        self._fused_keys: list[int] = []
        if (kernels.COMPILED if compiled is None else compiled) and kernels.FUSED_BUILT:
            self._compile()

    def _compile(self) -> None:
        """Plan the fused kernel: every elementary field it can decode, with the offsets of
        its instances in a record in the order :meth:`_column` flattens OCCURS elements."""
        columns: list[FusedColumn] = []

        def walk(out: OutputNode, bases: list[int], base_offset: int) -> None:
            node = out.node
            rel = node.offset - base_offset
            if node.occurs:
                starts = [b + rel + k * node.size for b in bases for k in range(node.occurs.max)]
            else:
                starts = [b + rel for b in bases]
            if out.children is None:
                assert isinstance(node, Field)
                typ = self._arrow_type(out, element=True)
                kind = kernels.fused_column_kind(node.field_type, self.ctx, typ)
                if kind and max(starts) + node.size <= self.record_size:  # (a short record_length: NumPy's)
                    columns.append(FusedColumn(node.field_type, starts, typ, kind))
                    self._fused_keys.append(id(out))
                return
            for child in out.children:
                walk(child, starts, node.offset)

        for out in self.outputs:
            walk(out, [0], 0)
        if columns:
            self.fused = FusedKernel(columns, self.ctx)

    # -- capability --------------------------------------------------------------------------

    @staticmethod
    def unsupported_reason(layout: Layout, options: CopybookOptions) -> str | None:
        """Why the batch decoder cannot serve this layout and these options (None if it can)."""
        if options.record_format not in ("F", "FB") or options.record_length_field:
            return f"record_format {options.record_format} has variable-length records"
        if options.variable_size_occurs and layout.has_depending_on:
            return "variable_size_occurs moves fields after an OCCURS DEPENDING ON"
        if options.redefine_segment_id_map or options.segment_id_levels or options.segment_id_root:
            return "segment-dependent REDEFINES and segment ids"
        if options.segment_filter or options.debug != "none":
            return "segment filters and debug fields"
        if options.record_start_offset or options.record_end_offset:
            return "record start/end offsets"
        if options.occurs_mappings:
            return "occurs_mappings"
        for node in layout.walk():
            if node.occurs and node.occurs.depending_on:
                counter = layout.find(node.occurs.depending_on)
                if any(a.occurs for a in _ancestors(layout, counter)) or counter.occurs:
                    return f"DEPENDING ON counter {counter.identifier} inside an OCCURS"
        for f in layout.fields():
            avro_type = field_avro_type(f, strict_integral_precision=options.strict_integral_precision)
            if isinstance(avro_type, dict) and int(avro_type.get("precision", 0)) > ARROW_MAX_DIGITS:
                return f"{f.identifier} has {avro_type['precision']} digits, more than an Arrow decimal holds"
        return None

    @classmethod
    def supports(cls, layout: Layout, options: CopybookOptions | Mapping[str, Any] | None = None) -> bool:
        return cls.unsupported_reason(layout, _as_options(options)) is None

    # -- schema -----------------------------------------------------------------------------

    def _arrow_field(self, out: OutputNode) -> pa.Field:
        return pa.field(out.name, self._arrow_type(out), nullable=True)

    def _arrow_type(self, out: OutputNode, *, element: bool = False) -> pa.DataType:
        node = out.node
        if out.children is None:
            assert isinstance(node, Field)
            typ = arrow_type(node.field_type, field_avro_type(node, strict_integral_precision=self.options.strict_integral_precision))
        else:
            typ = pa.struct([self._arrow_field(c) for c in out.children])
        if node.occurs and not element:
            typ = pa.list_(typ)
        return typ

    # -- decoding ---------------------------------------------------------------------------

    def decode(self, data: bytes | memoryview | np.ndarray, *, first_record: int = 0, file_id: int = 0) -> DecodedBatch:
        """Decode whole records; ``data`` holds ``n * record_size`` bytes."""
        rows = np.frombuffer(data, dtype=np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) else data
        if rows.ndim == 1:
            if len(rows) % self.record_size:
                raise ValueError(f"{len(rows)} bytes are not a whole number of {self.record_size}-byte records")
            rows = rows.reshape(-1, self.record_size)
        bad: list[BadField] = []
        pre: dict[int, FusedResult] = {}
        if self.fused is not None:
            pre = dict(zip(self._fused_keys, self.fused.run(rows), strict=True))
        arrays = [self._column(o, rows, 0, bad, pre) for o in self.outputs]
        fields = list(self.schema)
        if self.options.generate_record_id:
            n = len(rows)
            ids = [
                pa.array(np.full(n, file_id, dtype=np.int32)),
                pa.array(np.arange(first_record, first_record + n, dtype=np.int64)),
                pa.array(np.full(n, self.record_size, dtype=np.int32)),
            ]
            fields = [pa.field("File_Id", pa.int32(), False), pa.field("Record_Id", pa.int64(), False),
                      pa.field("Record_Byte_Length", pa.int32(), False), *fields]
            arrays = ids + arrays
        bad = sorted((b._replace(record=b.record + first_record) for b in bad), key=lambda b: (b.record, b.offset))
        return DecodedBatch(pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields)), bad)

    def _column(self, out: OutputNode, rows: np.ndarray | _Rows, base: int, bad: list[BadField],
                pre: dict[int, FusedResult], live: np.ndarray | None = None) -> pa.Array:
        """The array of ``out`` for every row; ``rows`` hold bytes from record offset ``base``.

        Bad fields are reported with ``record`` = the index of the row they come from. Rows
        not ``live`` (elements beyond an OCCURS DEPENDING ON count, whose values are dropped)
        are never given to a field's codec: their bytes are whatever the record holds there.
        """
        node = out.node
        start = node.offset - base
        if not node.occurs:
            return self._element(out, rows, start, base, bad, pre, live)
        count, size, n = node.occurs.max, node.size, len(rows)
        # the elements' bytes, one row each: a copy that only NumPy kernels and bad values need
        items = _Rows(n * count, lambda: _arr(rows)[:, start : start + count * size].reshape(n * count, size))
        item_bad: list[BadField] = []
        lengths: np.ndarray | None = None  # None: every array full (no DEPENDING ON)
        keep: np.ndarray | None = None  # the elements the records hold (None: all of them)
        if node.occurs.depending_on:
            wanted = self._counter(node.occurs.depending_on, _arr(rows), base)
            for r in np.flatnonzero((wanted < node.occurs.min) | (wanted > count)).tolist():
                bad.append(BadField(r, node.dotted_path, node.offset, b"",
                                    f"OCCURS DEPENDING ON {node.occurs.depending_on} = {wanted[r]} is outside "
                                    f"{node.occurs.min}..{count}"))
            lengths = np.clip(wanted, 0, count)  # as the per-record decoder: out of range is bad, not clipped to min
            if (lengths != count).any():
                keep = (np.arange(count)[None, :] < lengths[:, None]).reshape(-1)
        item_live = keep if live is None else np.repeat(live, count) if keep is None else keep & np.repeat(live, count)
        values = self._element(out, items, 0, node.offset, item_bad, pre, item_live)
        if keep is not None:
            values = values.filter(pa.array(keep))
        cut = len(node.dotted_path)
        for b in item_bad:  # only the items the record holds count; report them on their record
            parent, k = divmod(b.record, count)
            if lengths is None or k < lengths[parent]:  # named by the element's 1-based subscript, as the per-record decoder
                path = f"{b.path[:cut]}[{k + 1}]{b.path[cut:]}"
                bad.append(b._replace(record=parent, offset=b.offset + k * size, path=path))
        if lengths is None:  # the same offsets for every batch of n records: made once
            full = self._full_offsets.get((n, count))
            if full is None:
                if len(self._full_offsets) > 8:  # batches of many sizes (a caller's own): keep a few
                    self._full_offsets.clear()
                full = self._full_offsets[(n, count)] = _int32_array(np.arange(0, (n + 1) * count, count, dtype=np.int32))
            return pa.ListArray.from_arrays(full, values)
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        return pa.ListArray.from_arrays(_int32_array(offsets), values)

    def _element(self, out: OutputNode, rows: np.ndarray | _Rows, start: int, base: int,
                 bad: list[BadField], pre: dict[int, FusedResult], live: np.ndarray | None = None) -> pa.Array:
        node = out.node
        if out.children is None:
            assert isinstance(node, Field)
            fused = pre.get(id(out))
            if fused is not None and fused.flags is None:
                return fused.array  # every value decoded by the compiled kernel: no bytes needed
            typ = self._arrow_type(out, element=True)
            block = _arr(rows)[:, start : start + node.size]
            if fused is not None:
                arr, errors = fused.finish(node.field_type, block, self.ctx, typ, live)
            elif live is not None and not live.all():
                arr, errors = decode_live(node.field_type, block, self.ctx, typ, live)
            else:
                arr, errors = decode_column(node.field_type, block, self.ctx, typ)
            for i, exc in errors.items():
                bad.append(BadField(i, node.dotted_path, base + start, block[i].tobytes(), exc.reason))
            return arr
        children = [self._column(c, rows, base, bad, pre, live) for c in out.children]
        fields = self._struct_fields.get(id(out))
        if fields is None:  # the same for every batch: made once (its Avro types are looked up)
            fields = self._struct_fields[id(out)] = [self._arrow_field(c) for c in out.children]
        return pa.StructArray.from_arrays(children, fields=fields)

    def _counter(self, name: str, rows: np.ndarray, base: int) -> np.ndarray:
        node = self.layout.find(name)
        assert isinstance(node, Field)
        block = rows[:, node.offset - base : node.offset - base + node.size]
        typ = arrow_type(node.field_type, field_avro_type(node))
        arr, _ = decode_column(node.field_type, block, self.ctx, typ)
        if pa.types.is_integer(arr.type) and not arr.null_count:  # no pyarrow.compute (start-up)
            return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.int64)
        return np.asarray(arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)

    # -- files ------------------------------------------------------------------------------

    def iter_file(self, path: str | Path, *, batch_records: int = DEFAULT_BATCH_RECORDS, file_id: int = 0) -> Iterator[DecodedBatch]:
        """Decode a file of fixed-length records chunk by chunk (memory stays flat).

        ``file_start_offset`` and ``file_end_offset`` bytes are skipped; a truncated last
        record is reported as a :class:`BadField` with path ``<record>``.
        """
        size = self.record_size
        start = self.options.file_start_offset
        total = max(Path(path).stat().st_size - start - self.options.file_end_offset, 0)
        whole = total - total % size
        with open(path, "rb", buffering=0) as stream:
            stream.seek(start)
            # one buffer read into again for every chunk (a decoded batch holds no reference to
            # its input: the kernels copy what they keep), not fresh bytes a chunk
            buffer = memoryview(bytearray(min(batch_records, max(whole // size, 1)) * size))
            for first in range(0, whole // size, batch_records):
                count = min(batch_records, whole // size - first)
                view = buffer[: count * size]
                if read_fully(stream, view) < count * size:
                    raise OSError(f"{path} ended early")
                yield self.decode(view, first_record=first, file_id=file_id)
            if whole < total:
                tail = stream.read(total - whole)
                done = self.decode(b"", first_record=whole // size, file_id=file_id)
                done.bad.append(BadField(whole // size, "<record>", 0, tail,
                                         f"truncated record at byte {start + whole}: {len(tail)} of {size} bytes"))
                yield done


def _int32_array(values: np.ndarray) -> pa.Array:
    # from the buffer, not pa.array(values): converting a NumPy array makes pyarrow look for
    # pandas and import numpy.ma (0.02-0.05 s of every run's start-up)
    return pa.Array.from_buffers(pa.int32(), len(values), [None, pa.py_buffer(values)])


def read_fully(stream: Any, into: memoryview) -> int:
    """Read into ``into`` until it is full or the file ends; the bytes read."""
    done = 0
    while done < len(into):
        n = stream.readinto(into[done:])
        if not n:
            break
        done += n
    return done


class _Rows:
    """Rows of bytes made on first use (the OCCURS elements' copy), and how many there are."""

    __slots__ = ("_make", "_value", "count")

    def __init__(self, count: int, make: Any):
        self.count, self._make = count, make
        self._value: np.ndarray | None = None

    def __len__(self) -> int:
        return self.count

    def get(self) -> np.ndarray:
        if self._value is None:
            self._value = self._make()
        assert self._value is not None
        return self._value


def _arr(rows: np.ndarray | _Rows) -> np.ndarray:
    return rows.get() if isinstance(rows, _Rows) else rows


def _ancestors(layout: Layout, target: Any) -> list[Any]:
    """The groups that contain ``target``, outermost first."""
    path: list[Any] = []

    def walk(node: Any, trail: list[Any]) -> bool:
        if node is target:
            path.extend(trail)
            return True
        return any(walk(c, [*trail, node]) for c in getattr(node, "children", []) or [])

    for record in layout.records:
        if walk(record, []):
            break
    return path
