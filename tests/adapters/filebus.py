"""A real bus for the file adapter suites: :class:`coupler.bus.testing.EmbeddedBus` (the public
helper plugin authors use), with the defaults these suites rely on."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from coupler.bus.runtime.context import BusContext, build_adapter
from coupler.bus.testing import EmbeddedBus
from coupler.canonical import Envelope


class Bus(EmbeddedBus):
    """The embedded store of a test site; adapter contexts publish to ``in`` by default."""

    def context(self, name: str, channel: str | None = "in", type_name: str = "test",
                config: dict[str, Any] | None = None) -> BusContext:
        return super().context(name, channel, type_name, config)

    def drain(self, channel: str = "in") -> list[Envelope]:
        """Every message on ``channel``, received and acknowledged, in order."""
        return self.published(channel)


def bus_fixture(tmp_path: Path) -> Iterator[Bus]:
    b = Bus(tmp_path / "site")
    yield b
    b.close()


def adapter(cls: type, name: str, options: dict[str, Any], context: BusContext, **attrs: Any) -> Any:
    """An adapter built the way the daemon builds it (not started)."""
    return build_adapter(
        cls, name, options, context, direction=attrs.pop("direction", "both"),
        targets=attrs.pop("targets", ()), identity=attrs.pop("identity", None),
        channel=context.channel, format=attrs.pop("format", None),
    )


def deliver_in_thread(outbound: Any, message: Envelope) -> tuple[threading.Thread, list[BaseException]]:
    """``outbound.deliver(message)`` started in a thread of its own (so that the test can freeze
    or kill the server meanwhile), and the list its exception, if any, is put into."""
    errors: list[BaseException] = []

    def deliver() -> None:
        try:
            outbound.deliver(message)
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            errors.append(exc)

    t = threading.Thread(target=deliver)
    t.start()
    return t, errors
