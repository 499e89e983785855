"""Schema registry: loading, the compatibility verdict of every kind of change in every
mode (Avro schema resolution), and conversion between versions."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from coupler.canonical.errors import ConversionError, IncompatibleSchemaError, SchemaError
from coupler.canonical.registry import SchemaRegistry

MODES = ("backward", "forward", "full", "none")


def record(*fields: dict[str, Any], name: str = "Thing") -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": "t", "fields": list(fields)}


def f(name: str, type_: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **extra}


ID = f("id", "string")
COLOR = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}
COLOR_MORE = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}
COLOR_DEFAULT = {**COLOR, "default": "RED"}
COLOR_MORE_DEFAULT = {**COLOR_MORE, "default": "RED"}
INNER = {"type": "record", "name": "Inner", "fields": [f("a", "int")]}
INNER_PLUS_DEFAULT = {"type": "record", "name": "Inner", "fields": [f("a", "int"), f("b", "int", default=0)]}
INNER_PLUS = {"type": "record", "name": "Inner", "fields": [f("a", "int"), f("b", "int")]}

# (case, old schema, new schema, {mode: compatible?}, a text every reason must contain)
CASES = [
    ("field added with default", record(ID), record(ID, f("x", "int", default=0)),
     dict(backward=True, forward=True, full=True), None),
    ("field added without default", record(ID), record(ID, f("x", "int")),
     dict(backward=False, forward=True, full=False), "t.Thing.x"),
    ("field removed that had a default", record(ID, f("x", "int", default=0)), record(ID),
     dict(backward=True, forward=True, full=True), None),
    ("field removed without default", record(ID, f("x", "int")), record(ID),
     dict(backward=True, forward=False, full=False), "t.Thing.x"),
    ("int to long", record(f("n", "int")), record(f("n", "long")),
     dict(backward=True, forward=False, full=False), "t.Thing.n"),
    ("int to float", record(f("n", "int")), record(f("n", "float")),
     dict(backward=True, forward=False, full=False), "t.Thing.n"),
    ("float to double", record(f("n", "float")), record(f("n", "double")),
     dict(backward=True, forward=False, full=False), "t.Thing.n"),
    ("string to bytes", record(f("s", "string")), record(f("s", "bytes")),
     dict(backward=True, forward=True, full=True), None),
    ("bytes to string", record(f("s", "bytes")), record(f("s", "string")),
     dict(backward=True, forward=True, full=True), None),
    ("long to int", record(f("n", "long")), record(f("n", "int")),
     dict(backward=False, forward=True, full=False), "t.Thing.n"),
    ("string to int", record(f("n", "string")), record(f("n", "int")),
     dict(backward=False, forward=False, full=False), "t.Thing.n"),
    ("enum symbol added, no default", record(f("c", COLOR)), record(f("c", COLOR_MORE)),
     dict(backward=True, forward=False, full=False), "BLUE"),
    ("enum symbol added, old enum has a default", record(f("c", COLOR_DEFAULT)), record(f("c", COLOR_MORE_DEFAULT)),
     dict(backward=True, forward=True, full=True), None),
    ("enum symbol removed, no default", record(f("c", COLOR_MORE)), record(f("c", COLOR)),
     dict(backward=False, forward=True, full=False), "BLUE"),
    ("enum symbol removed, new enum has a default", record(f("c", COLOR_MORE_DEFAULT)), record(f("c", COLOR_DEFAULT)),
     dict(backward=True, forward=True, full=True), None),
    ("union widened", record(f("u", ["null", "string"])), record(f("u", ["null", "string", "int"])),
     dict(backward=True, forward=False, full=False), "t.Thing.u"),
    ("union narrowed", record(f("u", ["null", "string", "int"])), record(f("u", ["null", "string"])),
     dict(backward=False, forward=True, full=False), "t.Thing.u"),
    ("plain type widened to a union", record(f("u", "string")), record(f("u", ["null", "string"], default=None)),
     dict(backward=True, forward=False, full=False), "t.Thing.u"),
    ("field renamed through an alias", record(f("name", "string")), record(f("full_name", "string", aliases=["name"])),
     dict(backward=True, forward=False, full=False), "t.Thing.name"),
    ("field renamed through an alias, old field had a default", record(f("name", "string", default="")),
     record(f("full_name", "string", aliases=["name"])),
     dict(backward=True, forward=True, full=True), None),
    ("field renamed without an alias", record(f("name", "string")), record(f("full_name", "string")),
     dict(backward=False, forward=False, full=False), "t.Thing"),
    ("nested record gains a field with a default", record(f("in", INNER)), record(f("in", INNER_PLUS_DEFAULT)),
     dict(backward=True, forward=True, full=True), None),
    ("nested record gains a field without default", record(f("in", INNER)), record(f("in", INNER_PLUS)),
     dict(backward=False, forward=True, full=False), "t.Thing.in.b"),
    ("array items int to long", record(f("xs", {"type": "array", "items": "int"})),
     record(f("xs", {"type": "array", "items": "long"})),
     dict(backward=True, forward=False, full=False), "t.Thing.xs[]"),
    ("array of records gains a field without default", record(f("xs", {"type": "array", "items": INNER})),
     record(f("xs", {"type": "array", "items": INNER_PLUS})),
     dict(backward=False, forward=True, full=False), "t.Thing.xs[].b"),
    ("map values float to double", record(f("m", {"type": "map", "values": "float"})),
     record(f("m", {"type": "map", "values": "double"})),
     dict(backward=True, forward=False, full=False), "t.Thing.m{}"),
    ("map values string to int", record(f("m", {"type": "map", "values": "string"})),
     record(f("m", {"type": "map", "values": "int"})),
     dict(backward=False, forward=False, full=False), "t.Thing.m{}"),
    ("decimal scale changed", record(f("d", {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2})),
     record(f("d", {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 3})),
     dict(backward=False, forward=False, full=False), "t.Thing.d"),
]


def registry_with(old: dict[str, Any]) -> SchemaRegistry:
    registry = SchemaRegistry()
    registry.register("t.Thing", old, mode="none")
    return registry


@pytest.mark.parametrize("case, old, new, verdicts, reason_text", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("mode", MODES)
def test_compatibility_verdict(case: str, old: Any, new: Any, verdicts: dict[str, bool], reason_text: str | None, mode: str) -> None:
    registry = registry_with(old)
    expected = True if mode == "none" else verdicts[mode]
    problems = registry.check("t.Thing", new, mode)
    assert (not problems) == expected, problems
    if expected:
        assert registry.register("t.Thing", new, mode).version == 2
    else:
        assert all(reason_text in p for p in problems), problems
        with pytest.raises(IncompatibleSchemaError) as info:
            registry.register("t.Thing", new, mode)
        assert info.value.reasons == problems
        assert registry.versions("t.Thing") == [1]


def test_every_reason_is_listed() -> None:
    registry = registry_with(record(ID, f("a", "string"), f("b", "long")))
    new = record(f("id", "int"), f("a", "string"), f("b", "int"), f("c", "int"))
    problems = registry.check("t.Thing", new, "full")
    text = "\n".join(problems)
    for place in ("t.Thing.id", "t.Thing.b", "t.Thing.c"):
        assert place in text
    assert len(problems) == 4  # id both ways, b backward, c backward


def test_checked_against_every_existing_version() -> None:
    registry = registry_with(record(ID, f("x", "int")))
    registry.register("t.Thing", record(ID, f("x", "int"), f("y", "int", default=1)), "backward")
    problems = registry.check("t.Thing", record(ID, f("y", "int", default=1)), "forward")
    assert [p.split(":")[0] for p in problems] == ["v1", "v2"]


def test_builtin_entities_and_versions() -> None:
    registry = SchemaRegistry.default()
    assert {"acme.Customer", "acme.Address", "coupler.Envelope"} <= set(registry.subjects())
    assert registry.versions("acme.Customer") == [1, 2]
    assert registry.latest("acme.Customer").version == 2
    # v2 is a compatible evolution of v1 in every mode
    assert registry.check("acme.Customer", registry.get("acme.Customer", 2).schema, "full") == []


CUSTOMER_V2 = {
    "customer_id": "C-1", "name": "Ann Smith", "email": None, "phone": "+1 555 0100", "segment": "BUSINESS",
    "address": {"street": "1 Main St", "city": "Springfield", "postal_code": "12345", "country": "US"},
}


def test_convert_between_versions_both_ways() -> None:
    registry = SchemaRegistry.default()
    v1 = registry.convert(CUSTOMER_V2, "acme.Customer@2", "acme.Customer@1")
    assert "phone" not in v1 and v1["address"]["city"] == "Springfield"
    back = registry.convert(v1, "acme.Customer@1", "acme.Customer@2")
    assert back == {**CUSTOMER_V2, "phone": None, "segment": "RETAIL"}  # v2's defaults
    body = registry.encode(CUSTOMER_V2, "acme.Customer@2")
    assert registry.decode(registry.convert_body(body, "acme.Customer@2", "acme.Customer@1"), "acme.Customer@1") == v1


def test_convert_incompatible_names_the_field() -> None:
    registry = SchemaRegistry.default()
    v3 = copy.deepcopy(registry.get("acme.Customer", 2).schema)
    v3["fields"].append({"name": "tier", "type": "int"})
    registry.register("acme.Customer", v3, mode="none")
    with pytest.raises(ConversionError, match=r"acme\.Customer\.tier"):
        registry.convert(CUSTOMER_V2, "acme.Customer@2", "acme.Customer@3")


def test_convert_invalid_record_names_the_field() -> None:
    registry = SchemaRegistry.default()
    with pytest.raises(ConversionError, match=r"Address\.street"):
        registry.convert({**CUSTOMER_V2, "address": {"street": 5}}, "acme.Customer@2", "acme.Customer@1")


def test_load_dir_with_references_and_plugin_dirs(tmp_path: Path) -> None:
    (tmp_path / "order").mkdir()
    (tmp_path / "order" / "v1.avsc").write_text(json.dumps(
        record(f("customer", "acme.Customer@1"), f("ship_to", "acme.Address"), name="Order")))
    registry = SchemaRegistry.default(extra_dirs=[tmp_path])
    order = registry.get("t.Order", 1)
    assert order.parsed  # self-contained: fastavro parses it alone
    order_fields = {fld["name"]: fld["type"] for fld in order.schema["fields"]}
    assert order_fields["customer"]["name"] == "Customer"
    assert order_fields["ship_to"] == "acme.Address"  # defined once, then referenced


def test_bad_schema_files_name_the_place(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "v1.avsc").write_text('{"type": "record",\n "name": "X" "fields": []}')
    with pytest.raises(SchemaError, match=r"v1\.avsc:2:\d+: not valid JSON"):
        SchemaRegistry.from_dirs([tmp_path])
    (tmp_path / "x" / "v1.avsc").write_text(json.dumps(record(f("y", "nope.Missing"), name="X")))
    with pytest.raises(SchemaError, match=r"v1\.avsc: unknown type 'nope\.Missing'"):
        SchemaRegistry.from_dirs([tmp_path])


def test_unknown_subject_and_version() -> None:
    registry = SchemaRegistry.default()
    with pytest.raises(SchemaError, match="known subjects: .*acme.Customer"):
        registry.get("acme.Nobody")
    with pytest.raises(SchemaError, match="versions: 1, 2"):
        registry.get("acme.Customer", 9)
