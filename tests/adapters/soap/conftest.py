from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from coupler.adapters.soap import SoapAdapter
from coupler.bus.api import Adapter, Command, CommandFault, Document, Reply
from coupler.canonical import FormatIndicator
from tests.adapters.daemon_bus import daemon_bus_fixture

WSDL = Path(__file__).parent / "data" / "policy.wsdl"


class QuoteService(Adapter):
    """The system behind the bus that prices policies (and adds numbers).

    Drivers under 18 get the declared QuoteRefused fault; policy BAD is refused as invalid,
    BROKEN fails.
    """

    commands = ("request", "ping", "describe")

    def on_request(self, command: Command) -> Reply:
        assert command.document is not None
        record = json.loads(command.document.body)
        if command.operation == "Add":
            return Reply(documents=[Document(FormatIndicator("calc.Sum", 1, "application/json"), json.dumps({"sum": record["a"] + record["b"]}).encode())])
        assert command.operation == "GetQuote", command.operation
        policy, age = record["policyId"], record["driverAge"]
        if policy == "BAD":
            raise CommandFault("policy BAD does not exist", code="invalid")
        if policy == "BROKEN":
            raise CommandFault("the rating engine is down", code="failed")
        if age < 18:
            refusal = {"policyId": policy, "reason": "driver too young"}
            return Reply(
                documents=[Document(FormatIndicator("acme.QuoteRefused", 1, "application/json"), json.dumps(refusal).encode())],
                details={"soap.fault": "QuoteRefused", "soap.fault_reason": "quote refused"},
            )
        premium = Decimal("300.00") + Decimal(max(0, 60 - age)) * Decimal("12.50")
        answer = {"policyId": policy, "premium": str(premium), "currency": "EUR"}
        return Reply(documents=[Document(FormatIndicator("acme.Quote", 1, "application/json"), json.dumps(answer).encode())])


bus = pytest.fixture(daemon_bus_fixture, name="bus")


@pytest.fixture
def quotes(bus):
    service = QuoteService("quotes", {}, bus.context("quotes"))
    return bus.add(service)


@pytest.fixture
def soap_server(bus, quotes):
    def make(name="policy-in", **options):
        adapter = SoapAdapter(
            name,
            {"mode": "server", "wsdl": str(WSDL), "target": "quotes", "listen_port": 0, **options},
            bus.context(name, "claims"),
        )
        adapter.channel = "claims"
        return bus.add(adapter)

    return make
