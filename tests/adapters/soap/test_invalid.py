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
    assert "quotes" not in bus.handled  # nothing reached the service behind the bus


def test_readable_requests_leave_the_invalid_channel_empty(soap_server, bus):
    adapter = soap_server()
    body = (
        f'<e:Envelope xmlns:e="{SOAP11}" xmlns:p="urn:acme:policy"><e:Body><p:GetQuote>'
        "<p:policyId>P-1</p:policyId><p:driverAge>40</p:driverAge></p:GetQuote></e:Body></e:Envelope>"
    ).encode()
    assert _post(adapter, body).status_code == 200
    assert bus.transport.dead_letters(kind="invalid") == []
