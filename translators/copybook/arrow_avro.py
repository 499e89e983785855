"""Arrow record batches -> Avro container files, encoded column by column.

The vectorised decoder produces Arrow batches; writing them record by record through
fastavro costs far more than decoding them. :func:`avro_bodies` builds the Avro binary
encoding of every row at once, per column, with NumPy (zig-zag varints, two's-complement
decimals, little-endian floats) and Arrow binary joins (records, arrays, unions); Python
handles only decimals beyond 18 digits. :class:`AvroBatchWriter` writes the bodies as the
data blocks of an Avro object container file (codec ``null``), which any Avro reader
(fastavro, Java, Spark) reads.

The Avro schema is the one :func:`~.avro.avro_schema` gives for the same layout and
options; the batch's columns are its fields, in order.
"""

from __future__ import annotations

import json
import os
from decimal import Context, Decimal
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["AvroBatchWriter", "avro_bodies"]

_EMPTY = pa.scalar(b"", pa.binary())
_EXACT = Context(prec=100)  # decimal256 holds 76 digits
_NULL_BRANCH = b"\x00"  # union index 0 (null), zig-zag encoded
_VALUE_BRANCH = b"\x02"  # union index 1


def _from_rows(matrix: np.ndarray, keep: np.ndarray) -> pa.Array:
    """A binary array whose row ``i`` is ``matrix[i][keep[i]]`` (bytes, in column order)."""
    counts = keep.sum(axis=1, dtype=np.int64)
    offsets = np.zeros(len(matrix) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    data = np.ascontiguousarray(matrix[keep], dtype=np.uint8)
    return pa.Array.from_buffers(pa.binary(), len(matrix), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _varints(values: np.ndarray) -> pa.Array:
    """Avro ``long`` encodings (zig-zag varints) of int64 ``values``."""
    v = values.astype(np.int64, copy=False)
    u = ((v << 1) ^ (v >> 63)).view(np.uint64)
    shifts = np.arange(10, dtype=np.uint64) * np.uint64(7)
    groups = (u[:, None] >> shifts[None, :]) & np.uint64(0x7F)
    length = 1 + (u[:, None] >= (np.uint64(1) << shifts[1:])[None, :]).sum(axis=1)
    cols = np.arange(10)[None, :]
    more = cols < (length[:, None] - 1)
    matrix = (groups | np.where(more, np.uint64(0x80), np.uint64(0))).astype(np.uint8)
    return _from_rows(matrix, cols < length[:, None])


def _concat(*parts: pa.Array | bytes) -> pa.Array:
    """Row-wise concatenation of binary arrays and constant byte strings (null if any is)."""
    return pc.binary_join_element_wise(*parts, _EMPTY)


def _mask(encoded: pa.Array, arr: pa.Array) -> pa.Array:
    """``encoded`` null wherever ``arr`` is null."""
    if not arr.null_count:
        return encoded
    return pc.if_else(arr.is_valid(), encoded, pa.scalar(None, pa.binary()))


def _ints(arr: pa.Array) -> np.ndarray:
    return np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)


def _decimal(arr: pa.Array) -> pa.Array:
    """``bytes`` of the decimal logical type: the unscaled value, two's complement, big endian."""
    typ = arr.type
    if isinstance(typ, pa.Decimal128Type) and typ.precision <= 18:
        raw = np.frombuffer(arr.buffers()[1], dtype=np.int64)
        unscaled = raw[2 * arr.offset : 2 * (arr.offset + len(arr)) : 2].copy()  # low words
        unscaled[~np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)] = 0
        length = np.ones(len(arr), dtype=np.int64)
        for k in range(1, 8):  # bytes needed for -2**(8n-1) <= v < 2**(8n-1)
            length += (unscaled >= (1 << (8 * k - 1))) | (unscaled < -(1 << (8 * k - 1)))
        be = unscaled.astype(">i8").view(np.uint8).reshape(-1, 8)
        matrix = np.concatenate([(2 * length).astype(np.uint8)[:, None], be], axis=1)  # length < 64
        cols = np.arange(9)[None, :]
        keep = (cols == 0) | (cols - 1 >= 8 - length[:, None])
        return _mask(_from_rows(matrix, keep), arr)
    scale = typ.scale
    out: list[bytes | None] = []
    for d in arr.to_pylist():
        if d is None:
            out.append(None)
            continue
        n = int(Decimal(d).scaleb(scale, _EXACT))
        body = n.to_bytes(max(1, (n + (n < 0)).bit_length() // 8 + 1), "big", signed=True)
        out.append(_long_bytes(len(body)) + body)
    return pa.array(out, pa.binary())


def _long_bytes(n: int) -> bytes:
    u = (n << 1) ^ (n >> 63)
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def _strip_null(avro_type: Any) -> tuple[Any, bool]:
    if isinstance(avro_type, list):
        branches = [t for t in avro_type if t != "null"]
        if len(branches) != 1 or avro_type[0] != "null":
            raise TypeError(f"only [\"null\", T] unions are written, not {avro_type}")
        return branches[0], True
    return avro_type, False


def _encode(arr: pa.Array, avro_type: Any) -> pa.Array:
    """The Avro encoding of every value of ``arr`` (null where the value is null, except
    for ``["null", T]`` unions, which encode nulls)."""
    inner, nullable = _strip_null(avro_type)
    body = _encode_value(arr, inner)
    if not nullable:
        return body
    return _concat(_VALUE_BRANCH, body).fill_null(_NULL_BRANCH)


def _encode_value(arr: pa.Array, avro_type: Any, *, null_record_as_nulls: bool = False) -> pa.Array:
    if isinstance(avro_type, dict):
        kind = avro_type.get("type")
        if avro_type.get("logicalType") == "decimal":
            return _decimal(arr)
        if kind == "record":
            if arr.offset:
                arr = pa.concat_arrays([arr])
            names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
            # flatten(): the fields are null where the record is (a field array alone holds any value there)
            columns = arr.flatten()
            parts = [_encode(columns[names.index(f["name"])], f["type"]) for f in avro_type["fields"]]
            body = _concat(*parts) if parts else pa.array([b""] * len(arr), pa.binary())
            return body if null_record_as_nulls else _mask(body, arr)
        if kind == "array":
            # an OCCURS element whose every field is null is null in the rows; the schema's items
            # are records, not ["null", record]: written as the record of nulls (the per-record
            # writer does the same), rather than making the whole array null
            items_type = avro_type["items"]
            items = (_encode_value(arr.values, items_type, null_record_as_nulls=True)
                     if isinstance(items_type, dict) and items_type.get("type") == "record"
                     else _encode(arr.values, items_type))
            offsets = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
            counts = offsets[1:] - offsets[:-1]
            joined = pc.binary_join(pa.ListArray.from_arrays(arr.offsets, items), _EMPTY)
            full = _concat(_varints(counts), joined, b"\x00")
            body = pc.if_else(pa.array(counts > 0), full, pa.scalar(b"\x00", pa.binary()))
            return _mask(body, arr)
        return _encode_value(arr, kind)
    if avro_type in ("int", "long"):
        return _mask(_varints(_ints(arr)), arr)
    if avro_type in ("float", "double"):
        dtype = "<f4" if avro_type == "float" else "<f8"
        values = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False)).astype(dtype)
        width = values.dtype.itemsize
        matrix = values.view(np.uint8).reshape(-1, width)
        return _mask(_from_rows(matrix, np.ones_like(matrix, dtype=bool)), arr)
    if avro_type == "boolean":
        return _mask(pc.if_else(arr, pa.scalar(b"\x01"), pa.scalar(b"\x00")), arr)
    if avro_type in ("string", "bytes"):
        data = arr.cast(pa.binary()) if pa.types.is_string(arr.type) else arr
        lengths = np.asarray(pc.binary_length(data).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        return _mask(_concat(_varints(lengths), data.fill_null(b"")), arr)
    raise TypeError(f"cannot write Avro type {avro_type!r} from Arrow")


def avro_bodies(batch: pa.RecordBatch, schema: dict[str, Any]) -> pa.Array:
    """The Avro binary encoding of every row of ``batch`` under the record ``schema``."""
    fields = schema["fields"]
    if [f["name"] for f in fields] != batch.schema.names:
        raise ValueError(f"the batch columns {batch.schema.names} are not the schema fields")
    if batch.num_rows == 0:
        return pa.array([], pa.binary())
    parts = [_encode(col, f["type"]) for col, f in zip(batch.columns, fields, strict=True)]
    return _concat(*parts)


class AvroBatchWriter:
    """An Avro object container file written from Arrow batches (one data block each)."""

    def __init__(self, stream: BinaryIO, schema: dict[str, Any]):
        self.stream = stream
        self.schema = schema
        self.sync = os.urandom(16)
        self.records = 0
        meta = {"avro.schema": json.dumps(schema).encode(), "avro.codec": b"null"}
        header = bytearray(b"Obj\x01")
        header += _long_bytes(len(meta))
        for key, value in meta.items():
            header += _long_bytes(len(key)) + key.encode() + _long_bytes(len(value)) + value
        header += b"\x00" + self.sync
        stream.write(bytes(header))

    def write_batch(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        bodies = avro_bodies(batch, self.schema)
        offsets = np.frombuffer(bodies.buffers()[1], dtype=np.int32)
        start, end = int(offsets[bodies.offset]), int(offsets[bodies.offset + len(bodies)])
        block = memoryview(bodies.buffers()[2])[start:end]
        self.stream.write(_long_bytes(batch.num_rows) + _long_bytes(len(block)))
        self.stream.write(block)
        self.stream.write(self.sync)
        self.records += batch.num_rows
