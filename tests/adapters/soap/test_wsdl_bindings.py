"""Which WSDL bindings the SOAP adapters take: literal ones, including operations whose input or
output message has no part (an empty SOAP body, valid WSDL 1.1 document/literal, as zeep sends
it); a binding that uses SOAP encoding (rpc/encoded, NuSOAP's) is refused when the adapter is
built, with one located line, while ``coupler wsdl describe`` still describes it."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
import requests
import zeep
from lxml import etree

from coupler.adapters.soap import SoapAdapter
from coupler.bus.api import Adapter, Command, Document, Reply
from coupler.bus.cli.main import main
from coupler.bus.model.commands import command_envelope, parse_reply
from coupler.canonical import FormatIndicator
from coupler.canonical.errors import CouplerError

CORPUS = Path(__file__).parents[2] / "translators" / "soap" / "corpus"
APHIA = CORPUS / "AphiaNameService.wsdl"
DOCLIT = CORPUS / "round3_groupD_doclit.wsdl"
SOAP11 = "http://schemas.xmlsoap.org/soap/envelope/"


class EchoService(Adapter):
    """The system behind the bus: echoStruct answers its struct, echoVoid nothing."""

    commands = ("request", "ping", "describe")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[tuple[str, dict]] = []

    def on_request(self, command: Command) -> Reply:
        assert command.document is not None
        record = json.loads(command.document.body)
        self.seen.append((command.operation, record))
        if command.operation == "echoVoid":
            return Reply()  # no document: the response body is empty
        return Reply(documents=[Document(FormatIndicator("interop.Struct", 1, "application/json"), json.dumps(record).encode())])


@pytest.fixture
def echo(bus):
    return bus.add(EchoService("echo", {}, bus.context("echo")))


def _server(bus, wsdl: Path, name: str = "interop-in") -> SoapAdapter:
    adapter = SoapAdapter(name, {"mode": "server", "wsdl": str(wsdl), "target": "echo", "listen_port": 0}, bus.context(name))
    return bus.add(adapter)


@pytest.mark.parametrize("mode", ["client", "server"])
def test_an_rpc_encoded_binding_is_refused_when_the_adapter_is_built(tmp_path: Path, mode: str) -> None:
    options = {"mode": mode, "wsdl": str(APHIA), "target": "aphia", "address": "http://127.0.0.1:9/aphia"}
    with pytest.raises(CouplerError) as refused:
        SoapAdapter("aphia", options)
    text = str(refused.value)
    assert "\n" not in text
    line = next(n for n, row in enumerate(APHIA.read_text().splitlines(), 1) if '<operation name="getAphiaID">' in row and n > 338)
    assert text.startswith(f"{APHIA}:{line}: binding AphiaNameServiceBinding operation getAphiaID uses SOAP encoding "
                           f'(use="encoded"), which the SOAP adapters do not support (')
    assert "literal" in text.partition("(use=")[2]  # what to do: a literal binding of the service


def test_wsdl_describe_still_describes_an_encoded_service(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["wsdl", "describe", str(APHIA)]) == 0
    out = capsys.readouterr().out
    assert "rpc/encoded" in out and "operation getAphiaID" in out


def test_an_operation_with_an_empty_body_is_served_to_zeep(bus, echo) -> None:
    """round3_groupD_doclit's echoVoid has messages without parts: zeep sends an empty body
    and reads an empty one back; the other operations of the WSDL are served as before."""
    adapter = _server(bus, DOCLIT)
    client = zeep.Client(f"{adapter.url}?wsdl")
    service = client.bind("WSDLInteropTestDocLitService", "WSDLInteropTestDocLitPort")
    assert service.echoVoid() is None
    answer = service.echoStruct(varFloat=1.5, varInt=3, varString="x")
    assert (answer.varFloat, answer.varInt, answer.varString) == (1.5, 3, "x")
    # SOAPStruct is a named xs:all type: the record keeps the xsi:type (none here) and the order of
    # its children (an empty list: zeep wrote them in declaration order)
    assert echo.seen == [("echoVoid", {}), ("echoStruct", {"varFloat": 1.5, "varInt": 3, "varString": "x", "xsi_type": None,
                                                           "element_order": []})]


def test_an_empty_body_request_is_answered_with_an_empty_body(bus, echo) -> None:
    adapter = _server(bus, DOCLIT)
    empty = f'<e:Envelope xmlns:e="{SOAP11}"><e:Body/></e:Envelope>'
    r = requests.post(adapter.url, data=empty, headers={"Content-Type": "text/xml", "SOAPAction": '"http://soapinterop.org/"'}, timeout=10)
    assert r.status_code == 200, r.text
    assert list(etree.fromstring(r.content).find(f"{{{SOAP11}}}Body")) == []


def test_the_client_adapter_calls_an_operation_with_an_empty_body(bus, echo) -> None:
    server = _server(bus, DOCLIT)
    client = SoapAdapter("interop-out", {"mode": "client", "wsdl": str(DOCLIT), "address": server.url, "timeout": 5},
                         bus.context("interop-out"))
    client.targets = ("interop",)
    bus.add(client)
    caller = bus.context("caller")
    env = command_envelope("request", "interop", document=Document(FormatIndicator("interop.Void", 1, "application/json"), b"{}"),
                           operation="echoVoid")
    reply = parse_reply(caller.request(env, "coupler.commands", timeout=20))
    assert reply.ok, reply.reason
    assert [json.loads(d.body) for d in reply.documents] == [{}]
    assert echo.seen == [("echoVoid", {})]
    env = command_envelope("request", "interop", document=Document(FormatIndicator("interop.Void", 1, "application/json"), b'{"a":1}'),
                           operation="echoVoid")
    reply = parse_reply(caller.request(env, "coupler.commands", timeout=20))
    assert not reply.ok and "no part" in reply.reason


def _two_empty_operations(tmp_path: Path) -> Path:
    """round3_groupD_doclit with a second operation without parts, echoNothing, that shares
    echoVoid's SOAPAction: a server cannot tell their (empty) requests apart."""
    text = DOCLIT.read_text()
    blocks = re.findall(r'\n        <operation name="echoVoid">.*?</operation>', text, re.S)
    assert len(blocks) == 2  # the portType's and the binding's
    for block in blocks:  # the same messages (without parts), the same SOAPAction
        text = text.replace(block, block + block.replace('name="echoVoid', 'name="echoNothing'))
    path = tmp_path / "two-empty.wsdl"
    path.write_text(text)
    return path


def test_empty_body_operations_a_server_cannot_tell_apart_are_refused_alone(bus, echo, tmp_path: Path, caplog) -> None:
    wsdl = _two_empty_operations(tmp_path)
    caplog.set_level(logging.WARNING)
    adapter = _server(bus, wsdl)  # the adapter starts: only the two operations are refused
    refused = [r.getMessage() for r in caplog.records if "echoNothing" in r.getMessage() or "echoVoid" in r.getMessage()]
    assert len(refused) == 2 and all("\n" not in m for m in refused)
    assert any(m.startswith(f"{wsdl}:") and "operation echoNothing" in m and "SOAPAction" in m and "not served" in m for m in refused)
    client = zeep.Client(f"{adapter.url}?wsdl")
    service = client.bind("WSDLInteropTestDocLitService", "WSDLInteropTestDocLitPort")
    assert service.echoStruct(varFloat=1.0, varInt=1, varString="y").varString == "y"
    with pytest.raises(zeep.exceptions.Fault, match="empty body"):
        service.echoVoid()
    # a client adapter chooses the operation by name: it calls both
    SoapAdapter("two-out", {"mode": "client", "wsdl": str(wsdl), "address": "http://127.0.0.1:9/"})


def test_the_soap_action_of_a_request() -> None:
    """SOAP 1.1: the SOAPAction header; SOAP 1.2: the action parameter of the Content-Type."""
    from types import SimpleNamespace

    from coupler.adapters.soap.adapter import _soap_action

    def request(**headers: str) -> SimpleNamespace:
        return SimpleNamespace(headers=headers)

    assert _soap_action(request(SOAPAction='"urn:a"'), "1.1") == "urn:a"
    assert _soap_action(request(), "1.1") == ""
    assert _soap_action(request(**{"Content-Type": 'application/soap+xml; charset=utf-8; action="urn:b"'}), "1.2") == "urn:b"
    assert _soap_action(request(**{"Content-Type": "application/soap+xml;action=urn:c"}), "1.2") == "urn:c"
    assert _soap_action(request(**{"Content-Type": "application/soap+xml"}), "1.2") == ""
