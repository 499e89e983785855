"""Real partners' XML: public schemas and documents (ISO 20022 pain/camt/pacs, UBL 2.1, XRechnung, FatturaPA,
HL7 CDA, GS1 EPCIS 2.0, SAML 2.0, SIRI 2.0, Maven POM 4.0.0) translate without loss. Sources and licences: ``corpus/*/SOURCES.md``.

For each schema the Avro schema is accepted by fastavro; each valid document decodes, the
record survives Avro binary, re-encodes to XML that validates against the XSD and has the same
content as the original (compared through xmlschema, an independent decoder: same elements and
attributes in the same order, text equal, numbers and date-times equal in the XSD value space);
documents made invalid by mutation (and the public invalid ones) are refused with an error
naming the line and the path, exactly when the oracle refuses them.

The oracle of validity is libxml2's validator (``lxml.etree.XMLSchema``), not the xmlschema
object Coupler itself validates with: it reads every schema of the corpus (FatturaPA's
xmldsig import, a w3.org address, from the copy bundled with xmlschema; no network).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import fastavro
import pytest
import xmlschema
from lxml import etree

from coupler.translators.xml import XmlValidationError, XsdModel
from coupler.translators.xml.avro import EncodedRecord, compile_encoder
from coupler.translators.xml.decoder import Decoder
from coupler.translators.xml.model import Record, value_avro
from coupler.translators.xml.security import parse_document

CORPUS = Path(__file__).parent / "corpus"
XSI = "{http://www.w3.org/2001/XMLSchema-instance}"

#: schema -> the valid public documents of that schema
VALID: dict[str, list[str]] = {
    "iso20022/pain.001.001.03.xsd": ["iso20022/pain.001.001.03.php-sepa-xml.xml"],
    "iso20022/pain.001.001.09.xsd": ["iso20022/pain.001.001.09.php-sepa-xml.xml"],
    "iso20022/pain.008.001.02.xsd": ["iso20022/pain.008.001.02.php-sepa-xml.xml"],
    "iso20022/camt.053.001.02.xsd": [
        "iso20022/camt053.v2.minimal.genkgo.xml", "iso20022/camt053.v2.five.decimals.genkgo.xml",
        "iso20022/camt053.v2.multi.statement.genkgo.xml", "iso20022/camt053.v2.with-party-ids.genkgo.xml",
        "iso20022/camt053.v2.all-balance-types.genkgo.xml",
    ],
    "iso20022/camt.053.001.04.xsd": ["iso20022/camt053.v4.genkgo.xml"],
    "iso20022/camt.054.001.02.xsd": ["iso20022/camt054.v2.genkgo.xml"],
    "iso20022/pacs.008.001.08.xsd": [
        f"iso20022/pacs008.v8.CustomerCreditTransfer_{n}.fedwire.xml" for n in ("Scenario1_Step1", "Variation4", "Variation5")
    ],
    "iso20022/pacs.002.001.10.xsd": [
        f"iso20022/pacs002.v10.CustomerCreditTransfer_{n}.fedwire.xml" for n in ("Scenario1_Step2", "Scenario2_Step2")
    ],
    "iso20022/pacs.004.001.10.xsd": [
        f"iso20022/pacs004.v10.PaymentReturn_{n}.fedwire.xml" for n in ("Scenario1_Step4", "Scenario5_Step3")
    ],
    "ubl/xsdrt/maindoc/UBL-Invoice-2.1.xsd": [
        "ubl/UBL-Invoice-2.1-Example.xml", "ubl/UBL-Invoice-2.1-Example-Trivial.xml",
        "ubl/UBL-Invoice-2.0-Example-NS1.xml", "ubl/UBL-Invoice-2.0-Example-NS4.xml",
        "xrechnung/01.01a-INVOICE_ubl.xml", "xrechnung/01.13a-INVOICE_ubl.xml", "xrechnung/02.01a-INVOICE_ubl.xml",
    ],
    "ubl/xsdrt/maindoc/UBL-CreditNote-2.1.xsd": ["ubl/UBL-CreditNote-2.1-Example.xml"],
    "fatturapa/Schema_del_file_xml_FatturaPA_versione_1.2.xsd": [
        f"fatturapa/IT01234567890_{n}.xml" for n in ("FPA01", "FPA02", "FPA03", "FPR01", "FPR02", "FPR03", "FPR04")
    ],
    "hl7cda/schema/infrastructure/cda/CDA_SDTC.xsd": ["hl7cda/sampleCCD.xml"],
    # issue 31: instance-level typing and document order
    "epcis/xsd/EPCglobal-epcis-2_0.xsd": [
        f"epcis/{n}.xml" for n in (
            "WithFullCombinationOfFields_object_event_all_possible_fields", "WithSensorData_SensorDataExamples",
            "WithExtension_ObjectEvent", "WithExtension_AggregationEvent",
            "WithExtension_TransactionEvent", "WithExtension_TransformationEvent", "WithExtension_AssociationEvent",
            "WithFullCombinationOfFields_aggregation_event_all_possible_fields",
            "WithFullCombinationOfFields_transaction_event_all_possible_fields",
            "WithFullCombinationOfFields_transformation_event_all_possible_fields",
            "WithFullCombinationOfFields_association_event_all_possible_fields",
            "WithEventHashID_event_with_identical_hash_id_1", "Example_9.6.1-ObjectEvent-2020_06_18a",
            "Example-TransactionEvent-2020_07_03y", "Example-PersistentDisposition",
            "AssociationEvent_AssociationEventExamples",
        )
    ],
    "saml/schemas/saml-schema-protocol-2.0.xsd": [
        f"saml/{n}.xml" for n in (
            "pretty_signed_message_response", "decrypted_valid_encrypted_assertion", "authn_request",
            "logout_request", "logout_request_with_sessionindex", "logout_response",
        )
    ],
    "saml/schemas/saml-schema-metadata-2.0.xsd": [
        f"saml/{n}.xml" for n in (
            "idp_multiple_descriptors", "idp_metadata", "idp_metadata_multi_certs", "testshib-providers",
            "signed_metadata_settings1", "entities_metadata",
        )
    ],
    "siri/xsd/siri.xsd": [
        f"siri/{n}.xml" for n in (
            "exd_allServices_capabilitiesResponse", "exs_stopMonitoring_capabilitiesResponse",
            "exd_lines_discoveryResponse", "exs_stopMonitoring_response", "ext_estimatedTimetable_response",
            "exv_vehicleMonitoring_response", "exx_situationExchange_response", "exa_checkStatus_response",
        )
    ],
    "maven/maven-4.0.0.xsd": [
        f"maven/{n}.xml" for n in (
            "cbsa_pom", "cbsa_src_webui_pom", "cbsa_src_Z-OS-Connect-Customer-Services-Interface_pom",
            "cbsa_src_Z-OS-Connect-Payment-Interface_pom", "gs1-epcis_WSDL_pom",
        )
    ],
    # issue 31: Oracle SOA Suite services (UK Legal Aid Agency CCMS), their real responses
    "ccms/Schema/BusinessObjects/CCMS/CaseManagement/Case/1.0/CaseBIM.xsd": [
        f"ccms/payload/{n}.xml" for n in ("CaseInqRS_valid", "CaseAddUpdtStatusRS_Valid", "NotificationUpdateRS_valid")
    ],
    "ccms/Schema/BusinessObjects/CCMS/ClientManagement/Client/1.0/ClientBIM.xsd": [
        f"ccms/payload/{n}.xml" for n in ("ClientInqRS_valid_one", "ClientAddUpdtStatusRS_Valid")
    ],
}
#: public documents that do not validate against their schema (kept as found)
INVALID: dict[str, list[str]] = {
    "hl7cda/schema/infrastructure/cda/CDA_SDTC.xsd": ["hl7cda/cda.xml"],
    "saml/schemas/saml-schema-protocol-2.0.xsd": ["saml/open_saml_response.xml"],  # a SignatureValue that is not base64
    "saml/schemas/saml-schema-metadata-2.0.xsd": ["saml/metadata_bad_order_settings1.xml"],  # elements out of order
}
PAIRS = [(xsd, doc) for xsd, docs in VALID.items() for doc in docs]


@cache
def model(xsd: str) -> XsdModel:
    """The schema, its includes read under its distribution's folder (UBL's maindoc imports
    ``../common``, HL7 CDA's ``../../processable``): the schema root a site gives for them."""
    return XsdModel.load(CORPUS / xsd, schema_roots=[CORPUS / xsd.split("/")[0]])


@cache
def interpreted(xsd: str, element: str) -> Decoder:
    """The interpreted decoder (no generated converters): the oracle of the generated ones."""
    return Decoder(model(xsd), model(xsd).element(element).name, compiled=False)


def _outcome(decoder: Decoder, data: bytes, name: str) -> Any:
    try:
        return decoder.decode_document(data, name=name, validate=False)
    except XmlValidationError as exc:
        return ("refused", exc.message, exc.line, exc.path, exc.hint)


def _root(doc: str) -> str:
    return etree.parse(str(CORPUS / doc)).getroot().tag


class _Bundled(etree.Resolver):
    """W3C schemas imported by address, read from the copies bundled with xmlschema."""

    FILES = {"http://www.w3.org/TR/2002/REC-xmldsig-core-20020212/xmldsig-core-schema.xsd": "DSIG/xmldsig-core-schema.xsd"}

    def resolve(self, url: str, public_id: str, context: Any) -> Any:
        if url in self.FILES:
            return self.resolve_filename(str(Path(xmlschema.__file__).parent / "schemas" / self.FILES[url]), context)
        return None


@cache
def oracle(xsd: str) -> etree.XMLSchema:
    """libxml2's validator of the schema: independent of the product's xmlschema object."""
    parser = etree.XMLParser(no_network=True)
    parser.resolvers.add(_Bundled())
    return etree.XMLSchema(etree.parse(str(CORPUS / xsd), parser))


def _oracle_accepts(xsd: str, data: bytes | Path) -> bool:
    try:
        document = etree.parse(io.BytesIO(data) if isinstance(data, bytes) else str(data))
    except etree.XMLSyntaxError:
        return False
    return oracle(xsd).validate(document)


# -- the content of a document, as an independent decoder sees it -----------------------------


def content(schema: xmlschema.XMLSchema, source: Any) -> Any:
    """The document as xmlschema decodes it (JsonML keeps the order and the mixed text; values
    in the XSD value space: Decimal, date-times), without namespace declarations, schema
    location hints and xsi:type prefixes (compared by local name)."""
    data = schema.to_dict(source, converter=xmlschema.JsonMLConverter, decimal_type=Decimal,
                          datetime_types=True, strip_namespaces=True)
    return _clean(data)


def _clean(node: Any) -> Any:
    if isinstance(node, list) and node and isinstance(node[0], str):
        out = [node[0]]
        for item in node[1:]:
            if isinstance(item, dict):
                attrs = {k: (v.rsplit(":", 1)[-1] if k == "type" and isinstance(v, str) and _is_qname(v) else v)
                         for k, v in item.items()
                         if not k.startswith("xmlns") and k not in ("schemaLocation", "noNamespaceSchemaLocation")}
                if attrs:
                    out.append(attrs)
            else:
                out.append(_clean(item))
        return out
    if isinstance(node, list):
        return [_clean(n) for n in node]
    return node


def _is_qname(text: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_][\w.-]*:[A-Za-z_][\w.-]*", text))


def element_order(xml: bytes | Path) -> list[str]:
    """Clark names of every element in document order."""
    tree = etree.parse(io.BytesIO(xml) if isinstance(xml, bytes) else str(xml))
    return [e.tag for e in tree.getroot().iter() if isinstance(e.tag, str)]


def attribute_names(xml: bytes | Path) -> list[list[str]]:
    """The attributes present on each element, in document order (xsi hints aside)."""
    tree = etree.parse(io.BytesIO(xml) if isinstance(xml, bytes) else str(xml))
    return [sorted(k for k in e.attrib if not k.startswith(XSI)) for e in tree.getroot().iter() if isinstance(e.tag, str)]


# -- valid documents ------------------------------------------------------------------------------


@pytest.mark.parametrize("xsd", sorted(VALID))
def test_the_oracle_reads_the_schema_and_accepts_its_public_documents(xsd: str) -> None:
    for doc in VALID[xsd]:
        assert _oracle_accepts(xsd, CORPUS / doc), (doc, oracle(xsd).error_log)


@pytest.mark.parametrize("xsd", sorted(VALID))
def test_avro_schema_is_accepted_by_fastavro(xsd: str) -> None:
    for doc in VALID[xsd][:1]:
        fastavro.parse_schema(model(xsd).avro_schema(_root(doc)))


@pytest.mark.parametrize(("xsd", "doc"), PAIRS, ids=[d for _, d in PAIRS])
def test_valid_document_round_trips_without_loss(xsd: str, doc: str) -> None:
    m, path = model(xsd), CORPUS / doc
    element = _root(doc)
    record = m.decoder(element).decode_document(path)
    # the generated converters give the interpreted converters' record (issue 32: the oracle)
    assert record == interpreted(xsd, element).decode_document(path, validate=False)
    # the record is an Avro record of the schema: it survives Avro binary
    schema = m.avro_schema(element)
    parsed = fastavro.parse_schema(schema)
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, parsed, record)
    if isinstance(schema, dict):  # the generated Avro encoder writes fastavro's bytes (a union root: fastavro's)
        ours = bytearray()
        compile_encoder(schema)(record, ours)
        assert bytes(ours) == buffer.getvalue()
    buffer.seek(0)
    # (the union branch of an xsi:type element comes back by name, as the record carried it)
    from_avro = fastavro.schemaless_reader(buffer, parsed, return_record_name=True, return_record_name_override=True)
    for rec in (record, from_avro):
        xml = m.encoder(element).encode(rec)
        assert _oracle_accepts(xsd, xml), oracle(xsd).error_log
        assert element_order(xml) == element_order(path)
        assert attribute_names(xml) == attribute_names(path)
        assert content(m.schema, io.BytesIO(xml)) == content(m.schema, str(path))


# -- invalid documents ----------------------------------------------------------------------------


def _mutations(path: Path) -> list[tuple[str, bytes]]:
    """Deterministic damage: an unknown attribute on the root, an unknown child in the first
    element with children, the first date, amount or code made unreadable, the last leaf removed,
    two adjacent siblings swapped, text put in the root."""
    tree = etree.parse(str(path))
    root = tree.getroot()
    out: list[tuple[str, bytes]] = []

    def variant(name: str, change: Callable[[Any], bool]) -> None:
        copy = etree.fromstring(etree.tostring(root))
        if change(copy):
            out.append((name, etree.tostring(copy)))

    variant("unknown-attribute", lambda r: r.set("colour", "red") is None)

    def unknown_child(r: Any) -> bool:
        parent = next(e for e in r.iter() if isinstance(e.tag, str) and len(e) and isinstance(e[0].tag, str))
        ns = etree.QName(parent.tag).namespace
        parent.insert(0, etree.Element(f"{{{ns}}}Colour" if ns else "Colour"))
        return True

    variant("unknown-element", unknown_child)

    def bad_value(pattern: str, replacement: str) -> Callable[[Any], bool]:
        def change(r: Any) -> bool:
            for e in r.iter():
                if isinstance(e.tag, str) and not len(e) and e.text and re.fullmatch(pattern, e.text.strip()):
                    e.text = replacement
                    return True
            return False
        return change

    variant("bad-date", bad_value(r"\d{4}-\d\d-\d\d", "2024-13-45"))
    variant("bad-amount", bad_value(r"\d+\.\d\d", "12,50"))
    variant("year-overflow", bad_value(r"\d{4}-\d\d-\d\d(T[\d:.]+([+-]\d\d:\d\d|Z)?)?", "99999999999999999999-01-01"))

    def bad_code(r: Any) -> bool:  # the first code-like attribute value (an enumeration, mostly)
        for e in r.iter():
            for key, value in e.attrib.items() if isinstance(e.tag, str) else ():
                if not key.startswith(XSI) and re.fullmatch(r"[A-Z]{2,5}", value):
                    e.set(key, "not a code!")
                    return True
        return False

    variant("bad-code", bad_code)

    def drop_last_leaf(r: Any) -> bool:
        leaves = [e for e in r.iter() if isinstance(e.tag, str) and not len(e) and e.getparent() is not None]
        leaves[-1].getparent().remove(leaves[-1])
        return True

    variant("missing-element", drop_last_leaf)

    def swap_siblings(r: Any) -> bool:  # the first two adjacent siblings of different names, swapped
        for e in r.iter():
            kids = [c for c in e if isinstance(c.tag, str)] if isinstance(e.tag, str) else []
            for a, b in zip(kids, kids[1:], strict=False):
                if a.tag != b.tag and a.getnext() is b:
                    a.addprevious(b)
                    return True
        return False

    variant("swapped-siblings", swap_siblings)

    def text_in_root(r: Any) -> bool:  # text where the root's content model has only elements
        r.text = "stray text"
        return True

    variant("stray-text", text_in_root)
    return out


MUTATED = [(xsd, doc) for xsd, docs in VALID.items() for doc in docs[:2]]


@pytest.mark.parametrize(("xsd", "doc"), MUTATED, ids=[d for _, d in MUTATED])
def test_mutated_documents_are_refused_with_a_located_error_exactly_when_the_oracle_refuses(xsd: str, doc: str) -> None:
    m = model(xsd)
    decoder = m.decoder(_root(doc))
    refused = 0
    for name, data in _mutations(CORPUS / doc):
        # generated and interpreted converters: the same record, or the same error (issue 32)
        assert _outcome(decoder, data, name) == _outcome(interpreted(xsd, _root(doc)), data, name), name
        if _oracle_accepts(xsd, data):
            decoder.decode_document(data, name=name)  # still valid (e.g. an optional leaf removed)
            continue
        with pytest.raises(XmlValidationError) as info:
            decoder.decode_document(data, name=name)
        error = info.value
        assert error.source == name and error.line is not None and (error.path or "").startswith("/"), str(error)
        assert "\n" not in str(error)
        refused += 1
    assert refused >= 3


def _encoded(schema: Any, record: Any) -> bytes:
    """The record as ``write_container`` writes it from the dict: the generated encoder, else fastavro."""
    out = bytearray()
    try:
        compile_encoder(schema)(record, out)
    except Exception:  # noqa: BLE001 - what the encoder leaves to fastavro
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), record)
        return buffer.getvalue()
    return bytes(out)


@pytest.mark.parametrize(("xsd", "doc"), MUTATED, ids=[d for _, d in MUTATED])
def test_records_the_decoder_encodes_itself_are_the_bytes_of_their_dicts(xsd: str, doc: str) -> None:
    """Straight to Avro (issue 32): on each document and its mutations, the converter gives the
    bytes ``write_container`` writes for the dict converter's record, or that record itself,
    or the same error."""
    m = model(xsd)
    decoder, value = m.decoder(_root(doc)), m.root_value(_root(doc))
    assert decoder.generated is not None
    if not isinstance(value, Record):
        pytest.skip("a polymorphic root: records of one type only")
    schema = value_avro(value, set())
    straight = decoder.generated.avro_converter(value, schema)
    if straight is None:
        pytest.skip("a record type left to the interpreted converter")
    dicts = decoder.generated.value_converter(value)
    for name, data in [("as published", (CORPUS / doc).read_bytes()), *_mutations(CORPUS / doc)]:
        root = parse_document(data, name=name).getroot()
        try:
            expected: Any = dicts(root)
        except Exception as exc:  # noqa: BLE001 - compared below
            expected = (type(exc), str(exc))
        try:
            got: Any = straight(root)
        except Exception as exc:  # noqa: BLE001 - compared below
            got = (type(exc), str(exc))
        if isinstance(got, EncodedRecord):
            assert bytes(got) == _encoded(schema, expected), name
        else:
            assert got == expected, name


#: published documents with children in another order than declared (Maven's POM elements in
#: any order, xs:all; SIRI Lines a repeated choice of LineRef and LineDirection): they came as
#: the dict converter's record (the fallback) while the converter reading in declaration order
#: left every other order to the dicts; now read on from the child out of order, their records
#: listing the document's order
OUT_OF_ORDER = {
    "siri/exd_lines_discoveryResponse.xml", "maven/cbsa_pom.xml", "maven/cbsa_src_webui_pom.xml",
    "maven/cbsa_src_Z-OS-Connect-Customer-Services-Interface_pom.xml",
    "maven/cbsa_src_Z-OS-Connect-Payment-Interface_pom.xml", "maven/gs1-epcis_WSDL_pom.xml",
}


def test_published_documents_come_straight_to_avro_without_the_fallback() -> None:
    """The test above also passes when the converter always falls back to the dict converter:
    here every published document whose record type is converted straight to Avro comes
    encoded (an EncodedRecord, not the fallback's dict), those with children in another order
    than declared (``OUT_OF_ORDER``) and with comments between children (XRechnung's) among them."""
    encoded: list[str] = []
    fallbacks: list[str] = []
    for xsd, doc in PAIRS:
        m = model(xsd)
        value = m.root_value(_root(doc))
        generated = m.decoder(_root(doc)).generated
        assert generated is not None
        straight = generated.avro_converter(value, value_avro(value, set())) if isinstance(value, Record) else None
        if straight is None:
            continue
        got = straight(parse_document((CORPUS / doc).read_bytes(), name=doc).getroot())
        (encoded if isinstance(got, EncodedRecord) else fallbacks).append(doc)
    assert fallbacks == []
    assert len(encoded) >= 56 and OUT_OF_ORDER <= set(encoded) and "xrechnung/01.01a-INVOICE_ubl.xml" in encoded
    assert "siri/exs_stopMonitoring_response.xml" in encoded


@pytest.mark.parametrize(("xsd", "doc"), [(x, d) for x, docs in INVALID.items() for d in docs])
def test_public_invalid_documents_are_refused_with_a_located_error(xsd: str, doc: str) -> None:
    m = model(xsd)
    assert not _oracle_accepts(xsd, CORPUS / doc)
    with pytest.raises(XmlValidationError) as info:
        m.decoder(_root(doc)).decode_document(CORPUS / doc)
    assert info.value.line is not None and (info.value.path or "").startswith("/")


def test_every_corpus_folder_names_its_sources() -> None:
    folders = {p.parent for p in CORPUS.rglob("*.xml")} | {p.parent for p in CORPUS.glob("*/*.xsd")}
    for folder in folders:
        top = CORPUS / folder.relative_to(CORPUS).parts[0]
        assert (top / "SOURCES.md").is_file(), top
    listed = sum(len(d) for d in VALID.values()) + sum(len(d) for d in INVALID.values())
    assert listed == len(list(CORPUS.rglob("*.xml"))), "every document of the corpus is tested"
