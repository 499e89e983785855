"""OpenTelemetry export: with ``opentelemetry-sdk`` and its OTLP/HTTP exporter installed (the
``otlp`` extra; ``make test`` installs them through the dev extra) and ``[tracing]
otlp_endpoint`` set, the daemon exports a span per handled message, in the message's trace,
to a real OTLP/HTTP receiver: an HTTP server that decodes each request body with
opentelemetry-proto's ``ExportTraceServiceRequest`` (the collector's own message type)."""

from __future__ import annotations

import asyncio
import json
import threading

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from coupler.bus.runtime.trace import trace
from tests.bus.runtime.console.helpers import console_site
from tests.bus.site_helpers import running_daemon, wait_for


class Collector:
    """An OTLP/HTTP endpoint keeping the ExportTraceServiceRequest bodies it receives."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    async def _post(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.read())
        return web.Response(body=b"", content_type="application/x-protobuf")

    async def _start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/traces", self._post)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1/traces"  # type: ignore[union-attr]

    def start(self) -> str:
        return asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)

    def spans(self) -> list:
        out = []
        for body in self.bodies:
            req = ExportTraceServiceRequest()
            req.ParseFromString(body)
            out += [s for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]
        return out


def test_spans_of_handled_messages_reach_the_collector(tmp_path):
    collector = Collector()
    url = collector.start()
    site_file = console_site(tmp_path, extra="")
    site_file.write_text(site_file.read_text() + f'\n[tracing]\notlp_endpoint = "{url}"\nservice_name = "acme-site"\n')
    with running_daemon(site_file, plugins=None) as daemon:
        (tmp_path / "in" / "order-1.json").write_text(json.dumps({"order": 1}))
        wait_for(lambda: (tmp_path / "out" / "order-1.json").exists(), "the file delivered")
        [trace_id] = trace(daemon.transport, "order-1.json")["trace_ids"]
    spans = wait_for(lambda: collector.spans(), "spans exported (the daemon flushes them when it stops)")
    delivered = [s for s in spans if s.name == "deliver:drop-out orders"]
    assert delivered and delivered[0].trace_id.hex() == trace_id
