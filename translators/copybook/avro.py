"""Layout -> Avro schema.

Groups become records, OCCURS become arrays, every field and group is an optional
(``["null", T]``, default null) branch, so REDEFINES alternatives a record does not use, and
values that cannot be decoded, are null. Numbers: scaled numbers become the ``decimal``
logical type (bytes) with their precision and scale; unscaled integers become ``int`` up
to 9 digits, ``long`` up to 18 and ``decimal(p, 0)`` beyond; COMP-1/COMP-2 become
``float``/``double``. Level-88 condition names and the picture go into the field ``doc``.

The keys are the ones the decoder produces (``schema_retention_policy``: ``collapse_root``
removes the 01 group, ``keep_original`` keeps it; the FILLER options; ``generate_record_id``
and ``segment_id_level*`` fields in front; ``debug`` fields after each field). The output
is deterministic: the same copybook and options always give the same schema.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import CopybookLayoutError
from .layout import Field, Layout, OutputNode, output_tree

_AVRO_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def option(options: Any, key: str, default: Any) -> Any:
    """An option from a mapping (Cobrix names) or an options object (attributes)."""
    if options is None:
        return default
    if isinstance(options, Mapping):
        return options.get(key, default)
    return getattr(options, key, default)


def avro_name(name: str) -> str:
    """A key made into a valid Avro name (only needed for names starting with a digit etc.)."""
    if _AVRO_NAME.match(name):
        return name
    fixed = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return fixed if _AVRO_NAME.match(fixed) else f"_{fixed}"


def collapse_root(top: list[OutputNode], policy: str) -> list[OutputNode]:
    """Apply ``schema_retention_policy`` to the top-level output nodes."""
    if policy not in ("collapse_root", "keep_original"):
        raise CopybookLayoutError(
            f"unknown schema_retention_policy {policy!r}", hint="use collapse_root or keep_original"
        )
    if policy == "keep_original":
        return top
    out: list[OutputNode] = []
    for node in top:
        # a top-level table (a copybook without an 01 level) stays an array
        flat = node.children is not None and node.node.occurs is None
        out.extend(node.children if flat else [node])  # type: ignore[arg-type]
    return out


def output_fields(layout: Layout, options: Any = None) -> list[OutputNode]:
    """The top-level output nodes of decoded records under ``options``."""
    options = as_options(options)
    top = output_tree(
        layout,
        drop_group_fillers=bool(option(options, "drop_group_fillers", False)),
        drop_value_fillers=bool(option(options, "drop_value_fillers", True)),
        filler_naming_policy=str(option(options, "filler_naming_policy", "sequence_numbers")),
    )
    top = collapse_root(top, str(option(options, "schema_retention_policy", "collapse_root")))
    if option(options, "segment_children", ()):
        from .hierarchy import nest_outputs

        top = nest_outputs(top, layout, options)
    return top


def outputs_by_node(outputs: list[OutputNode]) -> dict[int, OutputNode]:
    """Every output node under ``outputs``, by the ``id`` of the layout node it shows."""
    found: dict[int, OutputNode] = {}

    def index(outs: list[OutputNode]) -> None:
        for out in outs:
            found[id(out.node)] = out
            if out.children:
                index(out.children)

    index(outputs)
    return found


def field_avro_type(fld: Field, *, strict_integral_precision: bool = False) -> Any:
    """The Avro type (without the null branch) of one elementary field."""
    ft = fld.field_type
    kind = ft.kind
    if kind == "string":
        return "string"
    if kind == "bytes":
        return "bytes"
    if kind == "float":
        return "float" if ft.size == 4 else "double"
    precision = max(int(ft.precision or ft.digits or 1), 1)
    scale = int(ft.scale)
    if kind == "integer" and scale >= 0 and not strict_integral_precision:
        if ft.usage == "COMP-5":
            bits = ft.size * 8
            limit = bits - 1 if ft.signed else bits
            if limit <= 31:
                return "int"
            if limit <= 63:
                return "long"
            precision = max(precision, len(str(2**limit)))
        elif precision <= 9:
            return "int"
        elif precision <= 18:
            return "long"
    scale = max(scale, 0)
    return {"type": "bytes", "logicalType": "decimal", "precision": max(precision, scale, 1), "scale": scale}


def _doc(node: Any) -> str | None:
    parts = []
    if isinstance(node, Field):
        pic = f"PIC {node.picture} " if node.picture else ""
        parts.append(f"{pic}{node.usage} at {node.offset + 1}..{node.offset + node.size}".strip())
    if node.occurs:
        occ = f"OCCURS {node.occurs.min} TO {node.occurs.max}" if node.occurs.min != node.occurs.max else f"OCCURS {node.occurs.max}"
        if node.occurs.depending_on:
            occ += f" DEPENDING ON {node.occurs.depending_on}"
        parts.append(occ)
    if node.redefines:
        parts.append(f"REDEFINES {node.redefines}")
    parts.extend(c.describe() for c in node.conditions)
    return "; ".join(parts) or None


class _SchemaBuilder:
    def __init__(self, options: Any):
        self.options = options
        self.names: set[str] = set()
        self.debug = str(option(options, "debug", "none")).lower() not in ("false", "none", "0", "")
        self.strict = bool(option(options, "strict_integral_precision", False))

    def record_name(self, path: tuple[str, ...]) -> str:
        base = avro_name("_".join(path) or "Record")
        name, k = base, 1
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    def fields(self, outs: list[OutputNode]) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = []
        for out in outs:
            node = out.node
            if out.children is not None:
                inner: Any = {
                    "type": "record",
                    "name": self.record_name(node.path),
                    "fields": self.fields(out.children),
                }
            else:
                assert isinstance(node, Field)
                inner = field_avro_type(node, strict_integral_precision=self.strict)
            if node.occurs or out.segment_array:
                inner = {"type": "array", "items": inner}
            entry: dict[str, Any] = {"name": avro_name(out.name), "type": ["null", inner], "default": None}
            doc = _doc(node)
            if doc:
                entry["doc"] = doc
            result.append(entry)
            if self.debug and out.children is None:
                result.append({"name": avro_name(out.name + "_debug"), "type": ["null", "string"], "default": None})
        return result


def generated_fields(options: Any) -> list[dict[str, Any]]:
    """The ``File_Id``/``Record_Id``/``Record_Byte_Length`` and ``Seg_Id*`` fields."""
    out: list[dict[str, Any]] = []
    if option(options, "generate_record_id", False) is True:
        out += [
            {"name": "File_Id", "type": "int"},
            {"name": "Record_Id", "type": "long"},
            {"name": "Record_Byte_Length", "type": "int"},
        ]
    for level in range(len(segment_levels(options))):
        out.append({"name": f"Seg_Id{level}", "type": ["null", "string"], "default": None})
    return out


def segment_levels(options: Any) -> list[str]:
    """The segment ids of ``segment_id_level0``, ``segment_id_level1``... (or ``segment_id_root``)."""
    levels = [str(v) for v in (option(options, "segment_id_levels", ()) or ())]
    root = option(options, "segment_id_root", None)
    if root and not levels:
        levels = [str(root)]
    return levels


def as_options(options: Any) -> Any:
    """A mapping of Cobrix-named options -> :class:`~.options.CopybookOptions` (objects pass through)."""
    if options is None or isinstance(options, Mapping):
        from .options import CopybookOptions

        return CopybookOptions.from_mapping(options or {})
    return options


def avro_schema(
    layout: Layout, options: Any = None, *, name: str | None = None, namespace: str | None = None
) -> dict[str, Any]:
    """The Avro schema (a JSON-ready dict) of records decoded from ``layout`` under ``options``."""
    options = as_options(options)
    builder = _SchemaBuilder(options)
    outs = output_fields(layout, options)
    top_name = name or (
        layout.records[0].identifier
        if len(layout.records) == 1 and str(option(options, "schema_retention_policy", "collapse_root")) == "collapse_root"
        else "Record"
    )
    builder.names.add(avro_name(top_name))
    schema: dict[str, Any] = {
        "type": "record",
        "name": avro_name(top_name),
    }
    if namespace:
        schema["namespace"] = namespace
    schema["doc"] = f"Decoded from copybook {layout.file} ({layout.size} bytes)"
    schema["fields"] = generated_fields(options) + builder.fields(outs)
    return schema
