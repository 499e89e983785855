"""The socket Channel Adapter (TCP/TLS, server or client), a ``coupler`` plugin.

Registered through the ``coupler`` entry-point group (``socket = "coupler.adapters.socket"``).
"""

from __future__ import annotations

from coupler.bus.hookspecs import hookimpl

from .adapter import SocketAdapter
from .framing import (
    Bracketed,
    Delimited,
    FixedLength,
    FrameDecoder,
    FrameError,
    FrameTooLarge,
    Framing,
    LengthPrefixed,
    mllp,
    stx_etx,
)

__all__ = [
    "Bracketed",
    "Delimited",
    "FixedLength",
    "FrameDecoder",
    "FrameError",
    "FrameTooLarge",
    "Framing",
    "LengthPrefixed",
    "SocketAdapter",
    "mllp",
    "stx_etx",
]


@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {"socket": SocketAdapter}
