"""Inbound REST: httpx (an independent client) against the adapter's aiohttp server."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from coupler.adapters.http import HttpAdapter
from coupler.canonical.tracecontext import TRACEPARENT, TraceContext
from tests.adapters.daemon_bus import DaemonBus
from tests.bus.site_helpers import wait_for

from .conftest import ORDER


def test_a_valid_order_is_accepted_once_durable(bus: DaemonBus, server: Callable[..., HttpAdapter]) -> None:
    a = server()
    caller = TraceContext.new()
    answer = httpx.post(f"{a.url}/orders", json=ORDER, headers={TRACEPARENT: caller.header})
    assert answer.status_code == 202
    message_id = answer.json()["message_id"]
    (msg,) = bus.received("orders")  # on the bus when 202 came back
    assert msg.message_id == message_id and json.loads(msg.body) == ORDER
    assert str(msg.format) == "acme.Order@1;application/json"
    trace = TraceContext.parse(msg.properties[TRACEPARENT])
    assert trace is not None and trace.trace_id == caller.trace_id and trace.span_id != caller.span_id
    assert TraceContext.parse(answer.headers[TRACEPARENT]).trace_id == caller.trace_id  # type: ignore[union-attr]


def test_bodies_are_validated(bus: DaemonBus, server: Callable[..., HttpAdapter]) -> None:
    a = server()
    bad = httpx.post(f"{a.url}/orders", json={**ORDER, "quantity": "three"})
    assert bad.status_code == 422 and "not a valid acme.Order@1" in bad.json()["detail"]
    assert httpx.post(f"{a.url}/orders", content=b"{oops", headers={"Content-Type": "application/json"}).status_code == 400
    assert httpx.post(f"{a.url}/orders", content=b"a,b", headers={"Content-Type": "text/csv"}).status_code == 415
    xml = b"<order><orderNo>X1</orderNo><customer>Ada</customer><quantity>2</quantity></order>"
    assert httpx.post(f"{a.url}/orders.xml", content=xml, headers={"Content-Type": "application/xml"}).status_code == 202
    invalid_xml = httpx.post(f"{a.url}/orders.xml", content=b"<order><orderNo>X2</orderNo></order>",
                             headers={"Content-Type": "application/xml"})
    assert invalid_xml.status_code == 422 and "XSD" in invalid_xml.json()["detail"]
    entity = b'<!DOCTYPE order [<!ENTITY x SYSTEM "file:///etc/passwd">]><order>&x;</order>'
    assert httpx.post(f"{a.url}/orders.xml", content=entity, headers={"Content-Type": "application/xml"}).status_code == 400
    (msg,) = bus.received("orders")
    assert msg.body == xml and msg.format.content_type == "application/xml"


def test_a_format_of_the_sites_schemas_validates_bodies(bus: DaemonBus, server: Callable[..., HttpAdapter]) -> None:
    # test.Reading is declared by the site's `[schemas] paths` only (no schema_file)
    a = server(endpoints={"readings": {"format": "test.Reading@1"}})
    bad = httpx.post(f"{a.url}/readings", json={"meter": "M-1", "value": "ten"})
    assert bad.status_code == 422 and "not a valid test.Reading@1" in bad.json()["detail"]
    assert httpx.post(f"{a.url}/readings", json={"meter": "M-1", "value": 10}).status_code == 202
    (msg,) = bus.received("orders")
    assert json.loads(msg.body) == {"meter": "M-1", "value": 10}


def test_idempotency_key_makes_a_resent_request_one_message(bus: DaemonBus, server: Callable[..., HttpAdapter]) -> None:
    a = server()
    first = httpx.post(f"{a.url}/orders", json=ORDER, headers={"Idempotency-Key": "order-A-1"})
    again = httpx.post(f"{a.url}/orders", json=ORDER, headers={"Idempotency-Key": "order-A-1"})
    other = httpx.post(f"{a.url}/orders", json=ORDER, headers={"Idempotency-Key": "order-A-2"})
    assert first.status_code == again.status_code == other.status_code == 202
    assert first.json()["message_id"] == again.json()["message_id"] != other.json()["message_id"]
    assert again.json()["replayed"] is True
    assert [m.message_id for m in bus.received("orders")] == [first.json()["message_id"], other.json()["message_id"]]


def test_request_reply_answers_synchronously(bus: DaemonBus, server: Callable[..., HttpAdapter]) -> None:
    a = server()
    answer = httpx.post(f"{a.url}/stock", json=ORDER, timeout=30)
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    assert answer.json() == {"orderNo": "A-1", "inStock": True, "operation": "stock"}
    refused = httpx.post(f"{a.url}/stock", json={**ORDER, "customer": "nobody"}, timeout=30)
    assert refused.status_code == 422 and refused.json()["detail"] == "no such customer"


def test_request_reply_times_out_with_504(bus: DaemonBus, server: Callable[..., HttpAdapter]) -> None:
    import threading

    from coupler.bus.api import Adapter, Command, Reply

    release = threading.Event()

    class Slow(Adapter):
        commands = ("request",)

        def on_request(self, command: Command) -> Reply:
            release.wait(20)  # answers only after the caller gave up
            return Reply()

    bus.add(Slow("slow-service", {}, bus.context("slow-service")))
    a = server(endpoints={"slow": {"format": "acme.Order@1", "exchange": "request-reply", "target": "slow-service",
                                   "timeout": 1}})
    try:
        answer = httpx.post(f"{a.url}/slow", json=ORDER, timeout=30)
    finally:
        release.set()
    assert answer.status_code == 504, answer.text


def test_openapi_document_is_generated_from_the_formats(server: Callable[..., HttpAdapter]) -> None:
    a = server(auth="bearer", tokens_env="HTTP_TEST_TOKENS")
    doc = httpx.get(f"{a.url}/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    schema = doc["paths"]["/orders"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["orderNo", "customer", "quantity"]
    assert schema["properties"]["priority"]["enum"] == ["LOW", "HIGH"]
    assert schema["properties"]["quantity"] == {"type": "integer", "format": "int32"}
    assert "202" in doc["paths"]["/orders"]["post"]["responses"] and "200" in doc["paths"]["/stock"]["post"]["responses"]
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


@pytest.fixture(autouse=True)
def _tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_TEST_TOKENS", "s3cret-token-1,s3cret-token-2")


def test_a_wrong_token_is_401_and_never_logged(bus: DaemonBus, server: Callable[..., HttpAdapter],
                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    a = server(auth="bearer", tokens_env="HTTP_TEST_TOKENS")
    wrong = httpx.post(f"{a.url}/orders", json=ORDER, headers={"Authorization": "Bearer guessed-token-xyz"})
    assert wrong.status_code == 401 and wrong.headers["WWW-Authenticate"].startswith("Bearer")
    assert httpx.post(f"{a.url}/orders", json=ORDER).status_code == 401
    assert "guessed-token" not in caplog.text and "s3cret" not in caplog.text
    assert "missing or wrong bearer credentials" in caplog.text
    ok = httpx.post(f"{a.url}/orders", json=ORDER, headers={"Authorization": "Bearer s3cret-token-2"})
    assert ok.status_code == 202 and len(bus.received("orders")) == 1


def test_basic_auth(bus: DaemonBus, server: Callable[..., HttpAdapter], secret_file: Callable[[str, str], str]) -> None:
    a = server(auth="basic", users_file=secret_file("users", "partner:pa55word\n"))
    assert httpx.post(f"{a.url}/orders", json=ORDER, auth=("partner", "wrong")).status_code == 401
    assert httpx.post(f"{a.url}/orders", json=ORDER, auth=("partner", "pa55word")).status_code == 202


def test_mutual_tls(bus: DaemonBus, server: Callable[..., HttpAdapter], tmp_path) -> None:  # type: ignore[no-untyped-def]
    import ssl

    from tests.adapters.pki import make_pki

    pki = make_pki(tmp_path)
    cert, key = pki["server"]
    a = server(tls={"cert": cert, "key": key, "ca": pki["ca"], "client_auth": "required"})
    assert a.url is not None and a.url.startswith("https://")
    ctx = ssl.create_default_context(cafile=pki["ca"])
    with pytest.raises(httpx.HTTPError):  # no client certificate: the handshake fails
        httpx.post(f"{a.url}/orders", json=ORDER, verify=ctx)
    ctx.load_cert_chain(*pki["client"])
    assert httpx.post(f"{a.url}/orders", json=ORDER, verify=ctx).status_code == 202


def test_rate_limit_per_client(bus: DaemonBus, server: Callable[..., HttpAdapter]) -> None:
    a = server(rate_limit=1.0, rate_burst=3)
    with httpx.Client() as client:
        codes = [client.post(f"{a.url}/orders", json=ORDER).status_code for _ in range(6)]
    assert codes[:3] == [202, 202, 202] and 429 in codes[3:]


def test_an_exception_while_handling_one_request_is_contained_to_it(bus: DaemonBus,
                                                                    server: Callable[..., HttpAdapter]) -> None:
    a = server()
    assert a.context is not None
    publish_many = a.context.publish_many

    def buggy(envelopes, channel=None, **kw):  # type: ignore[no-untyped-def]
        if any(b"BUG" in e.body for e in envelopes):
            raise KeyError("a bug of the code")  # not a CouplerError: a defect, not a refusal
        return publish_many(envelopes, channel, **kw)

    a.context.publish_many = buggy  # type: ignore[method-assign]
    bad = httpx.post(f"{a.url}/orders", json={**ORDER, "customer": "BUG"})
    assert bad.status_code == 500 and "kept for the operator" in bad.json()["detail"]
    assert "KeyError" not in bad.text  # no internals to the caller
    dead = bus.transport.dead_letters(kind="invalid")
    assert len(dead) == 1 and "KeyError" in dead[0].reason and dead[0].raw is not None and b"BUG" in dead[0].raw
    assert httpx.post(f"{a.url}/orders", json=ORDER).status_code == 202  # the adapter goes on


def test_idempotency_key_on_request_reply_gives_the_same_answer_without_asking_again(
        bus: DaemonBus, server: Callable[..., HttpAdapter]) -> None:
    a = server()
    first = httpx.post(f"{a.url}/stock", json=ORDER, headers={"Idempotency-Key": "ask-1"}, timeout=30)
    asked = bus.commands_handled("stock")
    again = httpx.post(f"{a.url}/stock", json=ORDER, headers={"Idempotency-Key": "ask-1"}, timeout=30)
    assert first.status_code == again.status_code == 200 and first.json() == again.json()
    assert again.headers["Idempotent-Replayed"] == "true" and bus.commands_handled("stock") == asked
    other = httpx.post(f"{a.url}/stock", json=ORDER, headers={"Idempotency-Key": "ask-2"}, timeout=30)
    assert other.status_code == 200 and bus.commands_handled("stock") == asked + 1


def test_concurrent_requests_are_stored_together_each_with_its_own_outcome(
        bus: DaemonBus, server: Callable[..., HttpAdapter]) -> None:
    """One-way requests arriving together share a commit; each still gets its own answer: its
    message id once durable, or 422 with the reason for the one the bus cannot translate."""
    import asyncio

    a = server()
    assert a.context is not None
    publish_many, sizes = a.context.publish_many, []

    def refusing(envelopes, channel=None, *, reasons=None):  # type: ignore[no-untyped-def]
        if not sizes:  # the first commit lasts until others wait for the next one
            wait_for(lambda: len(envelopes) > 1 or len(a._publisher._waiting) > 1, "requests arriving meanwhile")
        # what the bus's inbound stage does with a body it cannot translate (site.toml mapping)
        sizes.append(len(envelopes))
        bad = [e for e in envelopes if b"UNMAPPABLE" in e.body]
        ids = publish_many([e for e in envelopes if e not in bad], channel)
        out = iter(ids)
        for _ in bad:
            reasons.append("cannot translate acme.Order@1: no customer mapping")
        return [None if e in bad else next(out) for e in envelopes]

    a.context.publish_many = refusing  # type: ignore[method-assign]

    async def post_all() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=30) as client:
            orders = [{**ORDER, "orderNo": f"A-{i}", "customer": "UNMAPPABLE" if i == 7 else "Ada"} for i in range(40)]
            return await asyncio.gather(*(client.post(f"{a.url}/orders", json=o) for o in orders))

    answers = asyncio.run(post_all())
    assert [r.status_code for r in answers] == [422 if i == 7 else 202 for i in range(40)]
    assert answers[7].json()["detail"] == "cannot translate acme.Order@1: no customer mapping"
    ids = {r.json()["message_id"] for i, r in enumerate(answers) if i != 7}
    stored = bus.received("orders", max=100)
    assert {m.message_id for m in stored} == ids and len(stored) == 39
    assert sum(sizes) == 40 and len(sizes) < 40, sizes  # some requests shared a commit


def _xsd_distribution(directory: Path) -> Path:
    """xsd/main/order.xsd including ../common/types.xsd (a distribution's usual layout)."""
    xs = "http://www.w3.org/2001/XMLSchema"
    (directory / "xsd" / "common").mkdir(parents=True)
    (directory / "xsd" / "main").mkdir()
    (directory / "xsd" / "common" / "types.xsd").write_text(
        f'<xs:schema xmlns:xs="{xs}"><xs:simpleType name="code"><xs:restriction base="xs:string">'
        f'<xs:pattern value="[A-Z]-[0-9]+"/></xs:restriction></xs:simpleType></xs:schema>')
    main = directory / "xsd" / "main" / "order.xsd"
    main.write_text(f'<xs:schema xmlns:xs="{xs}"><xs:include schemaLocation="../common/types.xsd"/>'
                    f'<xs:element name="order" type="code"/></xs:schema>')
    return main


def test_an_endpoints_xsd_reads_the_site_folder_and_schema_roots(
        server: Callable[..., HttpAdapter], bus: DaemonBus, tmp_path_factory: pytest.TempPathFactory,
        caplog: pytest.LogCaptureFixture) -> None:
    """In a site (the bus's folder) an endpoint's XSD in xsd/main/ including ../common/ loads;
    kept elsewhere, it is refused until ``schema_roots`` names the distribution; a system file
    stays refused."""
    assert bus.daemon.site is not None
    in_site = _xsd_distribution(bus.daemon.site.path.parent / "h107_dist")
    elsewhere = _xsd_distribution(tmp_path_factory.mktemp("h107_elsewhere"))

    def endpoints(xsd: Path) -> dict[str, Any]:
        return {"o": {"format": "acme.Order@1", "content_types": ["xml"], "xsd": str(xsd)}}

    adapter = server("h107-in-site", endpoints=endpoints(in_site))
    ok = httpx.post(f"{adapter.url}/o", content=b"<order>A-1</order>", headers={"Content-Type": "application/xml"})
    bad = httpx.post(f"{adapter.url}/o", content=b"<order>a1</order>", headers={"Content-Type": "application/xml"})
    assert (ok.status_code, bad.status_code) == (202, 422), (ok.text, bad.text)

    def refused(name: str, xsd: Path) -> str:  # the adapter fails to start (the site degraded), one line logged
        caplog.clear()
        assert getattr(server(name, endpoints=endpoints(xsd)), "url", None) is None
        (line,) = [r.getMessage() for r in caplog.records if "outside the directories" in r.getMessage()]
        assert "\n" not in line and "Traceback" not in line
        return line

    assert "schema_roots" in refused("h107-elsewhere", elsewhere)
    assert server("h107-rooted", endpoints=endpoints(elsewhere), schema_roots=[str(elsewhere.parents[1])]).url
    (in_site.parent / "passwd.xsd").write_text(
        '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:include schemaLocation="/etc/passwd"/></xs:schema>')
    assert "/etc/passwd" in refused("h107-passwd", in_site.parent / "passwd.xsd")
