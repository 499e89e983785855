"""Envelope wrappers and wrapper chains: wrap, unwrap backwards, headers both ways."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from lxml import etree

from coupler.canonical.envelope import Envelope
from coupler.translators.framing import LengthPrefixed
from coupler.translators.soap import Addressing, SoapFault, unwrap, wrap
from coupler.translators.wrappers import Headers, WrapperChain, WrapperError, build_chain
from coupler.translators.wrappers.framing import FramingWrapper

DATA = Path(__file__).parent / "data"

HEADER = {
    "type": "copybook",
    "options": {
        "copybook": "txn-header.cpy", "options": {"encoding": "ascii"},
        "correlation_id": "CORR-ID", "return_address": "REPLY-QUEUE", "return_addresses": ["REPLY.*"],
        "length": "DATA-LEN",
        "properties": {"txn": "TXN-CODE"}, "constants": {"VERSION": 1},
    },
}
XML_ENVELOPE = {
    "type": "xml",
    "options": {
        "xsd": "envelope.xsd", "payload": "Data", "correlation_id": "Header.CorrelationId",
        "return_address": "Header.ReplyTo", "properties": {"txn": "Header.Transaction"},
        "constants": {"Header.version": 2},
    },
}


def test_copybook_header_then_length_prefix() -> None:
    chain = build_chain([HEADER, {"type": "length", "options": {"size": 2}}], base_dir=DATA)
    headers = Headers(correlation_id="abc-1", return_address="REPLY.Q", properties={"txn": "PAY1"})
    wire = chain.wrap(b"HELLO WORLD", headers)
    # length prefix (2 bytes) + 39-byte header + payload
    assert wire[:2] == (39 + 11).to_bytes(2, "big")
    assert wire[2:41] == b"PAY101abc-1           REPLY.Q     00011"
    assert wire[41:] == b"HELLO WORLD"
    payload, found = chain.unwrap(wire)
    assert payload == b"HELLO WORLD"
    assert (found.correlation_id, found.return_address, found.properties) == ("abc-1", "REPLY.Q", {"txn": "PAY1"})


def test_header_length_field_is_checked_on_unwrap() -> None:
    chain = build_chain([HEADER], base_dir=DATA)
    wire = chain.wrap(b"12345", Headers())
    with pytest.raises(WrapperError, match="announces 5 payload bytes, only 3 follow"):
        chain.unwrap(wire[:-2])
    with pytest.raises(WrapperError, match="2 bytes after the 5-byte payload"):
        chain.unwrap(wire + b"!!")
    with pytest.raises(WrapperError, match="shorter than the 39-byte header"):
        chain.unwrap(b"PAY1")


def test_header_value_too_long_for_its_field_is_an_error() -> None:
    chain = build_chain([HEADER], base_dir=DATA)
    with pytest.raises(WrapperError, match="wrapper 1 \\(copybook\\)"):
        chain.wrap(b"x", Headers(correlation_id="x" * 40))


def test_xml_envelope_carries_binary_payload_and_headers() -> None:
    chain = build_chain([XML_ENVELOPE], base_dir=DATA)
    wire = chain.wrap(b"\x00\x01\xffbinary", Headers(correlation_id="c-9", properties={"txn": "T1"}))
    root = etree.fromstring(wire)
    assert root.tag == "Message" and root.find("Header").get("version") == "2"
    assert root.findtext("Header/Transaction") == "T1" and root.find("Header/ReplyTo") is None
    payload, found = chain.unwrap(wire)
    assert payload == b"\x00\x01\xffbinary" and found.correlation_id == "c-9" and found.properties == {"txn": "T1"}


def test_soap_body_then_envelope_then_mllp() -> None:
    chain = build_chain([{"type": "soap", "options": {"version": "1.2", "action": "urn:pay",
                                                       "return_addresses": ["replies.*"]}}, {"type": "mllp"}])
    body = b'<pay xmlns="urn:x"><amount>1</amount></pay>'
    headers = Headers(message_id="0b5c2a9e-0f67-4a43-9a34-1a2b3c4d5e6f",
                      correlation_id="12345678-1234-1234-1234-123456789012", return_address="replies.pay")
    wire = chain.wrap(body, headers)
    assert wire.startswith(b"\x0b") and wire.endswith(b"\x1c\r")
    message = unwrap(wire[1:-2])  # the SOAP unwrapper of translators/soap reads what the chain wrote
    assert message.version == "1.2" and message.addressing.action == "urn:pay"
    assert message.addressing.relates_to == "urn:uuid:12345678-1234-1234-1234-123456789012"
    payload, found = chain.unwrap(wire)
    assert payload == body
    assert (found.message_id, found.correlation_id, found.return_address) == (
        headers.message_id, headers.correlation_id, headers.return_address)


def test_soap_fault_unwraps_with_the_fault_code() -> None:
    chain = build_chain([{"type": "soap"}])
    wire = wrap(fault=SoapFault("Sender", "bad amount"), version="1.1",
                addressing=Addressing(relates_to="urn:uuid:12345678-1234-1234-1234-123456789012"))
    payload, found = chain.unwrap(wire)
    assert b"bad amount" in payload and found.properties["soap_fault"] == "Sender"
    assert found.correlation_id == "12345678-1234-1234-1234-123456789012"


def test_outer_headers_win_and_inner_fill_the_rest() -> None:
    outer = Headers(correlation_id="outer", properties={"a": "1"})
    merged = outer.merge(Headers(correlation_id="inner", return_address="q", properties={"a": "0", "b": "2"}))
    assert (merged.correlation_id, merged.return_address, merged.properties) == ("outer", "q", {"a": "1", "b": "2"})


def test_headers_to_and_from_the_canonical_envelope() -> None:
    envelope = Envelope(body=b"x", format="acme.Customer@2", correlation_id="c1", return_address="replies",
                        properties={"keep": "yes"})
    headers = Headers.from_envelope(envelope)
    assert (headers.correlation_id, headers.return_address) == ("c1", "replies")
    updated = Headers(correlation_id="c2", properties={"txn": "PAY1"}).apply(envelope)
    assert updated.correlation_id == "c2" and updated.return_address == "replies"
    assert updated.properties == {"keep": "yes", "txn": "PAY1"}


def test_the_socket_adapters_framings_are_reused() -> None:
    wrapper = FramingWrapper(LengthPrefixed(size=4))
    assert wrapper.wrap(b"abc", Headers()) == b"\x00\x00\x00\x03abc"
    with pytest.raises(WrapperError, match="incomplete frame"):
        wrapper.unwrap(b"\x00\x00\x00\x09abc")
    with pytest.raises(WrapperError, match="1 bytes after the framing frame"):
        wrapper.unwrap(b"\x00\x00\x00\x03abcd")


def test_chain_from_site_toml() -> None:
    site = tomllib.loads(
        '[[adapters]]\nname = "cics"\ntype = "socket"\n'
        '[[adapters.wrappers]]\ntype = "copybook"\n'
        'options = { copybook = "txn-header.cpy", options = { encoding = "ascii" }, correlation_id = "CORR-ID", length = "DATA-LEN" }\n'
        '[[adapters.wrappers]]\ntype = "length"\noptions = { size = 4, byteorder = "little" }\n'
    )
    chain = build_chain(site["adapters"][0]["wrappers"], base_dir=DATA, where="adapters[0].wrappers")
    assert isinstance(chain, WrapperChain) and len(chain) == 2
    wire = chain.wrap(b"DATA", Headers(correlation_id="k"))
    assert wire[:4] == (43).to_bytes(4, "little")
    assert chain.unwrap(wire)[0] == b"DATA"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"type": "zip"}, r"wrappers\[0\].type: unknown wrapper type 'zip'"),
        ({"type": "copybook", "options": {"copybook": "txn-header.cpy", "corelation_id": "CORR-ID"}},
         r"wrappers\[0\].options.corelation_id: unknown key \(did you mean 'correlation_id'"),
        ({"type": "copybook", "options": {"copybook": "txn-header.cpy", "correlation_id": "CORR"}},
         r"wrappers\[0\].options.correlation_id: header field 'CORR'"),
        ({"type": "length", "options": {"size": 3}}, r"wrappers\[0\].options: length prefix size must be 1, 2 or 4"),
        ({"type": "xml", "options": {"xsd": "envelope.xsd", "payload": "Header"}},
         r"wrappers\[0\].options.payload: payload field 'Header' is record"),
    ],
)
def test_bad_wrapper_options_name_the_key(entry: dict, message: str) -> None:
    with pytest.raises(WrapperError, match=message):
        build_chain([entry], base_dir=DATA)


@pytest.mark.parametrize("reply_to", ["orders", "http://169.254.169.254/latest/meta-data", "replies", "coupler.adapter.out"])
def test_a_partners_reply_to_is_a_return_address_only_when_the_site_allows_that_channel(reply_to: str) -> None:
    """The SOAP wrapper does not let a partner's ReplyTo choose the channel a reply is put on."""
    allowed = build_chain([{"type": "soap", "options": {"return_addresses": ["replies.*"]}}])
    wire = wrap(None, version="1.1", addressing=Addressing(message_id="urn:uuid:12345678-1234-1234-1234-123456789012",
                                                            reply_to=reply_to))
    _, found = allowed.unwrap(wire)
    assert found.return_address is None
    assert found.properties["refused_return_address"] == reply_to
    _, found = build_chain([{"type": "soap"}]).unwrap(wire)  # by default none is used
    assert found.return_address is None
    ok = wrap(None, version="1.1", addressing=Addressing(reply_to="replies.partner-a"))
    assert allowed.unwrap(ok)[1].return_address == "replies.partner-a"


def test_a_return_address_field_of_a_copybook_header_is_checked_too() -> None:
    chain = build_chain([HEADER], base_dir=DATA)
    wire = chain.wrap(b"X", Headers(return_address="orders"))
    _, found = chain.unwrap(wire)
    assert found.return_address is None and found.properties["refused_return_address"] == "orders"
