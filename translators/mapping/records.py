"""Reading and writing values at field paths of records (dicts), and completing records
with their schema defaults."""

from __future__ import annotations

import copy
from typing import Any

from .avrotypes import AType, SchemaTypes, Step


def get_path(record: Any, steps: tuple[Step, ...]) -> Any:
    """The value at ``steps`` (None when any step is missing or null)."""
    value = record
    for step in steps:
        if not isinstance(value, dict):
            return None
        value = value.get(step.name)
        if step.index is not None:
            if not isinstance(value, list) or step.index >= len(value):
                return None
            value = value[step.index]
    return value


def set_path(record: dict[str, Any], steps: tuple[Step, ...], value: Any) -> None:
    """Set the value at ``steps``, creating the records and array elements on the way."""
    target = record
    for n, step in enumerate(steps):
        last = n == len(steps) - 1
        if step.index is None:
            if last:
                target[step.name] = value
                return
            nxt = target.get(step.name)
            if not isinstance(nxt, dict):
                nxt = target[step.name] = {}
            target = nxt
            continue
        array = target.get(step.name)
        if not isinstance(array, list):
            array = target[step.name] = []
        while len(array) <= step.index:
            array.append(None if last else {})
        if last:
            array[step.index] = value
            return
        if not isinstance(array[step.index], dict):
            array[step.index] = {}
        target = array[step.index]


def complete(value: Any, atype: AType, types: SchemaTypes) -> Any:
    """``value`` with every missing record field set to its Avro default (or null)."""
    if value is None:
        return None
    if atype.kind == "record" and isinstance(value, dict):
        for name, f in atype.fields.items():
            ftype = types.type_of(f["type"])
            if name not in value:
                if "default" in f:
                    value[name] = copy.deepcopy(f["default"])
                elif ftype.nullable:
                    value[name] = None
                continue
            value[name] = complete(value[name], ftype, types)
        return value
    if atype.kind == "array" and isinstance(value, list):
        item = types.type_of(atype.items)
        return [complete(v, item, types) for v in value]
    return value


def required_fields(atype: AType, types: SchemaTypes) -> list[str]:
    """Fields of a record that must be set: not nullable and without a default."""
    out = []
    for name, f in atype.fields.items():
        if "default" not in f and not types.type_of(f["type"]).nullable:
            out.append(name)
    return out
