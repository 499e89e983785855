"""SOAP requests the inbound adapter cannot read are answered with a fault and kept in the
Invalid Message Channel with the reason."""

from __future__ import annotations

import requests
from lxml import etree

SOAP11 = "http://schemas.xmlsoap.org/soap/envelope/"


def _post(adapter, body: bytes) -> requests.Response:
    return requests.post(adapter.url, data=body, headers={"Content-Type": "text/xml"}, timeout=10)


def test_unreadable_requests_go_to_the_invalid_channel(soap_server, bus):
    adapter = soap_server()
    bad = [
        b"<not-soap>hello</not-soap>",
        (  # an element no operation takes
            f'<e:Envelope xmlns:e="{SOAP11}"><e:Body><x:Nope xmlns:x="urn:nope"/></e:Body></e:Envelope>'
        ).encode(),
        (  # GetQuote whose driverAge is not an int
            f'<e:Envelope xmlns:e="{SOAP11}" xmlns:p="urn:acme:policy"><e:Body><p:GetQuote>'
            "<p:policyId>P</p:policyId><p:driverAge>old</p:driverAge></p:GetQuote></e:Body></e:Envelope>"
        ).encode(),
    ]
    for body in bad:
        r = _post(adapter, body)
        assert r.status_code == 500
        fault = etree.fromstring(r.content).find(f".//{{{SOAP11}}}Fault")
        assert fault.findtext("faultcode").endswith("Client")
    dead = sorted(bus.transport.dead_letters(kind="invalid"), key=lambda d: d.id)
    assert [d.raw for d in dead] == bad
    assert all(d.component == "adapter:policy-in" and d.envelope is None for d in dead)
    assert "not a SOAP envelope" in dead[0].reason
    assert "no operation of this service takes {urn:nope}Nope" in dead[1].reason
    assert "GetQuote: invalid request" in dead[2].reason and "old" in dead[2].reason
    assert bus.commands_handled("quotes") == 0  # nothing reached the service behind the bus


def test_readable_requests_leave_the_invalid_channel_empty(soap_server, bus):
    adapter = soap_server()
    body = (
        f'<e:Envelope xmlns:e="{SOAP11}" xmlns:p="urn:acme:policy"><e:Body><p:GetQuote>'
        "<p:policyId>P-1</p:policyId><p:driverAge>40</p:driverAge></p:GetQuote></e:Body></e:Envelope>"
    ).encode()
    assert _post(adapter, body).status_code == 200
    assert bus.transport.dead_letters(kind="invalid") == []


def test_a_request_whose_translation_raises_a_non_coupler_exception_is_contained(soap_server, bus, monkeypatch):
    import zeep
    from zeep.exceptions import Fault

    adapter = soap_server()
    codec = adapter.operations["1.1"]["GetQuote"].input
    decode = codec.decode

    def buggy(body):  # a translator with a bug: one value makes it divide by zero
        record = decode(body)
        if record["policyId"] == "BOOM":
            return record["driverAge"] / 0
        return record

    monkeypatch.setattr(codec, "decode", buggy)
    service = zeep.Client(f"{adapter.url}?wsdl").bind("PolicyService", "PolicyPort11")
    try:
        service.GetQuote(policyId="BOOM", driverAge=40)
        raise AssertionError("the poison request was answered")
    except Fault as fault:
        assert fault.code.endswith("Server")
        assert fault.message == "internal error (ZeroDivisionError); the request is kept for the operator"
    # the next request is served as if nothing happened
    assert service.GetQuote(policyId="P-1", driverAge=60).currency == "EUR"
    (dead,) = bus.transport.dead_letters(kind="invalid")
    assert b"BOOM" in dead.raw and dead.component == "adapter:policy-in"
    assert "ZeroDivisionError" in dead.reason and "division by zero" in dead.reason
    assert adapter.health()["status"] == "ok"


def test_a_reply_that_cannot_be_encoded_for_an_unexpected_reason_is_contained(soap_server, bus, monkeypatch):
    adapter = soap_server()
    codec = adapter.operations["1.1"]["GetQuote"].output
    encode = codec.encode
    monkeypatch.setattr(codec, "encode", lambda record: encode(record) if record["premium"] != "300.00" else {}["currency"])
    body = (
        f'<e:Envelope xmlns:e="{SOAP11}" xmlns:p="urn:acme:policy"><e:Body><p:GetQuote>'
        "<p:policyId>P-1</p:policyId><p:driverAge>70</p:driverAge></p:GetQuote></e:Body></e:Envelope>"
    ).encode()
    r = _post(adapter, body)
    assert r.status_code == 500
    fault = etree.fromstring(r.content).find(f".//{{{SOAP11}}}Fault")
    assert fault.findtext("faultcode").endswith("Server") and "KeyError" in fault.findtext("faultstring")
    assert _post(adapter, body.replace(b">70<", b">40<")).status_code == 200
    (dead,) = bus.transport.dead_letters(kind="invalid")
    assert dead.raw == body and "KeyError" in dead.reason
