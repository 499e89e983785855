"""What the example legacy systems share: their log format, serving a network service until
Ctrl-C, and polling a drop box until SIGTERM or Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Callable
from typing import Protocol

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)


class NetworkService(Protocol):
    async def start(self, host: str, port: int) -> tuple[str, int]: ...

    async def close(self) -> None: ...


def serve(make: Callable[[], NetworkService], host: str, port: int, banner: Callable[[str, int], str]) -> int:
    """Start the service ``make()`` builds on ``host:port`` (0: a free port), print
    ``banner(host, port)`` with the address it got, and serve until Ctrl-C."""

    async def run() -> None:
        service = make()
        bound_host, bound_port = await service.start(host, port)
        print(banner(bound_host, bound_port), flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await service.close()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
    return 0


class PollingSystem:
    """A system that processes the files of its inbox each time it is polled."""

    def poll(self) -> int:
        """Process every complete file of the inbox; returns how many."""
        raise NotImplementedError

    def run(self, stop: threading.Event, interval: float = 0.2) -> None:
        while not stop.is_set():
            self.poll()
            stop.wait(interval)


def poll_until_stopped(system: PollingSystem, interval: float, banner: str) -> int:
    """Print ``banner`` and poll ``system`` every ``interval`` seconds until SIGTERM or Ctrl-C."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(banner, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        system.run(stop, interval)
    return 0
