"""The socket Channel Adapter (TCP/TLS, server or client), a ``coupler`` plugin.

Registered through the ``coupler`` entry-point group (``socket = "coupler.adapters.socket"``).
Its framings (length prefix, delimiter, fixed length, STX/ETX, MLLP) are stream codecs of
:mod:`coupler.translators.framing`.
"""

from __future__ import annotations

from coupler.bus.api import hookimpl

from .adapter import SocketAdapter

__all__ = ["SocketAdapter"]



@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {"socket": SocketAdapter}
