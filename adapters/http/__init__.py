"""The http Channel Adapter (REST: an aiohttp server, an httpx client), a ``coupler`` plugin.

Registered through the ``coupler`` entry-point group (``http = "coupler.adapters.http"``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coupler.adapters.common.lazy import lazy_exports
from coupler.bus.api import hookimpl

if TYPE_CHECKING:
    from .adapter import HttpAdapter

# the adapter module is imported when a site names the type (or on `from ... import HttpAdapter`)
__getattr__ = lazy_exports(__name__, {"HttpAdapter": "adapter"})

__all__ = ["HttpAdapter"]


@hookimpl
def coupler_adapter_types() -> dict[str, type | str]:
    return {"http": f"{__name__}.adapter:HttpAdapter"}
