"""WS-Security on the inbound SOAP adapter (issue 17): a captured UsernameToken cannot be
replayed (stale Created, a nonce used before), PasswordText never travels over plain HTTP
unless allowed, and the adapter serves over TLS. zeep is the independent client."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest
import requests
import zeep
from lxml import etree
from zeep.exceptions import Fault
from zeep.plugins import HistoryPlugin
from zeep.transports import Transport
from zeep.wsse.username import UsernameToken

from coupler.adapters.soap import SoapAdapter
from coupler.bus.api import Document
from coupler.bus.model.commands import command_envelope, parse_command
from coupler.canonical import FormatIndicator
from coupler.canonical.errors import CouplerError
from tests.adapters.pki import make_pki

from .conftest import WSDL

UTC = datetime.UTC
USERS = {"agent": "s3cret"}


def _service(url: str, wsse=None, plugins=(), session: requests.Session | None = None):
    transport = Transport(session=session) if session is not None else None
    client = zeep.Client(f"{url}?wsdl", wsse=wsse, plugins=list(plugins), transport=transport)
    return client.bind("PolicyService", "PolicyPort11")


def _digest(created: datetime.datetime | None = None, nonce: str | None = None, password: str = "s3cret"):
    return UsernameToken("agent", password, use_digest=True, created=created, nonce=nonce, zulu_timestamp=True)


def _session(ca: str, cert: tuple[str, str] | None = None) -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # REQUESTS_CA_BUNDLE in the environment would override verify
    session.verify = ca
    session.cert = cert
    return session


def _refused(service, match: str = "authentication failed") -> Fault:
    with pytest.raises(Fault, match=match) as info:
        service.GetQuote(policyId="P-1", driverAge=60)
    assert info.value.code.endswith("Client")
    return info.value


def test_a_token_created_in_2001_is_refused(soap_server, caplog):
    adapter = soap_server(users=USERS)
    stale = _digest(created=datetime.datetime(2001, 1, 1, tzinfo=UTC))
    _refused(_service(adapter.url, wsse=stale), match="expired")
    assert any("created" in r.getMessage() and "ago" in r.getMessage() for r in caplog.records)
    # the freshness window: at most username_token_ttl (5 min) old, username_token_future_ttl
    # (60 s, the clock skew) ahead
    now = datetime.datetime.now(UTC)
    _refused(_service(adapter.url, wsse=_digest(created=now - datetime.timedelta(minutes=6))), match="expired")
    _refused(_service(adapter.url, wsse=_digest(created=now + datetime.timedelta(minutes=3))), match="expired")
    fresh = _service(adapter.url, wsse=_digest(created=now - datetime.timedelta(minutes=4)))
    assert fresh.GetQuote(policyId="P-1", driverAge=60).premium == Decimal("300.00")
    ahead = _service(adapter.url, wsse=_digest(created=now + datetime.timedelta(seconds=30)))
    assert ahead.GetQuote(policyId="P-1", driverAge=60).currency == "EUR"


def test_the_window_is_configurable(soap_server):
    adapter = soap_server(users=USERS, username_token_ttl=3600, username_token_future_ttl=0)
    now = datetime.datetime.now(UTC)
    assert _service(adapter.url, wsse=_digest(created=now - datetime.timedelta(minutes=50))).GetQuote(
        policyId="P-1", driverAge=60
    ).currency == "EUR"
    _refused(_service(adapter.url, wsse=_digest(created=now + datetime.timedelta(seconds=30))), match="expired")


def test_a_captured_request_replayed_is_refused(soap_server, bus):
    adapter = soap_server(users=USERS)
    history = HistoryPlugin()
    service = _service(adapter.url, wsse=_digest(), plugins=[history])
    assert service.GetQuote(policyId="P-1", driverAge=60).currency == "EUR"
    captured = etree.tostring(history.last_sent["envelope"])
    # the very same bytes, sent again (the digest, nonce and Created are all valid)
    replay = requests.post(adapter.url, data=captured, headers={"Content-Type": "text/xml", "SOAPAction": '""'}, timeout=10)
    assert replay.status_code == 500
    fault = etree.fromstring(replay.content).find(".//{http://schemas.xmlsoap.org/soap/envelope/}Fault")
    assert fault.findtext("faultcode").endswith("Client") and fault.findtext("faultstring") == "authentication failed"
    # zeep with a fixed nonce: the first use passes, the second is a replay
    reused = _service(adapter.url, wsse=_digest(nonce="the same nonce"))
    assert reused.GetQuote(policyId="P-2", driverAge=60).currency == "EUR"
    _refused(reused)
    assert bus.commands_handled("quotes") == 2


def test_every_daemon_of_the_site_sees_the_nonces(soap_server):
    """Two adapters on one store (two daemons of a site): a nonce used at one is refused at
    the other. On an AMQP site the store is the shared PostgreSQL (see tests/bus)."""
    first, second = soap_server("policy-a", users=USERS), soap_server("policy-b", users=USERS)
    token = _digest(nonce="used once")
    assert _service(first.url, wsse=token).GetQuote(policyId="P-1", driverAge=60).currency == "EUR"
    _refused(_service(second.url, wsse=token))


def test_password_text_over_plain_http_is_refused_unless_allowed(soap_server, caplog):
    strict = soap_server(users=USERS)
    _refused(_service(strict.url, wsse=UsernameToken("agent", "s3cret")))
    assert any("PasswordText over plain HTTP" in r.getMessage() for r in caplog.records)
    lax = soap_server("lax", users=USERS, allow_password_text_over_http=True)
    assert _service(lax.url, wsse=UsernameToken("agent", "s3cret")).GetQuote(policyId="P-1", driverAge=60).currency == "EUR"


def test_wrong_password_and_unknown_user_are_refused_alike(soap_server):
    adapter = soap_server(users=USERS)
    _refused(_service(adapter.url, wsse=_digest(password="wrong")))
    _refused(_service(adapter.url, wsse=UsernameToken("nobody", "s3cret", use_digest=True)))
    _refused(_service(adapter.url))  # no token at all


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_served_over_tls_to_zeep(soap_server, pki):
    adapter = soap_server(users=USERS, tls={"cert": pki["server"][0], "key": pki["server"][1]})
    assert adapter.url.startswith("https://127.0.0.1:")
    session = _session(pki["ca"])
    # PasswordText is fine over TLS
    service = _service(adapter.url, wsse=UsernameToken("agent", "s3cret"), session=session)
    assert service.GetQuote(policyId="P-1", driverAge=40).premium == Decimal("550.00")
    # a client that does not trust the server's certificate does not get through
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"{adapter.url}?wsdl", timeout=10)
    with pytest.raises(requests.exceptions.ConnectionError):  # plain HTTP on the TLS port
        requests.get(f"{adapter.url.replace('https', 'http')}?wsdl", timeout=10)


def test_tls_with_client_certificates(soap_server, pki):
    adapter = soap_server(
        tls={"cert": pki["server"][0], "key": pki["server"][1], "ca": pki["ca"], "client_auth": "required"},
    )
    session = _session(pki["ca"], pki["client"])
    assert _service(adapter.url, session=session).GetQuote(policyId="P-1", driverAge=60).currency == "EUR"
    anonymous = _session(pki["ca"])
    with pytest.raises(requests.exceptions.ConnectionError):  # TLS 1.3: refused after the handshake
        anonymous.get(f"{adapter.url}?wsdl", timeout=10)


def test_outbound_adapter_calls_over_tls(bus, soap_server, pki):
    server = soap_server(users=USERS, tls={"cert": pki["server"][0], "key": pki["server"][1]})
    client = SoapAdapter(
        "policy-out",
        {"mode": "client", "wsdl": str(WSDL), "address": server.url, "username": "agent", "password": "s3cret",
         "tls": {"ca": pki["ca"]}},
        bus.context("policy-out"),
    )
    bus.add(client)
    doc = Document(FormatIndicator("acme.QuoteRequest", 1, "application/json"), b'{"policyId": "P-1", "driverAge": 60}')
    reply = client.handle(parse_command(command_envelope("request", "policy-out", document=doc, operation="GetQuote")))
    assert b"300.00" in reply.documents[0].body


def test_bad_tls_options_are_configuration_errors(bus, pki, tmp_path):
    with pytest.raises(CouplerError, match=r"options\.tls\.client_auth"):
        SoapAdapter("x", {"mode": "server", "wsdl": str(WSDL), "target": "q", "tls": {"cert": "a", "client_auth": "maybe"}})
    adapter = SoapAdapter(
        "y", {"mode": "server", "wsdl": str(WSDL), "target": "q", "tls": {"cert": str(tmp_path / "missing.crt")}},
        bus.context("y"),
    )
    with pytest.raises(CouplerError, match="cannot load the certificate"):
        adapter.start()
    adapter.stop()
