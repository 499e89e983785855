"""XML -> records -> XML: typed decoding, validation errors, streaming, lexical forms, round trips."""

from __future__ import annotations

import io
import json
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest
import xmlschema
from elementpath.datatypes import AbstractDateTime

from coupler.bus.cli.main import main
from coupler.translators.xml import XmlValidationError, XsdModel
from coupler.translators.xml.jsonio import dumps, read_jsonl

DATA = Path(__file__).parent / "data" / "orders"
ORDERS = DATA / "orders.xsd"
INSTANCES = [("order", "order-1.xml"), ("order", "order-2.xml"), ("orders", "orders-batch.xml")]


@pytest.fixture(scope="module")
def model() -> XsdModel:
    return XsdModel.load(ORDERS)


def canonical(schema: xmlschema.XMLSchema, source: Any) -> Any:
    """A document's content as xmlschema decodes it, independent of prefixes and time zones."""

    def norm(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: (v.rpartition(":")[2] if k == "@type" else norm(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [norm(v) for v in value]
        if isinstance(value, AbstractDateTime):
            return value.todelta() if value.tzinfo is not None else str(value)
        return value

    return norm(schema.to_dict(source, datetime_types=True, strip_namespaces=True))


@pytest.mark.parametrize(("element", "name"), INSTANCES)
def test_every_instance_round_trips_and_validates(model: XsdModel, element: str, name: str) -> None:
    record = model.decoder(element).decode_document(DATA / name)
    xml = model.encoder(element).encode(record)
    assert model.schema.is_valid(xml)
    assert canonical(model.schema, xml) == canonical(model.schema, str(DATA / name))
    # and the record survives an Avro container file and JSON lines unchanged
    schema = fastavro.parse_schema(model.avro_schema(element))
    buffer = io.BytesIO()
    fastavro.writer(buffer, schema, [record])
    buffer.seek(0)
    (from_avro,) = fastavro.reader(buffer)
    assert canonical(model.schema, model.encoder(element).encode(from_avro)) == canonical(model.schema, xml)
    (from_json,) = read_jsonl(io.StringIO(dumps(record)))
    assert model.encoder(element).encode(from_json) == xml


def test_values_are_typed_as_in_the_avro_schema(model: XsdModel) -> None:
    record = model.decoder("order").decode_document(DATA / "order-1.xml")
    assert record["orderDate"] == date(2024, 3, 15)
    assert record["createdAt"] == datetime(2024, 3, 15, 9, 30, 12, 250000, tzinfo=UTC)
    assert record["deliverBy"] == time(17, 0)
    assert record["priority"] == 2 and record["line"][0]["quantity"] == 3
    assert record["total"] == {"currency": "EUR", "value": Decimal("159.70"), "xsi_type": None}
    assert record["discountRate"] == Decimal("0.0525")
    assert record["signature"] == b"Hello, world!" and record["checksum"] == bytes.fromhex("0A1B2C3D")
    assert record["line"][0]["giftWrap"] is True and record["line"][0]["weightKg"] == 1.25
    assert record["line"][0]["substitutes"] == ["SKU-1A", "SKU-1B"]
    assert record["line"][1]["bundle"][0]["bundle"][0]["sku"] == "SCREW"  # recursion
    assert record["buyer"]["-type"] == "com.example.acme.orders.v1.Company"  # xsi:type
    assert record["buyer"]["name_attr"] == "ACME Trading"
    assert record["giftNote"] == ["Happy birthday!"]
    assert record["internalNote"] == [{"author": "ops", "value": "Check stock"}]
    assert record["card"]["holder"] == "J. Smith" and record["invoiceRef"] is None
    assert record["approvedBy"] is None  # xsi:nil
    (loyalty,) = record["extensions"]["any"]
    assert loyalty == '<x:loyalty xmlns:x="urn:example:extension" points="120">gold</x:loyalty>'
    second = model.decoder("order").decode_document(DATA / "order-2.xml")
    assert second["createdAt"] == datetime(2024, 3, 16, 21, 59, 59, tzinfo=UTC)  # the same instant...
    assert second["createdAt"].utcoffset() == timedelta(hours=2)  # ...with the document's offset
    assert second["prepaid"] == {}


def test_times_and_date_times_keep_their_offset(model: XsdModel) -> None:
    text = (DATA / "order-2.xml").read_text().replace("<o:status>", "<o:deliverBy>10:15:30.5+02:00</o:deliverBy>\n  <o:status>")
    record = model.decoder("order").decode_document(text.encode())
    assert record["deliverBy"] == time(10, 15, 30, 500000, tzinfo=timezone(timedelta(hours=2)))
    xml = model.encoder("order").encode(record).decode()
    assert ">10:15:30.5+02:00</deliverBy>" in xml and ">2024-03-16T23:59:59+02:00</createdAt>" in xml


def test_decimal_keeps_the_lexical_form_the_pattern_requires(model: XsdModel) -> None:
    record = model.decoder("order").decode_document(DATA / "order-2.xml")
    record["total"]["value"] = Decimal("12.5")
    record["line"][0]["unitPrice"]["value"] = 7
    xml = model.encoder("order").encode(record).decode()
    assert '<total currency="USD">12.50</total>' in xml
    assert ">7.00</" in xml


def test_validation_errors_name_the_line_and_the_path(model: XsdModel, tmp_path: Path) -> None:
    bad = (DATA / "order-1.xml").read_text().replace("<quantity>3</quantity>", "<quantity>three</quantity>")
    path = tmp_path / "bad.xml"
    path.write_text(bad)
    with pytest.raises(XmlValidationError) as info:
        model.decoder("order").decode_document(path)
    line = next(n for n, text in enumerate(bad.splitlines(), 1) if "three" in text)
    assert f"bad.xml:{line}" in str(info.value)
    assert "quantity" in str(info.value) and "line" in str(info.value)


def test_streaming_errors_name_the_line_and_the_path(model: XsdModel, tmp_path: Path) -> None:
    text = (DATA / "orders-batch.xml").read_text().replace("<quantity>2</quantity>", "<quantity>-2</quantity>")
    path = tmp_path / "batch.xml"
    path.write_text(text)
    records = model.decoder("orders").iter_records(path, "orders/order")
    assert next(records)["id"] == "B-1"
    with pytest.raises(XmlValidationError) as info:
        next(records)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "-2</quantity>" in t)
    assert info.value.line == line
    assert info.value.path == "/orders/order[2]/line[2]/quantity"
    assert "positiveInteger" in str(info.value)


def test_streaming_catches_missing_and_unknown_elements(model: XsdModel, tmp_path: Path) -> None:
    text = (DATA / "orders-batch.xml").read_text()
    missing = tmp_path / "missing.xml"
    missing.write_text(text.replace("<status>SHIPPED</status>", ""))
    with pytest.raises(XmlValidationError, match="missing element 'status'"):
        list(model.decoder("orders").iter_records(missing, "orders/order"))
    unknown = tmp_path / "unknown.xml"
    unknown.write_text(text.replace("<status>SHIPPED</status>", "<status>SHIPPED</status><colour>red</colour>"))
    with pytest.raises(XmlValidationError, match="unexpected element 'colour'"):
        list(model.decoder("orders").iter_records(unknown, "orders/order"))
    bad_enum = tmp_path / "enum.xml"
    bad_enum.write_text(text.replace("<status>SHIPPED</status>", "<status>LOST</status>"))
    with pytest.raises(XmlValidationError, match="'LOST' is not one of"):
        list(model.decoder("orders").iter_records(bad_enum, "orders/order"))


def test_streaming_equals_whole_document_decoding(model: XsdModel) -> None:
    whole = model.decoder("orders").decode_document(DATA / "orders-batch.xml")
    streamed = list(model.decoder("orders").iter_records(DATA / "orders-batch.xml", "/orders/order"))
    assert streamed == whole["order"]


def test_streaming_memory_stays_flat(model: XsdModel, tmp_path: Path) -> None:
    """Earlier records are removed from the tree as the stream advances."""
    text = (DATA / "orders-batch.xml").read_text()
    start, end = text.index("<order "), text.index("</orders>")
    path = tmp_path / "many.xml"
    path.write_text(text[:start] + text[start:end] * 500 + text[end:])
    decoder = model.decoder("orders")
    retained = []
    records = decoder.iter_records(path, "orders/order")
    for n, _ in enumerate(records):
        frame = records.gi_frame
        if frame is not None and n % 100 == 0:
            elem = frame.f_locals["elem"]
            retained.append(sum(1 for _ in elem.itersiblings(preceding=True)))
    assert n == 999
    assert max(retained) <= 1  # at most the previous record, already cleared


def test_encode_refuses_records_that_do_not_fit(model: XsdModel) -> None:
    record = model.decoder("order").decode_document(DATA / "order-2.xml")
    with pytest.raises(XmlValidationError, match="unknown field 'colour'"):
        model.encoder("order").encode({**record, "colour": "red"})
    with pytest.raises(XmlValidationError, match="missing required field 'status'"):
        model.encoder("order").encode({**record, "status": None})
    with pytest.raises(XmlValidationError, match="does not validate"):
        model.encoder("order").encode({**record, "status": "LOST"})


def test_cli_decode_encode_and_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["xsd", "schema", str(ORDERS), "--element", "order"]) == 0
    fastavro.parse_schema(json.loads(capsys.readouterr().out))
    out = tmp_path / "orders.jsonl"
    assert main(["xml", "decode", str(ORDERS), str(DATA / "orders-batch.xml"), "--record-path", "orders/order", "--output", str(out)]) == 0
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["B-1", "B-2"]
    avro = tmp_path / "orders.avro"
    assert main(["xml", "decode", str(ORDERS), str(DATA / "orders-batch.xml"), "--record-path", "orders/order", "--to", "avro", "--output", str(avro)]) == 0
    with avro.open("rb") as f:
        assert [r["total"]["value"] for r in fastavro.reader(f)] == [Decimal("10.00"), Decimal("7.00")]
    single = tmp_path / "one.jsonl"
    assert main(["xml", "decode", str(ORDERS), str(DATA / "order-1.xml"), "--output", str(single)]) == 0
    xml = tmp_path / "one.xml"
    assert main(["xml", "encode", str(ORDERS), str(single), "--output", str(xml), "--element", "order"]) == 0
    assert canonical(XsdModel.load(ORDERS).schema, str(xml)) == canonical(XsdModel.load(ORDERS).schema, str(DATA / "order-1.xml"))
    assert main(["xml", "encode", str(ORDERS), str(out), "--output", str(xml), "--element", "order"]) == 2
    assert "several records" in capsys.readouterr().err
    assert main(["xml", "decode", str(ORDERS), str(DATA / "order-1.xml"), "--element", "orders"]) == 1
    assert "root element is 'order'" in capsys.readouterr().err


PAYMENT_XSD = """<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:element name="payment"><xs:complexType><xs:sequence>
    <xs:element name="id" type="xs:string"/>
    <xs:element name="amount"><xs:simpleType><xs:restriction base="xs:decimal">
      <xs:totalDigits value="7"/><xs:fractionDigits value="2"/></xs:restriction></xs:simpleType></xs:element>
    <xs:element name="rate"><xs:simpleType><xs:restriction base="xs:decimal">
      <xs:totalDigits value="18"/><xs:fractionDigits value="17"/></xs:restriction></xs:simpleType></xs:element>
  </xs:sequence></xs:complexType></xs:element>
</xs:schema>
"""
PAYMENT_CPY = """       01  PAYMENT.
           05  ID      PIC X(4).
           05  AMOUNT  PIC 9(5)V99.
"""


def test_xml_decode_writes_decimals_as_copybook_decode_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Both commands write a decimal as a JSON number (never a string): a scale up to 6 with
    every digit of the scale (125.5 -> 125.50, as PIC 9(5)V99 reads), a larger one with the
    document's own digits (ISO 20022's scale 17 keeps 0.12345678901234567 and 12.34)."""
    (tmp_path / "p.xsd").write_text(PAYMENT_XSD)
    (tmp_path / "p.cpy").write_text(PAYMENT_CPY)
    (tmp_path / "p.dat").write_bytes(b"P0010012550")
    (tmp_path / "p.xml").write_text("<payment><id>P001</id><amount>125.5</amount><rate>0.12345678901234567</rate></payment>")
    (tmp_path / "q.xml").write_text("<payment><id>P002</id><amount>7</amount><rate>12.34</rate></payment>")
    assert main(["copybook", "decode", str(tmp_path / "p.cpy"), str(tmp_path / "p.dat"), "-o", "encoding=ascii"]) == 0
    assert capsys.readouterr().out == '{"ID":"P001","AMOUNT":125.50}\n'
    jsonl = tmp_path / "p.jsonl"
    for name in ("p.xml", "q.xml"):
        assert main(["xml", "decode", str(tmp_path / "p.xsd"), str(tmp_path / name), "--output", str(tmp_path / "one.jsonl")]) == 0
        with jsonl.open("a") as out:
            out.write((tmp_path / "one.jsonl").read_text())
    assert jsonl.read_text().splitlines() == ['{"id":"P001","amount":125.50,"rate":0.12345678901234567}',
                                              '{"id":"P002","amount":7.00,"rate":12.34}']
    # and back: xml encode reads the numbers exactly (no float on the way)
    for line, name in zip(jsonl.read_text().splitlines(), ("p.xml", "q.xml"), strict=True):
        (tmp_path / "one.jsonl").write_text(line + "\n")
        xml = tmp_path / "back.xml"
        assert main(["xml", "encode", str(tmp_path / "p.xsd"), str(tmp_path / "one.jsonl"), "--output", str(xml)]) == 0
        schema = xmlschema.XMLSchema(str(tmp_path / "p.xsd"))
        assert canonical(schema, str(xml)) == canonical(schema, str(tmp_path / name))


MEASURE_XSD = """<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:element name="measure">
    <xs:complexType>
      <xs:sequence>
        <xs:element name="id" type="xs:string"/>
        <xs:element name="value" type="xs:double"/>
        <xs:element name="ratio" type="xs:float" minOccurs="0"/>
        <xs:element name="series">
          <xs:simpleType><xs:list itemType="xs:double"/></xs:simpleType>
        </xs:element>
      </xs:sequence>
      <xs:attribute name="scale" type="xs:double"/>
    </xs:complexType>
  </xs:element>
</xs:schema>
"""
SPECIAL_FLOATS = {
    "inf.xml": '<measure scale="-INF"><id>m1</id><value>1e999</value><ratio>NaN</ratio><series>1.5 INF -INF NaN</series></measure>',
    "nan.xml": '<measure scale="NaN"><id>m2</id><value>-INF</value><ratio>INF</ratio><series>-1e999</series></measure>',
}


def _strict(line: str) -> Any:
    """json.loads refusing NaN, Infinity and -Infinity, as RFC 8259 parsers (Jackson, Go, ...) do."""

    def refuse(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")

    return json.loads(line, parse_constant=refuse)


def _xsd_text(value: Any) -> Any:
    """Floats in their XSD lexical form (NaN is not equal to itself), in dicts and lists too."""
    if isinstance(value, dict):
        return {k: _xsd_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_xsd_text(v) for v in value]
    if isinstance(value, float):
        return "NaN" if value != value else "INF" if value == float("inf") else "-INF" if value == float("-inf") else value
    return value


def test_special_floats_are_strict_json_and_round_trip(tmp_path: Path) -> None:
    """INF, -INF and NaN (and 1e999, which is INF) are written as the JSON strings "Infinity",
    "-Infinity" and "NaN" (as Jackson, so Spark, writes them, and Spark's reader and Java's
    Double.parseDouble take them), never as the bare tokens strict JSON parsers refuse;
    xml encode and translate read them back (and the XSD forms "INF", "-INF" too)."""
    xsd = tmp_path / "m.xsd"
    xsd.write_text(MEASURE_XSD)
    schema = xmlschema.XMLSchema(str(xsd))
    expected = {
        "inf.xml": {"id": "m1", "value": "Infinity", "ratio": "NaN", "series": [1.5, "Infinity", "-Infinity", "NaN"],
                    "scale": "-Infinity"},
        "nan.xml": {"id": "m2", "value": "-Infinity", "ratio": "Infinity", "series": ["-Infinity"], "scale": "NaN"},
    }
    for name, text in SPECIAL_FLOATS.items():
        (tmp_path / name).write_text(text)
        out = tmp_path / "one.jsonl"
        assert main(["xml", "decode", str(xsd), str(tmp_path / name), "--output", str(out)]) == 0
        record = _strict(out.read_text())
        assert {k: record[k] for k in expected[name]} == expected[name]
        back = tmp_path / "back.xml"
        assert main(["xml", "encode", str(xsd), str(out), "--output", str(back)]) == 0
        assert _xsd_text(canonical(schema, str(back))) == _xsd_text(canonical(schema, str(tmp_path / name)))
        # coupler translate writes the same JSON and reads it back
        assert main(["translate", "--from", f"xml:{xsd}", "--to", "jsonl", str(tmp_path / name),
                     "--output", str(out), "--no-progress"]) == 0
        assert {k: _strict(out.read_text())[k] for k in expected[name]} == expected[name]
        assert main(["translate", "--from", "jsonl", "--to", f"xml:{xsd}", str(out),
                     "--output", str(back), "--no-progress"]) == 0
        assert _xsd_text(canonical(schema, str(back))) == _xsd_text(canonical(schema, str(tmp_path / name)))
    # the XSD spellings are read too
    (tmp_path / "one.jsonl").write_text('{"id":"m3","value":"INF","ratio":"-INF","series":["NaN"],"scale":"+INF"}\n')
    assert main(["xml", "encode", str(xsd), str(tmp_path / "one.jsonl"), "--output", str(tmp_path / "back.xml")]) == 0
    assert (tmp_path / "back.xml").read_text().count("INF") == 3


def test_records_on_the_bus_carry_special_floats_as_strings() -> None:
    """The JSON of records on the bus (SOAP adapters, the json translator) is strict JSON too."""
    record = {"a": float("inf"), "b": [float("-inf"), float("nan"), 2.5], "c": {"d": float("nan")}, "e": Decimal("1.5")}
    for line in (dumps(record), dumps(record, decimal_numbers=True)):
        assert _strict(line)["b"] == ["-Infinity", "NaN", 2.5]
        assert _strict(line)["a"] == "Infinity" and _strict(line)["c"] == {"d": "NaN"}
    assert dumps({"x": 1.0, "y": "INF"}) == '{"x":1.0,"y":"INF"}'
