"""The http adapter's tests: a real daemon (tests/adapters/daemon_bus.py: its own command
dispatcher), the adapter's aiohttp server with httpx as the independent client, and an aiohttp
server as the partner its client calls."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from coupler.adapters.http import HttpAdapter
from coupler.bus.api import Adapter, Command, CommandFault, Document, Reply
from coupler.canonical import FormatIndicator
from tests.adapters.daemon_bus import DaemonBus, daemon_bus_fixture

DATA = Path(__file__).parent / "data"
ORDER = {"orderNo": "A-1", "customer": "Ada", "quantity": 3}

bus = pytest.fixture(daemon_bus_fixture, name="bus")


class StockService(Adapter):
    """What answers the request-reply endpoint: the stock of an item (or a fault)."""

    commands = ("request", "ping", "describe")

    def on_request(self, command: Command) -> Reply:
        assert command.document is not None
        order = json.loads(command.document.body)
        if order["customer"] == "nobody":
            raise CommandFault("no such customer", code="invalid")
        answer = {"orderNo": order["orderNo"], "inStock": order["quantity"] <= 10, "operation": command.operation}
        return Reply(documents=[Document(FormatIndicator("acme.Stock", 1, "application/json"), json.dumps(answer).encode())])


@pytest.fixture
def server(bus: DaemonBus) -> Callable[..., HttpAdapter]:
    bus.add(StockService("stock", {}, bus.context("stock")))

    def make(name: str = "orders-in", **options: Any) -> HttpAdapter:
        endpoints = options.pop("endpoints", None) or {
            "orders": {"format": "acme.Order@1", "schema_file": str(DATA / "order.avsc")},
            "orders-xml": {"path": "/orders.xml", "format": "acme.Order@1", "content_types": ["xml"],
                           "xsd": str(DATA / "order.xsd")},
            "stock": {"format": "acme.Order@1", "schema_file": str(DATA / "order.avsc"),
                      "exchange": "request-reply", "target": "stock", "timeout": 5},
        }
        adapter = HttpAdapter(name, {"mode": "server", "endpoints": endpoints, **options}, bus.context(name, "orders"))
        adapter.channel = "orders"
        adapter.direction = "inbound"
        return bus.add(adapter)  # type: ignore[return-value]

    return make


@pytest.fixture
def secret_file(tmp_path: Path) -> Iterator[Callable[[str, str], str]]:
    def write(name: str, text: str) -> str:
        path = tmp_path / name
        path.write_text(text)
        path.chmod(0o600)
        return str(path)

    yield write
