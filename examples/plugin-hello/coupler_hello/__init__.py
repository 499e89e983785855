"""A minimal Coupler adapter plugin, the starting point of docs/plugins.md: a ``hello``
adapter that greets whoever sends it a document.

* ``coupler send --command send --target NAME FILE`` gets the greeting back as a reply
  document (``on_send``);
* a document on the adapter's channel (an outbound adapter: ``direction = "outbound"``,
  ``channel = "..."``) is greeted into ``greetings.txt`` in the ``directory`` option
  (``deliver``, the one method an outbound adapter needs).

Install it next to Coupler (``pip install ./examples/plugin-hello``) and it shows up in
``coupler plugins``; a site then declares it::

    [[adapters]]
    name = "hi"
    type = "hello"
    direction = "outbound"
    channel = "greetings"
    options = { greeting = "Hello", directory = "out" }
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from coupler.bus.api import Adapter, Command, Document, OptionsModel, Reply, Str, hookimpl, option
from coupler.canonical import Envelope, FormatIndicator

GREETING_FORMAT = FormatIndicator("hello.Greeting", 1, "text/plain")


class HelloOptions(OptionsModel):
    """``[adapters.options]`` of ``type = "hello"``, checked when the site loads."""

    greeting: Str = option("The word before the name.", default="Hello")
    directory: Str | None = option("Where greetings.txt is written (relative: to site.toml's folder).",
                                   default=None)


class HelloAdapter(Adapter):
    """Greets the text of every document it is sent or delivered."""

    type_name = "hello"
    commands = ("send", "ping", "describe")
    directions = ("outbound",)
    #: the daemon makes a relative ``directory`` absolute against site.toml's folder
    path_options = ("directory",)
    #: the site loader checks the options against it (unknown keys, types) with the key path
    options_model = HelloOptions

    def __init__(self, name: str, options: dict[str, Any], context: Any = None):
        super().__init__(name, options, context)
        settings: HelloOptions = self.parse_options(name, self.options)
        self.greeting = settings.greeting
        self.directory = Path(settings.directory) if settings.directory is not None else None

    def start(self) -> None:
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)

    def greet(self, body: bytes) -> bytes:
        return f"{self.greeting}, {body.decode('utf-8', 'replace').strip()}!".encode()

    def on_send(self, command: Command) -> Reply:
        """``send``: deliver the document, and answer with the greeting."""
        assert command.document is not None  # the bus only sends `send` with a document
        self.deliver(command.document.to_envelope(origin=command.envelope.origin))
        greeting = Document(GREETING_FORMAT, self.greet(command.document.body))
        return Reply(documents=[greeting], details={"status": "greeted"})

    def deliver(self, envelope: Envelope) -> None:
        """Outbound: one document from the channel; raising here has it redelivered."""
        if self.directory is None:
            return
        with open(self.directory / "greetings.txt", "ab") as out:
            out.write(self.greet(envelope.body) + b"\n")
            out.flush()
            os.fsync(out.fileno())

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "greeting": self.greeting}


@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {"hello": HelloAdapter}
