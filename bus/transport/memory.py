"""The in-memory transport (``[store] type = "memory"``): for plugin authors' tests.

Everything lives in this process's memory (nothing survives the process; closing and
reopening the transport object keeps its messages). One lock serialises transactions; each
change is undone in reverse order when a transaction raises. It is also the smallest complete
example of a transport: :class:`MemoryTx` is the storage interface of
:mod:`coupler.bus.transport.storage`, and the contract suite
(:mod:`coupler.bus.testing.contract`) runs against it like against the others.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import Any

from coupler.bus.plugins.hookspecs import TransportType, hookimpl
from coupler.bus.transport.base import DeadKind, JournalEntry, JournalQuery
from coupler.bus.transport.storage import Buried, JournalRow, StorageTransport, StorageTx, Stored


class MemoryTransport(StorageTransport):
    """Channels, dead letters, journal and state in dictionaries of this object."""

    config_ttl = 0.0  # nothing to save: read the configurations every time

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.messages: dict[str, dict[int, Stored]] = {}
        self.dead: dict[int, Buried] = {}
        self.rows: list[tuple[JournalEntry, str | None]] = []
        self.values: dict[tuple[str, str], tuple[bytes, float | None]] = {}
        self.ids = itertools.count(1)

    def open(self) -> MemoryTransport:
        return self

    def close(self) -> None:
        pass

    @contextmanager
    def begin(self) -> Iterator[MemoryTx]:
        with self.lock:
            tx = MemoryTx(self)
            try:
                yield tx
            except BaseException:
                for undo in reversed(tx.undo):
                    undo()
                raise

    def committed(self, tx: Any) -> None:
        if tx.sent_to:
            with self.changed:
                self.changed.notify_all()

    def wait_for(self, channel: str, timeout: float) -> None:
        with self.changed:
            self.changed.wait(timeout)


class MemoryTx(StorageTx):
    """One transaction of a :class:`MemoryTransport` (its lock held), with its undo log."""

    def __init__(self, t: MemoryTransport):
        self.t = t
        self.undo: list[Callable[[], object]] = []

    def put(self, messages: list[Stored]) -> None:
        for m in messages:
            m.tag = next(self.t.ids)
            queue = self.t.messages.setdefault(m.channel, {})
            queue[m.tag] = m
            self.undo.append(partial(queue.pop, m.tag, None))

    def scan(self, channel: str, *, ready_at: float | None, after: tuple[float, int] | None = None,
             limit: int = 100) -> list[Stored]:
        found = sorted(
            (m for m in self.t.messages.get(channel, {}).values()
             if (ready_at is None or m.visible_at <= ready_at) and (after is None or (m.visible_at, m.tag) > after)),
            key=lambda m: (m.visible_at, m.tag),
        )
        return [replace(m) for m in found[:limit]]

    def update(self, message: Stored, *, token: int | None, visible_at: float, attempts: int) -> bool:
        queue = self.t.messages.get(message.channel, {})
        m = queue.get(message.tag)
        if m is None or m.token != message.token:
            return False
        queue[m.tag] = replace(m, token=token, visible_at=visible_at, attempts=attempts)
        self.undo.append(partial(queue.__setitem__, m.tag, m))
        return True

    def remove(self, channel: str, tags: list[tuple[int, int | None]]) -> list[Stored]:
        queue = self.t.messages.get(channel, {})
        gone = []
        for tag, token in tags:
            m = queue.get(tag)
            if m is not None and (token is None or m.token == token):
                del queue[tag]
                self.undo.append(partial(queue.__setitem__, m.tag, m))
                gone.append(m)
        return gone

    def channels(self) -> set[str]:
        return {name for name, queue in self.t.messages.items() if queue}

    def bury(self, dead: Buried) -> int:
        dead = replace(dead, id=next(self.t.ids))
        self.t.dead[dead.id] = dead
        self.undo.append(partial(self.t.dead.pop, dead.id, None))
        return dead.id

    def buried(self, *, id: int | None = None, queue: str | None = None, kind: DeadKind | None = None,
               limit: int = 100, delete: bool = False) -> list[Buried]:
        found = [b for b in self.t.dead.values()
                 if (id is None or b.id == id) and (queue is None or b.queue == queue) and (kind is None or b.kind == kind)]
        found = sorted(found, key=lambda b: -b.id)[:limit]
        for b in found if delete else ():
            del self.t.dead[b.id]
            self.undo.append(partial(self.t.dead.__setitem__, b.id, b))
        return found

    def append(self, rows: list[JournalRow]) -> None:
        size = len(self.t.rows)
        for r in rows:
            entry = JournalEntry(next(self.t.ids), datetime.fromtimestamp(r.at, UTC), r.channel, r.message_id,
                                 r.event, r.detail, r.trace_id)
            self.t.rows.append((entry, r.keys))
        self.undo.append(partial(self.t.rows.__delitem__, slice(size, None)))

    def query_journal(self, query: JournalQuery) -> list[JournalEntry]:
        return [e for e, keys in self.t.rows if query.matches(e, keys)][: query.limit]

    def state(self, scope: str, keys: Iterable[str] | None = None, *, lock: bool = False) -> dict[str, bytes]:
        now = self.t.clock()
        if keys is None:
            items = [(k, v) for (s, k), v in self.t.values.items() if s == scope]
        else:
            items = [(k, self.t.values[(scope, k)]) for k in keys if (scope, k) in self.t.values]
        return {k: value for k, (value, expires) in items if expires is None or expires > now}

    def put_state(self, scope: str, values: dict[str, bytes | None], *, expires_at: float | None = None,
                  only_new: bool = False) -> set[str]:
        written = set()
        present = self.state(scope, values) if only_new else {}
        for key, value in values.items():
            if key in present:
                continue
            old = self.t.values.get((scope, key))
            if value is None:
                self.t.values.pop((scope, key), None)
            else:
                self.t.values[(scope, key)] = (value, expires_at)
            k = (scope, key)
            self.undo.append(partial(self.t.values.__setitem__, k, old) if old is not None
                             else partial(self.t.values.pop, k, None))
            written.add(key)
        return written

    def forget(self, journal_before: float) -> int:
        keep = [(e, k) for e, k in self.t.rows if e.at.timestamp() >= journal_before]
        gone = len(self.t.rows) - len(keep)
        old = self.t.rows
        self.t.rows = keep
        self.undo.append(partial(setattr, self.t, "rows", old))
        return gone


@hookimpl
def coupler_transport_types() -> dict[str, TransportType]:
    """Transport type ``memory`` (a site's messages live as long as its daemon)."""
    return {"memory": TransportType(lambda site, _options: MemoryTransport(**site.store.transport_settings()))}
