"""An asyncio event loop on a thread of its own, for adapters driven by synchronous calls
(the socket and SOAP adapters' servers and clients; exported by :mod:`coupler.bus.api`)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from coupler.canonical.serverlog import quiet_accept_errors

T = TypeVar("T")


class LoopThread:
    """Runs an event loop on a daemon thread; :meth:`run` executes a coroutine on it."""

    def __init__(self, name: str):
        self.name = name
        self.loop = asyncio.new_event_loop()
        quiet_accept_errors(self.loop, logging.getLogger("coupler.loop"), name)
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._started = threading.Event()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._started.set)
        self.loop.run_forever()

    def start(self) -> LoopThread:
        self._thread.start()
        self._started.wait()
        return self

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (from any other thread)."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def stop(self) -> None:
        if not self._thread.is_alive():
            self.loop.close()
            return

        async def shutdown() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            self.run(shutdown(), timeout=10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
            if not self._thread.is_alive():
                self.loop.close()
