"""A real bus for the file adapter suites: the SQLite store and adapter contexts on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from coupler.bus.runtime.context import BusContext, Statistics
from coupler.bus.transport.sqlite.transport import SqliteTransport
from coupler.canonical import Envelope


class Bus:
    """The embedded store of a test site, and contexts for adapters on it."""

    def __init__(self, root: Path):
        self.root = root
        self.transport = SqliteTransport(root / "store", synchronous="NORMAL").open()
        self.statistics = Statistics()

    def context(self, name: str, channel: str | None = "in", type_name: str = "test") -> BusContext:
        data_dir = self.root / "adapters" / name
        data_dir.mkdir(parents=True, exist_ok=True)
        self.statistics.add(name, type_name)
        return BusContext(
            name=name, config={}, data_dir=data_dir, transport=self.transport,
            statistics=self.statistics, channel=channel,
        )

    def drain(self, channel: str = "in") -> list[Envelope]:
        """Every message on ``channel``, received and acknowledged, in order."""
        out: list[Envelope] = []
        while batch := self.transport.receive(channel, "test", max=100):
            self.transport.ack(batch)
            out.extend(d.envelope for d in batch)
        return out

    def close(self) -> None:
        self.transport.close()


def bus_fixture(tmp_path: Path) -> Iterator[Bus]:
    b = Bus(tmp_path / "site")
    yield b
    b.close()


def adapter(cls: type, name: str, options: dict[str, Any], context: BusContext, **attrs: Any) -> Any:
    """An adapter built the way the daemon builds it."""
    a = cls(name, options, context)
    a.channel = context.channel
    for key, value in attrs.items():
        setattr(a, key, value)
    return a
