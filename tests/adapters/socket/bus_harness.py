"""A small real bus for adapter tests: the SQLite transport, adapter contexts and a
command dispatcher loop, as the daemon wires them (without the daemon process).

Commands sent to ``coupler.commands`` are parsed, dispatched to the adapters registered
here that serve their target, and answered with Reply or Fault messages on their return
address, exactly as :mod:`coupler.bus.model.commands` defines them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from coupler.bus.api import Adapter, CommandFault
from coupler.bus.model.commands import fault_envelope, parse_command, reply_envelope
from coupler.bus.runtime.context import BusContext, Statistics
from coupler.bus.runtime.dispatch import Dispatcher, Servant
from coupler.bus.transport.sqlite.transport import SqliteTransport
from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError

COMMANDS = "coupler.commands"


class BusHarness:
    def __init__(self, data_dir: Path, *, reply_timeout: float = 30.0):
        self.data_dir = data_dir
        self.transport = SqliteTransport(data_dir / "store", synchronous="NORMAL", lease_seconds=60).open()
        self.statistics = Statistics()
        self.adapters: dict[str, Adapter] = {}
        self._locks: dict[str, threading.Lock] = {}
        self.reply_timeout = reply_timeout
        self.stopping = threading.Event()
        self.dispatcher = Dispatcher(
            lambda: [Servant(a.name, a.commands, tuple(a.targets)) for a in self.adapters.values()]
        )
        self._threads: list[threading.Thread] = []
        self.handled: list[str] = []

    def context(self, name: str, channel: str | None = None, config: dict[str, Any] | None = None) -> BusContext:
        self.statistics.add(name, "test")
        data = self.data_dir / "adapters" / name
        data.mkdir(parents=True, exist_ok=True)
        return BusContext(
            name=name,
            config=config or {},
            data_dir=data,
            transport=self.transport,
            statistics=self.statistics,
            channel=channel,
            stopping=self.stopping,
            reply_timeout=self.reply_timeout,
        )

    def add(self, adapter: Adapter, *, start: bool = True) -> Adapter:
        self.adapters[adapter.name] = adapter
        self._locks[adapter.name] = threading.Lock()
        if start:
            adapter.start()
        return adapter

    def start_dispatcher(self, workers: int = 4) -> None:
        for i in range(workers):
            t = threading.Thread(target=self._dispatch_loop, name=f"dispatcher-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def respond(self, channel: str, answer: Callable[[Envelope], Envelope], workers: int = 2) -> None:
        """Answer every message of ``channel`` with ``answer(request)`` (a Request-Reply service)."""

        def loop() -> None:
            while not self.stopping.is_set():
                for d in self.transport.receive_wait(channel, "responder", max=20, wait=0.2):
                    reply = answer(d.envelope).replace(correlation_id=d.envelope.message_id)
                    self.transport.send(d.envelope.return_address or "nowhere", reply)
                    self.transport.ack(d)

        for i in range(workers):
            t = threading.Thread(target=loop, name=f"responder-{channel}-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def _dispatch_loop(self) -> None:
        while not self.stopping.is_set():
            batch = self.transport.receive_wait(COMMANDS, "dispatcher", max=20, wait=0.2)
            for delivery in batch:
                env = delivery.envelope
                replies = self._dispatch(env)
                if env.return_address:
                    self.transport.send(env.return_address, replies)
                self.transport.ack(delivery)

    def _dispatch(self, env: Envelope) -> list[Envelope]:
        try:
            command = parse_command(env)
        except CommandFault as fault:
            return [fault_envelope(env, fault.code, fault.message)]
        names = self.dispatcher.recipients(command.name, command.target)
        if not names:
            return [fault_envelope(env, "unserved", self.dispatcher.unserved_reason(command.name, command.target))]
        out = []
        for name in names:
            adapter = self.adapters[name]
            try:
                with self._locks[name]:
                    reply = adapter.handle(command)
                out.append(reply_envelope(command, reply, name, count=len(names)))
                self.handled.append(name)
            except CommandFault as fault:
                out.append(fault_envelope(env, fault.code, fault.message, adapter=name, count=len(names)))
            except CouplerError as exc:
                out.append(fault_envelope(env, "failed", str(exc), adapter=name, count=len(names)))
        return out

    def received(self, channel: str, max: int = 100, wait: float = 2.0) -> list[Envelope]:
        batch = self.transport.receive_wait(channel, "test", max=max, wait=wait)
        self.transport.ack(batch)
        return [d.envelope for d in batch]

    def close(self) -> None:
        for adapter in self.adapters.values():
            adapter.stop()
        self.stopping.set()
        for t in self._threads:
            t.join(5)
        self.transport.close()


def harness_fixture(tmp_path: Path) -> Iterator[BusHarness]:
    """The ``bus`` fixture of the socket and SOAP adapter tests: a harness with its command
    dispatcher running (``bus = pytest.fixture(harness_fixture, name="bus")`` in a conftest)."""
    harness = BusHarness(tmp_path, reply_timeout=10)
    harness.start_dispatcher()
    yield harness
    harness.close()
