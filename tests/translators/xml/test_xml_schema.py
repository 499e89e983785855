"""XSD -> Avro: the generated schemas are accepted by fastavro and follow the documented rules."""

from __future__ import annotations

from pathlib import Path

import fastavro
import pytest

from coupler.translators.xml import XsdError, XsdModel

DATA = Path(__file__).parent / "data"
ORDERS = DATA / "orders" / "orders.xsd"


def _fields(schema: dict) -> dict[str, dict]:
    return {f["name"]: f for f in schema["fields"]}


def _find(schema: object, name: str) -> dict:
    """The named type ``name`` defined somewhere inside ``schema``."""
    if isinstance(schema, dict):
        if schema.get("name") == name and schema.get("type") in ("record", "enum"):
            return schema
        for value in schema.values():
            try:
                return _find(value, name)
            except KeyError:
                pass
    if isinstance(schema, list):
        for value in schema:
            try:
                return _find(value, name)
            except KeyError:
                pass
    raise KeyError(name)


@pytest.fixture(scope="module")
def model() -> XsdModel:
    return XsdModel.load(ORDERS)


@pytest.mark.parametrize("element", ["order", "orders"])
def test_schema_is_accepted_by_fastavro(model: XsdModel, element: str) -> None:
    fastavro.parse_schema(model.avro_schema(element))


def test_records_are_named_after_types_and_namespaces_follow_xml(model: XsdModel) -> None:
    order = model.avro_schema("order")
    assert (order["name"], order["namespace"]) == ("Order", "com.example.acme.orders.v1")
    address = _find(order, "Address")
    assert address["namespace"] == "com.example.acme.common"  # imported schema's namespace
    # an anonymous complex type is named after its element
    assert model.avro_schema("orders")["name"] == "orders"


def test_occurrence_and_choice_rules(model: XsdModel) -> None:
    fields = _fields(model.avro_schema("order"))
    assert fields["deliverBy"]["type"][0] == "null" and fields["deliverBy"]["default"] is None
    assert fields["line"]["type"]["type"] == "array" and "default" not in fields["line"]
    for alternative in ("card", "invoiceRef", "prepaid"):  # choice -> optional fields
        assert fields[alternative]["type"][0] == "null"
    # substitution group members become one field each
    assert fields["giftNote"]["type"] == {"type": "array", "items": "string"}
    assert fields["internalNote"]["type"]["items"]["name"] == "internalNote"
    assert fields["approvedBy"]["type"] == ["null", "string"]  # nillable


def test_simple_types_map_to_logical_types(model: XsdModel) -> None:
    fields = _fields(model.avro_schema("order"))
    assert fields["orderDate"]["type"] == {"type": "int", "logicalType": "date"}
    assert fields["createdAt"]["type"] == {"type": "long", "logicalType": "timestamp-micros"}
    assert fields["discountRate"]["type"][1] == {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 4}  # totalDigits 5 + fractionDigits 4: 12345 fits too
    assert fields["signature"]["type"] == ["null", "bytes"]
    assert fields["checksum"]["type"] == ["null", "bytes"]
    assert fields["priority"]["type"] == ["null", "int"]
    status = fields["status"]["type"]
    assert status["type"] == "enum" and status["symbols"] == ["NEW", "CONFIRMED", "SHIPPED", "CANCELLED"]
    line = _find(model.avro_schema("order"), "Line")
    line_fields = _fields(line)
    assert line_fields["speed"]["type"] == ["null", "string"]  # "2-day" is not an Avro name
    assert line_fields["substitutes"]["type"] == ["null", {"type": "array", "items": "string"}]
    assert line_fields["quantity"]["type"] == "long"
    assert line_fields["bundle"]["type"] == {"type": "array", "items": "com.example.acme.orders.v1.Line"}  # recursion


def test_attributes_and_simple_content(model: XsdModel) -> None:
    order = model.avro_schema("order")
    money = _fields(_find(order, "Money"))
    assert list(money) == ["currency", "value", "xsi_type"]  # a named type: xsi:type may name it
    assert money["xsi_type"]["type"] == ["null", "string"] and money["xsi_type"]["default"] is None
    assert money["value"]["type"] == {"type": "bytes", "logicalType": "decimal", "precision": 14, "scale": 2}
    company = _fields(_find(order, "Company"))
    # the attribute "name" collides with the element "name": it gets the _attr suffix
    assert company["name"]["doc"].startswith("element") and company["name_attr"]["doc"] == "attribute name"
    assert _fields(_find(order, "Address"))["postal_code"]["doc"].endswith("postal-code")


def test_extension_gives_a_union_of_the_derived_types(model: XsdModel) -> None:
    buyer = _fields(model.avro_schema("order"))["buyer"]["type"]
    assert [b["name"] for b in buyer] == ["Party", "Company", "Person", "SimpleParty"]
    person = _fields(buyer[2])
    assert list(person)[:3] == ["id", "name", "address"] and "birthDate" in person  # base fields first
    assert _fields(buyer[3])["address"]["type"] == "com.example.acme.common.Address"  # restriction: single


def test_any_maps_to_strings(model: XsdModel) -> None:
    extensions = _find(model.avro_schema("order"), "extensions")
    assert _fields(extensions)["any"]["type"] == {"type": "array", "items": "string"}


def test_several_global_elements_need_a_choice(model: XsdModel) -> None:
    with pytest.raises(XsdError, match="several global elements"):
        model.avro_schema()
    with pytest.raises(XsdError, match="not a global element"):
        model.avro_schema("nope")


def test_import_that_needs_the_network_is_an_error_naming_it(tmp_path: Path, http_server: tuple[str, list[str]]) -> None:
    url, hits = http_server
    xsd = tmp_path / "remote.xsd"
    xsd.write_text(
        '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:t">'
        f'<xs:import namespace="urn:remote" schemaLocation="{url}/remote.xsd"/>'
        '<xs:element name="a" type="xs:string"/></xs:schema>'
    )
    with pytest.raises(XsdError, match="remote.xsd") as info:
        XsdModel.load(xsd)
    assert "urn:remote" in str(info.value)
    assert hits == []


def test_missing_local_import_is_an_error(tmp_path: Path) -> None:
    xsd = tmp_path / "broken.xsd"
    xsd.write_text(
        '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:m="urn:m" targetNamespace="urn:t">'
        '<xs:import namespace="urn:m" schemaLocation="missing.xsd"/>'
        '<xs:element name="a" type="m:T"/></xs:schema>'
    )
    with pytest.raises(XsdError, match="missing.xsd"):
        XsdModel.load(xsd)
