"""The SOAP Channel Adapter (inbound HTTP server of a WSDL, outbound WSDL client), a ``coupler`` plugin.

Registered through the ``coupler`` entry-point group (``soap = "coupler.adapters.soap"``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coupler.adapters.common.lazy import lazy_exports
from coupler.bus.api import hookimpl

if TYPE_CHECKING:
    from .adapter import SoapAdapter

# the adapter module is imported when a site names the type (or on `from ... import SoapAdapter`)
__getattr__ = lazy_exports(__name__, {"SoapAdapter": "adapter"})

__all__ = ["SoapAdapter"]


@hookimpl
def coupler_adapter_types() -> dict[str, type | str]:
    return {"soap": f"{__name__}.adapter:SoapAdapter"}
