"""Outbound REST: the adapter's httpx client against a real aiohttp server (the partner)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coupler.adapters.http import HttpAdapter
from coupler.bus.api import Command, CommandFault, Document, command_envelope
from coupler.bus.testing import EmbeddedBus
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError
from coupler.canonical.tracecontext import TRACEPARENT, TraceContext

from .conftest import ORDER
from .partner import Partner

FMT = FormatIndicator("acme.Order", 1, "application/json")


@pytest.fixture
def partner() -> Iterator[Partner]:
    p = Partner().start()
    yield p
    p.stop()


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[EmbeddedBus]:
    with EmbeddedBus(tmp_path / "site") as b:
        yield b


def client(bus: EmbeddedBus, partner: Partner, **options: Any) -> HttpAdapter:
    options = {"mode": "client", "url": partner.url + "/api/customers/{field.customer}/orders", "backoff": 0.01,
               **options}
    return bus.adapter(HttpAdapter, "orders-out", options, direction="outbound", channel="orders")


def message(**props: str) -> Envelope:
    trace = TraceContext.new()
    return Envelope(format=FMT, body=json.dumps(ORDER).encode(), properties={TRACEPARENT: trace.header, **props})


def test_a_document_is_posted_with_its_idempotency_key_and_trace(embedded: EmbeddedBus, partner: Partner) -> None:
    a = client(embedded, partner, headers={"X-Order": "{field.orderNo}", "X-Region": "{prop.region}"})
    m = message(region="EU west")
    embedded.deliver(a, m)
    (call,) = partner.calls
    assert call["method"] == "POST" and call["path"] == "/api/customers/Ada/orders"
    assert json.loads(call["body"]) == ORDER and call["headers"]["Content-Type"] == "application/json"
    assert call["headers"]["Idempotency-Key"] == m.message_id
    assert call["headers"]["X-Order"] == "A-1" and call["headers"]["X-Region"] == "EU west"
    sent = TraceContext.parse(call["headers"][TRACEPARENT])
    assert sent is not None and sent.trace_id == TraceContext.parse(m.properties[TRACEPARENT]).trace_id  # type: ignore[union-attr]


def test_5xx_and_cut_connections_are_retried_with_the_same_key(embedded: EmbeddedBus, partner: Partner) -> None:
    a = client(embedded, partner)
    partner.script = [503, 0, 502]
    m = message()
    embedded.deliver(a, m)
    assert len(partner.calls) == 4
    assert {c["headers"]["Idempotency-Key"] for c in partner.calls} == {m.message_id}
    assert a.health()["http"]["retried"] == 3


def test_retries_exhausted_leave_the_message_to_the_bus(embedded: EmbeddedBus, partner: Partner) -> None:
    a = client(embedded, partner, retries=2)
    partner.script = [500, 500, 500, 500]
    with pytest.raises(CouplerError, match=r"answered 500 .*\(after 3 attempts") as err:
        embedded.deliver(a, message())
    assert not isinstance(err.value, CommandFault)  # not a refusal: the bus redelivers later


def test_429_waits_and_4xx_refuses_with_the_response(embedded: EmbeddedBus, partner: Partner) -> None:
    a = client(embedded, partner)
    partner.script = [429]
    embedded.deliver(a, message())
    assert len(partner.calls) == 2
    partner.script = [422]
    with pytest.raises(CommandFault, match=r"answered 422 Unprocessable .*scripted 422") as err:
        embedded.deliver(a, message())
    assert err.value.code == "unsupported"  # the daemon dead-letters it at once, with this reason
    assert len(partner.calls) == 3  # a 4xx is not retried


def test_oauth2_client_credentials_fetched_and_refreshed(embedded: EmbeddedBus, partner: Partner,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARTNER_SECRET", "client-secret")
    partner.require_token = True
    partner.token_ttl = 3600
    a = client(embedded, partner, oauth2={"token_url": partner.url + "/oauth/token", "client_id": "client-1",
                                          "client_secret_env": "PARTNER_SECRET", "scope": "orders"})
    embedded.deliver(a, message())
    embedded.deliver(a, message())
    assert partner.tokens_issued == 1  # cached while valid
    assert partner.calls[0]["headers"]["Authorization"] == "Bearer tok-1"
    partner.valid_tokens = set()  # revoked at the partner: a 401 fetches a new one, once
    embedded.deliver(a, message())
    assert partner.tokens_issued == 2 and partner.calls[-1]["headers"]["Authorization"] == "Bearer tok-2"
    partner.token_ttl = 10  # expiring within the 30 s margin: fetched again before each call
    a.caller.token.get(renew=True)  # type: ignore[union-attr]
    embedded.deliver(a, message())
    assert partner.tokens_issued == 4


def test_the_request_command_answers_with_the_partners_response(embedded: EmbeddedBus, partner: Partner) -> None:
    a = client(embedded, partner)
    doc = Document(FMT, json.dumps(ORDER).encode())
    reply = a.handle(Command("request", a.name, command_envelope("request", a.name, document=doc), document=doc))
    (answer,) = reply.documents
    assert json.loads(answer.body) == {"id": 1, "ok": True} and reply.details["http.status"] == "201"


def client_site(url: str) -> str:
    """A site.toml whose adapter ``partner-out`` calls ``url`` with the messages of ``orders``."""
    return f"""
[[adapters]]
name = "partner-out"
type = "http"
direction = "outbound"
channel = "orders"
[adapters.options]
mode = "client"
url = "{url}"
"""


def test_in_a_daemon_a_4xx_puts_the_message_in_the_dead_letters_with_the_response(
        tmp_path: Path, partner: Partner) -> None:
    from tests.bus.site_helpers import running_daemon, wait_for, write_site

    site = write_site(tmp_path / "site", client_site(f"{partner.url}/api/orders"))
    partner.script = [409]
    with running_daemon(site, plugins=None) as daemon:
        assert daemon.transport is not None
        (message_id,) = daemon.transport.send("orders", message())
        dead = wait_for(lambda: daemon.transport.dead_letters(), "the dead letter")  # type: ignore[union-attr]
    (letter,) = dead
    assert letter.envelope is not None and letter.envelope.message_id == message_id
    assert letter.kind == "dead" and letter.component == "adapter:partner-out" and letter.attempts == 1
    assert "answered 409 Conflict" in letter.error and "scripted 409" in letter.error  # the response
    assert len(partner.calls) == 1  # not retried


def test_the_trace_shows_the_url_a_message_was_delivered_to_without_its_secrets(
        tmp_path: Path, partner: Partner) -> None:
    from coupler.bus.runtime.trace import trace
    from tests.bus.site_helpers import running_daemon, wait_for, write_site

    host = partner.url.removeprefix("http://")
    site = write_site(tmp_path / "site", client_site(
        f"http://shop:pa55word@{host}/api/customers/{{field.customer}}/orders?region=EU&api_key=k3y-123"))
    with running_daemon(site, plugins=None) as daemon:
        transport = daemon.transport
        assert transport is not None
        (message_id,) = transport.send("orders", message())
        wait_for(lambda: transport.journal(message_id=message_id, event="acked"), "the acknowledgement")
        hops = trace(transport, message_id)["hops"]
    (call,) = partner.calls  # the partner got the call, with the credentials and the key
    assert call["path"] == "/api/customers/Ada/orders?region=EU&api_key=k3y-123"
    assert call["headers"]["Authorization"] == "Basic c2hvcDpwYTU1d29yZA=="  # shop:pa55word
    delivered = [h for h in hops if h["event"] == "delivered"]
    assert [(h["channel"], h["by"], h["outcome"]) for h in delivered] == [
        ("orders", "adapter:partner-out", f"to {partner.url}/api/customers/Ada/orders?region=EU&api_key=***")]
    assert "pa55word" not in json.dumps(hops) and "k3y-123" not in json.dumps(hops)


@pytest.mark.parametrize(("url", "shown"), [
    ("https://u:p@api.example.com:8443/v1/orders?id=7&access_token=t#top", "https://api.example.com:8443/v1/orders?id=7&access_token=***"),
    ("http://[::1]:9000/a%20b?q=a%26b&Signature=s&apiKey=", "http://[::1]:9000/a%20b?q=a%26b&Signature=***&apiKey=***"),
    ("https://api.example.com/orders", "https://api.example.com/orders"),
    ("http://host:99999/x", "(a URL that cannot be parsed)"),
])
def test_shown_urls_have_no_credentials_or_secret_query_values(url: str, shown: str) -> None:
    from coupler.adapters.http.client import shown_url

    assert shown_url(url) == shown
