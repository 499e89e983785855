"""A trivial Coupler adapter plugin: a ``hello`` adapter that answers ``ping`` and
``describe`` and greets whoever sends it a document.

Install it next to Coupler (``pip install ./examples/plugin-hello``) and it shows up in
``coupler plugins``; a site can then declare ``[[adapters]] type = "hello"``.
"""

from __future__ import annotations

from typing import Any

from coupler.bus.api import Adapter, hookimpl


class HelloAdapter(Adapter):
    """Replies to every ``send`` with a greeting for the body's text."""

    type_name = "hello"
    commands = ("send", "ping", "describe")
    directions = ("outbound",)

    def greet(self, body: bytes) -> bytes:
        greeting = self.options.get("greeting", "Hello")
        return f"{greeting}, {body.decode('utf-8', 'replace')}!".encode()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "greeting": self.options.get("greeting", "Hello")}


@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {"hello": HelloAdapter}
