"""The SOAP Channel Adapter (inbound HTTP server of a WSDL, outbound WSDL client), a ``coupler`` plugin.

Registered through the ``coupler`` entry-point group (``soap = "coupler.adapters.soap"``).
"""

from __future__ import annotations

from coupler.bus.api import hookimpl

from .adapter import SoapAdapter

__all__ = ["SoapAdapter"]



@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {"soap": SoapAdapter}
