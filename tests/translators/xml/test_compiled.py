"""The generated converters and the generated Avro encoder against their oracles (issue 32).

On every document of the corpus and each of its mutated variants, ``test_corpus.py`` checks
that the record converters generated per record type (``GeneratedConverters``) give the records
of the interpreted :class:`RecordDecoder` (a refused document: the same error, message, line
and path), and that the Avro encoder generated per schema (``translators/xml/avro.py``) writes
the bytes ``fastavro.schemaless_writer`` writes. Here: the project's own documents, streams, the
fast path really taken, container files (blocks, codecs) and what the encoder leaves to fastavro.
"""

from __future__ import annotations

import functools
import io
import re
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest

from coupler.translators.xml import XmlValidationError, XsdModel
from coupler.translators.xml import decoder as decoder_module
from coupler.translators.xml.avro import EncodedRecord, compile_encoder, write_container
from coupler.translators.xml.decoder import Decoder
from coupler.translators.xml.model import value_avro
from coupler.translators.xml.security import parse_document

DATA = Path(__file__).parent / "data"
OWN = [("orders/orders.xsd", "orders/order-1.xml"), ("orders/orders.xsd", "orders/order-2.xml"),
       ("orders/orders.xsd", "orders/orders-batch.xml"), ("instance_typing/typing.xsd", "instance_typing/typing.xml")]


def _both(m: XsdModel, root: str) -> tuple[Decoder, Decoder]:
    generated = m.decoder(root)
    assert generated.generated is not None
    return generated, Decoder(m, generated.element.name, compiled=False)


def _outcome(decoder: Decoder, data: bytes | Path, name: str) -> Any:
    try:
        return decoder.decode_document(data, name=name, validate=False)
    except XmlValidationError as exc:
        return ("refused", exc.message, exc.line, exc.path, exc.hint)


@pytest.mark.parametrize(("xsd", "doc"), OWN, ids=[d for _, d in OWN])
def test_generated_converters_on_the_projects_own_documents(xsd: str, doc: str) -> None:
    m = XsdModel.load(DATA / xsd)
    root = _root_of(DATA / doc)
    generated, interpreted = _both(m, root)
    assert _outcome(generated, DATA / doc, doc) == _outcome(interpreted, DATA / doc, doc)


def _root_of(path: Path) -> str:
    from lxml import etree

    return str(etree.parse(str(path)).getroot().tag)


def test_the_common_record_takes_the_generated_path_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A valid order is converted without the interpreted RecordDecoder (else no speed-up)."""
    m = XsdModel.load(DATA / "orders/orders.xsd")
    decoder = m.decoder("orders")
    calls: list[str] = []
    original = decoder_module.RecordDecoder.__call__

    def counted(self: Any, elem: Any) -> Any:
        calls.append(self.record.name)
        return original(self, elem)

    monkeypatch.setattr(decoder_module.RecordDecoder, "__call__", counted)
    records = list(decoder.iter_records(DATA / "orders/orders-batch.xml", "orders/order"))
    assert records and calls == []


def test_a_stream_is_refused_at_the_same_record_with_the_same_error() -> None:
    m = XsdModel.load(DATA / "orders/orders.xsd")
    generated, interpreted = _both(m, "orders")
    text = (DATA / "orders/orders-batch.xml").read_bytes()
    bad = text.replace(b"<quantity>", b"<quantity>x", 1)
    schema = value_avro(generated.resolve_path("orders/order")[-1][1].record, set())
    outcomes = []
    for decoder, avro_schema in ((generated, None), (interpreted, None), (generated, schema)):
        with pytest.raises(XmlValidationError) as info:
            list(decoder.iter_records(io.BytesIO(bad), "orders/order", name="batch.xml", avro_schema=avro_schema))
        outcomes.append(str(info.value))
    assert outcomes[0] == outcomes[1] == outcomes[2] and "quantity" in outcomes[0]


def test_a_record_with_thousands_of_unknown_attributes_is_refused_in_linear_time() -> None:
    """lxml's ``items()`` is quadratic in the number of attributes (50,000: minutes); the
    converters look at ``keys()`` first and refuse (benchmarks/xml_refuse.py, at scale)."""
    m = XsdModel.load(DATA / "orders/orders.xsd")
    decoder = m.decoder("orders")
    schema = value_avro(decoder.resolve_path("orders/order")[-1][1].record, set())
    text = (DATA / "orders/orders-batch.xml").read_bytes()
    bad = text.replace(b"<order ", b"<order " + b" ".join(b'x%d="1"' % i for i in range(50_000)) + b" ", 1)
    for avro_schema in (None, schema):
        start = time.process_time()
        with pytest.raises(XmlValidationError):
            list(decoder.iter_records(io.BytesIO(bad), "orders/order", avro_schema=avro_schema))
        assert time.process_time() - start < 5  # linear: about 0.03 s here; quadratic: minutes


def _schemaless(parsed: Any, record: Any) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed, record)
    return out.getvalue()


def _orders_schema() -> tuple[Any, list[dict[str, Any]]]:
    m = XsdModel.load(DATA / "orders/orders.xsd")
    decoder = m.decoder("orders")
    record = decoder.resolve_path("orders/order")[-1][1].record
    records = list(decoder.iter_records(DATA / "orders/orders-batch.xml", "orders/order"))
    return value_avro(record, set()), records


def test_avro_container_of_streamed_records_in_several_blocks_and_codecs() -> None:
    schema, records = _orders_schema()
    many = records * 400  # more than one 64 KiB block
    parsed = fastavro.parse_schema(schema)
    encode = compile_encoder(schema)
    for record in records:
        out = bytearray()
        encode(record, out)
        assert bytes(out) == _schemaless(parsed, record)
    for codec in ("null", "deflate"):
        out = io.BytesIO()
        assert write_container(out, schema, many, codec=codec, metadata={"coupler.format": "acme.Order@1"}) == len(many)
        out.seek(0)
        reader = fastavro.reader(out)
        assert reader.codec == codec
        assert reader.metadata["coupler.format"] == "acme.Order@1"
        assert list(reader) == list(fastavro.reader(_fastavro_file(parsed, many)))


def test_records_the_decoder_encodes_itself_make_the_same_container() -> None:
    """``iter_records(..., avro_schema=...)`` (what ``xml decode --to avro`` asks for): every
    order of the batch comes encoded, as the generated encoder writes its dict."""
    schema, records = _orders_schema()
    decoder = XsdModel.load(DATA / "orders/orders.xsd").decoder("orders")
    encoded = list(decoder.iter_records(DATA / "orders/orders-batch.xml", "orders/order", avro_schema=schema))
    encode = compile_encoder(schema)
    assert len(encoded) == len(records) > 1
    for got, record in zip(encoded, records, strict=True):
        out = bytearray()
        encode(record, out)
        assert type(got) is EncodedRecord and got == out
    out_file = io.BytesIO()
    assert write_container(out_file, schema, encoded) == len(records)
    out_file.seek(0)
    assert list(fastavro.reader(out_file)) == list(fastavro.reader(_fastavro_file(fastavro.parse_schema(schema), records)))
    # another schema than the record's own: dicts
    other = {**schema, "name": "Other"}
    assert all(type(r) is dict for r in decoder.iter_records(DATA / "orders/orders-batch.xml", "orders/order", avro_schema=other))



@pytest.mark.parametrize(("doc", "old", "new"), [
    ("order-1.xml", b"", b""), ("order-2.xml", b"", b""),  # buyer xsi:type Company, o:Person
    ("order-1.xml", b'xsi:type="Company"', b""),  # the declared type
    ("order-1.xml", b'xsi:type="Company"', b'xsi:type="Party"'),
    ("order-1.xml", b'xsi:type="Company"', b'xsi:type="Nope"'),  # refused as by the dicts
    ("order-2.xml", b'xsi:type="o:Person"', b'xsi:type="x:Person"'),  # an undeclared prefix
])
def test_polymorphic_elements_are_encoded_straight_as_their_dicts(doc: str, old: bytes, new: bytes) -> None:
    """An element whose type ``xsi:type`` may name (the orders' buyer) comes straight to Avro
    with its union branch: the bytes of its dict's encoding, or the dict converter's error."""
    m = XsdModel.load(DATA / "orders/orders.xsd")
    decoder = m.decoder("order")
    value = m.root_value("order")
    schema = value_avro(value, set())
    assert decoder.generated is not None
    straight = decoder.generated.avro_converter(value, schema)
    dicts = decoder.generated.value_converter(value)
    root = parse_document((DATA / "orders" / doc).read_bytes().replace(old, new), name=doc).getroot()
    try:
        expected: Any = dicts(root)
    except XmlValidationError as exc:
        with pytest.raises(XmlValidationError) as info:
            straight(root)
        assert str(info.value) == str(exc)
        return
    got = straight(root)
    out = bytearray()
    compile_encoder(schema)(expected, out)
    assert type(got) is EncodedRecord and got == out


def _fastavro_file(parsed: Any, records: list[dict[str, Any]]) -> io.BytesIO:
    out = io.BytesIO()
    fastavro.writer(out, parsed, records)
    out.seek(0)
    return out


def test_what_the_generated_encoder_does_not_handle_goes_through_fastavro() -> None:
    schema, records = _orders_schema()
    parsed = fastavro.parse_schema(schema)
    record = dict(records[0])
    # a value of another type that fastavro accepts (an int where a long is declared: a str
    # of digits is not), a decimal with fewer digits than its scale, a large integer
    record["priority"] = 4
    record["total"] = {**record["total"], "value": Decimal("12.5")}
    out = io.BytesIO()
    write_container(out, schema, [record])
    out.seek(0)
    assert list(fastavro.reader(out)) == list(fastavro.reader(_fastavro_file(parsed, [record])))
    # what fastavro refuses is refused as fastavro refuses it
    for change in ({"total": {**record["total"], "value": Decimal("12.505")}}, {"status": "LOST"},
                   {"orderDate": "not a date"}):
        bad = {**record, **change}
        with pytest.raises(Exception) as ours:  # noqa: PT011 - fastavro's own error, whatever it is
            write_container(io.BytesIO(), schema, [bad])
        with pytest.raises(Exception) as theirs:  # noqa: PT011
            fastavro.writer(io.BytesIO(), parsed, [bad])
        assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)


def test_threads_making_the_converters_at_once_get_the_interpreted_records() -> None:
    """Converters are made on first use; threads that first use them together (SOAP adapters)
    each get the right records."""
    import threading

    m = XsdModel.load(DATA / "orders/orders.xsd")
    interpreted = Decoder(m, m.element("orders").name, compiled=False)
    expected = list(interpreted.iter_records(DATA / "orders/orders-batch.xml", "orders/order"))
    for _ in range(5):
        decoder = Decoder(m, m.element("orders").name)
        barrier = threading.Barrier(4)
        results: list[Any] = []

        def run(decoder: Decoder = decoder, barrier: threading.Barrier = barrier, results: list[Any] = results) -> None:
            barrier.wait()
            results.append(list(decoder.iter_records(DATA / "orders/orders-batch.xml", "orders/order")))

        threads = [threading.Thread(target=run) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results == [expected] * 4


def _commented(text: bytes) -> bytes:
    """The document with a comment and a processing instruction before every tag that starts
    a line (so before the first child of a record, between children, after the last one) and
    between adjacent tags on one line (the streets of an address)."""
    text = re.sub(rb"(>\s*\n\s*)(<[^?])", rb"\1<!-- note -->\n<?coupler x?>\2", text)
    return re.sub(rb"(</[^>]+>)(<)", rb"\1<!--x--><?coupler y?>\2", text)


def test_comments_between_children_keep_the_records_on_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Comments and processing instructions between a record's children change nothing in
    its values, and the record is still read in declaration order: neither the function
    dispatching on each child's field (``r<N>_d``) nor the interpreted converter is called,
    and straight to Avro every record comes encoded (not as the dict of the fallback)."""
    m = XsdModel.load(DATA / "orders/orders.xsd")
    plain = (DATA / "orders/orders-batch.xml").read_bytes()
    commented = _commented(plain)
    assert commented.count(b"<!-- note -->") > 25 and commented.count(b"<!--x-->") > 5
    schema = value_avro(m.decoder("orders").resolve_path("orders/order")[-1][1].record, set())
    expected = list(Decoder(m, m.element("orders").name, compiled=False).iter_records(plain, "orders/order"))
    expected_avro = list(m.decoder("orders").iter_records(plain, "orders/order", avro_schema=schema))
    assert len(expected) > 1 and all(type(r) is EncodedRecord for r in expected_avro)

    decoder = m.decoder("orders")
    assert decoder.generated is not None
    calls = _count_fallbacks(monkeypatch, decoder, plain, schema)

    assert list(decoder.iter_records(commented, "orders/order")) == expected
    assert list(decoder.iter_records(commented, "orders/order", avro_schema=schema)) == expected_avro
    assert calls == []
    # the same document without comments, a single element repeated: the counting sees the fallback
    repeated = plain.replace(b"<status>SHIPPED</status>", b"<status>SHIPPED</status><status>NEW</status>", 1)
    with pytest.raises(XmlValidationError, match="more than once"):
        list(decoder.iter_records(repeated, "orders/order"))
    assert calls


def test_text_around_a_comment_is_read_as_the_text_it_is_part_of() -> None:
    """A comment inside a simple-typed element splits its text, which stays one value (4 and
    2: 42, not 4); text after a comment between the children of a record is refused as text
    after a child is; the same by the generated converters, the interpreted ones and straight
    to Avro (no schema validation in a stream to catch either)."""
    m = XsdModel.load(DATA / "orders/orders.xsd")
    plain = (DATA / "orders/orders-batch.xml").read_bytes()
    schema = value_avro(m.decoder("orders").resolve_path("orders/order")[-1][1].record, set())
    split = (plain.replace(b"<quantity>4</quantity>", b"<quantity>4<!-- four... -->2<?pi x?></quantity>", 1)
             .replace(b'<unitPrice currency="GBP">2.50', b'<unitPrice currency="GBP">2<!--x-->2.50', 1))
    assert split.count(b"<!--") == 2
    outcomes = []
    for decoder, avro_schema in ((m.decoder("orders"), None), (Decoder(m, m.element("orders").name, compiled=False), None),
                                 (m.decoder("orders"), schema)):
        records = list(decoder.iter_records(split, "orders/order", avro_schema=avro_schema))
        outcomes.append(records)
    line = outcomes[0][0]["line"][0]
    assert line["quantity"] == 42 and line["unitPrice"]["value"] == Decimal("22.50")
    assert outcomes[1] == outcomes[0]
    encode = compile_encoder(schema)
    for got, record in zip(outcomes[2], outcomes[0], strict=True):  # the split texts: the dicts' fallback
        out = bytearray()
        encode(record, out)
        assert got == (out if type(got) is EncodedRecord else record)

    after_element = plain.replace(b"<status>SHIPPED</status>", b"<status>SHIPPED</status>junk", 1)
    after_comment = plain.replace(b"<status>SHIPPED</status>", b"<status>SHIPPED</status><!-- c -->junk", 1)
    for decoder, avro_schema in ((m.decoder("orders"), None), (Decoder(m, m.element("orders").name, compiled=False), None),
                                 (m.decoder("orders"), schema)):
        errors = []
        for data in (after_element, after_comment):
            with pytest.raises(XmlValidationError) as info:
                list(decoder.iter_records(data, "orders/order", avro_schema=avro_schema))
            errors.append(str(info.value))
        assert errors[0] == errors[1] and "text 'junk' is not allowed in Order" in errors[0]


def test_a_validated_document_may_hold_comments_inside_simple_values(tmp_path: Path) -> None:
    """Whole-document decoding validates with xmlschema, which counted a comment or processing
    instruction inside an lxml element as a child ("a simple content element can't have
    child elements" for ``<quantity>3<!-- -->0</quantity>``, a valid document libxml2 and
    xmlschema given the text accept); now it decodes to 30, and a value that is wrong with
    its comment removed is still refused at its line."""
    m = XsdModel.load(DATA / "orders/orders.xsd")
    text = (DATA / "orders/order-1.xml").read_text()
    assert "<quantity>3</quantity>" in text
    commented = tmp_path / "commented.xml"
    commented.write_text(text.replace("<quantity>3</quantity>", "<quantity>3<!-- thirty -->0<?note x?></quantity>", 1))
    record = m.decoder("order").decode_document(str(commented))
    plain = m.decoder("order").decode_document(str(DATA / "orders/order-1.xml"))
    assert record["line"][0]["quantity"] == 30 and plain["line"][0]["quantity"] == 3
    assert {k: v for k, v in record.items() if k != "line"} == {k: v for k, v in plain.items() if k != "line"}
    wrong = tmp_path / "wrong.xml"
    wrong.write_text(text.replace("<quantity>3</quantity>", "<quantity>3<!-- x -->x</quantity>", 1))
    line = text[: text.index("<quantity>3</quantity>")].count("\n") + 1
    with pytest.raises(XmlValidationError) as info:
        m.decoder("order").decode_document(str(wrong))
    assert f":{line}" in str(info.value) and "quantity" in str(info.value)


def _deep_bundles(depth: int) -> bytes:
    """The orders batch with its first line holding ``depth`` bundles nested in one another,
    a comment after the last child of each (the nested bundle) and after the line in the order."""
    inner = b""
    for k in range(depth):
        inner = (b'<bundle number="%d"><sku>B%d</sku><quantity>1</quantity><unitPrice currency="GBP">1.00</unitPrice>'
                 b"%s<!-- after %d --></bundle>" % (k, k, inner, k))
    plain = (DATA / "orders/orders-batch.xml").read_bytes()
    line = b'<line number="1"><sku>S</sku><quantity>4</quantity><unitPrice currency="GBP">2.50</unitPrice></line>'
    assert line in plain
    return plain.replace(line, line[: -len(b"</line>")] + inner + b"<!-- c --></line><!-- after the line -->", 1)


def test_a_comment_at_every_level_of_a_deep_document_converts_each_element_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A comment after a record's last child made the in-order reading start again from the
    first child, converting again the nested records read before it: with a comment at each
    level of nested bundles, 2^depth conversions of the innermost one (here 2^16). The
    reading now resumes after the comment: each generated function is called once per
    element of its record type, the records are those of the interpreted converter, and
    straight to Avro the bytes of their encoding."""
    depth = 16
    m = XsdModel.load(DATA / "orders/orders.xsd")
    deep = _deep_bundles(depth)
    schema = value_avro(m.decoder("orders").resolve_path("orders/order")[-1][1].record, set())
    expected = list(Decoder(m, m.element("orders").name, compiled=False).iter_records(deep, "orders/order"))
    bundle = expected[0]["line"][0]
    for k in reversed(range(depth)):
        bundle = bundle["bundle"][0]
        assert bundle["sku"] == f"B{k}"
    assert bundle["bundle"] == []

    decoder = m.decoder("orders")
    assert decoder.generated is not None
    list(decoder.iter_records(deep, "orders/order"))  # makes the functions, then counted
    list(decoder.iter_records(deep, "orders/order", avro_schema=schema))
    calls: list[str] = []
    namespace = decoder.generated.namespace
    generated = [name for name, value in namespace.items() if callable(value)
                 and getattr(getattr(value, "__code__", None), "co_filename", "").startswith(("<record", "<avro"))]
    assert generated
    for name in generated:
        function = namespace[name]

        @functools.wraps(function)  # with its attributes (a record converter's record)
        def counted(*args: Any, function: Any = function, name: str = name) -> Any:
            calls.append(name)
            return function(*args)

        monkeypatch.setitem(namespace, name, counted)
    original = decoder_module.RecordDecoder.__call__
    monkeypatch.setattr(decoder_module.RecordDecoder, "__call__",
                        lambda self, elem: calls.append(self.record.name) or original(self, elem))

    assert list(decoder.iter_records(deep, "orders/order")) == expected
    # one call per line or bundle (depth + 3), per order, buyer and address (2 orders); before: about 2^17
    # once per element of a record type: the lines and bundles (depth + 3), their unit prices
    # and the totals (depth + 5), each order, buyer and address (2 orders); before: 2^17 and more
    elements = (depth + 3) + (depth + 5) + 2 * 3
    assert len(calls) == elements, Counter(calls)
    calls.clear()
    encoded = list(decoder.iter_records(deep, "orders/order", avro_schema=schema))
    assert len(calls) == elements + 2 * 2, Counter(calls)  # and per order its top function, its buyer's union
    encode = compile_encoder(schema)
    for got, record in zip(encoded, expected, strict=True):
        out = bytearray()
        encode(record, out)
        assert type(got) is EncodedRecord and got == out


@pytest.mark.parametrize("where", ["value", "attribute", "unknown element"])
def test_an_error_deep_in_a_document_is_found_once_not_once_per_ancestor(
        monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """A generated converter leaves whatever it does not expect to its dispatching converter
    and that one to the interpreted one; a refused child was one of those, so every ancestor
    converted its subtree again, twice: 2^depth conversions of the innermost element
    (a damaged HL7 CDA document took 6 s of CPU, found by ``COUPLER_FUZZ_SEED=167712014``).
    A located error from a child now goes straight up: each element is converted at most
    three times (generated, dispatching, interpreted), and the error is the interpreted
    converter's."""
    depth = 12
    m = XsdModel.load(DATA / "orders/orders.xsd")
    deep = _deep_bundles(depth)
    damage = {"value": (b"<sku>B0</sku><quantity>1</quantity>", b"<sku>B0</sku><quantity>many</quantity>"),
              "attribute": (b'<bundle number="0">', b'<bundle number="0" colour="red">'),
              "unknown element": (b"<sku>B0</sku>", b"<sku>B0</sku><nope/>")}[where]
    assert damage[0] in deep
    deep = deep.replace(*damage, 1)
    with pytest.raises(XmlValidationError) as oracle:
        list(Decoder(m, m.element("orders").name, compiled=False).iter_records(deep, "orders/order"))
    decoder = m.decoder("orders")
    assert decoder.generated is not None
    list(decoder.iter_records(_deep_bundles(depth), "orders/order"))  # makes the functions
    calls: list[str] = []
    original = decoder_module.RecordDecoder.__call__
    monkeypatch.setattr(decoder_module.RecordDecoder, "__call__",
                        lambda self, elem: calls.append(self.record.name) or original(self, elem))
    with pytest.raises(XmlValidationError) as info:
        list(decoder.iter_records(deep, "orders/order"))
    assert str(info.value) == str(oracle.value)
    assert len(calls) <= 2, Counter(calls)  # the innermost bundle (and its quantity's record); before: 2^12 and more


NODES_XSD = """<?xml version="1.0"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:element name="nodes"><xs:complexType><xs:sequence>
    <xs:element name="node" type="Node" maxOccurs="unbounded"/>
  </xs:sequence></xs:complexType></xs:element>
  <xs:complexType name="Node"><xs:sequence>
    <xs:element name="node" type="Node" minOccurs="0" maxOccurs="unbounded"/>
    <xs:element name="v" type="xs:string" minOccurs="0"/>
    <xs:element name="w" type="xs:int" minOccurs="0" maxOccurs="unbounded"/>
  </xs:sequence></xs:complexType>
</xs:schema>
"""


def test_an_xsi_type_kept_after_a_deep_child_converts_each_element_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``keep_simple_xsi_types``, a simple-typed child written with ``xsi:type`` was left
    to the dispatching converter and then the interpreted one: after the children before it
    were converted, so each ancestor doing the same converted its nested record again, twice,
    2^depth conversions (a valid document of 2.2 kB, 20 levels deep, took 21 s of CPU; each
    level more doubles it). The generated converters keep the xsi:type themselves now: each element is
    converted once, to the interpreted converter's record, and straight to Avro as well."""
    depth = 14
    xsd = tmp_path / "nodes.xsd"
    xsd.write_text(NODES_XSD, encoding="utf-8")
    m = XsdModel.load(xsd, keep_simple_xsi_types=True)
    inner = b""
    for k in range(depth):
        inner = (b'<node>%s<v xsi:type="xs:string">v%d</v><w xsi:type="xs:int">%d</w><w>0</w><w xsi:type="xs:int">1</w></node>'
                 % (inner, k, k))
    deep = (b'<nodes xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xs="http://www.w3.org/2001/XMLSchema">'
            + inner + b"</nodes>")
    expected = list(Decoder(m, m.element("nodes").name, compiled=False).iter_records(deep, "nodes/node"))
    string, integer = "{http://www.w3.org/2001/XMLSchema}string", "{http://www.w3.org/2001/XMLSchema}int"
    node = expected[0]
    for k in reversed(range(depth)):
        assert (node["v"], node["w"]) == (f"v{k}", [k, 0, 1])
        assert node["xsi_types"] == {"v": string, "w[0]": integer, "w[2]": integer}
        node = node["node"][0] if k else node
    decoder = m.decoder("nodes")
    assert decoder.generated is not None
    schema = value_avro(decoder.resolve_path("nodes/node")[-1][1].record, set())
    calls = _count_fallbacks(monkeypatch, decoder, deep, schema, "nodes/node")
    assert list(decoder.iter_records(deep, "nodes/node")) == expected
    encoded = list(decoder.iter_records(deep, "nodes/node", avro_schema=schema))
    assert calls == []  # before: 32,752 interpreted conversions, and the dispatching ones
    out = bytearray()
    compile_encoder(schema)(expected[0], out)
    assert len(encoded) == 1 and type(encoded[0]) is EncodedRecord and encoded[0] == out


def _count_fallbacks(monkeypatch, decoder, plain: bytes, schema: dict, path: str = "orders/order") -> list[str]:
    """The names of the dispatching converters (``*_d``) and interpreted record decoders called
    from now on, once ``plain`` has made the generated functions of ``path`` (both ways)."""
    list(decoder.iter_records(plain, path))  # makes the functions, then counted
    list(decoder.iter_records(plain, path, avro_schema=schema))
    calls: list[str] = []
    dispatching = [name for name in decoder.generated.namespace if name.endswith("_d")]
    assert dispatching
    for name in dispatching:
        function = decoder.generated.namespace[name]
        monkeypatch.setitem(decoder.generated.namespace, name,
                            lambda elem, function=function, name=name: calls.append(name) or function(elem))
    original = decoder_module.RecordDecoder.__call__
    monkeypatch.setattr(decoder_module.RecordDecoder, "__call__",
                        lambda self, elem: calls.append(self.record.name) or original(self, elem))
    return calls


def _outcomes(m: XsdModel, data: bytes, schema: dict) -> list:
    """The records of ``orders/order`` in ``data``, or the error, by the interpreted converter,
    the generated converters and the generated converters straight to Avro."""
    outcomes: list = []
    for decoder, avro_schema in ((Decoder(m, m.element("orders").name, compiled=False), None),
                                 (m.decoder("orders"), None), (m.decoder("orders"), schema)):
        try:
            outcomes.append(list(decoder.iter_records(data, "orders/order", avro_schema=avro_schema)))
        except XmlValidationError as exc:
            outcomes.append(str(exc))
    return outcomes


@pytest.mark.parametrize(("old", "new"), [
    # after a comment: a single field again, a field declared before the last one read, an
    # unknown element, text, and a run of a repeated field going on (accepted)
    (b"<status>SHIPPED</status>", b"<status>SHIPPED</status><!-- c --><status>NEW</status>"),
    (b"<invoiceRef>INV-1</invoiceRef>", b"<invoiceRef>INV-1</invoiceRef><!-- c --><status>NEW</status>"),
    (b"<invoiceRef>INV-1</invoiceRef>", b"<invoiceRef>INV-1</invoiceRef><!-- c --><nope/>"),
    (b"<invoiceRef>INV-1</invoiceRef>", b"<invoiceRef>INV-1</invoiceRef><!-- c --><?pi x?>junk"),
    (b"<c:city>B</c:city>", b"<!-- c --><c:city>B</c:city><!-- d --><c:city>B</c:city>"),
    (b"<c:street>A</c:street>", b"<c:street>A</c:street><!-- c --><c:street>A2</c:street><!-- d -->"),
    (b"<total ", b"<!-- c --><line number=\"9\"><sku>Z</sku><quantity>1</quantity>"
                 b"<unitPrice currency=\"GBP\">0.10</unitPrice></line><!-- d --><total "),
])
def test_elements_after_a_comment_as_the_interpreted_converter_reads_them(old: bytes, new: bytes) -> None:
    """Going on after a comment, the reading refuses what the interpreted converter refuses (a
    repetition, an unknown element, text) and accepts what it accepts (another order, listed
    in the order's record): its records or its error, by the generated converters and
    straight to Avro."""
    m = XsdModel.load(DATA / "orders/orders.xsd")
    plain = (DATA / "orders/orders-batch.xml").read_bytes()
    assert old in plain
    data = plain.replace(old, new, 1)
    schema = value_avro(m.decoder("orders").resolve_path("orders/order")[-1][1].record, set())
    outcomes = _outcomes(m, data, schema)
    if isinstance(outcomes[0], str):
        assert outcomes[1] == outcomes[2] == outcomes[0]
        return
    assert outcomes[1] == outcomes[0]
    encode = compile_encoder(schema)
    for got, record in zip(outcomes[2], outcomes[0], strict=True):
        out = bytearray()
        encode(record, out)
        assert got == (out if type(got) is EncodedRecord else record)


@pytest.mark.parametrize(("old", "texts"), [
    # xs:double: inline float() for a text of digits, sign, dot and exponent alone (a weight after the price)
    (b'<unitPrice currency="GBP">2.50</unitPrice>', [b"<weightKg>%s</weightKg>" % t for t in (
        b"1.5", b"-0", b"+.5e-3", b"1E400", b"1e", b".", b"--1", b"", b"INF", b"-INF", b"NaN", b" 2.5 ", b"1_0",
        "\u0661".encode(), b"0x10", b"1.5\n")]),
    # xs:positiveInteger: inline int() of plain digits, at least 1
    (b"<quantity>4</quantity>", [b"<quantity>%s</quantity>" % t for t in (
        b"1", b"0", b"00", b"007", b"+3", b"-1", b" 4 ", b"", b"9" * 18, b"9" * 19, b"9" * 20, "\u0662".encode())]),
    # xs:token: inline when printable without a space (nothing to collapse)
    (b"<sku>S</sku>", [b"<sku>%s</sku>" % t for t in (b"A-1", b"", b"a b", b" a", b"a  b\n", b"a\tb", b"\xc3\xa9t\xc3\xa9")]),
    # decimals straight to their Avro bytes (c:Amount: pattern -?\d+\.\d{2}, totalDigits 12, fractionDigits 2;
    # discountRate: totalDigits 5, fractionDigits 4, no pattern)
    (b'<unitPrice currency="GBP">2.50</unitPrice>', [b'<unitPrice currency="GBP">%s</unitPrice>' % t for t in (
        b"2.50", b"0.00", b"000.00", b"-2.50", b"2.5", b"2.500", b"02.50", b"1234567890.12", b"12345678901.12",
        b"123456789012.12", b" 2.50 ", b"2,50", b"1e2", b"", b".50", b"2.", "\u0662.50".encode(), b"+2.50",
        b"2.50<!-- c -->")] + [b'<unitPrice currency="GBP" xsi:nil="true"/>', b'<unitPrice currency="XXX">2.50</unitPrice>']),
    (b'<total currency="GBP">10.00</total>', [b'<total currency="GBP">10.00</total><discountRate>%s</discountRate>' % t
                                               for t in (b"0.0525", b"1.0000", b"9.9999", b"0.05250", b"12.3456", b"0.5",
                                                         b".0525", b"0", b"-0.0525", b"", b" 0.0525", b"0.0525\n",
                                                         b"99999.0000")]
     + [b'<total currency="GBP">10.00</total><discountRate xsi:nil="true"/>']),
    # a nillable xs:string: xsi:nil="true" alone read inline, anything else by the element's converter
    # a string of one xs:pattern (c:CountryCode, [A-Z]{2}): matched inline
    (b"<c:country>FR</c:country>", [b"<c:country>%s</c:country>" % t for t in (
        b"FR", b"fr", b"F", b"FRA", b" FR", b"FR ", b"FR\n", b"", b"F R", "F\u00c9".encode(), "\uff26\uff32".encode(),
        b"FR<!-- c -->", b"<!-- c -->FR")]),
    (b'<approvedBy xsi:nil="true"/>', [b"<approvedBy %s" % t for t in (
        b'xsi:nil="true"/>', b'xsi:nil="1"/>', b'xsi:nil="false"/>', b'xsi:nil="0">Ann</approvedBy>',
        b'xsi:nil=" true"/>', b'xsi:nil="TRUE"/>', b'xsi:nil="true">Ann</approvedBy>', b'xsi:nil="true"><x/></approvedBy>',
        b'xsi:nil="true" kind="x"/>', b'kind="x" xsi:nil="true"/>', b'xsi:nil="true" xsi:type="xs:string"/>',
        b'xsi:nil="false"><x/></approvedBy>', b'xsi:type="xs:string">Ann</approvedBy>', b'>Ann</approvedBy>',
        b'/>')]),
    # xs:date straight to its Avro days, xs:dateTime in UTC to its microseconds (no date or datetime)
    (b"<orderDate>2024-01-01</orderDate>", [b"<orderDate>%s</orderDate>" % t for t in (
        b"2024-01-01", b"1970-01-01", b"1969-12-31", b"0001-01-01", b"9999-12-31", b"2024-02-29", b"2023-02-29",
        b"2024-13-01", b"0000-01-01", b"20240101", b"2024-W01-1", b" 2024-01-01 ", b"2024-01-01\n", b"2024-01-01Z",
        b"2024-01-01+01:00", b"2024-1-01", b"", "\uff12024-01-01".encode(), b"2024-01-01<!-- c -->")]),
    (b"<createdAt>2024-01-01T00:00:00Z</createdAt>", [b"<createdAt>%s</createdAt>" % t for t in (
        b"2024-01-01T00:00:00Z", b"1970-01-01T00:00:00Z", b"1969-12-31T23:59:59.999999Z", b"0001-01-01T00:00:00Z",
        b"9999-12-31T23:59:59.999999Z", b"2024-01-01T00:00:00.5Z", b"2024-01-01T00:00:00.1234567Z",
        b"2024-01-01T00:00:00", b"2024-01-01T00:00:00+01:00", b"2024-01-01T00:00:00+00:00", b"2024-01-01T24:00:00Z",
        b"2024-02-30T00:00:00Z", b"2024-01-01 00:00:00Z", b"2024-01-01T00:00Z", b" 2024-01-01T00:00:00Z", b"",
        b"2024-01-01T00:00:00z", "\uff12024-01-01T00:00:00Z".encode())]),
])
def test_scalars_decoded_inline_are_the_decoders_values_and_errors(old: bytes, texts: list[bytes]) -> None:
    """The generated converters decode the common texts of a few simple types inline (no
    call): every text gives what the interpreted converter gives (the value, or the error),
    by the dict converters and straight to Avro."""
    m = XsdModel.load(DATA / "orders/orders.xsd")
    plain = (DATA / "orders/orders-batch.xml").read_bytes()
    schema = value_avro(m.decoder("orders").resolve_path("orders/order")[-1][1].record, set())
    encode = compile_encoder(schema)
    assert old in plain
    for new in texts:
        data = plain.replace(old, old + new if b"weightKg" in new else new, 1)
        assert data != plain or new == old
        outcomes = _outcomes(m, data, schema)
        if isinstance(outcomes[0], str):
            assert outcomes[1] == outcomes[2] == outcomes[0], new
            continue
        assert outcomes[1] == outcomes[0], new
        for got, record in zip(outcomes[2], outcomes[0], strict=True):
            out = bytearray()
            encode(record, out)
            assert got == (out if type(got) is EncodedRecord else record), new


@pytest.mark.parametrize("text", ["AB", "ab", "A", "ABC", " AB", "AB ", " AB\n", "A B", "", "A\tB", "\u00c9A", "AB\x85"])
def test_strings_of_one_pattern_matched_inline_as_their_decoders_read_them(tmp_path: Path, text: str) -> None:
    """A string type of one xs:pattern and no other facet is matched inline by the generated
    converters (whitespace preserved: the text as it is; collapsed: a printable text without a
    space); each text gives what the interpreted converter gives, value or error."""
    xsd = tmp_path / "p.xsd"
    xsd.write_text("""<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:simpleType name="Code"><xs:restriction base="xs:string"><xs:pattern value="[A-Z]{2}"/></xs:restriction></xs:simpleType>
  <xs:simpleType name="Token"><xs:restriction base="xs:token"><xs:pattern value="[A-Z]{2}( [A-Z])?"/></xs:restriction></xs:simpleType>
  <xs:element name="r"><xs:complexType><xs:sequence>
    <xs:element name="code" type="Code"/><xs:element name="token" type="Token"/>
  </xs:sequence><xs:attribute name="a" type="Code"/></xs:complexType></xs:element>
</xs:schema>""")
    m = XsdModel.load(xsd)
    generated, interpreted = _both(m, "r")
    escaped = text.replace("\x85", "&#133;")
    for doc in (f"<r><code>{escaped}</code><token>AB</token></r>", f"<r><code>AB</code><token>{escaped}</token></r>",
                f'<r a="{escaped}"><code>AB</code><token>AB</token></r>'):
        data = doc.encode()
        assert _outcome(generated, data, "p.xml") == _outcome(interpreted, data, "p.xml"), doc
    source = "\n".join(generated.generated.sources.values())
    assert source.count(".isprintable() and ' ' not in") >= 1 and "(t := child.text or '')) else" in source


def test_a_nil_simple_element_is_read_without_its_elements_converter(monkeypatch: pytest.MonkeyPatch) -> None:
    """``<approvedBy xsi:nil="true"/>`` (a nillable xs:string, in every order of the benchmark)
    is None in the generated converters themselves, by the dicts and straight to Avro: the
    element's converter (the interpreted checks of its attributes, a microsecond) is not called."""
    calls: list[str] = []
    original = decoder_module.Decoder.element_converter

    def counted(self: Any, f: Any) -> Any:
        convert = original(self, f)

        def call(child: Any) -> Any:
            calls.append(f.name)
            return convert(child)

        return call

    monkeypatch.setattr(decoder_module.Decoder, "element_converter", counted)
    schema, records = _orders_schema()
    assert [r["approvedBy"] for r in records].count(None) >= 2
    calls.clear()
    for avro_schema in (None, schema):
        decoder = XsdModel.load(DATA / "orders/orders.xsd").decoder("orders")
        got = list(decoder.iter_records(DATA / "orders/orders-batch.xml", "orders/order", avro_schema=avro_schema))
        assert len(got) == len(records) and "approvedBy" not in calls


def test_dates_and_timestamps_go_straight_to_their_avro_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Straight to Avro, an order's xs:date and UTC xs:dateTime of the common form are read into
    their Avro days and microseconds, no date or datetime made and given to the encoder (its
    conversions of those refuse here: an order written through them would come as a dict);
    the bytes are those of the dict's encoding."""
    from coupler.translators.xml import avro as avro_module

    def refused(value: Any) -> int:
        raise avro_module._Fallback("a date or datetime given to the encoder")

    schema, records = _orders_schema()
    monkeypatch.setitem(avro_module.NAMESPACE, "DAYS", refused)
    monkeypatch.setitem(avro_module.NAMESPACE, "TSMICROS", refused)
    monkeypatch.setattr(avro_module, "_date_days", refused)
    monkeypatch.setattr(avro_module, "_timestamp_micros", refused)
    decoder = XsdModel.load(DATA / "orders/orders.xsd").decoder("orders")
    encoded = list(decoder.iter_records(DATA / "orders/orders-batch.xml", "orders/order", avro_schema=schema))
    monkeypatch.undo()
    encode = compile_encoder(schema)
    assert len(encoded) == len(records) > 1
    for got, record in zip(encoded, records, strict=True):
        out = bytearray()
        encode(record, out)
        assert type(got) is EncodedRecord and got == out


@pytest.mark.parametrize(("old", "new"), [
    # Order lists its children's order (its notes, a substitution group, mix): the list is made
    (b"<orderDate>2024-01-01</orderDate>\n    <createdAt>2024-01-01T00:00:00Z</createdAt>\n    <status>SHIPPED</status>",
     b"<status>SHIPPED</status><createdAt>2024-01-01T00:00:00Z</createdAt><orderDate>2024-01-01</orderDate>"),
    (b"<invoiceRef>INV-1</invoiceRef>", b"<giftNote>a</giftNote><invoiceRef>INV-1</invoiceRef><giftNote>b</giftNote>"),
    # Line and Address do not: accepted in any order, as the interpreted converter accepts them
    (b"<sku>S</sku><quantity>4</quantity>", b"<quantity>4</quantity><sku>S</sku>"),
    (b"<c:street>A</c:street><c:city>B</c:city>", b"<c:city>B</c:city><c:street>A</c:street><!-- c -->"),
])
def test_children_in_another_order_are_read_without_the_interpreted_converter(
        monkeypatch: pytest.MonkeyPatch, old: bytes, new: bytes) -> None:
    """Children in another order than declared (a stream is not validated: the interpreted
    converter reads them in any order, and lists the order where the record has a field for
    it) are read on from the first child out of order by the generated converter itself:
    the interpreted converter's records, straight to Avro their encoding, and neither the
    interpreted converter nor the dispatching function called."""
    m = XsdModel.load(DATA / "orders/orders.xsd")
    plain = (DATA / "orders/orders-batch.xml").read_bytes()
    assert old in plain
    data = plain.replace(old, new, 1)
    schema = value_avro(m.decoder("orders").resolve_path("orders/order")[-1][1].record, set())
    expected = list(Decoder(m, m.element("orders").name, compiled=False).iter_records(data, "orders/order"))
    decoder = m.decoder("orders")
    assert decoder.generated is not None
    calls = _count_fallbacks(monkeypatch, decoder, plain, schema)
    assert list(decoder.iter_records(data, "orders/order")) == expected
    encoded = list(decoder.iter_records(data, "orders/order", avro_schema=schema))
    assert calls == []
    if b"<status>SHIPPED</status><createdAt>" in new:
        assert expected[0]["element_order"][:3] == ["status", "createdAt", "orderDate"]
    encode = compile_encoder(schema)
    for got, record in zip(encoded, expected, strict=True):
        out = bytearray()
        encode(record, out)
        assert type(got) is EncodedRecord and got == out


def test_varints_are_the_zigzag_varints_of_every_size() -> None:
    """The Avro long written without a loop up to 8 bytes (timestamps in microseconds): the
    bytes of the plain 7-bit loop (and fastavro's) for every size's edges and random values."""
    import random

    from coupler.translators.xml.avro import _varint

    def plain(n: int) -> bytes:
        z, out = (n << 1) ^ (n >> 63), bytearray()
        while z > 0x7F:
            out.append(z & 0x7F | 0x80)
            z >>= 7
        out.append(z)
        return bytes(out)

    rng = random.Random(32)
    edges = {s * ((1 << b) + d) for b in range(0, 63) for d in (-1, 0, 1) for s in (1, -1)}
    values = sorted(edges | {rng.randrange(-(2**63), 2**63) for _ in range(20_000)}
                    | {rng.randrange(-(2**bits), 2**bits) for bits in range(20, 63) for _ in range(200)})
    values = [v for v in values if -(2**63) <= v < 2**63]
    assert [_varint(v) for v in values] == [plain(v) for v in values]
    parsed = fastavro.parse_schema("long")
    assert all(_varint(v) == _schemaless(parsed, v) for v in values[::50])


def test_the_small_varint_table_is_every_small_numbers_varint() -> None:
    """The table the generated encoders read the varints of -8192..8191 from (built without
    calling ``_varint`` for each since issue 32): the same bytes."""
    from coupler.translators.xml.avro import _SMALL, _TABLE, _varint

    assert _TABLE == tuple(_varint(n) for n in range(-_SMALL, _SMALL))


def test_a_split_of_encoded_records_is_written_without_fastavro() -> None:
    """A Spark worker writing records the XML decoder encoded itself does not import fastavro
    nor build the generated encoder (10 ms and 5 ms of CPU in every worker's first XML split,
    issue 32); the file is the one fastavro reads back, records and metadata."""
    import subprocess
    import sys

    script = f"""
import io, sys
from coupler.translators.xml import XsdModel
from coupler.translators.xml.model import value_avro
from coupler.translators.xml import avro
assert "fastavro" not in sys.modules, "imported with the module"
m = XsdModel.load({str(DATA / "orders/orders.xsd")!r})
d = m.decoder("orders")
record = d.resolve_path("orders/order")[-1][1].record
schema = value_avro(record, set())
out = io.BytesIO()
n = avro.write_container(out, schema, d.iter_records({str(DATA / "orders/orders-batch.xml")!r}, "orders/order",
                         avro_schema=schema), metadata={{"coupler.format": "x"}})
assert "fastavro" not in sys.modules, "imported to write encoded records"
assert not avro._CACHE, "the generated encoder built for encoded records"
sys.stdout.buffer.write(out.getvalue())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()[-1500:]
    m = XsdModel.load(DATA / "orders/orders.xsd")
    d = m.decoder("orders")
    record = d.resolve_path("orders/order")[-1][1].record
    oracle = io.BytesIO()
    fastavro.writer(oracle, fastavro.parse_schema(value_avro(record, set())),
                    d.iter_records(DATA / "orders/orders-batch.xml", "orders/order"))
    expected = list(fastavro.reader(io.BytesIO(oracle.getvalue())))
    reader = fastavro.reader(io.BytesIO(done.stdout))
    assert reader.metadata["coupler.format"] == "x"
    assert list(reader) == expected and expected


def test_an_empty_container_of_a_schema_that_is_none_is_refused() -> None:
    """No record to write: the schema is still checked (fastavro's error), as before issue 32's
    lazy fastavro."""
    with pytest.raises(Exception, match="nosuch"):
        write_container(io.BytesIO(), {"type": "record", "name": "R", "fields": [{"name": "a", "type": "nosuch"}]}, [])
