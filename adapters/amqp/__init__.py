"""The amqp Channel Adapter (Messaging Bridge to other applications' queues, and between
Coupler sites), a ``coupler`` plugin.

Registered through the ``coupler`` entry-point group (``amqp-bridge = "coupler.adapters.amqp"``;
the entry point ``amqp`` is Coupler's own broker transport).
"""

from __future__ import annotations

from coupler.bus.api import hookimpl

from .adapter import AmqpAdapter

__all__ = ["AmqpAdapter"]


@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {"amqp": AmqpAdapter}
