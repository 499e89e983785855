"""The SOAP Channel Adapter (inbound HTTP server of a WSDL, outbound WSDL client), a ``coupler`` plugin.

Registered through the ``coupler`` entry-point group (``soap = "coupler.adapters.soap"``).
"""

from __future__ import annotations

import pluggy

from .adapter import SoapAdapter

__all__ = ["SoapAdapter"]

#: the marker of ``coupler`` hook implementations (adapters import no bus module but the API)
hookimpl = pluggy.HookimplMarker("coupler")


@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {"soap": SoapAdapter}
