"""SOAP interop with zeep (an independent SOAP client): envelopes both ways, faults, headers, WSDL."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import pytest
import zeep
from lxml import etree
from zeep.exceptions import Fault

from coupler.bus.cli.main import main
from coupler.canonical.envelope import Envelope, MessageKind
from coupler.translators.soap import Addressing, SoapFault, UsernameToken, read_wsdl, unwrap, wrap
from coupler.translators.soap.wssecurity import PASSWORD_DIGEST
from coupler.translators.xml import XsdModel

DATA = Path(__file__).parent / "data"
WSDL_FILE = DATA / "order-service.wsdl"
OS = "urn:acme:orderservice"


@pytest.fixture(scope="module")
def client() -> zeep.Client:
    return zeep.Client(str(WSDL_FILE))


@pytest.fixture(scope="module")
def model() -> XsdModel:
    return XsdModel.load(DATA / "order-service.xsd")


def _port(client: zeep.Client, name: str):  # noqa: ANN202
    return client.bind("OrderService", name)


def _reply(content: bytes, version: str, status: int = 200) -> SimpleNamespace:
    ctype = "text/xml; charset=utf-8" if version == "1.1" else "application/soap+xml; charset=utf-8"
    return SimpleNamespace(status_code=status, content=content, headers={"Content-Type": ctype}, encoding="utf-8")


@pytest.mark.parametrize(("port", "version"), [("OrderPort11", "1.1"), ("OrderPort12", "1.2")])
def test_zeep_requests_unwrap_to_records(client: zeep.Client, model: XsdModel, port: str, version: str) -> None:
    service = _port(client, port)
    kwargs = {"_soapheaders": {"auth": {"token": "t-1"}}} if version == "1.1" else {}
    request = client.create_message(service, "GetOrder", orderId="PO-7", includeLines=True, **kwargs)
    message = unwrap(etree.tostring(request))
    assert message.version == version and message.fault is None
    assert model.decoder("GetOrder").decode_element(message.payload) == {"orderId": "PO-7", "includeLines": True}
    if version == "1.1":  # the header declared in the binding
        assert message.header(f"{{{OS}}}Auth").findtext(f"{{{OS}}}token") == "t-1"


@pytest.mark.parametrize(("port", "version"), [("OrderPort11", "1.1"), ("OrderPort12", "1.2")])
def test_coupler_responses_are_read_by_zeep(client: zeep.Client, model: XsdModel, port: str, version: str) -> None:
    record = {"orderId": "PO-7", "status": "SHIPPED", "total": Decimal("12.50"), "placed": date(2024, 5, 1), "sku": ["A", "B"]}
    body = model.encoder("GetOrderResponse").build(record)
    envelope = wrap(body, version=version)
    binding = _port(client, port)._binding
    result = binding.process_reply(client, binding.get("GetOrder"), _reply(envelope, version))
    assert (result.orderId, result.status, result.total, result.placed, result.sku) == (
        "PO-7", "SHIPPED", Decimal("12.50"), date(2024, 5, 1), ["A", "B"])


@pytest.mark.parametrize(("port", "version"), [("OrderPort11", "1.1"), ("OrderPort12", "1.2")])
def test_zeep_responses_unwrap(client: zeep.Client, model: XsdModel, port: str, version: str) -> None:
    operation = _port(client, port)._binding.get("GetOrder")
    serialized = operation.output.serialize(orderId="PO-9", status="NEW", total=Decimal("3.10"), placed=date(2024, 1, 2), sku=[])
    message = unwrap(etree.tostring(serialized.content))
    assert message.version == version
    record = model.decoder("GetOrderResponse").decode_element(message.payload)
    assert record == {"orderId": "PO-9", "status": "NEW", "total": "3.10", "placed": date(2024, 1, 2), "sku": []}


@pytest.mark.parametrize(("port", "version"), [("OrderPort11", "1.1"), ("OrderPort12", "1.2")])
def test_faults_both_ways(client: zeep.Client, port: str, version: str) -> None:
    request = Envelope(format="acme.GetOrder@1", body=b"<x/>", kind=MessageKind.COMMAND)
    fault = SoapFault("Sender", "order PO-404 not found", detail=f'<os:OrderNotFound xmlns:os="{OS}"><os:orderId>PO-404</os:orderId></os:OrderNotFound>')
    reply = fault.to_reply(request)
    assert reply.kind == MessageKind.REPLY and reply.correlation_id == request.message_id
    assert reply.properties["error"] == "true"
    envelope = wrap(fault=SoapFault.from_reply(reply), version=version)
    binding = _port(client, port)._binding
    with pytest.raises(Fault) as info:
        binding.process_reply(client, binding.get("GetOrder"), _reply(envelope, version, 500))
    assert info.value.message == "order PO-404 not found"
    assert info.value.code.rpartition(":")[2] == ("Client" if version == "1.1" else "Sender")
    back = unwrap(envelope).fault
    assert (back.code, back.reason) == ("Sender", "order PO-404 not found")
    assert "PO-404</os:orderId>" in back.detail


@pytest.mark.parametrize("body", [b"{not json", b"\xff\xfe", b"[" * 100_000, b'{"code": 1, "reason": "x"}', b'"a string"',
                                  b'{"code": "Sender", "reason": "bad", "detail": {"x": 1}}'])
def test_a_reply_that_says_it_is_a_fault_but_is_not_one_is_a_receiver_fault(client: zeep.Client, body: bytes) -> None:
    """An error reply in the fault format that no SOAP adapter wrote (another adapter's, a
    route's) is still answered as a fault a client reads, not an exception in the adapter."""
    request = Envelope(format="acme.GetOrder@1", body=b"<x/>", kind=MessageKind.COMMAND)
    reply = SoapFault("Sender", "x").to_reply(request).replace(body=body)
    fault = SoapFault.from_reply(reply)
    if body.startswith(b'{"code": "Sender"'):
        assert (fault.code, fault.reason, fault.detail) == ("Sender", "bad", None)  # a detail that is not XML text dropped
    else:
        assert fault.code == "Receiver" and len(fault.reason) <= 2000
    binding = _port(client, "OrderPort11")._binding
    with pytest.raises(Fault):
        binding.process_reply(client, binding.get("GetOrder"), _reply(wrap(fault=fault, version="1.1"), "1.1", 500))


def test_ws_addressing_maps_to_envelope_headers(client: zeep.Client) -> None:
    from zeep.wsa import WsAddressingPlugin

    wsa_client = zeep.Client(str(WSDL_FILE), plugins=[WsAddressingPlugin()])
    request = wsa_client.create_message(wsa_client.bind("OrderService", "OrderPort12"), "GetOrder", orderId="1")
    message = unwrap(etree.tostring(request))
    assert message.addressing.action == "urn:acme:GetOrder"
    headers = message.addressing.envelope_headers()
    assert headers["message_id"]  # zeep's urn:uuid MessageID, without the urn:uuid: prefix
    incoming = Envelope(format="acme.GetOrder@1", **headers, return_address="queue.replies")
    reply = incoming.reply(b"", "acme.GetOrderResponse@1")
    addressing = Addressing.from_envelope(reply, action="urn:acme:GetOrderResponse")
    back = unwrap(wrap(etree.Element(f"{{{OS}}}x"), version="1.2", addressing=addressing)).addressing
    assert back.relates_to == message.addressing.message_id
    assert back.envelope_headers()["correlation_id"] == incoming.message_id
    out = unwrap(wrap(None, addressing=Addressing.from_envelope(incoming))).addressing.envelope_headers()
    assert out == {"message_id": incoming.message_id, "return_address": "queue.replies"}


@pytest.mark.parametrize("digest", [False, True])
def test_username_token_with_zeep(client: zeep.Client, digest: bool) -> None:
    from zeep.wsse.username import UsernameToken as ZeepToken

    secured = zeep.Client(str(WSDL_FILE), wsse=ZeepToken("alice", "s3cret", use_digest=digest))
    request = secured.create_message(secured.bind("OrderService", "OrderPort11"), "CancelOrder", orderId="1")
    token = unwrap(etree.tostring(request)).security
    assert token.username == "alice" and token.digest is digest
    assert token.verify("s3cret") and not token.verify("wrong")
    ours = unwrap(wrap(None, security=UsernameToken("bob", "pw", digest=digest))).security
    assert ours.username == "bob" and ours.verify("pw") and not ours.verify("px")
    if digest:
        written = wrap(None, security=UsernameToken("bob", "pw", digest=True))
        assert PASSWORD_DIGEST.encode() in written and b">pw<" not in written


def test_one_way_request_from_zeep_unwraps(client: zeep.Client, model: XsdModel) -> None:
    request = client.create_message(_port(client, "OrderPort12"), "CancelOrder", orderId="PO-1")
    assert model.decoder("CancelOrder").decode_element(unwrap(etree.tostring(request)).payload) == {"orderId": "PO-1"}


def test_wsdl_describe_agrees_with_zeep(client: zeep.Client, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["wsdl", "describe", str(WSDL_FILE), "--json"]) == 0
    described = json.loads(capsys.readouterr().out)
    ours = {(s["name"], p["name"]): p for s in described["services"] for p in s["ports"]}
    theirs = {(s.name, p.name): p for s in client.wsdl.services.values() for p in s.ports.values()}
    assert set(ours) == set(theirs)
    for key, zport in theirs.items():
        port = ours[key]
        assert port["address"] == zport.binding_options["address"]
        assert port["binding"] == zport.binding.name.text
        assert port["soap_version"] == {"Soap11Binding": "1.1", "Soap12Binding": "1.2"}[type(zport.binding).__name__]
        zops = zport.binding._operations
        assert {op["name"] for op in port["operations"]} == set(zops)
        for op in port["operations"]:
            zop = zops[op["name"]]
            assert op["soap_action"] == zop.soapaction and op["style"] == zop.style
            assert op["one_way"] is (zop.output is None)
            assert {f["name"] for f in op["faults"]} == set(zop.abstract.fault_messages)
            if op["style"] == "document":
                assert op["input"]["parts"][0]["element"] == zop.input.body.qname.text
                if zop.output is not None:
                    assert op["output"]["parts"][0]["element"] == zop.output.body.qname.text
            else:
                assert [p["name"] for p in op["input"]["parts"]] == [e[0] for e in zop.input.body.type.elements]
            zheaders = [e[0] for e in zop.input.header.type.elements] if zop.input.header else []
            assert [h["part"] for h in op["input"]["headers"]] == zheaders


def test_wsdl_with_a_network_import_is_refused(tmp_path: Path) -> None:
    text = WSDL_FILE.read_text().replace('schemaLocation="order-service.xsd"', 'schemaLocation="http://127.0.0.1:9/x.xsd"')
    wsdl = tmp_path / "remote.wsdl"
    wsdl.write_text(text)
    with pytest.raises(Exception, match="http://127.0.0.1:9/x.xsd"):
        read_wsdl(wsdl)
