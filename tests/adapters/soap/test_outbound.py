"""The outbound SOAP adapter calls the inbound one: a round trip through the bus both ways."""

from __future__ import annotations

import json
import socket

import pytest

from coupler.adapters.soap import SoapAdapter
from coupler.bus.api import CommandFault, Document
from coupler.bus.model.commands import command_envelope, parse_reply
from coupler.canonical import FormatIndicator

from .conftest import WSDL

QUOTE = FormatIndicator("acme.QuoteRequest", 1, "application/json")


def _client(bus, url, name="policy-out", **options):
    adapter = SoapAdapter(name, {"mode": "client", "wsdl": str(WSDL), "address": url, "timeout": 5, **options}, bus.context(name))
    adapter.targets = ("remote-policy",)
    return bus.add(adapter)


def _ask(bus, record, operation="GetQuote", target="remote-policy"):
    """What any bus client does: a request command to the target, the reply decoded."""
    caller = bus.context("caller")
    env = command_envelope("request", target, document=Document(QUOTE, json.dumps(record).encode()), operation=operation)
    return parse_reply(caller.request(env, "coupler.commands", timeout=20))


@pytest.mark.parametrize("version", ["1.1", "1.2"])
def test_round_trip_through_the_bus(bus, soap_server, version):
    server = soap_server()
    _client(bus, server.url, soap_version=version)
    reply = _ask(bus, {"policyId": "P-7", "driverAge": 50})
    assert reply.ok, reply.reason
    assert json.loads(reply.documents[0].body) == {"policyId": "P-7", "premium": "425.00", "currency": "EUR"}
    assert reply.documents[0].format == FormatIndicator("soap.GetQuoteResponse", 1, "application/json")
    assert bus.commands_handled("quotes") == 1 and bus.commands_handled("policy-out") == 1


def test_a_fault_comes_back_as_an_error_reply(bus, soap_server):
    server = soap_server()
    _client(bus, server.url)
    refused = _ask(bus, {"policyId": "BAD", "driverAge": 50})
    assert not refused.ok and refused.code == "invalid"
    assert "SOAP fault Sender: policy BAD does not exist" in refused.reason
    broken = _ask(bus, {"policyId": "BROKEN", "driverAge": 50})
    assert not broken.ok and broken.code == "failed"
    assert "the rating engine is down" in broken.reason
    declared = _ask(bus, {"policyId": "P-1", "driverAge": 15})
    assert not declared.ok and "driver too young" in declared.reason


def test_a_document_that_does_not_fit_the_wsdl_is_invalid(bus, soap_server):
    server = soap_server()
    _client(bus, server.url)
    reply = _ask(bus, {"policyId": "P-1"})  # driverAge missing
    assert not reply.ok and reply.code == "invalid"
    assert "driverAge" in reply.reason


def test_unreachable_service_is_retried_then_failed(bus):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    adapter = _client(bus, f"http://127.0.0.1:{port}/policy", retries=1)
    with pytest.raises(CommandFault, match=f"cannot reach http://127.0.0.1:{port}/policy") as info:
        adapter.deliver(Document(QUOTE, b'{"policyId": "P", "amount": "1.00"}', {"soap.operation": "NotifyClaim"}).to_envelope())
    assert info.value.code == "failed"


def test_username_token_sent_by_the_outbound_adapter(bus, soap_server):
    server = soap_server(users={"agent": "pw"})
    _client(bus, server.url, name="with-token", username="agent", password="pw", password_digest=True)
    assert _ask(bus, {"policyId": "P-1", "driverAge": 60}, target="with-token").ok
    _client(bus, server.url, name="no-token")
    denied = _ask(bus, {"policyId": "P-1", "driverAge": 60}, target="no-token")
    assert not denied.ok and "authentication failed" in denied.reason


