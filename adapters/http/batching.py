"""One-way requests stored together: a group commit at the adapter.

Each request of a one-way endpoint waits for its message to be durable before its ``202``.
Stored one by one, every request was a transaction of its own, handed to a thread of its own;
here the requests that arrive while a batch is being stored wait together and go in the next
batch, in one transaction of the store (``context.publish_many``: one commit, one disk sync,
one hand-off to a thread for all of them). Each request still gets its own outcome: its
message id, :class:`InvalidMessage` with the reason when the bus cannot translate its body
(that message alone is in the Invalid Message Channel), or the error of the store, which
stored none of its batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from coupler.bus.api import AdapterContext, InvalidMessage
from coupler.canonical import Envelope

Waiting = tuple[Envelope, "str | None", "asyncio.Future[str]"]


class BatchPublisher:
    """Publishes envelopes for the coroutines of one event loop, a batch at a time."""

    def __init__(self, context: AdapterContext, executor: Executor, max_batch: int = 500):
        self.context = context
        self.executor = executor
        self.max_batch = max_batch
        self._waiting: list[Waiting] = []
        self._storing: asyncio.Task[None] | None = None
        #: batches stored and messages in them (the mean batch size shows the grouping)
        self.batches = 0
        self.messages = 0

    async def publish(self, envelope: Envelope, channel: str | None) -> str:
        """The message id once ``envelope`` is durable on ``channel`` (None: the adapter's)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[str] = loop.create_future()
        self._waiting.append((envelope, channel, done))
        if self._storing is None:
            self._storing = loop.create_task(self._store_waiting())
        return await done

    async def _store_waiting(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._waiting:
                batch, self._waiting = self._waiting[:self.max_batch], self._waiting[self.max_batch:]
                try:
                    outcomes = await loop.run_in_executor(self.executor, self._store, batch)
                except asyncio.CancelledError:  # the loop is stopping: nobody is answered any more
                    for _, _, done in batch + self._waiting:
                        done.cancel()
                    self._waiting = []
                    raise
                except Exception as exc:  # noqa: BLE001 - the executor refused: each request fails with it
                    outcomes = [exc] * len(batch)
                for (_, _, done), outcome in zip(batch, outcomes, strict=True):
                    if done.done():  # the caller went away (its handler was cancelled)
                        continue
                    if isinstance(outcome, BaseException):
                        done.set_exception(outcome)
                    else:
                        done.set_result(outcome)
        finally:
            self._storing = None

    def _store(self, batch: list[Waiting]) -> list[str | BaseException]:
        """On an executor thread: one ``publish_many`` per run of requests to one channel."""
        out: list[str | BaseException] = []
        start = 0
        while start < len(batch):
            channel = batch[start][1]
            end = start
            while end < len(batch) and batch[end][1] == channel:
                end += 1
            out += self._store_one_channel([e for e, _, _ in batch[start:end]], channel)
            start = end
        self.batches += 1
        self.messages += len(batch)
        return out

    def _store_one_channel(self, envelopes: list[Envelope], channel: str | None) -> list[str | BaseException]:
        publish_many: Callable[..., list[str | None]] | None = getattr(self.context, "publish_many", None)
        if publish_many is None:  # a context without batches: one by one
            return [self._store_alone(e, channel) for e in envelopes]
        reasons: list[str] = []
        try:
            ids = publish_many(envelopes, channel, reasons=reasons)
        except Exception as exc:  # noqa: BLE001 - none of them is stored: each request answers with it
            return [exc] * len(envelopes)
        refused = iter(reasons)
        return [i if i is not None else InvalidMessage(next(refused, "the bus cannot translate the message"))
                for i in ids]

    def _store_alone(self, envelope: Envelope, channel: str | None) -> Any:
        try:
            return self.context.publish(envelope, channel)
        except Exception as exc:  # noqa: BLE001 - this request's outcome
            return exc
