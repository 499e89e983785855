"""A trace started at a file-drop inbound adapter arrives in the ``traceparent`` header of the
outbound SOAP call, received by a real HTTP server (aiohttp, on loopback)."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

from aiohttp import web

from coupler.bus.runtime.trace import trace
from coupler.canonical.tracecontext import TraceContext
from tests.bus.site_helpers import running_daemon, wait_for, write_site

WSDL = Path(__file__).resolve().parents[3] / "adapters" / "soap" / "data" / "policy.wsdl"
RESPONSE = b"""<?xml version="1.0"?>
<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>
<p:GetQuoteResponse xmlns:p="urn:acme:policy"><p:policyId>P-7</p:policyId><p:premium>425.00</p:premium>
<p:currency>EUR</p:currency></p:GetQuoteResponse></soap:Body></soap:Envelope>"""


class Service:
    """A SOAP endpoint that records the headers of every call."""

    def __init__(self) -> None:
        self.calls: list[dict[str, str]] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    async def _post(self, request: web.Request) -> web.Response:
        await request.read()
        self.calls.append(dict(request.headers))
        return web.Response(body=RESPONSE, content_type="text/xml")

    async def _start(self) -> str:
        app = web.Application()
        app.router.add_post("/policy", self._post)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"http://127.0.0.1:{port}/policy"

    def start(self) -> str:
        self.thread.start()
        return asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)


def test_the_trace_of_a_dropped_file_reaches_the_soap_service(tmp_path):
    service = Service()
    url = service.start()
    (tmp_path / "in").mkdir()
    site_file = write_site(tmp_path, f"""
[site]
name = "trace-soap"
[[adapters]]
name = "drop-in"
type = "filedrop"
direction = "inbound"
channel = "quotes"
format = "acme.QuoteRequest@1"
[adapters.options]
directory = "{tmp_path / 'in'}"
stable_seconds = 0
poll_interval = 0.1
max_poll_interval = 0.2
content_type = "application/json"

[[adapters]]
name = "policy-out"
type = "soap"
direction = "outbound"
channel = "quotes"
[adapters.options]
mode = "client"
wsdl = "{WSDL}"
address = "{url}"
operation = "GetQuote"
timeout = 10
""")
    try:
        with running_daemon(site_file, plugins=None) as daemon:
            (tmp_path / "in" / "quote-7.json").write_text(json.dumps({"policyId": "P-7", "driverAge": 50}))
            wait_for(lambda: service.calls, "the SOAP call")
            header = service.calls[0].get("traceparent")
            assert header is not None, service.calls[0]
            received = TraceContext.parse(header)
            assert received is not None
            # the trace the file drop started, as the journal recorded it
            hops = wait_for(lambda: [h for h in trace(daemon.transport, "quote-7.json")["hops"] if h["event"] == "acked"],
                            "the delivery acknowledged")
            assert hops[0]["trace_id"] == received.trace_id
            assert trace(daemon.transport, "quote-7.json")["trace_ids"] == [received.trace_id]
    finally:
        service.stop()
