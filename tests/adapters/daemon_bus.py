"""The bus of the socket and SOAP adapter tests: a real daemon (``Daemon.start()`` of a site
with no adapters of its own) running the adapters a test builds, through its own workers:
its command dispatcher (faults for unserved, invalid and paused commands), each adapter's
command worker (outbound translation, replies, faults) and, for outbound adapters, the
delivery worker of their channel. Nothing of the daemon is copied here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from coupler.bus.api import Adapter
from coupler.bus.runtime.context import BusContext
from coupler.bus.runtime.daemon import Daemon
from coupler.bus.transport.base import Transport
from coupler.canonical import Envelope
from tests.bus.site_helpers import make_daemon, write_reading_site

SITE = """
[site]
name = "adapter-tests"
data_dir = "data"

[commands]
reply_timeout_seconds = {reply_timeout}

[store]
synchronous = "NORMAL"
lease_seconds = 60

[schemas]
paths = ["schemas"]
"""


class DaemonBus:
    """A started daemon and what the adapter tests do with it (its site declares ``[schemas]
    paths``: the ``test.Reading`` schemas are the site's own)."""

    def __init__(self, directory: Path, *, reply_timeout: float = 10.0):
        self.daemon: Daemon = make_daemon(write_reading_site(directory, SITE.format(reply_timeout=reply_timeout)))
        self.daemon.start()
        assert self.daemon.transport is not None
        self.transport: Transport = self.daemon.transport
        self._stopping = self.daemon.stopping

    def context(self, name: str, channel: str | None = None, config: dict[str, Any] | None = None) -> BusContext:
        return self.daemon.adapter_runtime.context_for(name, channel, config)

    def add(self, adapter: Adapter, *, start: bool = True) -> Adapter:
        """Run ``adapter`` in the daemon (started, its workers spawned) and return it."""
        assert isinstance(adapter.context, BusContext)
        self.daemon.adapter_runtime.attach(adapter, adapter.context, targets=tuple(adapter.targets or ()), start=start)
        return adapter

    def commands_handled(self, name: str) -> int:
        """How many commands adapter ``name`` took (the daemon's own counter)."""
        return self.daemon.statistics.adapters[name].received

    def respond(self, channel: str, answer: Callable[[Envelope], Envelope], workers: int = 2) -> None:
        """A Request-Reply service behind the bus (the test's peer): answers every message of
        ``channel`` with ``answer(request)`` on its return address."""
        import threading

        def loop() -> None:
            while not self._stopping.is_set():
                for d in self.transport.receive_wait(channel, "responder", max=20, wait=0.2):
                    reply = answer(d.envelope).replace(correlation_id=d.envelope.message_id)
                    self.transport.send(d.envelope.return_address or "nowhere", reply)
                    self.transport.ack(d)

        for i in range(workers):
            threading.Thread(target=loop, name=f"responder-{channel}-{i}", daemon=True).start()

    def received(self, channel: str, max: int = 100, wait: float = 2.0) -> list[Envelope]:
        batch = self.transport.receive_wait(channel, "test", max=max, wait=wait)
        self.transport.ack(batch)
        return [d.envelope for d in batch]

    def close(self) -> None:
        self.daemon.shutdown()


def daemon_bus_fixture(tmp_path: Path) -> Iterator[DaemonBus]:
    """The ``bus`` fixture (``bus = pytest.fixture(daemon_bus_fixture, name="bus")``)."""
    bus = DaemonBus(tmp_path)
    try:
        yield bus
    finally:
        bus.close()
