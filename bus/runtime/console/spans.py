"""Optional OpenTelemetry export of the message traces (OTLP over HTTP).

Only when ``[tracing] otlp_endpoint`` is set *and* ``opentelemetry-sdk`` with its OTLP/HTTP
exporter (``opentelemetry-exporter-otlp-proto-http``) is installed: every message a daemon
worker handles (a delivery, a command, a route) becomes a span, child of the envelope's
``traceparent``. Coupler does not depend on OpenTelemetry; without it nothing changes.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coupler.bus.config.loader import SiteConfig
    from coupler.bus.transport.base import Delivery

log = logging.getLogger("coupler.tracing")


class SpanExport:
    """A tracer exporting one span per handled message (see the module's doc)."""

    def __init__(self, provider: Any, tracer: Any, propagator: Any):
        self.provider = provider
        self.tracer = tracer
        self.propagator = propagator

    @classmethod
    def create(cls, site: SiteConfig) -> SpanExport | None:
        endpoint = site.tracing.otlp_endpoint
        if not endpoint:
            return None
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
            from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
        except ImportError:
            log.warning(
                "[tracing] otlp_endpoint is set but opentelemetry-sdk and "
                "opentelemetry-exporter-otlp-proto-http are not installed: no spans are exported"
            )
            return None
        name = site.tracing.service_name or site.name
        provider = TracerProvider(resource=Resource.create({"service.name": name}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        log.info("exporting message spans to %s", endpoint)
        return cls(provider, provider.get_tracer("coupler"), TraceContextTextMapPropagator())

    @contextlib.contextmanager
    def span(self, worker: str, delivery: Delivery) -> Iterator[None]:
        from coupler.canonical.tracecontext import TRACEPARENT

        parent = self.propagator.extract({TRACEPARENT: delivery.envelope.properties.get(TRACEPARENT, "")})
        attributes = {
            "messaging.system": "coupler", "messaging.destination.name": delivery.channel,
            "messaging.message.id": delivery.message_id, "coupler.worker": worker,
            "coupler.attempt": delivery.attempt,
        }
        with self.tracer.start_as_current_span(f"{worker} {delivery.channel}", context=parent, attributes=attributes):
            yield

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.provider.shutdown()
