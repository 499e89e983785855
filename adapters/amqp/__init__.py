"""The amqp Channel Adapter (Messaging Bridge to other applications' queues, and between
Coupler sites), a ``coupler`` plugin.

Registered through the ``coupler`` entry-point group (``amqp-bridge = "coupler.adapters.amqp"``;
the entry point ``amqp`` is Coupler's own broker transport).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coupler.adapters.common.lazy import lazy_exports
from coupler.bus.api import hookimpl

if TYPE_CHECKING:
    from .adapter import AmqpAdapter

# the adapter module is imported when a site names the type (or on `from ... import AmqpAdapter`)
__getattr__ = lazy_exports(__name__, {"AmqpAdapter": "adapter"})

__all__ = ["AmqpAdapter"]


@hookimpl
def coupler_adapter_types() -> dict[str, type | str]:
    return {"amqp": f"{__name__}.adapter:AmqpAdapter"}
