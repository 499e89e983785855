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
import os
from typing import Any

import numpy as np
import pyarrow as pa

from .picture import DecodeContext, FieldDecodeError, FieldType

_JAVA_SPACE = "".join(chr(i) for i in range(0x21))

Bad = dict[int, FieldDecodeError]


def _pc() -> Any:
    """``pyarrow.compute``, imported on first use (0.04-0.2 s: a run of the compiled kernel
    on data without nulls never needs it)."""
    import pyarrow.compute

    return pyarrow.compute


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


def decode_live(ft: FieldType, block: np.ndarray, ctx: DecodeContext, typ: pa.DataType,
                live: np.ndarray) -> tuple[pa.Array, Bad]:
    """:func:`decode_column` of the rows ``live`` only; the others are null (elements beyond an
    OCCURS DEPENDING ON count: their bytes are never decoded, so never reported bad)."""
    idx = np.flatnonzero(live)
    arr, bad = decode_column(ft, block[idx], ctx, typ)
    at = np.zeros(len(block), dtype=np.int64)
    at[idx] = np.arange(len(idx))
    return arr.take(pa.array(at, mask=~live)), {int(idx[i]): exc for i, exc in bad.items()}


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


#: flagged rows from which :func:`_fallback` decodes each distinct value once, not each row
#: (below, one call a row is cheaper than grouping and importing ``pyarrow.compute``)
GROUP_AT = 64


def _fallback(
    ft: FieldType, block: np.ndarray, ctx: DecodeContext, typ: pa.DataType,
    rows: np.ndarray, fast: pa.Array | None,
) -> tuple[pa.Array, Bad]:
    """Decode ``rows`` (a boolean mask) with the field's own codec; the others from ``fast``.

    Many flagged rows are mostly the same few byte strings (a number left blank, LOW-VALUES,
    one bad sign in a whole column): each distinct one is decoded once, then spread."""
    idx = np.flatnonzero(rows)
    if len(idx) >= GROUP_AT:
        return _fallback_grouped(ft, block, ctx, typ, idx, fast)
    bad: Bad = {}
    values: list[Any] = fast.to_pylist() if fast is not None else [None] * len(block)
    for i in idx.tolist():
        try:
            values[i] = ft.decode(block[i].tobytes(), ctx)
        except FieldDecodeError as exc:
            values[i] = None
            bad[i] = exc
    return pa.array(values, type=typ), bad


def _fallback_grouped(ft: FieldType, block: np.ndarray, ctx: DecodeContext, typ: pa.DataType,
                      idx: np.ndarray, fast: pa.Array | None) -> tuple[pa.Array, Bad]:
    import pyarrow.compute as pc

    flagged = np.ascontiguousarray(block[idx])
    keys = flagged.view(np.dtype((np.void, flagged.shape[1]))).ravel()  # one key a row: its bytes
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    values: list[Any] = []
    errors: dict[int, FieldDecodeError] = {}
    for k, j in enumerate(first.tolist()):
        try:
            values.append(ft.decode(flagged[j].tobytes(), ctx))
        except FieldDecodeError as exc:
            values.append(None)
            errors[k] = exc
    inverse = inverse.ravel()
    decoded = pa.array(values, type=typ).take(pa.array(inverse))
    bad: Bad = {}
    if errors:
        for at in np.flatnonzero(np.isin(inverse, np.fromiter(errors, dtype=np.int64))).tolist():
            bad[int(idx[at])] = errors[int(inverse[at])]
    if fast is None and len(idx) == len(block):
        return decoded, bad
    mask = np.zeros(len(block), dtype=bool)
    mask[idx] = True
    base = fast if fast is not None else pa.nulls(len(block), type=typ)
    return pc.replace_with_mask(base, pa.array(mask), decoded), bad


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
    else:  # from the buffers (a cast would import pyarrow.compute: 0.1-0.15 s of start-up)
        width = typ.bit_width // 8
        values = unscaled.astype(np.dtype(f"{'i' if pa.types.is_signed_integer(typ) else 'u'}{width}"))
        validity = None if ok.all() else pa.py_buffer(np.packbits(ok, bitorder="little"))
        fast = pa.Array.from_buffers(typ, len(values), [validity, pa.py_buffer(values)],
                                     null_count=int(len(ok) - np.count_nonzero(ok)))
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
            arr = _pc().if_else(pa.array(null), pa.scalar(None, pa.string()), arr)
    return arr, {}


def _ascii_strings(chars: np.ndarray, policy: str) -> pa.Array:
    """An Arrow string array from rows of ASCII bytes, trimmed as Java's ``trim()`` does."""
    n, width = chars.shape
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    arr = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(chars)))
    if policy == "both":
        return _pc().ascii_trim(arr, _JAVA_SPACE)
    if policy == "right":
        return _pc().ascii_rtrim(arr, _JAVA_SPACE)
    if policy == "left":
        return _pc().ascii_ltrim(arr, _JAVA_SPACE)
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
        return _pc().utf8_trim(arr, _JAVA_SPACE)
    if policy == "right":
        return _pc().utf8_rtrim(arr, _JAVA_SPACE)
    if policy == "left":
        return _pc().utf8_ltrim(arr, _JAVA_SPACE)
    return arr


# --- the fused kernel (compiled) ----------------------------------------------------------

try:  # built at install from _fused.c (setup.py); without a C compiler the NumPy kernels decode
    from . import _fused
except ImportError:  # pragma: no cover - depends on the machine's build
    _fused = None  # type: ignore[assignment]

#: the fused kernel is used when built, unless COUPLER_COPYBOOK_KERNEL=numpy (to compare them)
FUSED_BUILT = _fused is not None
COMPILED = FUSED_BUILT and os.environ.get("COUPLER_COPYBOOK_KERNEL", "") != "numpy"

_ZONED_K, _PACKED_K, _BINARY_K, _TEXT_K = 1, 2, 3, 4
_PROGRAM_WIDTH = 12
_TRIM = {"both": 1, "left": 2, "right": 3}
_NULL_ZERO = 16
#: bytes the kernel may write past a text column's last value (TEXT_SLACK in _fused.c)
_TEXT_SLACK = 64


def _utf8_table(ctx: DecodeContext) -> bytes | None:
    """The code page for the fused kernel: per byte its UTF-8 (4 bytes), their length,
    whether Java's ``trim()`` removes it (code point <= U+0020), the first UTF-8 byte, and
    whether there are more (tables of 256 bytes after the first of 1,024); then the byte of
    the space eight times (trailing padding is skipped eight bytes at a time)."""
    points = _code_points(ctx)
    if points is None:
        return None
    utf8 = bytearray(256 * 4)
    lengths = bytearray(256)
    for b, cp in enumerate(points.tolist()):
        enc = chr(cp).encode("utf-8", errors="surrogatepass")
        utf8[b * 4 : b * 4 + len(enc)] = enc
        lengths[b] = len(enc)
    trimmed = bytes(1 if cp <= 0x20 else 0 for cp in points.tolist())
    first = bytes(utf8[b * 4] for b in range(256))
    multi = bytes(1 if n > 1 else 0 for n in lengths)
    spaces = points.tolist()
    space = spaces.index(0x20) if 0x20 in spaces else 0
    return bytes(utf8) + bytes(lengths) + trimmed + first + multi + bytes([space]) * 8


def fused_column_kind(ft: FieldType, ctx: DecodeContext, typ: pa.DataType) -> int:
    """The fused kernel's kind for a field (0: not compiled, the NumPy kernels decode it).

    The same storage forms as the NumPy kernels (:func:`_kernel_for`); anything else in a
    compiled column (blanks, bad signs, overflow) is flagged and decoded by the field's codec."""
    kernel = _kernel_for(ft, ctx, typ)
    if kernel is _text:
        return _TEXT_K if _code_points(ctx) is not None else 0
    if kernel is _zoned:
        return _ZONED_K
    if kernel is _packed:
        return _PACKED_K
    if kernel is _binary:
        return _BINARY_K
    return 0


class FusedColumn:
    """One output column of the fused kernel: a field, the byte offsets of its instances in
    a record (one, or one per OCCURS element, in the order of the flattened list), its type."""

    def __init__(self, ft: FieldType, offsets: list[int], typ: pa.DataType, kind: int):
        self.ft, self.offsets, self.typ, self.kind = ft, offsets, typ, kind
        self.width = 0 if kind == _TEXT_K else 16 if pa.types.is_decimal(typ) else typ.bit_width // 8


class FusedKernel:
    """Decodes the compiled columns of a batch in one pass over its records (``_fused.c``).

    ``run(rows)`` returns one :class:`FusedResult` per column: values and flags of every
    instance (``len(rows) * len(offsets)``). Columns not compiled are not given to it."""

    def __init__(self, columns: list[FusedColumn], ctx: DecodeContext):
        assert _fused is not None
        self.columns = columns
        self.ctx = ctx
        table = _utf8_table(ctx) if any(c.kind == _TEXT_K for c in columns) else b""
        self.tables = table or b"\0"
        #: the most UTF-8 bytes a character of the code page takes (2 for cp037: Latin-1): a text
        #: column's region is sized for that, not for 4 bytes a character (less memory to map)
        self.char_bytes = max(max(table[1024:1280]), 1) if table else 4
        self.instances = np.array([o for c in columns for o in c.offsets] or [0], dtype=np.int32)
        self._programs: dict[int, tuple[np.ndarray, int, int, int, int]] = {}

    def _program(self, n: int) -> tuple[np.ndarray, int, int, int, int]:
        """The program for batches of ``n`` records, and its buffer sizes (cached per ``n``)."""
        cached = self._programs.get(n)
        if cached is not None:
            return cached
        prog = np.zeros((len(self.columns), _PROGRAM_WIDTH), dtype=np.int64)
        values = flags = textoff = text = inst = 0
        null_zero = _NULL_ZERO if self.ctx.improved_null_detection else 0
        for i, col in enumerate(self.columns):
            ft, m = col.ft, len(col.offsets)
            count = n * m
            row = prog[i]
            row[0:4] = (col.kind, ft.size, m, inst)
            row[9] = flags
            inst += m
            flags += count
            if col.kind == _TEXT_K:
                row[4] = 0  # the one code page table
                row[8] = text
                row[10] = textoff
                row[11] = _TRIM.get(self.ctx.string_trimming_policy, 0) | null_zero
                text += count * ft.size * self.char_bytes + _TEXT_SLACK  # the kernel's 64-byte stores
                textoff += count + 1
                continue
            row[4] = col.width
            row[5] = int(ft.signed)
            row[8] = values
            values += count * col.width
            if col.kind == _ZONED_K:
                row[6] = (0 if ft.sign_position == "leading" else ft.size - 1) if ft.signed else -1
                row[11] = null_zero if ft.usage in ("DISPLAY",) else 0
            elif col.kind == _PACKED_K:
                row[7] = ft.max_abs_unscaled
            else:
                limit = ft.binary_limit(self.ctx) if ft.usage == "COMP" else 0
                row[7] = limit if limit < (1 << 63) else 0
                if ft.usage == "COMP" and not row[7]:
                    row[7] = -1  # a limit of 2**63: only the most negative int64 is refused
        result = (prog, values, flags, textoff, text)
        self._programs[n] = result
        return result

    def run(self, rows: np.ndarray) -> list[FusedResult]:
        n, size = rows.shape
        prog, nvalues, nflags, ntextoff, ntext = self._program(n)
        # Arrow's allocator (jemalloc) reuses the memory of the batches already written,
        # where fresh NumPy arrays of megabytes would be mapped and faulted in every batch
        values, flags_buf = pa.allocate_buffer(max(nvalues, 1)), pa.allocate_buffer(max(nflags, 1))
        tbuf, obuf = pa.allocate_buffer(max(ntext, 1), resizable=True), pa.allocate_buffer(max(ntextoff, 1) * 4)
        counts = np.empty(2 * len(self.columns) + 1, dtype=np.int64)
        data = rows if rows.flags.c_contiguous else np.ascontiguousarray(rows)
        _fused.run(data, n, size, prog, self.instances, self.tables, values, flags_buf, obuf, tbuf, counts)
        flags = np.frombuffer(flags_buf, dtype=np.uint8)
        vbuf = values
        ncols = len(self.columns)
        if ntext:  # the kernel packed the text columns together: give back the rest of the region
            tbuf.resize(max(int(counts[2 * ncols]), 1), shrink_to_fit=True)
        out = []
        for i, col in enumerate(self.columns):
            row = prog[i]
            count = n * len(col.offsets)
            flag = flags[row[9] : row[9] + count]
            bad = int(counts[i])
            validity, nulls = None, 0
            if bad:
                null = flag == 1
                nulls = int(null.sum())
                if nulls:
                    validity = pa.py_buffer(np.packbits(~null, bitorder="little"))
            if col.kind == _TEXT_K:
                arr = pa.StringArray.from_buffers(count, obuf.slice(row[10] * 4, (count + 1) * 4),
                                                  tbuf.slice(int(counts[ncols + i])), validity, nulls)
            else:
                arr = pa.Array.from_buffers(col.typ, count, [validity, vbuf.slice(row[8], count * col.width)],
                                            null_count=nulls)
            out.append(FusedResult(arr, flag if bad and nulls < bad else None))
        return out


class FusedResult:
    """A column decoded by the fused kernel: ``array``, and ``flags`` when some rows need the
    field's codec (flag 2; None when there are none)."""

    __slots__ = ("array", "flags")

    def __init__(self, array: pa.Array, flags: np.ndarray | None):
        self.array, self.flags = array, flags

    def finish(self, ft: FieldType, block: np.ndarray, ctx: DecodeContext, typ: pa.DataType,
               live: np.ndarray | None = None) -> tuple[pa.Array, Bad]:
        """The column's values, the flagged rows decoded by the codec (``block``: their bytes);
        of the rows ``live`` only, when given (the others' values are not used)."""
        if self.flags is None:
            return self.array, {}
        flagged = self.flags == 2
        if live is not None:
            flagged &= live
        return _fallback(ft, block, ctx, typ, flagged, self.array)
