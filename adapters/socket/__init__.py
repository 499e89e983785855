"""The socket Channel Adapter (TCP/TLS, server or client), a ``coupler`` plugin.

Registered through the ``coupler`` entry-point group (``socket = "coupler.adapters.socket"``).
Its framings (length prefix, delimiter, fixed length, STX/ETX, MLLP) are stream codecs of
:mod:`coupler.translators.framing`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coupler.adapters.common.lazy import lazy_exports
from coupler.bus.api import hookimpl

if TYPE_CHECKING:
    from .adapter import SocketAdapter

# the adapter module is imported when a site names the type (or on `from ... import SocketAdapter`)
__getattr__ = lazy_exports(__name__, {"SocketAdapter": "adapter"})

__all__ = ["SocketAdapter"]


@hookimpl
def coupler_adapter_types() -> dict[str, type | str]:
    return {"socket": f"{__name__}.adapter:SocketAdapter"}
