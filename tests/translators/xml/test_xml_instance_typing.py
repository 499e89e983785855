"""Instance-level typing and document order (issue 31), on a minimal made-up schema
(``data/instance_typing``); the public families of ``corpus/`` (EPCIS 2.0, SAML 2.0, ...) show
the same cases in real documents.

- ``xsi:type`` QNames are resolved with the instance's own prefixes, kept as Clark names and
  written back with a prefix declared in the output (also inside ``xs:any`` content);
- a redundant ``xsi:type`` (naming the declared type) is kept;
- the alternatives of a repeated ``xs:choice`` and the foreign elements of an extension keep
  the document's order, also through Avro binary;
- an empty element takes its declaration's default or fixed value;
- binary values are equal in the value space (written in the canonical form: base64 without
  line breaks, hex in upper case).
"""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import pytest
from lxml import etree

from coupler.translators.xml import XmlValidationError, XsdModel
from coupler.translators.xml.decoder import Decoder

DATA = Path(__file__).parent / "data" / "instance_typing"
XSI_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"
XS = "http://www.w3.org/2001/XMLSchema"
T = "{urn:example:typing}"


@pytest.fixture(scope="module")
def model() -> XsdModel:
    return XsdModel.load(DATA / "typing.xsd")


@pytest.fixture(scope="module")
def record(model: XsdModel) -> dict:
    return model.decoder("root").decode_document(DATA / "typing.xml")


def _through_avro(model: XsdModel, record: dict) -> dict:
    schema = fastavro.parse_schema(model.avro_schema("root"))
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, schema, record)
    buffer.seek(0)
    return fastavro.schemaless_reader(buffer, schema)


def _written(model: XsdModel, record: dict) -> etree._Element:
    return etree.fromstring(model.encoder("root").encode(record))


def test_xsi_type_with_an_instance_prefix_is_kept_as_an_expanded_name(model: XsdModel, record: dict) -> None:
    assert [v["xsi_type"] for v in record["value"]] == [f"{{{XS}}}integer", f"{{{XS}}}boolean"]
    for rec in (record, _through_avro(model, record)):
        root = _written(model, rec)  # validated by the encoder against the XSD
        values = root.findall(f"{T}value")
        for value, local in zip(values, ("integer", "boolean"), strict=True):
            prefix, _, name = value.get(XSI_TYPE).rpartition(":")
            assert name == local and value.nsmap[prefix or None] == XS  # a prefix declared in the output


def test_xsi_type_inside_xs_any_content_keeps_its_prefix_declaration(model: XsdModel, record: dict) -> None:
    text = record["extended"]["any"][0]
    foreign = etree.fromstring(text)
    prefix = foreign.get(XSI_TYPE).split(":")[0]
    assert foreign.nsmap[prefix] == XS
    assert model.schema.is_valid(io.BytesIO(model.encoder("root").encode(record)))


def test_a_redundant_xsi_type_is_kept(model: XsdModel, record: dict) -> None:
    assert record["plain"]["xsi_type"] == f"{T}Plain"
    for rec in (record, _through_avro(model, record)):
        assert _written(model, rec).find(f"{T}plain").get(XSI_TYPE) == "Plain"  # the default namespace


def test_repeated_choice_and_extension_elements_keep_the_document_order(model: XsdModel, record: dict) -> None:
    original = [e.tag for e in etree.parse(str(DATA / "typing.xml")).getroot().iter() if isinstance(e.tag, str)]
    for rec in (record, _through_avro(model, record)):
        written = [e.tag for e in _written(model, rec).iter() if isinstance(e.tag, str)]
        assert written == original
    # the foreign element after <b> belongs to the extension's xs:any, not the base type's
    assert [len(record["extended"]["any"]), len(record["extended"]["any_2"])] == [1, 1]


def test_a_record_without_its_order_is_written_in_declaration_order(model: XsdModel, record: dict) -> None:
    rec = {**record, "element_order": []}
    tags = [e.tag for e in _written(model, rec)]
    assert tags.index(f"{T}y") > max(i for i, t in enumerate(tags) if t == f"{T}x")


def test_an_order_naming_more_values_than_the_record_has_is_refused(model: XsdModel, record: dict) -> None:
    with pytest.raises(XmlValidationError, match="listed more often"):
        model.encoder("root").encode({**record, "element_order": [*record["element_order"], "y"]})
    with pytest.raises(XmlValidationError, match="not an element field"):
        model.encoder("root").encode({**record, "element_order": ["nothing"]})


def test_an_empty_element_takes_its_default_or_fixed_value(record: dict) -> None:
    assert record["flag"] is True  # <flag/>, xs:boolean default="true"
    assert record["fixed"] == "F"  # <fixed/>, fixed="F"


def test_binary_values_are_equal_in_the_value_space(model: XsdModel, record: dict) -> None:
    assert record["b64"] == b"hello" and record["hex"] == b"\x0a\xff"
    root = _written(model, record)
    assert root.findtext(f"{T}b64") == "aGVsbG8=" and root.findtext(f"{T}hex") == "0AFF"


def test_an_undeclared_xsi_type_prefix_is_a_located_error(model: XsdModel) -> None:
    text = (DATA / "typing.xml").read_bytes().replace(b'xsi:type="xsd:integer"', b'xsi:type="nope:integer"')
    with pytest.raises(XmlValidationError) as info:
        model.decoder("root").decode_document(text, name="bad.xml")
    assert info.value.line == 4 and "nope" in str(info.value)


# -- xsi:nil on optional nillable elements (issue 31 leftover) --------------------------------------

NIL = "{urn:example:nil}"


@pytest.fixture(scope="module")
def nil_model() -> XsdModel:
    return XsdModel.load(DATA / "nil_simple.xsd")


def test_an_optional_nillable_element_written_nil_comes_back_nil(nil_model: XsdModel) -> None:
    record = nil_model.decoder("query").decode_document(DATA / "nil_simple.xml")
    # null alone: absent (ROWCOUNT); listed in xsi_nil: written xsi:nil="true"
    assert record["NO_DATA"] is None and record["quantity"] is None and record["ROWCOUNT"] is None
    assert record["xsi_nil"] == ["NO_DATA", "quantity"]
    root = etree.fromstring(nil_model.encoder("query").encode(record))
    nil = "{http://www.w3.org/2001/XMLSchema-instance}nil"
    assert [(etree.QName(e).localname, e.get(nil)) for e in root] == [
        ("DELIMITER", None), ("NO_DATA", "true"), ("quantity", "true"), ("FIELD", None), ("FIELD", None),
        ("QUERY_TABLE", None)]
    # without the list (a record written by hand), null stays "absent"
    plain = etree.fromstring(nil_model.encoder("query").encode({**record, "xsi_nil": []}))
    assert [etree.QName(e).localname for e in plain] == ["DELIMITER", "FIELD", "FIELD", "QUERY_TABLE"]


def test_the_nil_list_survives_avro_binary(nil_model: XsdModel) -> None:
    record = nil_model.decoder("query").decode_document(DATA / "nil_simple.xml")
    parsed = fastavro.parse_schema(nil_model.avro_schema("query"))
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, parsed, record)
    buffer.seek(0)
    back = fastavro.schemaless_reader(buffer, parsed)
    assert back == record
    assert nil_model.encoder("query").encode(back) == nil_model.encoder("query").encode(record)


def test_a_redundant_xsi_type_on_a_simple_typed_element_is_kept_when_asked() -> None:
    model = XsdModel.load(DATA / "nil_simple.xsd", keep_simple_xsi_types=True)
    record = model.decoder("query").decode_document(DATA / "nil_simple.xml")
    string = f"{{{XS}}}string"
    assert record["xsi_types"] == {"DELIMITER": string, "FIELD[1]": string, "QUERY_TABLE": string}
    assert record["DELIMITER"] == "|" and record["FIELD"] == ["MANDT", "BNAME"]
    # the generated converters keep it as the interpreted one does: the same record
    interpreted = Decoder(model, model.element("query").name, compiled=False)
    assert interpreted.decode_document(DATA / "nil_simple.xml") == record
    root = etree.fromstring(model.encoder("query").encode(record))
    written = {(etree.QName(e).localname, e.text): e for e in root}
    delimiter = written["DELIMITER", "|"]
    prefix, _, local = delimiter.get(XSI_TYPE).rpartition(":")
    assert local == "string" and delimiter.nsmap[prefix or None] == XS  # a prefix declared in the output
    assert written["FIELD", "MANDT"].get(XSI_TYPE) is None and written["FIELD", "BNAME"].get(XSI_TYPE)
    assert written["QUERY_TABLE", "USR02"].get(XSI_TYPE)
    assert model.decoder("query").decode_document(etree.tostring(root)) == record
    # through Avro binary
    parsed = fastavro.parse_schema(model.avro_schema("query"))
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, parsed, record)
    buffer.seek(0)
    assert fastavro.schemaless_reader(buffer, parsed) == record


def test_by_default_an_xsi_type_on_a_simple_typed_element_is_accepted_not_kept(nil_model: XsdModel) -> None:
    record = nil_model.decoder("query").decode_document(DATA / "nil_simple.xml")
    assert "xsi_types" not in record and record["DELIMITER"] == "|"
    root = etree.fromstring(nil_model.encoder("query").encode(record))
    assert all(e.get(XSI_TYPE) is None for e in root)


def test_xml_decode_and_encode_keep_xsi_types_on_the_command_line(tmp_path: Path) -> None:
    from coupler.bus.cli.main import main

    xsd, records, out = DATA / "nil_simple.xsd", tmp_path / "q.jsonl", tmp_path / "q.xml"
    assert main(["xml", "decode", "--keep-xsi-types", str(xsd), str(DATA / "nil_simple.xml"), "--output", str(records)]) == 0
    assert main(["xml", "encode", "--keep-xsi-types", str(xsd), str(records), "--output", str(out)]) == 0
    root = etree.parse(str(out)).getroot()
    assert [(e.get(XSI_TYPE) or ":").rpartition(":")[2] for e in root] == ["string", "", "", "", "string", "string"]
