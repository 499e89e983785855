"""The http Channel Adapter (REST: an aiohttp server, an httpx client), a ``coupler`` plugin.

Registered through the ``coupler`` entry-point group (``http = "coupler.adapters.http"``).
"""

from __future__ import annotations

from coupler.bus.api import hookimpl

from .adapter import HttpAdapter

__all__ = ["HttpAdapter"]


@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {"http": HttpAdapter}
