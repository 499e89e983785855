"""The thin, stable surface adapters program against.

Adapters import this module and ``coupler.canonical`` / ``coupler.translators`` only, never
the daemon or a transport (DESIGN.md). An adapter type is a subclass of :class:`Adapter`
contributed through the ``coupler_adapter_types`` hook.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from coupler.canonical import Envelope

#: the common command set (DESIGN.md)
COMMON_COMMANDS = ("send", "fetch", "request", "ping", "describe")


class AdapterContext(Protocol):
    """What the bus gives an adapter: publish, reply, request, logger, config, data dir."""

    name: str
    config: dict[str, Any]

    def publish(self, envelope: Envelope, channel: str | None = None) -> None: ...


class Adapter:
    """Base class of Channel Adapters.

    ``commands`` are the common commands it serves; ``directions`` is a subset of
    ``{"inbound", "outbound"}``.
    """

    type_name: ClassVar[str] = ""
    commands: ClassVar[tuple[str, ...]] = ("ping", "describe")
    directions: ClassVar[tuple[str, ...]] = ()

    def __init__(self, name: str, options: dict[str, Any], context: AdapterContext | None = None):
        self.name = name
        self.options = dict(options)
        self.context = context

    def describe(self) -> dict[str, Any]:
        """What this adapter can do (the ``describe`` command's reply)."""
        return {
            "name": self.name,
            "type": self.type_name,
            "commands": list(self.commands),
            "directions": list(self.directions),
        }
