"""zeep, an independent SOAP client, calls the inbound adapter using only the WSDL it downloads."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
import requests
import zeep
from lxml import etree
from zeep.exceptions import Fault
from zeep.plugins import HistoryPlugin
from zeep.wsa import WsAddressingPlugin
from zeep.wsse.username import UsernameToken


def _service(adapter, port, plugins=(), wsse=None):
    client = zeep.Client(f"{adapter.url}?wsdl", plugins=list(plugins), wsse=wsse)
    return client, client.bind("PolicyService", port)


@pytest.mark.parametrize("port", ["PolicyPort11", "PolicyPort12"])
def test_zeep_gets_a_quote_over_soap_11_and_12(soap_server, port, bus):
    adapter = soap_server()
    _, service = _service(adapter, port)
    result = service.GetQuote(policyId="P-1", driverAge=40)
    assert (result.policyId, result.premium, result.currency) == ("P-1", Decimal("550.00"), "EUR")
    assert service.GetQuote(policyId="P-2", driverAge=70).premium == Decimal("300.00")
    assert bus.commands_handled("quotes") >= 1


def test_wsdl_is_served_with_the_real_endpoint_address(soap_server):
    adapter = soap_server()
    wsdl = etree.fromstring(requests.get(f"{adapter.url}?wsdl", timeout=10).content)
    locations = {e.get("location") for e in wsdl.iter("{*}address")}
    assert locations == {adapter.url}
    assert adapter.url.startswith("http://127.0.0.1:") and not adapter.url.startswith("http://127.0.0.1:9/")
    assert requests.get(f"{adapter.url}?xsd=../../../etc/passwd", timeout=10).status_code == 404


@pytest.mark.parametrize(("port", "sender", "receiver"), [("PolicyPort11", "Client", "Server"), ("PolicyPort12", "Sender", "Receiver")])
def test_bus_faults_reach_zeep_with_code_and_detail(soap_server, port, sender, receiver):
    adapter = soap_server()
    _, service = _service(adapter, port)
    with pytest.raises(Fault) as refused:
        service.GetQuote(policyId="BAD", driverAge=40)
    assert refused.value.code.endswith(sender)
    assert refused.value.message == "policy BAD does not exist"
    assert refused.value.detail.find("{urn:coupler:fault}fault/{urn:coupler:fault}code").text == "invalid"
    with pytest.raises(Fault) as broken:
        service.GetQuote(policyId="BROKEN", driverAge=40)
    assert broken.value.code.endswith(receiver)
    assert broken.value.detail.find("{urn:coupler:fault}fault/{urn:coupler:fault}code").text == "failed"


@pytest.mark.parametrize("port", ["PolicyPort11", "PolicyPort12"])
def test_declared_fault_carries_its_detail_element(soap_server, port):
    adapter = soap_server()
    _, service = _service(adapter, port)
    with pytest.raises(Fault) as info:
        service.GetQuote(policyId="P-9", driverAge=16)
    assert info.value.message == "quote refused"
    refusal = info.value.detail.find("{urn:acme:policy}QuoteRefused")
    assert refusal is not None
    assert refusal.findtext("{urn:acme:policy}reason") == "driver too young"


def test_invalid_request_is_a_sender_fault_naming_the_problem(soap_server):
    adapter = soap_server()
    envelope = (
        '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:p="urn:acme:policy">'
        "<soapenv:Body><p:GetQuote><p:policyId>P</p:policyId><p:driverAge>old</p:driverAge></p:GetQuote></soapenv:Body>"
        "</soapenv:Envelope>"
    )
    r = requests.post(adapter.url, data=envelope, headers={"Content-Type": "text/xml"}, timeout=10)
    assert r.status_code == 500
    fault = etree.fromstring(r.content).find(".//{http://schemas.xmlsoap.org/soap/envelope/}Fault")
    assert fault.findtext("faultcode").endswith("Client")
    assert "driverAge" in fault.findtext("faultstring") or "old" in fault.findtext("faultstring")


def test_one_way_operation_is_published(soap_server, bus):
    adapter = soap_server()
    _, service = _service(adapter, "PolicyPort11")
    service.NotifyClaim(policyId="P-3", amount=Decimal("1234.50"))
    (published,) = bus.received("claims", wait=5)
    assert json.loads(published.body) == {"policyId": "P-3", "amount": "1234.50"}
    assert published.properties["soap.operation"] == "NotifyClaim"
    assert published.format.content_type == "application/json"


def test_rpc_literal_operation(soap_server):
    adapter = soap_server(name="calc-in", service="CalcService", path="/calc")
    client = zeep.Client(f"{adapter.url}?wsdl")
    service = client.bind("CalcService", "CalcPort")
    assert service.Add(a=2, b=40) == 42


def test_username_token_is_required_when_configured(soap_server):
    adapter = soap_server(users={"agent": "s3cret"}, allow_password_text_over_http=True)
    _, good = _service(adapter, "PolicyPort11", wsse=UsernameToken("agent", "s3cret"))
    assert good.GetQuote(policyId="P-1", driverAge=60).premium == Decimal("300.00")
    _, digest = _service(adapter, "PolicyPort11", wsse=UsernameToken("agent", "s3cret", use_digest=True))
    assert digest.GetQuote(policyId="P-1", driverAge=60).currency == "EUR"
    for wsse in (UsernameToken("agent", "wrong"), None):
        _, bad = _service(adapter, "PolicyPort11", wsse=wsse)
        with pytest.raises(Fault, match="authentication failed"):
            bad.GetQuote(policyId="P-1", driverAge=60)


def test_ws_addressing_reply_relates_to_the_request(soap_server):
    adapter = soap_server()
    history = HistoryPlugin()
    _, service = _service(adapter, "PolicyPort11", plugins=[WsAddressingPlugin(), history])
    service.GetQuote(policyId="P-1", driverAge=30)
    wsa = "{http://www.w3.org/2005/08/addressing}"
    sent_id = history.last_sent["envelope"].find(f".//{wsa}MessageID").text
    relates = history.last_received["envelope"].find(f".//{wsa}RelatesTo")
    assert relates is not None and relates.text == sent_id
