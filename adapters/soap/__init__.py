"""The SOAP Channel Adapter (inbound HTTP server of a WSDL, outbound WSDL client), a ``coupler`` plugin."""

from __future__ import annotations

from coupler.bus.hookspecs import hookimpl


@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {}
