from __future__ import annotations

import pytest

from coupler.bus.api import Adapter, Command, CommandFault, Document, Reply
from tests.adapters.daemon_bus import daemon_bus_fixture


class UpperService(Adapter):
    """A system behind the bus: answers request commands with the document upper-cased.

    A document starting with ``REJECT`` is refused as invalid, ``FAIL`` fails.
    """

    type_name = "upper"
    commands = ("request", "ping", "describe")

    def on_request(self, command: Command) -> Reply:
        assert command.document is not None
        body = command.document.body
        if body.startswith(b"REJECT"):
            raise CommandFault("this service refuses rejects", code="invalid")
        if body.startswith(b"FAIL"):
            raise CommandFault("the service broke down", code="failed")
        return Reply(documents=[Document(command.document.format, body.upper())])


bus = pytest.fixture(daemon_bus_fixture, name="bus")


@pytest.fixture
def upper(bus):
    service = UpperService("upper", {}, bus.context("upper"))
    service.targets = ("uppercase",)
    bus.add(service)
    return service
