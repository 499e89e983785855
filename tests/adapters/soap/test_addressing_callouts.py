"""The SOAP server never calls out to an address a client chose (issue 29 item 8, SSRF): a
WS-Addressing ReplyTo or FaultTo naming anything but the anonymous back-channel is refused
with ``wsa:OnlyAnonymousAddressSupported`` and nothing connects to it, unless the site lists
the address in ``reply_addresses`` (then the response, or the fault, is POSTed there).

The "victim" is a real HTTP server on loopback that records every request it gets."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
from lxml import etree

from coupler.translators.soap.addressing import WSA

SOAP11 = "http://schemas.xmlsoap.org/soap/envelope/"


class Victim:
    def __init__(self) -> None:
        self.requests: list[tuple[str, bytes]] = []
        got = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                got.append((self.path, body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def victim() -> Iterator[Victim]:
    v = Victim()
    yield v
    v.close()


def request(reply_to: str | None = None, fault_to: str | None = None, *, age: int = 40) -> bytes:
    headers = f"<wsa:MessageID>urn:uuid:{uuid.uuid4()}</wsa:MessageID><wsa:Action>GetQuote</wsa:Action>"
    if reply_to:
        headers += f"<wsa:ReplyTo><wsa:Address>{reply_to}</wsa:Address></wsa:ReplyTo>"
    if fault_to:
        headers += f"<wsa:FaultTo><wsa:Address>{fault_to}</wsa:Address></wsa:FaultTo>"
    return (f'<e:Envelope xmlns:e="{SOAP11}" xmlns:wsa="{WSA}" xmlns:p="urn:acme:policy"><e:Header>{headers}'
            f"</e:Header><e:Body><p:GetQuote><p:policyId>P-1</p:policyId><p:driverAge>{age}</p:driverAge>"
            "</p:GetQuote></e:Body></e:Envelope>").encode()


def post(adapter, body: bytes) -> requests.Response:  # type: ignore[no-untyped-def]
    return requests.post(adapter.url, data=body, headers={"Content-Type": "text/xml"}, timeout=30)


@pytest.mark.parametrize("which", ["ReplyTo", "FaultTo"])
def test_a_client_chosen_reply_or_fault_address_is_refused_and_never_called(soap_server, victim, which, caplog):
    adapter = soap_server()
    target = f"{victim.url}/latest/meta-data"
    body = request(reply_to=target) if which == "ReplyTo" else request(fault_to=target, age=16)
    r = post(adapter, body)
    assert r.status_code == 500
    fault = etree.fromstring(r.content).find(f".//{{{SOAP11}}}Fault")
    assert "answers on the request's connection only" in fault.findtext("faultstring")
    assert victim.requests == []
    assert f"its {which} names" in caplog.text


def test_anonymous_and_none_are_answered_on_the_connection(soap_server, victim):
    adapter = soap_server()
    for address in (f"{WSA}/anonymous", f"{WSA}/none"):
        r = post(adapter, request(reply_to=address))
        assert r.status_code == 200 and b"premium" in r.content
    assert victim.requests == []


def test_an_address_the_site_allows_gets_the_response_or_the_fault(soap_server, victim):
    adapter = soap_server(reply_addresses=[f"{victim.url}/replies/"])
    r = post(adapter, request(reply_to=f"{victim.url}/replies/a"))
    assert r.status_code == 202 and r.content == b""
    assert len(victim.requests) == 1  # sent before the 202
    path, sent = victim.requests[0]
    assert path == "/replies/a" and b"premium" in sent
    r = post(adapter, request(reply_to=f"{victim.url}/replies/a", fault_to=f"{victim.url}/replies/faults", age=16))
    assert r.status_code == 202
    assert len(victim.requests) == 2
    assert victim.requests[1][0] == "/replies/faults" and b"Fault" in victim.requests[1][1]
    r = post(adapter, request(reply_to=f"{victim.url}/elsewhere"))  # allowed prefix only
    assert r.status_code == 500 and len(victim.requests) == 2
