"""A small adapter plugin for the bus tests (``COUPLER_EXTRA_PLUGINS=tests.bus.plugin_echo``).

``echo`` serves every common command: ``send``/``deliver`` forwards the document to the
channel named by the option ``forward_to`` (after ``delay`` seconds); ``fetch`` returns
``count`` documents; ``request`` answers with the document's body upper-cased; ``ping`` and
``describe`` come from the base class. A document with the property ``fail`` makes it raise.
``pingonly`` serves ``ping`` and ``describe`` only.
"""

from __future__ import annotations

import time

from coupler.bus.api import Adapter, Command, CommandFault, Document, Reply
from coupler.bus.plugins.hookspecs import hookimpl
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError


class EchoAdapter(Adapter):
    type_name = "echo"
    commands = ("send", "fetch", "request", "ping", "describe")
    directions = ("inbound", "outbound")

    def start(self) -> None:
        if self.options.get("fail_start"):
            raise CouplerError("told to fail at start", where=f"adapter {self.name}")
        self.started = True

    def stop(self) -> None:
        self.started = False

    def deliver(self, envelope: Envelope) -> None:
        time.sleep(float(self.options.get("delay", 0)))
        if "fail" in envelope.properties:
            raise RuntimeError(f"told to fail: {envelope.properties['fail']}")
        assert self.context is not None
        self.context.publish(envelope.replace(properties={**envelope.properties, "echoed-by": self.name}),
                             self.options.get("forward_to", "echo.out"))

    def on_fetch(self, command: Command) -> Reply:
        n = min(int(self.options.get("count", 2)), command.max or 1000)
        docs = [Document(FormatIndicator.parse("test.Text@1;text/plain"), f"doc {i}".encode()) for i in range(n)]
        return Reply(documents=docs, details={"count": str(n)})

    def on_request(self, command: Command) -> Reply:
        assert command.document is not None
        if "fail" in command.document.properties:
            raise CommandFault("the legacy system said no", code="failed")
        doc = Document(command.document.format, command.document.body.upper())
        return Reply(documents=[doc], details={"operation": command.operation})


class PingOnlyAdapter(Adapter):
    type_name = "pingonly"
    directions = ("outbound",)


@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {"echo": EchoAdapter, "pingonly": PingOnlyAdapter}
