"""The SOAP client against a service that answers badly (tests/adapters/hostile_partner.py):
real replies and faults of policy.wsdl mutated (bytes, cuts, DTDs and entity bombs, wrong
namespaces, two Bodies, a fault inside a 200, faults whose text has line breaks), HTML error
pages with 500, bodies without end and gzip bombs. Each call ends in a reply or a
:class:`CommandFault` of one line within the adapter's timeout, having read no more than
``max_response_bytes``; zeep, the independent SOAP client, is the reference for what a reply
is. The random run: ``COUPLER_FUZZ_SECONDS``, ``COUPLER_FUZZ_SEED`` (tests/fuzzing.py)."""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from coupler.adapters.soap import SoapAdapter
from coupler.bus.api import Command, CommandFault, Document, command_envelope
from coupler.canonical import FormatIndicator
from coupler.canonical.errors import CouplerError
from tests.adapters.hostile_partner import Connection, HostilePartner, gzip_bomb
from tests.fuzzing import MB, SEED, bounded, cases

from .conftest import WSDL

QUOTE = FormatIndicator("acme.QuoteRequest", 1, "application/json")
SOAP11 = "http://schemas.xmlsoap.org/soap/envelope/"
ANSWER = (b'<p:GetQuoteResponse xmlns:p="urn:acme:policy"><p:policyId>P-7</p:policyId>'
          b'<p:premium>425.00</p:premium><p:currency>EUR</p:currency></p:GetQuoteResponse>')
REPLY = (b'<?xml version="1.0" encoding="UTF-8"?>\n<soapenv:Envelope xmlns:soapenv="' + SOAP11.encode() + b'">'
         b"<soapenv:Header/><soapenv:Body>" + ANSWER + b"</soapenv:Body></soapenv:Envelope>")
FAULT = (b'<soapenv:Envelope xmlns:soapenv="' + SOAP11.encode() + b'"><soapenv:Body><soapenv:Fault>'
         b"<faultcode>soapenv:Client</faultcode><faultstring>policy BAD\ndoes not exist</faultstring>"
         b'<detail>\n  <p:QuoteRefused xmlns:p="urn:acme:policy">\n    <p:policyId>BAD</p:policyId>\n'
         b"    <p:reason>no such\r\npolicy</p:reason>\n  </p:QuoteRefused>\n</detail>"
         b"</soapenv:Fault></soapenv:Body></soapenv:Envelope>")
TIMEOUT = 1.0


@pytest.fixture
def hostile() -> Iterator[HostilePartner]:
    p = HostilePartner().start()
    yield p
    p.stop()


def client(bus: Any, partner: HostilePartner, **options: Any) -> SoapAdapter:
    adapter = SoapAdapter("policy-out", {"mode": "client", "wsdl": str(WSDL), "address": partner.url + "/policy",
                                         "timeout": TIMEOUT, "retries": 0, "max_response_bytes": 64 * 1024,
                                         **options}, bus.context("policy-out"))
    return bus.add(adapter)  # type: ignore[no-any-return]


def ask(a: SoapAdapter) -> dict[str, Any]:
    doc = Document(QUOTE, json.dumps({"policyId": "P-7", "driverAge": 50}).encode())
    reply = a.handle(Command("request", a.name, command_envelope("request", a.name, document=doc, operation="GetQuote"),
                             document=doc, operation="GetQuote"))
    (answer,) = reply.documents
    return json.loads(answer.body)  # type: ignore[no-any-return]


def answer_with(status: str, body: bytes, *headers: str) -> Any:
    data = (f"HTTP/1.1 {status}\r\nContent-Type: text/xml; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
            + "".join(f"{h}\r\n" for h in headers) + "\r\n").encode("latin-1") + body
    return lambda c: c.send(data)


def fault_of(a: SoapAdapter) -> CommandFault:
    with pytest.raises(CommandFault) as err:
        ask(a)
    assert "\n" not in str(err.value) and "\r" not in str(err.value), str(err.value)
    return err.value


def test_a_reply_is_read(bus: Any, hostile: HostilePartner) -> None:
    hostile.answer = answer_with("200 OK", REPLY)
    assert ask(client(bus, hostile)) == {"policyId": "P-7", "premium": "425.00", "currency": "EUR"}


def test_a_fault_whose_texts_have_line_breaks_is_one_line(bus: Any, hostile: HostilePartner) -> None:
    hostile.answer = answer_with("500 Internal Server Error", FAULT)
    fault = fault_of(client(bus, hostile))
    assert fault.code == "invalid" and "policy BAD does not exist" in str(fault) and "no such policy" in str(fault)


def test_a_fault_inside_a_200_is_a_fault(bus: Any, hostile: HostilePartner) -> None:
    hostile.answer = answer_with("200 OK", FAULT)
    assert "SOAP fault Sender" in str(fault_of(client(bus, hostile)))


def test_an_envelope_with_two_bodies_is_refused_not_half_read(bus: Any, hostile: HostilePartner) -> None:
    smuggled = ANSWER.replace(b"425.00", b"0.01")
    two = REPLY.replace(b"</soapenv:Body>", b"</soapenv:Body><soapenv:Body>" + smuggled + b"</soapenv:Body>")
    hostile.answer = answer_with("200 OK", two)
    assert "Body" in str(fault_of(client(bus, hostile)))


def test_a_fault_beside_an_answer_is_refused_as_zeep_refuses_it(bus: Any, hostile: HostilePartner) -> None:
    hostile.answer = answer_with("200 OK", REPLY.replace(b"</soapenv:Body>", b"<soapenv:Fault/></soapenv:Body>"))
    assert "Fault" in str(fault_of(client(bus, hostile)))


def test_an_html_error_page_with_500_is_one_line(bus: Any, hostile: HostilePartner) -> None:
    page = b"<html>\n<head><title>500</title></head>\n<body>\n<h1>Internal\nServer Error</h1>\n</body>\n</html>\n"
    hostile.answer = answer_with("500 Internal Server Error", page, "Content-Type: text/html")
    assert "HTTP 500" in str(fault_of(client(bus, hostile)))


def test_a_body_without_end_is_cut_at_max_response_bytes(bus: Any, hostile: HostilePartner) -> None:
    def endless(c: Connection) -> None:
        c.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nTransfer-Encoding: chunked\r\n\r\n")
        c.send(b"%x\r\n%s\r\n" % (len(REPLY) - 40, REPLY[:-40]))
        chunk = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
        while True:
            c.send(chunk)

    hostile.answer = endless
    a = client(bus, hostile, timeout=10)
    with bounded("endless SOAP answer", seconds=10, memory=32 * MB):
        assert "max_response_bytes" in str(fault_of(a))
    hostile.answer = answer_with("200 OK", REPLY)
    assert ask(a)["premium"] == "425.00"  # the adapter goes on


def test_a_gzip_bomb_is_inflated_no_further_than_max_response_bytes(bus: Any, hostile: HostilePartner) -> None:
    bomb = gzip_bomb(256 * MB)
    hostile.answer = answer_with("200 OK", bomb, "Content-Encoding: gzip")
    with bounded("SOAP gzip bomb", seconds=10, memory=32 * MB):
        assert "max_response_bytes" in str(fault_of(client(bus, hostile, timeout=10)))


def test_a_size_claimed_beyond_the_limit_is_refused_before_reading(bus: Any, hostile: HostilePartner) -> None:
    hostile.answer = lambda c: c.send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (2**62) + REPLY)
    assert "max_response_bytes" in str(fault_of(client(bus, hostile)))


def test_an_answer_not_in_its_content_encoding_fails_at_once_in_one_line(bus: Any, hostile: HostilePartner) -> None:
    """``Content-Encoding: gzip`` on a body that is not gzip: one line naming the encoding, code
    ``failed``, not called again as if the connection were lost ("cannot reach ... is the SOAP
    service running?")."""
    hostile.answer = answer_with("200 OK", b"not gzip at all!!!!!", "Content-Encoding: gzip")
    fault = fault_of(client(bus, hostile, retries=2))
    assert "cannot be read as gzip" in str(fault) and fault.code == "failed", str(fault)
    assert hostile.requests == 1, hostile.requests  # retries are for transport errors, not this


# -- the random run -------------------------------------------------------------------------------

BOMB = (b'<?xml version="1.0"?><!DOCTYPE e [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
        b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>')
INSERTS = [b"<!DOCTYPE x [<!ENTITY e SYSTEM 'file:///etc/passwd'>]>", b"&e;", b"&d;", b"<![CDATA[x]]>", b"\x00",
           b"<soapenv:Body/>", b"<soapenv:Header><x/></soapenv:Header>", b"<soapenv:Fault/>", b"]]>", b"<?pi x?>",
           b"<!-- c -->", b'xmlns:soapenv="http://www.w3.org/2003/05/soap-envelope"', b'xmlns:p="urn:other"',
           b"<p:premium>1e999</p:premium>", b"\xff\xfe", b"<" * 1000, b"<a>" * 3000]


def mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        op = rng.randrange(6)
        at = rng.randrange(len(out) + 1)
        if op == 0 and out:
            out[min(at, len(out) - 1)] = rng.randrange(256)
        elif op == 1:
            del out[at:]
        elif op == 2:
            out[at:at] = rng.choice(INSERTS)
        elif op == 3:
            out = bytearray(BOMB + bytes(out).split(b"?>", 1)[-1].replace(b"EUR", b"&d;"))
        elif op == 4:
            out = bytearray(bytes(out).replace(SOAP11.encode(), rng.choice([b"urn:wrong", b"http://www.w3.org/2003/05/soap-envelope", b""])))
        else:
            piece = bytes(out[at:at + rng.randrange(1, 200)])
            out[at:at] = piece * rng.randrange(1, 20)
    return bytes(out)


def _answer(rng: random.Random) -> Any:
    body = mutate(rng, rng.choice([REPLY, FAULT])) if rng.random() < 0.9 else rng.choice([REPLY, FAULT])
    status = rng.choice(["200 OK", "500 Internal Server Error", "202 Accepted", "400 Bad", "302 Found", "999 X"])
    headers = rng.sample(["Content-Type: text/html", "Content-Encoding: gzip", "Content-Encoding: br",
                          "Content-Type: application/soap+xml; charset=utf-16", "Content-Type: \xff"], rng.randrange(3))
    if "Content-Encoding: gzip" in headers and rng.random() < 0.7:
        body = zlib.compress(body, wbits=31)
    return answer_with(status, body, *headers)


def test_random_hostile_answers_end_in_a_reply_or_one_line(bus: Any, hostile: HostilePartner) -> None:
    print(f"COUPLER_FUZZ_SEED={SEED}")
    rng = random.Random(SEED)
    a = client(bus, hostile)
    count = answered = 0
    for count in cases(least=30):  # noqa: B007
        hostile.answer = _answer(rng)
        with bounded(f"hostile SOAP answer {count}", seconds=5, memory=64 * MB):
            try:
                ask(a)
                answered += 1
            except CouplerError as exc:
                assert "\n" not in str(exc) and "\r" not in str(exc), str(exc)
    print(f"{count + 1} answers, {answered} read as replies")


def test_what_is_read_as_a_reply_zeep_reads_too(bus: Any, hostile: HostilePartner) -> None:
    """Replies Coupler reads, zeep (the independent client) reads alike: the same record."""
    import zeep
    from zeep.transports import Transport

    rng = random.Random(SEED)
    a = client(bus, hostile)
    z = zeep.Client(str(WSDL), transport=Transport(timeout=TIMEOUT, operation_timeout=TIMEOUT))
    service = z.create_service("{urn:acme:policy:wsdl}PolicySoap11", hostile.url + "/policy")
    compared = 0
    for _ in cases(least=10):
        body = mutate(rng, REPLY)
        if b"<?pi" in body or b"<!--" in body:
            continue  # zeep reads an element's text up to a comment or PI inside it only (lxml's .text)
        hostile.answer = answer_with("200 OK", body)
        try:
            ours = ask(a)
        except CouplerError:
            continue
        try:
            theirs = service.GetQuote(policyId="P-7", driverAge=50)
        except Exception:  # noqa: BLE001 - zeep refuses something Coupler read: shown by the assertion
            theirs = None
        assert theirs is not None, f"Coupler read a reply zeep refuses: {body!r}"
        # the same values (Coupler writes a Money decimal with its 2 fraction digits, zeep a Decimal)
        assert (ours["policyId"], Decimal(ours["premium"]), ours["currency"]) == (
            theirs.policyId, theirs.premium, theirs.currency), body
        compared += 1
    print(f"{compared} replies read alike by Coupler and zeep")
