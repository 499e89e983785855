"""The SOAP adapter's server under damaged requests: real requests of the policy WSDL (SOAP
1.1 and 1.2, document/literal and one-way, WS-Addressing and WS-Security headers) mutated
(bytes flipped, cut, repeated, inserted; Body removed or doubled; huge headers; XML bombs,
external entities, deep nesting; declared encodings the bytes are not in), sent with the
right or a wrong SOAPAction and Content-Type.

Each request is answered, in one line, with a response, a 202, or a SOAP fault: Sender
(Client) for what the client got wrong, never a Receiver fault for an internal error and
never a traceback; every request refused as unreadable is in the Invalid Message Channel;
the server goes on serving (a good request is answered after the run). Bounded by
``COUPLER_FUZZ_SECONDS`` (3 s by default); the seed is printed and ``COUPLER_FUZZ_SEED=N``
replays a run."""

from __future__ import annotations

import random
from typing import Any

import pytest
import requests
from lxml import etree

from tests.fuzzing import BUDGET, SEED, bounded, cases

SOAP11 = "http://schemas.xmlsoap.org/soap/envelope/"
SOAP12 = "http://www.w3.org/2003/05/soap-envelope"
WSA = "http://www.w3.org/2005/08/addressing"
WSSE = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"
ACTIONS = ["urn:acme:policy:GetQuote", "urn:acme:policy:NotifyClaim", "urn:acme:calc:Add", "", "urn:nope", "urn:acme:policy:GetQuote urn:x"]

#: (version, body element, SOAPAction)
REQUESTS = [
    ("1.1", '<p:GetQuote xmlns:p="urn:acme:policy"><p:policyId>P-1</p:policyId><p:driverAge>40</p:driverAge></p:GetQuote>',
     "urn:acme:policy:GetQuote"),
    ("1.2", '<p:GetQuote xmlns:p="urn:acme:policy"><p:policyId>P-2</p:policyId><p:driverAge>17</p:driverAge></p:GetQuote>',
     "urn:acme:policy:GetQuote"),
    ("1.1", '<p:NotifyClaim xmlns:p="urn:acme:policy"><p:policyId>P-3</p:policyId><p:amount>12.50</p:amount></p:NotifyClaim>',
     "urn:acme:policy:NotifyClaim"),
    ("1.2", '<p:GetQuote xmlns:p="urn:acme:policy"><p:policyId>BAD</p:policyId><p:driverAge>30</p:driverAge></p:GetQuote>',
     "urn:acme:policy:GetQuote"),
]
#: the rpc/literal service of the same WSDL (its parts are xs:int)
CALC = [("1.1", '<c:Add xmlns:c="urn:acme:calc"><a>1</a><b>2</b></c:Add>', "urn:acme:calc:Add"),
        ("1.1", '<c:Add xmlns:c="urn:acme:calc"><a>2147483647</a><b>-2147483648</b></c:Add>', "urn:acme:calc:Add"),
        ("1.1", '<c:Add xmlns:c="urn:acme:calc"><b>2</b><a>99999999999999999999</a></c:Add>', "urn:acme:calc:Add")]
HEADERS = [
    "",
    f'<wsa:MessageID xmlns:wsa="{WSA}">urn:uuid:12345678-1234-1234-1234-123456789012</wsa:MessageID>'
    f'<wsa:Action xmlns:wsa="{WSA}">urn:acme:policy:GetQuote</wsa:Action>',
    f'<wsa:ReplyTo xmlns:wsa="{WSA}"><wsa:Address>http://127.0.0.1:1/evil</wsa:Address></wsa:ReplyTo>',
    f'<wsse:Security xmlns:wsse="{WSSE}"><wsse:UsernameToken><wsse:Username>u</wsse:Username>'
    '<wsse:Password>p</wsse:Password><wsse:Nonce>!!not base64</wsse:Nonce></wsse:UsernameToken></wsse:Security>',
]
WSU = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd"
TOKEN = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0"
USERS = {"agent": "s3cret"}


def security(user: str = "agent", password: str = "s3cret", kind: str = "PasswordText", nonce: str | None = None,
             created: str | None = None) -> str:
    """A WS-Security UsernameToken header, any of whose parts may be hostile."""
    parts = f"<wsse:Username>{user}</wsse:Username><wsse:Password Type=\"{TOKEN}#{kind}\">{password}</wsse:Password>"
    if nonce is not None:
        parts += f'<wsse:Nonce EncodingType="{TOKEN.replace("username-token-profile", "soap-message-security")}#Base64Binary">{nonce}</wsse:Nonce>'
    if created is not None:
        parts += f'<wsu:Created xmlns:wsu="{WSU}">{created}</wsu:Created>'
    return f'<wsse:Security xmlns:wsse="{WSSE}"><wsse:UsernameToken>{parts}</wsse:UsernameToken></wsse:Security>'


def _hostile_security(rng: random.Random) -> str:
    values = ["", "!!", "A" * 10_000, "é", "AAAA", "=", "9999-99-99T99:99:99Z", "2026-02-30T00:00:00Z",
              "99999999999-01-01T00:00:00Z", "2026-11-27T00:00:00+25:00", "0001-01-01T00:00:00Z", "now", "&#0;"]
    return security(rng.choice(["agent", "agent", "", "nobody", "a" * 5000]), rng.choice(["s3cret", "wrong", *values]),
                    rng.choice(["PasswordText", "PasswordDigest", "Nope", ""]),
                    rng.choice([None, *values]), rng.choice([None, *values])) * rng.choice([1, 1, 2])


DAMAGE = [b"<", b">", b"&", b"&#0;", b"]]>", b"\x00", b"\xff\xfe", b'"', b"</e:Body>", b"<e:Body>",
          b"<!DOCTYPE e [<!ENTITY a 'b'>]>", b"<!DOCTYPE e SYSTEM 'file:///etc/passwd'>",
          b"<?xml version='1.0' encoding='UTF-16'?>", b"<?xml version='1.0' encoding='cp500'?>",
          b"<x>" * 300 + b"</x>" * 300, b"xmlns:e='urn:other'", b"&#xD800;", b"<e:Fault/>"]


def envelope(version: str, body: str, header: str = "", bodies: int = 1) -> bytes:
    ns = SOAP11 if version == "1.1" else SOAP12
    head = f"<e:Header>{header}</e:Header>" if header else ""
    return (f'<?xml version="1.0" encoding="UTF-8"?><e:Envelope xmlns:e="{ns}">{head}'
            + f"<e:Body>{body}</e:Body>" * bodies + "</e:Envelope>").encode()


def _mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        op = rng.randrange(6)
        at = rng.randrange(len(out) + 1)
        if op == 0 and out:
            out[min(at, len(out) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            del out[at:]
        elif op == 2:
            out[at:at] = out[at : at + rng.randrange(1, 60)] * rng.randrange(1, 20)
        elif op == 3:
            out[at:at] = rng.choice(DAMAGE)
        elif op == 4:
            out = bytearray(out.decode("latin-1").encode(rng.choice(["utf-16", "utf-32", "utf-8"])))
        else:
            del out[at : at + rng.randrange(1, 20)]
    return bytes(out)


def _request(rng: random.Random, secured: bool = False, rpc: bool = False) -> tuple[bytes, str, str]:
    """A request's body, Content-Type and SOAPAction (``secured``: the server wants a
    UsernameToken, which most requests carry, right or hostile; ``rpc``: the Add operation)."""
    version, body, action = rng.choice(CALC if rpc else REQUESTS)
    headers = HEADERS if not secured else [security() + h for h in HEADERS] + [_hostile_security(rng)]
    shape = rng.randrange(12)
    if shape == 0:
        data = rng.randbytes(rng.randrange(0, 300))
    elif shape == 1:  # no Body, two Bodies, a huge header, nested deep
        data = rng.choice([envelope(version, "").replace(b"<e:Body></e:Body>", b""), envelope(version, body, bodies=2),
                           envelope(version, body, header="<h>x</h>" * rng.choice([100, 20_000])),
                           envelope(version, "<d>" * 100_000 + "</d>" * 100_000),
                           envelope(version, body, header=rng.choice(headers) * rng.randrange(2, 4))])
    elif shape == 2:  # a bomb in front of a real request
        data = (b'<?xml version="1.0"?><!DOCTYPE e:Envelope [<!ENTITY a "aaaaaaaaaa">'
                + b"".join(b'<!ENTITY a%d "%s">' % (n, b"&a;" * 10 if n == 1 else b"&a%d;" % (n - 1) * 10) for n in range(1, 9))
                + b"]>" + envelope(version, body.replace("P-1", "&a8;"))[38:])
    else:
        data = envelope(version, body, header=rng.choice(headers))
        if shape > 4:
            data = _mutate(rng, data)
    if rng.random() < 0.3:
        version = "1.2" if version == "1.1" else "1.1"  # the other version's Content-Type
    if rng.random() < 0.3:
        action = rng.choice(ACTIONS)
    content_type = "text/xml; charset=utf-8" if version == "1.1" else f'application/soap+xml; charset=utf-8; action="{action}"'
    if rng.random() < 0.05:  # a Content-Encoding the body is (gzip) or is not in
        import gzip

        content_type += "\n" + rng.choice(["gzip", "deflate", "identity"])
        data = gzip.compress(data) if rng.random() < 0.5 else data
    return data, rng.choice([content_type, content_type, "text/plain", "application/soap+xml; charset=latin-1"]), action


#: the reasons of Sender faults whose request is kept in the Invalid Message Channel
INVALID = ("not a SOAP envelope", "the request body cannot be read", "no operation of this service takes",
           ": invalid request")


def answer(url: str, data: bytes, content_type: str, action: str, label: str) -> tuple[int, str]:
    """POST one request; its status and the fault's code ('' for none), checked."""
    content_type, _, encoding = content_type.partition("\n")
    headers = {"Content-Type": content_type, "SOAPAction": f'"{action}"'}
    if encoding:
        headers["Content-Encoding"] = encoding
    try:
        r = requests.post(url, data=data, headers=headers, timeout=30)
    except requests.exceptions.InvalidHeader:  # requests refuses a header it cannot send: no request
        return 0, ""
    assert b"Traceback" not in r.content, f"{label}: {r.content[:400]!r}"
    assert r.status_code in (200, 202, 400, 500), f"{label}: HTTP {r.status_code} {r.content[:300]!r}"
    if r.status_code in (200, 202):
        return r.status_code, ""
    root = etree.fromstring(r.content)
    fault = root.find(f".//{{{SOAP11}}}Fault")
    if fault is not None:
        code, reason = fault.findtext("faultcode") or "", fault.findtext("faultstring") or ""
    else:
        fault = root.find(f".//{{{SOAP12}}}Fault")
        assert fault is not None, f"{label}: HTTP {r.status_code} without a fault: {r.content[:300]!r}"
        code = fault.findtext(f"{{{SOAP12}}}Code/{{{SOAP12}}}Value") or ""
        reason = fault.findtext(f"{{{SOAP12}}}Reason/{{{SOAP12}}}Text") or ""
    assert "\n" not in reason.strip(), f"{label}: {reason!r}"
    assert "internal error" not in reason, f"{label}: {code} {reason}"
    if code.endswith(("Server", "Receiver")):  # only the service behind the bus refusing (policy BAD)
        assert "policy BAD does not exist" in reason or "the bus failed" in reason, f"{label}: {code} {reason}"
    return r.status_code, reason


@pytest.fixture(autouse=True)
def _seed_with_every_report() -> None:
    print(f"COUPLER_FUZZ_SEED={SEED}")


def _good(adapter: Any, secured: bool = False, rpc: bool = False) -> None:
    version, body, action = (CALC if rpc else REQUESTS)[0]
    data = envelope(version, body, header=security() if secured else "")
    r = requests.post(adapter.url, data=data, headers={"Content-Type": "text/xml", "SOAPAction": f'"{action}"'}, timeout=30)
    assert r.status_code == 200 and (b"<sum>3</sum>" if rpc else b"premium") in r.content, r.content[:300]


@pytest.mark.parametrize("kind", ["open", "ws-security", "rpc"])
def test_damaged_requests_are_answered_with_a_sender_fault_and_kept_and_the_server_goes_on(soap_server: Any,
                                                                                         bus: Any, kind: str) -> None:
    secured, rpc = kind == "ws-security", kind == "rpc"
    if secured:
        adapter = soap_server(users=USERS, allow_password_text_over_http=True)
    else:
        adapter = soap_server(service="CalcService") if rpc else soap_server()
    rng = random.Random(SEED)
    kept = 0
    statuses: dict[int, int] = {}
    count = 0
    for count in cases(least=30):
        data, content_type, action = _request(rng, secured, rpc)
        label = f"request {count} ({content_type}, {action!r}, {data[:120]!r}; COUPLER_FUZZ_SEED={SEED})"
        with bounded(label, seconds=20):
            status, reason = answer(adapter.url, data, content_type, action, label)
        statuses[status] = statuses.get(status, 0) + 1
        if status in (400, 500) and reason.startswith(INVALID[:2]) or any(r in reason for r in INVALID[2:]):
            kept += 1
        if count % 50 == 0:
            _good(adapter, secured, rpc)
    _good(adapter, secured, rpc)
    invalid = bus.transport.dead_letters(kind="invalid", limit=10**6)
    assert len(invalid) == kept, f"{kept} requests refused as unreadable, {len(invalid)} in the Invalid Message Channel"
    assert all(d.component == "adapter:policy-in" and d.reason and "\n" not in d.reason for d in invalid)
    assert adapter.health()["status"] == "ok"
    print(f"{count + 1} requests: {statuses}, {kept} kept as invalid")


#: what the GET fuzzing found: a NUL in the schema's name answered 500 (ValueError: embedded null byte)
GET_REGRESSIONS = ["?xsd=%00", "?xsd=policy-types.xsd%00"]


def test_random_schema_and_wsdl_queries_are_answered_200_or_404(soap_server: Any) -> None:
    """``GET PATH?xsd=NAME`` serves only the schemas the WSDL names: any other name (random
    bytes, NUL, ``..``, absolute paths, 5,000 characters) is a 404, never a 500."""
    adapter = soap_server()
    rng = random.Random(SEED)
    pieces = ["%00", "..%2f", "/", "%2e%2e/", "policy-types.xsd", "policy.wsdl", "%ff", "%c0%af", "\\", "a" * 5000,
              "file:///etc/passwd", "http://127.0.0.1:1/x.xsd", "%0d%0a", "~", "*", "?", "&xsd=", "#"]
    count = 0
    for count in cases(least=len(GET_REGRESSIONS) + 20, budget=BUDGET / 2):
        if count < len(GET_REGRESSIONS):
            query = GET_REGRESSIONS[count]
        else:
            query = rng.choice(["?xsd=", "?wsdl&xsd=", "?xsd=policy-types.xsd&xsd="]) + "".join(
                rng.choice(pieces) for _ in range(rng.randrange(1, 4)))
        label = f"GET {query[:100]!r} (COUPLER_FUZZ_SEED={SEED})"
        with bounded(label, seconds=20):
            r = requests.get(adapter.url + query, timeout=30)
        # past aiohttp's own limit of a request line (8190 bytes): 400 before the adapter
        assert r.status_code in (200, 404) or r.status_code == 400 and len(query) > 8000, \
            f"{label}: HTTP {r.status_code} {r.text[:200]!r}"
        if r.status_code == 200:
            assert etree.fromstring(r.content).tag.endswith("schema"), label
    _good(adapter)
    print(f"{count + 1} GET requests")


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_body_that_is_not_in_its_content_encoding_is_a_sender_fault_kept_as_invalid(soap_server: Any, bus: Any,
                                                                                      encoding: str, caplog: Any) -> None:
    """Found by probing the server's headers: a request declaring ``Content-Encoding: gzip``
    whose body is not gzip made aiohttp raise RequestPayloadError out of the body's read: an
    HTTP 500 "Internal Server Error" and an unhandled exception logged."""
    import gzip

    adapter = soap_server()
    label = f"Content-Encoding {encoding}"
    headers = {"Content-Type": "text/xml", "Content-Encoding": encoding}
    r = requests.post(adapter.url, data=envelope(*REQUESTS[0][:2]), headers=headers, timeout=30)
    assert r.status_code == 500 and b"faultcode" in r.content, f"{label}: HTTP {r.status_code} {r.content[:200]!r}"
    fault = etree.fromstring(r.content).find(f".//{{{SOAP11}}}Fault")
    assert fault.findtext("faultcode").endswith("Client"), r.content
    assert fault.findtext("faultstring").startswith(f"the request body cannot be read as {encoding}")
    (kept,) = bus.transport.dead_letters(kind="invalid")
    assert f"cannot be read as {encoding}" in kept.reason and "\n" not in kept.reason
    if encoding == "gzip":  # a body that is gzip is read as usual
        good = requests.post(adapter.url, data=gzip.compress(envelope(*REQUESTS[0][:2])), headers=headers, timeout=30)
        assert good.status_code == 200 and b"premium" in good.content
    _good(adapter)
    assert not [r for r in caplog.records if r.levelname == "ERROR"], [r.getMessage() for r in caplog.records]
