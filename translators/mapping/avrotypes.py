"""Avro schemas seen as types a mapping can check: field lookup by path, kinds, defaults.

:class:`SchemaTypes` indexes the named types of one schema (a reference by name after the
first definition resolves to it) and turns a schema node into an :class:`AType`: its kind
(``record``, ``array``, ``map``, ``enum``, ``fixed``, ``union``, the primitives, and the
logical types ``decimal``, ``date``, ``time``, ``timestamp``, ``uuid``), whether it admits
null, and what the kind needs (fields, items, symbols, precision and scale).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
_LOGICAL = {
    "date": "date",
    "time-millis": "time",
    "time-micros": "time",
    "timestamp-millis": "timestamp",
    "timestamp-micros": "timestamp",
    "local-timestamp-millis": "timestamp",
    "local-timestamp-micros": "timestamp",
    "uuid": "uuid",
}
_STEP = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_-]*)(?:\[(?P<index>[0-9]+)\])?$")


@dataclass(frozen=True)
class Step:
    """One step of a field path: a field name and, optionally, an array index."""

    name: str
    index: int | None = None

    def __str__(self) -> str:
        return self.name if self.index is None else f"{self.name}[{self.index}]"


def parse_path(text: str) -> tuple[Step, ...]:
    """``address.city``, ``LINES[0].SKU`` -> steps; ValueError when malformed."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("a field path must be a non-empty string")
    steps = []
    for part in text.strip().split("."):
        m = _STEP.match(part.strip())
        if not m:
            raise ValueError(f"{text!r} is not a field path (NAME, NAME.NAME, NAME[0])")
        steps.append(Step(m.group("name"), int(m.group("index")) if m.group("index") else None))
    return tuple(steps)


def path_text(steps: tuple[Step, ...]) -> str:
    return ".".join(str(s) for s in steps)


@dataclass(eq=False)
class AType:
    """A schema node with its null branch taken off."""

    kind: str
    schema: Any
    nullable: bool = False
    name: str | None = None
    fields: dict[str, dict[str, Any]] = field(default_factory=dict)  # record: name -> field
    items: Any = None  # array/map: the item schema node
    symbols: tuple[str, ...] = ()
    precision: int | None = None
    scale: int | None = None
    branches: list[Any] = field(default_factory=list)

    def describe(self) -> str:
        if self.kind == "decimal":
            return f"decimal({self.precision},{self.scale})"
        if self.kind in ("record", "enum", "fixed") and self.name:
            return f"{self.kind} {self.name}"
        if self.kind == "array":
            return "array"
        return self.kind


class SchemaTypes:
    """The types of one Avro schema (a JSON value), by name and by path."""

    def __init__(self, schema: Any, label: str = "<schema>"):
        self.schema = schema
        self.label = label
        self.named: dict[str, Any] = {}
        self._collect(schema, None)
        self.root = self.type_of(schema)

    def _collect(self, node: Any, namespace: str | None) -> None:
        if isinstance(node, list):
            for b in node:
                self._collect(b, namespace)
        elif isinstance(node, dict):
            kind = node.get("type")
            if kind in ("record", "error", "enum", "fixed"):
                name = node["name"]
                ns = node.get("namespace", namespace)
                full = name if "." in name or not ns else f"{ns}.{name}"
                self.named.setdefault(full, node)
                self.named.setdefault(name, node)
                inner_ns = full.rsplit(".", 1)[0] if "." in full else None
                for f in node.get("fields", []):
                    self._collect(f["type"], inner_ns)
            elif kind == "array":
                self._collect(node["items"], namespace)
            elif kind == "map":
                self._collect(node["values"], namespace)
            elif isinstance(kind, dict | list):
                self._collect(kind, namespace)

    def type_of(self, node: Any) -> AType:
        nullable = False
        if isinstance(node, list):
            branches = [b for b in node if b != "null" and not (isinstance(b, dict) and b.get("type") == "null")]
            nullable = len(branches) < len(node)
            if len(branches) != 1:
                return AType("union", node, nullable, branches=branches)
            node = branches[0]
        if isinstance(node, str):
            if node in PRIMITIVES:
                return AType(node, node, nullable)
            if node in self.named:
                resolved = self.type_of(self.named[node])
                resolved.nullable = nullable
                return resolved
            return AType("unknown", node, nullable, name=node)
        kind = node.get("type")
        logical = node.get("logicalType")
        if logical == "decimal":
            return AType("decimal", node, nullable, precision=int(node.get("precision", 38)), scale=int(node.get("scale", 0)))
        if logical in _LOGICAL:
            return AType(_LOGICAL[logical], node, nullable)
        if kind in ("record", "error"):
            name = node["name"]
            return AType("record", node, nullable, name=name, fields={f["name"]: f for f in node.get("fields", [])})
        if kind == "enum":
            return AType("enum", node, nullable, name=node["name"], symbols=tuple(node.get("symbols", ())))
        if kind == "fixed":
            return AType("fixed", node, nullable, name=node["name"])
        if kind == "array":
            return AType("array", node, nullable, items=node["items"])
        if kind == "map":
            return AType("map", node, nullable, items=node["values"])
        if isinstance(kind, dict | list) or (isinstance(kind, str) and kind not in PRIMITIVES):
            inner = self.type_of(kind)
            inner.nullable = inner.nullable or nullable
            return inner
        return AType(kind, node, nullable)

    def field_of(self, record: AType, name: str) -> tuple[str, dict[str, Any]] | None:
        """The field ``name`` of ``record`` (``-`` in the name may stand for ``_``)."""
        for candidate in (name, name.replace("-", "_")):
            if candidate in record.fields:
                return candidate, record.fields[candidate]
        return None

    def resolve(self, steps: tuple[Step, ...], start: AType | None = None) -> tuple[AType, tuple[Step, ...]]:
        """The type at ``steps`` and the steps with the schema's spelling of each name.

        Raises LookupError naming the step that does not exist (with close names).
        """
        current = start or self.root
        fixed: list[Step] = []
        for n, step in enumerate(steps):
            if current.kind != "record":
                where = path_text(steps[:n]) or "the record"
                raise LookupError(f"{where} is {current.describe()}, it has no field {step.name!r}")
            found = self.field_of(current, step.name)
            if found is None:
                raise LookupError(self._unknown(current, step.name, steps[:n]))
            name, f = found
            current = self.type_of(f["type"])
            if step.index is not None:
                if current.kind != "array":
                    raise LookupError(f"{path_text((*steps[:n], Step(name)))} is {current.describe()}, not an array: [{step.index}] does not apply")
                current = self.type_of(current.items)
            fixed.append(Step(name, step.index))
        return current, tuple(fixed)

    @staticmethod
    def _unknown(record: AType, name: str, prefix: tuple[Step, ...]) -> str:
        import difflib

        names = sorted(record.fields)
        close = difflib.get_close_matches(name, names, n=1) or difflib.get_close_matches(
            name.replace("-", "_").upper(), [n.upper() for n in names], n=1
        )
        where = f" in {path_text(prefix)}" if prefix else ""
        hint = f"did you mean {close[0]!r}?" if close else f"fields: {', '.join(names[:12])}{' ...' if len(names) > 12 else ''}"
        return f"unknown field {name!r}{where} ({hint})"


def strip_docs(schema: Any) -> Any:
    """``schema`` without ``doc`` keys (to compare two schemas by structure)."""
    if isinstance(schema, dict):
        return {k: strip_docs(v) for k, v in schema.items() if k != "doc"}
    if isinstance(schema, list):
        return [strip_docs(v) for v in schema]
    return schema
