"""Schema compatibility by the Avro specification's schema-resolution rules.

:func:`resolution_problems` answers "can a reader using schema R read data written with
schema W?" and lists *every* reason it cannot, each naming the place (a path of record,
field and branch names) and the rule that is broken. Compatibility modes build on it:

- ``backward``: the new schema reads data written with the existing versions;
- ``forward``: the existing versions read data written with the new schema;
- ``full``: both;
- ``none``: no check.

Schemas here are the *canonical JSON form* produced by :func:`normalize` (named types
expanded at their first use, later uses by full name), which is also what fastavro parses.
"""

from __future__ import annotations

from typing import Any

MODES = ("backward", "forward", "full", "none")

PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
NAMED = {"record", "error", "enum", "fixed"}

#: writer type -> reader types it may be promoted to (Avro spec, "Schema Resolution")
PROMOTIONS = {
    "int": {"long", "float", "double"},
    "long": {"float", "double"},
    "float": {"double"},
    "string": {"bytes"},
    "bytes": {"string"},
}


def _fullname(name: str, namespace: str | None) -> str:
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


def normalize(schema: Any, namespace: str | None = None, named: dict[str, Any] | None = None) -> Any:
    """Expand a schema to a self-contained form: every named type is a dict keyed by its
    full name in ``named``; references are resolved so that the checker can follow them.

    Returns the schema with names made full (``namespace.name``) and, for references, the
    referenced definition itself (so recursion is represented by identity).
    """
    named = {} if named is None else named
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return {"type": schema}
        full = _fullname(schema, namespace)
        if full in named:
            return named[full]
        if schema in named:
            return named[schema]
        raise KeyError(schema)
    if isinstance(schema, list):
        return {"type": "union", "branches": [normalize(b, namespace, named) for b in schema]}
    if not isinstance(schema, dict):
        raise TypeError(f"not a schema: {schema!r}")
    kind = schema.get("type")
    if isinstance(kind, (dict, list)) or (isinstance(kind, str) and kind not in PRIMITIVES | NAMED | {"array", "map"}):
        # {"type": <schema>} wrapper, possibly with a logical type on a primitive
        inner = normalize(kind, namespace, named)
        return inner
    if kind in NAMED:
        ns = schema.get("namespace", namespace)
        full = _fullname(schema["name"], ns)
        ns = full.rsplit(".", 1)[0] if "." in full else None
        node: dict[str, Any] = {
            "type": "record" if kind == "error" else kind,
            "name": full,
            "aliases": [_fullname(a, ns) for a in schema.get("aliases", [])],
        }
        named[full] = node
        if kind in ("record", "error"):
            node["fields"] = [
                {
                    "name": f["name"],
                    "aliases": list(f.get("aliases", [])),
                    "has_default": "default" in f,
                    "type": normalize(f["type"], ns, named),
                }
                for f in schema["fields"]
            ]
        elif kind == "enum":
            node["symbols"] = list(schema["symbols"])
            node["default"] = schema.get("default")
        else:
            node["size"] = schema["size"]
            node["logicalType"] = schema.get("logicalType")
            if node["logicalType"] == "decimal":
                node["precision"], node["scale"] = schema.get("precision"), schema.get("scale", 0)
        return node
    if kind == "array":
        return {"type": "array", "items": normalize(schema["items"], namespace, named)}
    if kind == "map":
        return {"type": "map", "values": normalize(schema["values"], namespace, named)}
    node = {"type": kind}
    if schema.get("logicalType") == "decimal":
        node.update(logicalType="decimal", precision=schema.get("precision"), scale=schema.get("scale", 0))
    return node


def _describe(s: dict[str, Any]) -> str:
    t = s["type"]
    if t in NAMED:
        return f"{t} {s['name']}"
    if t == "array":
        return f"array<{_describe(s['items'])}>"
    if t == "map":
        return f"map<{_describe(s['values'])}>"
    if t == "union":
        return "[" + ", ".join(_describe(b) for b in s["branches"]) + "]"
    if s.get("logicalType") == "decimal":
        return f"{t} decimal({s.get('precision')},{s.get('scale')})"
    return t


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _names_match(reader: dict[str, Any], writer: dict[str, Any]) -> bool:
    """Named types match by unqualified name, or when the reader lists the writer's name
    among its aliases (Avro spec: aliases are applied to the writer's schema)."""
    if _short(reader["name"]) == _short(writer["name"]):
        return True
    aliases = reader.get("aliases", [])
    return writer["name"] in aliases or _short(writer["name"]) in {_short(a) for a in aliases}


class _Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self._seen: set[tuple[int, int]] = set()

    def check(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> bool:
        """Record every problem reading ``writer`` data with ``reader``; True when none."""
        before = len(self.problems)
        self._check(reader, writer, path)
        return len(self.problems) == before

    def _fail(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}")

    def _check(self, r: dict[str, Any], w: dict[str, Any], path: str) -> None:
        key = (id(r), id(w))
        if key in self._seen:  # recursive types: assume compatible on the way back in
            return
        rt, wt = r["type"], w["type"]
        if wt == "union":
            # every branch the writer may have written must be readable
            for branch in w["branches"]:
                self._check(r, branch, f"{path}<{_describe(branch)}>" if rt != "union" else path)
            return
        if rt == "union":
            sub = _Checker()
            sub._seen = self._seen
            for branch in r["branches"]:
                if branch["type"] == wt and (wt not in NAMED or _names_match(branch, w)):
                    self._check(branch, w, path)
                    return
            for branch in r["branches"]:
                if sub.check(branch, w, path):
                    return
            self._fail(path, f"writer type {_describe(w)} matches no branch of reader union {_describe(r)}")
            return
        if rt != wt:
            if rt in PROMOTIONS.get(wt, ()):
                return
            self._fail(path, f"writer type {_describe(w)} cannot be read as {_describe(r)}")
            return
        if rt in NAMED and not _names_match(r, w):
            self._fail(path, f"{rt} name {w['name']} does not match reader name {r['name']} (nor its aliases)")
            return
        if "decimal" in (r.get("logicalType"), w.get("logicalType")):
            # stricter than the spec, which ignores logical types: the same bytes would
            # mean another number
            if r.get("scale") != w.get("scale") or (r.get("precision") or 0) < (w.get("precision") or 0):
                self._fail(path, f"{_describe(w)} cannot be read as {_describe(r)} (scale must match, precision must not shrink)")
                return
        if rt == "record":
            self._seen.add(key)
            self._record(r, w, path)
        elif rt == "enum":
            missing = [s for s in w["symbols"] if s not in r["symbols"]]
            if missing and r.get("default") is None:
                self._fail(path, f"enum {r['name']} lacks symbol(s) {', '.join(missing)} and has no default")
        elif rt == "fixed":
            if r["size"] != w["size"]:
                self._fail(path, f"fixed {r['name']} has size {r['size']}, writer has {w['size']}")
        elif rt == "array":
            self._check(r["items"], w["items"], f"{path}[]")
        elif rt == "map":
            self._check(r["values"], w["values"], f"{path}{{}}")

    def _record(self, r: dict[str, Any], w: dict[str, Any], path: str) -> None:
        writer_fields = {f["name"]: f for f in w["fields"]}
        for rf in r["fields"]:
            fpath = f"{path}.{rf['name']}"
            wf = writer_fields.get(rf["name"])
            if wf is None:
                wf = next((writer_fields[a] for a in rf["aliases"] if a in writer_fields), None)
            if wf is None:
                if not rf["has_default"]:
                    self._fail(fpath, "field is missing from the writer's schema and has no default in the reader's")
                continue
            self._check(rf["type"], wf["type"], fpath)


def resolution_problems(reader: Any, writer: Any) -> list[str]:
    """Every reason data written with ``writer`` cannot be read with ``reader`` (both raw
    Avro schemas as JSON values); an empty list means compatible."""
    checker = _Checker()
    r, w = normalize(reader), normalize(writer)
    checker.check(r, w, _root(r))
    return checker.problems


def _root(s: dict[str, Any]) -> str:
    return s["name"] if s["type"] in NAMED else s["type"]


def compatibility_problems(new: Any, existing: Any, mode: str) -> list[str]:
    """Reasons ``new`` is not compatible with ``existing`` in ``mode`` (MODES)."""
    if mode not in MODES:
        raise ValueError(f"unknown compatibility mode {mode!r}; expected one of {', '.join(MODES)}")
    problems: list[str] = []
    if mode in ("backward", "full"):
        problems += [f"new version cannot read old data: {p}" for p in resolution_problems(new, existing)]
    if mode in ("forward", "full"):
        problems += [f"old version cannot read new data: {p}" for p in resolution_problems(existing, new)]
    return problems
