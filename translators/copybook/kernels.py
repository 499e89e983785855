"""Vectorised field codecs: one column of many fixed-width fields at once.

Each kernel takes ``block``, a ``(rows, size)`` uint8 NumPy array holding one field of
many records, and returns an Arrow array of the field's values. The fast path recognises
the canonical storage forms (zoned digits F0-F9 with an overpunched sign, packed nibbles
with a C/D/F sign, big-endian binary, text in a single-byte code page); every row it does
not recognise is decoded by the field's own codec (:meth:`FieldType.decode`), so the
values, the nulls and the reasons for bad data are exactly those of the per-record decoder.

A kernel returns ``(array, bad)``: ``bad`` maps a row index to the
:class:`~.picture.FieldDecodeError` of a field that cannot be read (its value is null).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .picture import DecodeContext, FieldDecodeError, FieldType

_JAVA_SPACE = "".join(chr(i) for i in range(0x21))

Bad = dict[int, FieldDecodeError]


def arrow_type(ft: FieldType, avro_type: Any) -> pa.DataType:
    """The Arrow type of a field whose Avro type (without the null branch) is ``avro_type``."""
    if avro_type == "string":
        return pa.string()
    if avro_type == "bytes":
        return pa.binary()
    if avro_type == "int":
        return pa.int32()
    if avro_type == "long":
        return pa.int64()
    if avro_type == "float":
        return pa.float32()
    if avro_type == "double":
        return pa.float64()
    if isinstance(avro_type, dict) and avro_type.get("logicalType") == "decimal":
        p = int(avro_type["precision"])
        return pa.decimal128(p, int(avro_type["scale"])) if p <= 38 else pa.decimal256(p, int(avro_type["scale"]))
    raise TypeError(f"no Arrow type for Avro type {avro_type!r}")


def decode_column(ft: FieldType, block: np.ndarray, ctx: DecodeContext, typ: pa.DataType) -> tuple[pa.Array, Bad]:
    """The values of one field in every row of ``block``, as an Arrow array of ``typ``."""
    kernel = _kernel_for(ft, ctx, typ)
    if kernel is None:
        return _fallback(ft, block, ctx, typ, np.ones(len(block), dtype=bool), None)
    return kernel(ft, block, ctx, typ)


def _kernel_for(ft: FieldType, ctx: DecodeContext, typ: pa.DataType) -> Any:
    if ft.kind == "string" and ft.usage == "DISPLAY" and ctx.is_ebcdic and not ft.justified_right:
        return _text
    integral = pa.types.is_integer(typ) or (pa.types.is_decimal(typ) and typ.precision <= 18)
    if not integral or ft.scale < 0:
        return None
    if ft.usage == "DISPLAY" and ft.category == "numeric" and ctx.is_ebcdic and not ft.explicit_point \
            and not ft.sign_separate and not ft.blank_when_zero and ft.size == ft.digits <= 18:
        return _zoned
    if ft.usage == "COMP-3" and ft.digits <= 18:
        return _packed
    if ft.usage in ("COMP", "COMP-5") and ft.size in (2, 4, 8) and not (ft.size == 8 and not ft.signed):
        return _binary
    return None


# --- assembling arrays ------------------------------------------------------------------


def _fallback(
    ft: FieldType, block: np.ndarray, ctx: DecodeContext, typ: pa.DataType,
    rows: np.ndarray, fast: pa.Array | None,
) -> tuple[pa.Array, Bad]:
    """Decode ``rows`` (a boolean mask) with the field's own codec; the others from ``fast``."""
    bad: Bad = {}
    idx = np.flatnonzero(rows)
    values: list[Any] = fast.to_pylist() if fast is not None else [None] * len(block)
    for i in idx.tolist():
        try:
            values[i] = ft.decode(block[i].tobytes(), ctx)
        except FieldDecodeError as exc:
            values[i] = None
            bad[i] = exc
    return pa.array(values, type=typ), bad


def _finish(ft: FieldType, block: np.ndarray, ctx: DecodeContext, typ: pa.DataType,
            unscaled: np.ndarray, ok: np.ndarray) -> tuple[pa.Array, Bad]:
    """Arrow values from unscaled int64 numbers; rows not ``ok`` go through the codec."""
    if pa.types.is_decimal(typ):
        data = np.empty((len(unscaled), 2), dtype=np.int64)
        data[:, 0] = unscaled
        data[:, 1] = unscaled >> 63  # sign extension to 128 bits, little endian
        validity = pa.array(ok).buffers()[1] if not ok.all() else None
        fast = pa.Array.from_buffers(typ, len(unscaled), [validity, pa.py_buffer(data)],
                                     null_count=int((~ok).sum()))
    else:
        fast = pa.array(unscaled, mask=None if ok.all() else ~ok).cast(typ, safe=False)
    if ok.all():
        return fast, {}
    return _fallback(ft, block, ctx, typ, ~ok, fast)


def _all_zero(block: np.ndarray) -> np.ndarray:
    return np.asarray(~block.any(axis=1))


# --- kernels ------------------------------------------------------------------------------

_INVALID = np.uint8(255)


def _table(pairs: dict[int, int]) -> np.ndarray:
    table = np.full(256, _INVALID, dtype=np.uint8)
    for byte, value in pairs.items():
        table[byte] = value
    return table


#: zoned digit bytes F0-F9 -> 0-9
_ZONED = _table({0xF0 + d: d for d in range(10)})
#: an overpunched sign byte -> digit (+10 when negative): F0-F9 and C0-C9 positive, D0-D9 negative
_PUNCHED = _table({**{0xC0 + d: d for d in range(10)}, **{0xF0 + d: d for d in range(10)},
                   **{0xD0 + d: 10 + d for d in range(10)}})
#: a packed byte of two digit nibbles -> its value 0-99
_PACKED_PAIR = _table({(h << 4) | lo: h * 10 + lo for h in range(10) for lo in range(10)})
#: the last packed byte (digit nibble, sign nibble) -> digit (+10 when negative)
_PACKED_LAST = _table({**{(h << 4) | s: h for h in range(10) for s in (0xA, 0xC, 0xE, 0xF)},
                       **{(h << 4) | s: 10 + h for h in range(10) for s in (0xB, 0xD)}})


def _horner(values: np.ndarray, radix: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of digits (uint8 columns, most significant first) in ``radix`` as int64, and
    which rows hold no :data:`_INVALID` digit (one pass over the columns)."""
    acc = np.zeros(len(values), dtype=np.int64)
    worst = np.zeros(len(values), dtype=np.uint8)
    for col in range(values.shape[1]):
        column = values[:, col]
        np.maximum(worst, column, out=worst)
        acc *= radix
        acc += column
    return acc, worst != _INVALID


def _zoned(ft: FieldType, block: np.ndarray, ctx: DecodeContext, typ: pa.DataType) -> tuple[pa.Array, Bad]:
    digits = _ZONED[block]
    if not ft.signed:
        value, ok = _horner(digits, 10)
        return _finish(ft, block, ctx, typ, value, ok)
    pos = 0 if ft.sign_position == "leading" else ft.size - 1
    sign = _PUNCHED[block[:, pos]]
    digits[:, pos] = np.where(sign == _INVALID, _INVALID, sign % 10)
    value, ok = _horner(digits, 10)
    return _finish(ft, block, ctx, typ, np.where(sign >= 10, -value, value), ok)


def _packed(ft: FieldType, block: np.ndarray, ctx: DecodeContext, typ: pa.DataType) -> tuple[pa.Array, Bad]:
    pairs = _PACKED_PAIR[block[:, :-1]]
    last = _PACKED_LAST[block[:, -1]]
    value, ok = _horner(pairs, 100)
    ok &= last != _INVALID
    neg = (last >= 10) & ok
    if not ft.signed:
        ok &= ~neg
    value = value * 10 + (last % 10)
    ok &= value < ft.max_abs_unscaled
    return _finish(ft, block, ctx, typ, np.where(neg, -value, value), ok)


def _binary(ft: FieldType, block: np.ndarray, ctx: DecodeContext, typ: pa.DataType) -> tuple[pa.Array, Bad]:
    kind = "i" if ft.signed else "u"
    value = np.ascontiguousarray(block).view(f">{kind}{ft.size}").reshape(len(block)).astype(np.int64)
    ok = np.ones(len(block), dtype=bool)
    if ft.usage == "COMP":
        limit = ft.binary_limit(ctx)
        # |value| < 2**63 always holds for int64 (the most negative value aside)
        ok = (np.abs(value) < limit) & (value != np.iinfo(np.int64).min) if limit < (1 << 63) else (
            value != np.iinfo(np.int64).min)
    return _finish(ft, block, ctx, typ, value, ok)


@functools.cache
def _code_points(ctx: DecodeContext) -> np.ndarray | None:
    """The code page as a byte -> code point table, or None if a byte decodes to several."""
    table = getattr(ctx.text_codec, "table", None)
    if table is None or any(len(ch) != 1 for ch in table):
        return None
    return np.array([ord(ch) for ch in table], dtype=np.uint32)


@functools.cache
def _ascii_table(ctx: DecodeContext) -> np.ndarray | None:
    """The code page as a byte -> ASCII byte table (255 where the character is not ASCII)."""
    points = _code_points(ctx)
    if points is None:
        return None
    return np.where(points < 0x80, points, 255).astype(np.uint8)


def _text(ft: FieldType, block: np.ndarray, ctx: DecodeContext, typ: pa.DataType) -> tuple[pa.Array, Bad]:
    ascii_table = _ascii_table(ctx)
    if ascii_table is None:
        return _fallback(ft, block, ctx, typ, np.ones(len(block), dtype=bool), None)
    chars = ascii_table[block]
    policy = ctx.string_trimming_policy
    if (chars == _INVALID).any():
        arr = _trim(_text_utf32(ft, block, ctx), policy)
        # Arrow reads NumPy's UTF-32 strings up to the first U+0000: such rows take the codec
        points = _code_points(ctx)
        assert points is not None  # this path is taken for one-character code pages only
        has_nul = (points[block] == 0).any(axis=1)
        if has_nul.any():
            nulled = _all_zero(block) if ctx.improved_null_detection else np.zeros(len(block), bool)
            arr, _ = _fallback(ft, block, ctx, typ, has_nul & ~nulled, arr)
    else:
        arr = _ascii_strings(chars, policy)
    if ctx.improved_null_detection and not block.all():  # some byte is 0x00: maybe a null row
        null = _all_zero(block)
        if null.any():
            arr = pc.if_else(pa.array(null), pa.scalar(None, pa.string()), arr)
    return arr, {}


def _ascii_strings(chars: np.ndarray, policy: str) -> pa.Array:
    """An Arrow string array from rows of ASCII bytes, trimmed as Java's ``trim()`` does."""
    n, width = chars.shape
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    arr = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(chars)))
    if policy == "both":
        return pc.ascii_trim(arr, _JAVA_SPACE)
    if policy == "right":
        return pc.ascii_rtrim(arr, _JAVA_SPACE)
    if policy == "left":
        return pc.ascii_ltrim(arr, _JAVA_SPACE)
    return arr


def _text_utf32(ft: FieldType, block: np.ndarray, ctx: DecodeContext) -> pa.Array:
    """Text with characters beyond ASCII: NumPy's UTF-32 strings, converted by Arrow."""
    points = _code_points(ctx)
    assert points is not None  # this path is taken for one-character code pages only
    chars = np.ascontiguousarray(points[block]).view(f"<U{ft.size}").reshape(len(block))
    return pa.array(chars, type=pa.string())


def _trim(arr: pa.Array, policy: str) -> pa.Array:
    """Java's ``String.trim()`` (characters up to U+0020) on the side(s) ``policy`` names."""
    if policy == "both":
        return pc.utf8_trim(arr, _JAVA_SPACE)
    if policy == "right":
        return pc.utf8_rtrim(arr, _JAVA_SPACE)
    if policy == "left":
        return pc.utf8_ltrim(arr, _JAVA_SPACE)
    return arr
