"""Arrow record batches -> JSON lines, column by column, exactly as :func:`~.decoder.to_json`.

The per-record decoder prints each dict with :func:`~.decoder.to_json` (Spark's JSON: keys
in schema order, nulls omitted, decimals with their scale, COMP-1 with the shortest float32
digits, control characters as ``\\u001A``). :func:`json_lines` prints the rows of a batch
from the vectorised decoder with the same text, but builds it per column with Arrow compute
functions (string casts and joins), falling back to Python only for the values Arrow prints
differently (floats, decimals Arrow would print in scientific notation, strings that need
JSON escapes, bytes).

:func:`normalize_groups` makes a group whose fields are all null a null group, as the
per-record decoder does (an empty group is omitted), so that JSON, Avro and Parquet
outputs of both decoders hold the same values.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pyarrow as pa

from .decoder import _json_str, java_float_text

__all__ = ["json_lines", "normalize_groups"]


def _pc() -> Any:
    """``pyarrow.compute``, imported on first use (0.04-0.2 s: a run of the compiled kernel
    on data without nulls never needs it)."""
    import pyarrow.compute

    return pyarrow.compute

#: characters ``json.dumps(ensure_ascii=False)`` escapes
_NEEDS_ESCAPE = r'["\\\x00-\x1f]'


def normalize_groups(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with every struct value whose fields are all null made null (recursively)."""
    columns = [_normalize(col) for col in batch.columns]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _normalize(arr: pa.Array) -> pa.Array:
    typ = arr.type
    if pa.types.is_struct(typ):
        if arr.offset:
            arr = pa.concat_arrays([arr])  # a fresh array: field() below ignores no offset
        children = [_normalize(arr.field(i)) for i in range(typ.num_fields)]
        if not arr.null_count and not any(child.null_count for child in children):
            # no null anywhere (the common case): no compute kernel, and pyarrow.compute
            # (0.04 s to import) is not loaded by a run that never needs it
            return pa.StructArray.from_arrays(children, fields=list(typ))

        valid = children[0].is_valid()
        for child in children[1:]:
            valid = _pc().or_(valid, child.is_valid())
        if arr.null_count:
            valid = _pc().and_(valid, arr.is_valid())
        return pa.StructArray.from_arrays(
            children, fields=list(typ), mask=_pc().invert(valid)
        )
    if pa.types.is_list(typ) and (pa.types.is_struct(typ.value_type) or pa.types.is_list(typ.value_type)):
        values = _normalize(arr.values)
        return pa.ListArray.from_arrays(
            arr.offsets, values, type=typ, mask=arr.is_null() if arr.null_count else None
        )
    return arr


def json_lines(batch: pa.RecordBatch) -> list[str]:
    """One JSON object per row of ``batch`` (normalised with :func:`normalize_groups` first)."""
    if batch.num_rows == 0:
        return []
    batch = normalize_groups(batch)
    body = _members(list(batch.schema), batch.columns, batch.num_rows)
    return _wrap("{", body, "}").to_pylist()


def _members(fields: list[pa.Field], columns: list[pa.Array], n: int) -> pa.Array:
    """``"key":value,"key":value`` per row, members whose value is null left out."""
    parts = []
    for f, col in zip(fields, columns, strict=True):
        text = _text(col)
        parts.append(_wrap("," + _json_str(f.name) + ":", text, "").fill_null(_str("")))
    if not parts:
        return pa.array([""] * n, pa.string())
    # each member carries its leading comma; the first one is cut off after joining. (A join
    # with null_handling="skip" drops the rows whose members are all null: Arrow 26.)
    joined = parts[0] if len(parts) == 1 else _pc().binary_join_element_wise(*parts, _str(""))
    return _pc().utf8_slice_codeunits(joined, 1)


def _wrap(left: str, text: pa.Array, right: str) -> pa.Array:
    """``left + text + right`` per value (null stays null)."""
    return _pc().binary_join_element_wise(_str(left), text, _str(right), _str(""))


def _str(text: str) -> pa.Scalar:
    """``text`` as an Arrow string scalar. A compute function given a plain ``str`` converts it
    itself, and pyarrow's conversion of a Python object tries ``import dateutil`` each time
    (python-dateutil is not a dependency: a failed import per call, 12-250 µs, most of a small
    batch's JSON text)."""
    return pa.scalar(text, pa.string())


def _python(arr: pa.Array, fmt: Callable[[Any], str]) -> pa.Array:
    """Every value printed by ``fmt`` in Python."""
    return pa.array([None if v is None else fmt(v) for v in arr.to_pylist()], pa.string())


def _patch(text: pa.Array, arr: pa.Array, mask: pa.Array, fmt: Callable[[Any], str]) -> pa.Array:
    """``text`` with the rows of ``mask`` printed by ``fmt`` in Python instead."""
    mask = mask.fill_null(False)
    if not _pc().any(mask).as_py():
        return text
    picked = arr.filter(mask).to_pylist()
    return _pc().replace_with_mask(text, mask, pa.array([fmt(v) for v in picked], pa.string()))


def _text(arr: pa.Array) -> pa.Array:
    """The JSON text of every value of ``arr`` (null where the value is null)."""
    typ = arr.type
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        quoted = _wrap('"', arr, '"')
        return _patch(quoted, arr, _pc().match_substring_regex(arr, pattern=_NEEDS_ESCAPE), _json_str)
    if pa.types.is_integer(typ):
        return arr.cast(pa.string())
    if pa.types.is_decimal(typ):
        text = arr.cast(pa.string())
        # Arrow prints small magnitudes in scientific notation (1E-10); Python as 0.0000000001
        return _patch(text, arr, _pc().match_substring(text, pattern="E"), lambda d: format(Decimal(d), "f"))
    if pa.types.is_float32(typ):
        return _python(arr, lambda v: java_float_text(v, single=True))
    if pa.types.is_floating(typ):
        return _python(arr, java_float_text)
    if pa.types.is_boolean(typ):
        return _pc().if_else(arr, _str("true"), _str("false"))
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_fixed_size_binary(typ):
        return _python(arr, lambda b: _json_str(b.hex().upper()))
    if pa.types.is_struct(typ):
        if arr.offset:
            arr = pa.concat_arrays([arr])
        body = _members(list(typ), [arr.field(i) for i in range(typ.num_fields)], len(arr))
        text = _wrap("{", body, "}")
        return _pc().if_else(arr.is_valid(), text, pa.scalar(None, pa.string())) if arr.null_count else text
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        items = _text(arr.values).fill_null(_str("null"))
        lists = type(arr).from_arrays(arr.offsets, items)
        text = _wrap("[", _pc().binary_join(lists, _str(",")), "]")
        return _pc().if_else(arr.is_valid(), text, pa.scalar(None, pa.string())) if arr.null_count else text
    if pa.types.is_null(typ):
        return pa.nulls(len(arr), pa.string())
    raise TypeError(f"no JSON text for Arrow type {typ}")
