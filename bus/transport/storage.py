"""A transport in a few hundred lines: the storage interface and the behaviour written once.

A new transport subclasses :class:`StorageTransport` and gives it a *storage*: a way to open
a transaction (:meth:`StorageTransport.begin`) yielding a :class:`StorageTx`, whose ten
operations are all a store has to do:

===================  ==========================================================================
``put``              store messages on a channel (assigns each :class:`Stored` its ``tag``)
``scan``             a channel's messages in delivery order (ready ones only, locked, or all)
``update``           lease or requeue one message, if its lease token is still the one read
``remove``           delete messages (acknowledged, dead-lettered, purged)
``bury``             add a dead letter (:class:`Buried`); ``buried`` lists them (and deletes
                     them, ``delete=True``: replayed, purged)
``append``           the journal entries of the transaction
``query_journal``    the journal entries a :class:`~coupler.bus.transport.base.JournalQuery` selects
``state``/``put_state``  the keyed state table (below)
===================  ==========================================================================

The per-channel counters are kept in the keyed state too (``count`` and ``counters``, scope
``counter``), unless a store overrides them (the ``postgres`` transport adds them up in
memory and writes them to its shared ``counters`` table once a second).

Everything else is here, once, on top of :mod:`coupler.bus.transport.policy`: topics and
durable subscriptions (with selectors), the Message History hops, leases and attempt counts,
nack and backoff, expiry, dead-letter routing, the Invalid Message Channel, replay, claim
checks of large bodies, idempotency keys and the replay cache, counters, statistics, the
Application Repository, housekeeping. The in-memory transport
(:mod:`coupler.bus.transport.memory`) is the smallest complete example; the ``postgres``
transport (:mod:`coupler.bus.transport.postgres`) the one for production. The embedded
SQLite and the RabbitMQ transports implement :class:`~coupler.bus.transport.base.Transport`
directly: they override what is native to them (SQLite's group commit, the broker's queues).

The keyed state table
---------------------
``state(scope, keys, lock=...)`` and ``put_state(scope, values, ...)`` read and write small
values (bytes) under ``(scope, key)``, in the same transaction as the message operations.
The transport keeps channel configurations (scope ``channel``), subscriptions
(``subscription``), idempotency keys (``seen:<consumer>``) and the claims on them of
outbound deliveries (``claim:<consumer>``, until the delivery's lease ends), the replay cache
(``remember:<scope>``), claim-checked bodies (``claim``), application identities
(``identity``) and, by default, the counters (``counter``) there. Stateful steps (aggregation groups, resequencer buffers, process
instances) use it through :meth:`StorageTransaction.get_state` /
:meth:`StorageTransaction.put_state` inside ``transport.transaction()``: a state change and
the acknowledgement of the message that caused it commit together or not at all, and
``lock=True`` keeps other daemons from changing the same keys until the commit (PostgreSQL:
``SELECT ... FOR UPDATE``). Values written with ``expires_at`` are gone after that time;
``put_state(..., only_new=True)`` writes only keys that are absent (or expired) and returns
those it wrote, atomically across processes.
"""

from __future__ import annotations

import abc
import json
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

from coupler.bus.model.backoff import BackoffPolicy
from coupler.bus.model.identities import Identity, IdentityError, IdentityRepository, Registration
from coupler.bus.model.selectors import Selector, as_selector
from coupler.bus.transport import policy
from coupler.bus.transport.base import (
    ChannelConfig,
    ChannelStats,
    ClaimOutcome,
    DeadKind,
    DeadLetter,
    Delivery,
    JournalEntry,
    JournalQuery,
    LeaseLostError,
    TransactionOps,
    Transport,
    TransportError,
    check_channel_name,
    check_subscription_name,
    declared_config,
    envelope_list,
    error_text,
    not_replayable,
    purged_dead_letters_detail,
    replacement,
    unknown_dead_letter,
)
from coupler.bus.transport.codec import decode, encode, encode_many
from coupler.canonical import Envelope
from coupler.canonical.envelope import HistoryEntry
from coupler.canonical.errors import CouplerError
from coupler.canonical.tracecontext import search_keys, trace_id_of

#: the keyed-state scopes the transport itself uses
CHANNELS, SUBSCRIPTIONS, CLAIMS, IDENTITIES, COUNTS = "channel", "subscription", "claim", "identity", "counter"


@dataclass
class Stored:
    """One message copy on one channel, as the store keeps it. ``blob`` is the serialised
    envelope (its body empty when ``claim`` names a claim-checked body); ``token`` is the
    lease held on it (None when it is not leased); ``tag`` is the store's id of the copy."""

    channel: str
    message_id: str
    blob: bytes
    enqueued_at: float
    visible_at: float
    expires_at: float | None = None
    attempts: int = 0
    token: int | None = None
    claim: str | None = None
    tag: int = 0


@dataclass
class Buried:
    """A dead letter as the store keeps it (``blob``: an envelope; ``raw``: bytes that are not)."""

    kind: DeadKind
    queue: str
    channel: str | None
    message_id: str | None
    reason: str
    error: str
    component: str
    attempts: int
    dead_at: float
    blob: bytes | None = None
    raw: bytes | None = None
    claim: str | None = None
    id: int = 0


class JournalRow(NamedTuple):
    """A journal entry to append: ``keys`` are the search keys of a stored message (a named
    tuple: one or two are made for every message, a frozen dataclass cost five times as much)."""

    at: float
    channel: str | None
    message_id: str | None
    event: str
    detail: str | None = None
    trace_id: str | None = None
    keys: str | None = None


class StorageTx(abc.ABC):
    """The operations of one storage transaction (committed when the ``begin()`` block ends
    normally, rolled back when it raises)."""

    @abc.abstractmethod
    def put(self, messages: list[Stored]) -> None:
        """Store ``messages`` (each on its own ``channel``), in this order."""

    @abc.abstractmethod
    def scan(
        self, channel: str, *, ready_at: float | None, after: tuple[float, int] | None = None, limit: int = 100
    ) -> list[Stored]:
        """Messages of ``channel`` ordered by ``(visible_at, tag)``, after the ``after`` key.

        With ``ready_at``: only those visible by then, locked for this transaction, skipping
        any another transaction holds (``FOR UPDATE SKIP LOCKED``). Without: all, unlocked."""

    @abc.abstractmethod
    def update(self, message: Stored, *, token: int | None, visible_at: float, attempts: int) -> bool:
        """Set a message's lease ``token``, ``visible_at`` and ``attempts`` when its token is
        still ``message.token``; False when it changed (the lease was lost)."""

    @abc.abstractmethod
    def remove(self, channel: str, tags: list[tuple[int, int | None]]) -> list[Stored]:
        """Delete the messages ``(tag, token)`` of ``channel`` (token None: whatever their
        lease); returns those deleted."""

    @abc.abstractmethod
    def bury(self, dead: Buried) -> int:
        """Add a dead letter; returns its (site-wide) id."""

    def bury_later(self, dead: Buried) -> Callable[[], int]:
        """:meth:`bury`, returning a function that answers the dead letter's id. A store may
        send it with the statement after it or with the ``COMMIT`` (nobody waits for it) and
        answer once it is sent; the function called before that sends it then."""
        id_ = self.bury(dead)
        return lambda: id_

    @abc.abstractmethod
    def buried(
        self, *, id: int | None = None, queue: str | None = None, kind: DeadKind | None = None, limit: int = 100,
        delete: bool = False,
    ) -> list[Buried]:
        """Dead letters, newest first, selected by id, queue and kind; ``delete``: delete
        them too (returned as they were)."""

    @abc.abstractmethod
    def append(self, rows: list[JournalRow]) -> None:
        """Append journal rows."""

    @abc.abstractmethod
    def query_journal(self, query: JournalQuery) -> list[JournalEntry]:
        """The journal entries ``query`` selects, oldest first."""

    @abc.abstractmethod
    def state(self, scope: str, keys: Iterable[str] | None = None, *, lock: bool = False) -> dict[str, bytes]:
        """The unexpired values of ``keys`` (all keys of ``scope`` when None); ``lock``:
        keep other transactions from changing them until this one ends."""

    @abc.abstractmethod
    def put_state(
        self, scope: str, values: dict[str, bytes | None], *, expires_at: float | None = None,
        only_new: bool = False,
    ) -> set[str]:
        """Write (None: delete) values; ``only_new``: only keys absent or expired. Returns
        the keys written."""

    # -- with defaults a store may override for speed ---------------------------------------

    def count(self, counts: dict[tuple[str, str], int]) -> None:
        """Add ``{(channel, counter): n}`` to the counters (in the keyed state, scope
        ``counter``: its keys locked until the commit)."""
        channels = sorted({channel for channel, _counter in counts})
        totals = {k: json.loads(v) for k, v in self.state(COUNTS, channels, lock=True).items()}
        for (channel, counter), n in counts.items():
            total = totals.setdefault(channel, {})
            total[counter] = total.get(counter, 0) + n
        self.put_state(COUNTS, {k: json.dumps(v).encode() for k, v in totals.items()})

    def counters(self) -> dict[str, dict[str, int]]:
        """``{channel: {counter: n}}`` of every channel counted."""
        return {k: json.loads(v) for k, v in self.state(COUNTS).items()}

    def lease(self, messages: list[Stored], *, token: int, until: float) -> list[Stored]:
        """Lease ``messages`` (read by a locking ``scan``) until ``until``, one attempt more;
        returns those leased (as they were read)."""
        return [m for m in messages if self.update(m, token=token, visible_at=until, attempts=m.attempts + 1)]

    #: True when :meth:`take` journals the receipts itself (given ``consumer``)
    journals_receipts: bool = False
    #: set by the transport when this transaction is one standalone receive or acknowledgement
    #: (of one channel, no claim-checked bodies): a store may run its first statement as a
    #: transaction of its own (whatever follows, rare, dead-lettering what was leased, in the next one)
    alone: bool = False

    def take(self, channel: str, *, now: float, limit: int, token: int, until: float,
             consumer: str | None = None, max_attempts: int = 0) -> list[Stored]:
        """``scan`` the ready messages and ``lease`` them all at once; the messages as they
        were read (a store may do it in one statement). A store that
        :attr:`journals_receipts` also appends, given ``consumer``, the journal row
        ``received`` of each message :func:`~coupler.bus.transport.policy.undeliverable`
        lets through as far as the store can tell: not expired at ``now``, and not leased
        before (``token``) with ``max_attempts`` attempts made."""
        return self.lease(self.scan(channel, ready_at=now, limit=limit), token=token, until=until)

    def settle(self, channel: str, tags: list[tuple[int, int | None]], rows: list[JournalRow]) -> list[Stored]:
        """Acknowledge: delete the messages ``(tag, token)`` of ``channel`` and append
        ``rows``, all or nothing. Returns those still held under their tokens (their tag,
        message id and claim at least); when that is not all of them the caller raises (and
        the transaction rolls back)."""
        held = self.remove(channel, tags)
        if len(held) == len(tags):
            self.append(rows)
        return held

    def settle_checked(self, channel: str, tags: list[tuple[int, int | None]], rows: list[JournalRow],
                       lost: Callable[[int | None], BaseException]) -> None:
        """:meth:`settle`, all or nothing, raising ``lost(tag)`` (a message not held) when not
        every message is still held under its token. A store may instead send it with the
        statement after it or with the ``COMMIT``, in one round trip: when a message is not
        held then, that statement or the commit raises ``lost(None)`` (it cannot tell which)
        and nothing of the transaction commits."""
        held = self.settle(channel, tags, rows)
        if len(held) != len(tags):
            kept = {m.tag for m in held}
            raise lost(next(tag for tag, _token in tags if tag not in kept))

    def requeue_checked(self, message: Stored, *, visible_at: float, attempts: int,
                        lost: Callable[[int | None], BaseException]) -> None:
        """Give a leased ``message`` back to its channel: no lease, visible at ``visible_at``,
        ``attempts`` made; ``lost(tag)`` raised when its lease token is no longer
        ``message.token``. A store may send it later, as :meth:`settle_checked`."""
        if not self.update(message, token=None, visible_at=visible_at, attempts=attempts):
            raise lost(message.tag)

    def bury_checked(self, tag: int, token: int | None, dead: Buried,
                     lost: Callable[[int | None], BaseException]) -> Callable[[], int]:
        """Move the message ``(tag, token)`` of channel ``dead.channel`` to the dead letters
        as ``dead``, with the message's own id, attempts, blob and claim as stored; ``lost(tag)``
        raised when it is no longer held under ``token``. Returns a function answering the
        dead letter's id. A store may send it later, as :meth:`settle_checked`, and answer
        the id then (as :meth:`bury_later`)."""
        assert dead.channel is not None  # a message of a channel
        gone = self.remove(dead.channel, [(tag, token)])
        if not gone:
            raise lost(tag)
        m = gone[0]
        id_ = self.bury(replace(dead, message_id=m.message_id, attempts=m.attempts, blob=m.blob, claim=m.claim))
        return lambda: id_

    def bury_held(self, m: Stored, dead: Buried, rows: list[JournalRow]) -> bool:
        """Move message ``m`` of ``m.channel`` to the dead letters as ``dead`` and append
        ``rows`` (its journal entries), all or nothing: only when it is still held under
        ``m.token``; returns whether it was. A store may do it in one statement."""
        if not self.remove(m.channel, [(m.tag, m.token)]):
            return False
        self.bury_later(dead)
        self.append(rows)
        return True

    def release(self, claims: dict[str, int]) -> None:
        """``n`` references fewer to each claim-checked body ``{claim: n}`` (in the state,
        scope ``claim``: the body under ``claim``, its count under ``"<claim> refs"``, locked
        until the commit); a body no longer referred to is deleted with its count. A store may
        send it with the statement after it or the ``COMMIT`` (nobody waits for its answer)."""
        for claim, n in sorted(claims.items()):  # in one order: two transactions never deadlock
            key = f"{claim} refs"
            left = int(self.state(CLAIMS, [key], lock=True).get(key, b"0")) - n
            self.put_state(CLAIMS, {key: str(left).encode()} if left > 0 else {key: None, claim: None})

    def claim_fresh(self, claim_scope: str, seen_scope: str, keys: list[str], until: float) -> ClaimOutcome:
        """Claim ``keys`` (sorted, distinct) under ``claim_scope`` until ``until``, all or
        none, then look for them under ``seen_scope``, in this transaction (see
        :meth:`~coupler.bus.transport.base.Transport.claim_fresh`): the claims written by the
        upsert of the keys absent or expired (a concurrent one of the same key waits for this
        transaction, then finds it), deleted again when not all of them were or when a key is
        recorded. The look comes after the upsert (PostgreSQL: a statement of its own, so
        that a transaction it waited for, which recorded the keys and ended its claim, is
        seen). A store may send it all in one round trip."""
        claimed = self.put_state(claim_scope, dict.fromkeys(keys, b""), expires_at=until, only_new=True)
        recorded = self.state(seen_scope, keys)
        if claimed and (recorded or len(claimed) < len(keys)):
            self.put_state(claim_scope, dict.fromkeys(claimed))
        return "recorded" if recorded else "claimed" if len(claimed) == len(keys) else "busy"

    def record_claimed(self, seen_scope: str, keys: list[str], expires_at: float, claim_scope: str) -> None:
        """Write ``keys`` under ``seen_scope`` (empty values, until ``expires_at``) and delete
        them under ``claim_scope``, in this transaction (a store may do it in one statement)."""
        self.put_state(claim_scope, dict.fromkeys(keys))
        self.put_state(seen_scope, dict.fromkeys(keys, b""), expires_at=expires_at)

    def channels(self) -> set[str]:
        """Every channel holding messages now."""
        return set()

    def census(self, channel: str, now: float) -> tuple[int, int, int, float | None]:
        """``(depth, ready, in_flight, oldest enqueued_at)`` of a channel."""
        depth = ready = in_flight = 0
        oldest: float | None = None
        after: tuple[float, int] | None = None
        while page := self.scan(channel, ready_at=None, after=after, limit=1000):
            for m in page:
                depth += 1
                if m.token is not None and m.visible_at > now:
                    in_flight += 1
                elif m.visible_at <= now:
                    ready += 1
                oldest = m.enqueued_at if oldest is None else min(oldest, m.enqueued_at)
            after = (page[-1].visible_at, page[-1].tag)
        return depth, ready, in_flight, oldest

    def forget(self, journal_before: float) -> int:
        """Delete journal entries older than ``journal_before`` and expired state; returns
        how many journal entries."""
        return 0


class StorageTransport(Transport):
    """Every :class:`~coupler.bus.transport.base.Transport` operation on top of a storage.

    A subclass implements :meth:`begin` (and :meth:`open`/:meth:`close`); it may override
    :meth:`wait_for` to be woken up when messages arrive instead of polling."""

    #: seconds channel configurations and subscriptions are cached (other processes'
    #: declarations are seen after at most this long)
    config_ttl = 1.0

    def __init__(self, **settings: Any):
        """``settings``: those of :meth:`~coupler.bus.transport.base.Transport.keep_policy`."""
        self.keep_policy(**settings)
        self._rng = random.Random()
        self._local = threading.local()
        self._configs: tuple[float, dict[str, ChannelConfig], dict[str, list[tuple[str, str, str | None]]]] | None = None
        self._identities: IdentityRepository = StateIdentityRepository(self)

    # -- what a store provides -------------------------------------------------------------

    @abc.abstractmethod
    def begin(self) -> Any:
        """A context manager: one storage transaction, yielding its :class:`StorageTx`."""

    def before_look(self, channel: str) -> None:
        """Called by :meth:`receive_wait` before each look at ``channel``: a store woken by
        announcements notes how many it has seen, so that :meth:`wait_for` misses none made
        between the look and the wait."""

    def wait_for(self, channel: str, timeout: float) -> None:
        """Return when a message may have arrived on ``channel``, or after ``timeout``."""
        time.sleep(min(timeout, 0.02))

    def committed(self, tx: StorageTransaction) -> None:
        """Called after a transaction committed (wake-ups of local waiters)."""

    # -- transactions ----------------------------------------------------------------------

    @contextmanager
    def transaction(self, *, alone: bool = False) -> Iterator[StorageTransaction]:
        current: StorageTransaction | None = getattr(self._local, "tx", None)
        if current is not None:
            yield current
            return
        with self.begin() as stx:
            stx.alone = alone
            tx = StorageTransaction(self, stx)
            self._local.tx = tx
            try:
                yield tx
                tx.flush()
            finally:
                self._local.tx = None
        self.committed(tx)
        for said in tx.said:
            said()

    def receive(self, channel: str, consumer: str, *, max: int = 1, lease_seconds: float | None = None,
                selector: Selector | str | None = None) -> list[Delivery]:
        with self.transaction(alone=selector is None) as tx:
            return tx.receive(channel, consumer, max=max, lease_seconds=lease_seconds, selector=selector)

    def ack(self, deliveries: Delivery | Iterable[Delivery]) -> None:
        ds = [deliveries] if isinstance(deliveries, Delivery) else list(deliveries)
        # alone: one statement, a transaction of its own -- for one channel's (a statement each
        # would commit one channel's acknowledgements before the next channel's could fail)
        with self.transaction(alone=len({d.channel for d in ds}) == 1 and not any(d.claim for d in ds)) as tx:
            tx.ack(ds)

    def remember(self, scope: str, key: str, ttl: float) -> bool:
        with self.transaction() as tx:
            return bool(tx.stx.put_state(f"remember:{scope}", {key: b""}, expires_at=tx.now + ttl, only_new=True))

    def claim(self, scope: str, keys: Iterable[str], until: float) -> bool:
        # the keys absent or expired written in one upsert (PostgreSQL: a concurrent one of
        # the same key waits for this short transaction, then finds it); all or none
        keys = sorted(set(keys))
        try:
            with self.transaction() as tx:
                if len(tx.stx.put_state(f"claim:{scope}", dict.fromkeys(keys, b""), expires_at=until,
                                        only_new=True)) < len(keys):
                    raise _Claimed
        except _Claimed:
            return False
        return True

    def unclaim(self, scope: str, keys: Iterable[str]) -> None:
        with self.transaction() as tx:
            tx.stx.put_state(f"claim:{scope}", dict.fromkeys(keys))

    def claim_fresh(self, consumer: str, keys: Iterable[str], until: float) -> ClaimOutcome:
        with self.transaction() as tx:
            return tx.stx.claim_fresh(f"claim:{consumer}", f"seen:{consumer}", sorted(set(keys)), until)

    def seen(self, consumer: str, keys: Iterable[str]) -> set[str]:
        with self.transaction(alone=True) as tx:  # one read: a transaction of its own
            return tx.seen(consumer, keys)

    def receive_wait(self, channel: str, consumer: str, *, max: int = 1, lease_seconds: float | None = None,
                     selector: Selector | str | None = None, wait: float = 0.0) -> list[Delivery]:
        sel = as_selector(selector)
        deadline = time.monotonic() + wait
        while True:
            self.before_look(channel)
            got = self.receive(channel, consumer, max=max, lease_seconds=lease_seconds, selector=sel)
            left = deadline - time.monotonic()
            if got or left <= 0:
                return got
            self.wait_for(channel, min(left, 0.25))  # leases and backoff delays end unannounced

    # -- channels --------------------------------------------------------------------------

    def _metadata(self, tx: StorageTx | None = None) -> tuple[dict[str, ChannelConfig], dict[str, list[tuple[str, str, str | None]]]]:
        cached = self._configs
        if cached is not None and time.monotonic() - cached[0] < self.config_ttl:
            return cached[1], cached[2]
        if tx is None:
            with self.transaction() as t:
                return self._metadata(t.stx)
        configs = {k: ChannelConfig.from_dict(json.loads(v)) for k, v in tx.state(CHANNELS).items()}
        subs: dict[str, list[tuple[str, str, str | None]]] = {}
        for key, value in sorted(tx.state(SUBSCRIPTIONS).items()):
            topic, name = key.split(" ", 1)
            subs.setdefault(topic, []).append((name, *json.loads(value)))
        self._configs = (time.monotonic(), configs, subs)
        return configs, subs

    def channel_config(self, channel: str) -> ChannelConfig:
        return self._metadata()[0].get(channel) or ChannelConfig()

    def declare(self, channel: str, config: ChannelConfig | None = None, **settings: Any) -> ChannelConfig:
        cfg = declared_config(channel, config, settings)
        with self.transaction() as tx:
            tx.stx.put_state(CHANNELS, {channel: json.dumps(cfg.to_dict()).encode()})
        self._configs = None
        return cfg

    def channels(self) -> list[str]:
        with self.transaction() as tx:
            configs, subs = self._metadata(tx.stx)
            names = set(configs) | set(tx.stx.counters()) | tx.stx.channels() | set(subs)
            names |= {self.subscription_channel(t, n) for t, s in subs.items() for n, _c, _s in s}
        return sorted(names)

    def subscribe(self, topic: str, subscription: str, *, selector: str | None = None) -> str:
        check_channel_name(topic)
        check_subscription_name(subscription)
        if selector:
            Selector.parse(selector)  # reported now, not at the first send
        queue = self.subscription_channel(topic, subscription)
        with self.transaction() as tx:
            if self.channel_config(topic).kind != "topic":
                tx.stx.put_state(CHANNELS, {topic: json.dumps(ChannelConfig(kind="topic").to_dict()).encode()})
            tx.stx.put_state(SUBSCRIPTIONS, {f"{topic} {subscription}": json.dumps([queue, selector]).encode()})
            tx.record(topic, None, policy.SUBSCRIBED, subscription)
        self._configs = None
        return queue

    def unsubscribe(self, topic: str, subscription: str) -> None:
        queue = self.subscription_channel(topic, subscription)
        with self.transaction() as tx:
            tx.stx.put_state(SUBSCRIPTIONS, {f"{topic} {subscription}": None})
            tx.purge(queue, journal=False)
            tx.record(topic, None, policy.UNSUBSCRIBED, subscription)
        self._configs = None

    def stats(self, channel: str | None = None) -> list[ChannelStats]:
        names = [channel] if channel else self.channels()
        out = []
        with self.transaction() as tx:
            configs, subs = self._metadata(tx.stx)
            counters = tx.stx.counters()
            for name in names:
                cfg = configs.get(name) or ChannelConfig()
                depth, ready, in_flight, oldest = tx.stx.census(name, tx.now)
                counts = {c: counters.get(name, {}).get(c, 0) + tx.counts.get((name, c), 0) for c in policy.COUNTERS}
                out.append(ChannelStats(
                    name, cfg.kind, depth, ready, in_flight,
                    None if oldest is None else max(0.0, tx.now - oldest), **counts,
                    subscriptions=tuple(sorted(n for n, _c, _s in subs.get(name, []))),
                ))
        return out

    def peek(self, channel: str, max: int = 10) -> list[Envelope]:
        with self.transaction() as tx:
            return [tx.envelope(m) for m in tx.stx.scan(channel, ready_at=None, limit=max)]

    def purge(self, channel: str) -> int:
        with self.transaction() as tx:
            return tx.purge(channel)

    # -- dead letters ----------------------------------------------------------------------

    def dead_letters(self, queue: str | None = None, *, kind: DeadKind | None = None, limit: int = 100) -> list[DeadLetter]:
        with self.transaction() as tx:
            return [tx.dead_letter(b) for b in tx.stx.buried(queue=queue, kind=kind, limit=limit)]

    def dead_letter(self, id: int) -> DeadLetter:
        with self.transaction() as tx:
            found = tx.stx.buried(id=id, limit=1)
            if not found:
                raise unknown_dead_letter(id)
            return tx.dead_letter(found[0])

    def replay(self, id: int, channel: str | None = None, *, body: bytes | None = None,
               envelope: Envelope | None = None) -> str:
        with self.transaction() as tx:
            found = tx.stx.buried(id=id, limit=1, delete=True)
            if not found:
                raise unknown_dead_letter(id)
            dead = found[0]
            target = channel or dead.channel
            if dead.blob is None or not target:
                raise not_replayable(id, has_envelope=dead.blob is not None)
            env = tx.envelope(Stored(target, dead.message_id or "", dead.blob, 0, 0, claim=dead.claim))
            if envelope is not None:  # another message in its place (same id)
                env = replacement(id, env, envelope)
            env.attempt = 0
            if body is not None:
                env.body = body
            tx.release_claims([dead.claim] if dead.claim else [])
            tx.send(target, env, component="replay", event=policy.REPLAYED)
            return env.message_id

    def purge_dead_letters(self, queue: str | None = None, *, kind: DeadKind | None = None) -> int:
        with self.transaction() as tx:
            gone = tx.stx.buried(queue=queue, kind=kind, limit=1 << 62, delete=True)
            tx.release_claims([b.claim for b in gone if b.claim])
            tx.record(queue, None, policy.DEAD_LETTERS_PURGED, purged_dead_letters_detail(len(gone), kind))
            return len(gone)

    # -- message store, housekeeping -------------------------------------------------------

    def query_journal(self, query: JournalQuery) -> list[JournalEntry]:
        with self.transaction() as tx:
            tx.flush()
            return tx.stx.query_journal(query)

    def maintain(self) -> dict[str, int]:
        expired = 0
        with self.transaction() as tx:
            for name in self.channels():
                for m in tx.stx.scan(name, ready_at=tx.now, limit=1 << 30):
                    if m.expires_at is not None and m.expires_at <= tx.now:
                        tx.bury(m, "dead", policy.REASON_EXPIRED, policy.ERROR_EXPIRED, policy.TRANSPORT)
                        expired += 1
            journal = tx.stx.forget(tx.now - self.journal_retention)
        return {"expired": expired, "journal": journal}

    @property
    def identities(self) -> IdentityRepository:
        return self._identities

    def invalid(self, envelope: Envelope | bytes, reason: str, component: str, *,
                channel: str | None = None, delivery: Delivery | None = None) -> int:
        # the dead letter's id asked for once committed: a store may send the move, its journal
        # and the COMMIT at once (StorageTransaction.invalid_later)
        with self.transaction() as tx:
            answer = tx.invalid_later(envelope, reason, component, channel=channel, delivery=delivery)
        return answer()

    def claim_refs(self) -> list[str]:
        """The claim-checked bodies stored now (their references)."""
        with self.transaction() as tx:
            return sorted(k for k in tx.stx.state(CLAIMS) if " " not in k)


@dataclass
class StorageTransaction(TransactionOps):
    """The transport's operations inside one storage transaction (what ``transaction()``
    yields), with the journal rows and counts to append at its end."""

    t: StorageTransport
    stx: StorageTx
    now: float = 0.0
    rows: list[JournalRow] = field(default_factory=list)
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: channels that got messages (woken up after the commit)
    sent_to: set[str] = field(default_factory=set)
    #: what is logged once the transaction has committed
    said: list[Callable[[], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.now = self.t.clock()

    # -- the recorder of policy.py ---------------------------------------------------------

    def journal(self, channel: str | None, message_id: str | None, event: str, detail: str | None = None) -> None:
        self.rows.append(JournalRow(self.now, channel, message_id, event, detail))

    record = journal

    def count(self, channel: str, counter: str, n: int = 1) -> None:
        self.counts[(channel, counter)] += n

    def flush(self) -> None:
        if self.rows:
            self.stx.append(self.rows)
            self.rows = []
        if self.counts:
            self.stx.count(dict(self.counts))
            self.counts = Counter()

    # -- step state ------------------------------------------------------------------------

    def get_state(self, scope: str, keys: Iterable[str] | None = None, *, lock: bool = False) -> dict[str, bytes]:
        """Keyed state of a step (see the module's notes), in this transaction."""
        return self.stx.state(f"step:{scope}", keys, lock=lock)

    def put_state(self, scope: str, values: dict[str, bytes | None], *, expires_at: float | None = None) -> None:
        """Write (None: delete) keyed state of a step, committed with this transaction."""
        self.stx.put_state(f"step:{scope}", values, expires_at=expires_at)

    # -- messages --------------------------------------------------------------------------

    def send(self, channel: str, envelopes: Envelope | Iterable[Envelope], *, component: str = "bus",
             event: str = policy.SENT) -> list[str]:
        check_channel_name(channel)
        envs = envelope_list(channel, envelopes)
        if not envs:
            return []
        configs, subs = self.t._metadata(self.stx)
        targets: list[tuple[str, Selector | None]] = [(channel, None)]
        topic = channel in subs or (configs.get(channel) or ChannelConfig()).kind == "topic"
        if topic:
            self.count(channel, "sent", len(envs))
            for env in envs:
                self.rows.append(self._sent_row(channel, env, policy.PUBLISHED, component))
            targets = [(queue, Selector.parse(sel) if sel else None) for _n, queue, sel in subs.get(channel, [])]
        hop = HistoryEntry(component, f"send {channel}")
        stored: list[Stored] = []
        threshold = self.t.claim_threshold
        selected = [(env, copies) for env in envs
                    if (copies := [queue for queue, sel in targets if sel is None or sel(env)])]
        # the shared headers of the envelopes stored encoded once (those with a claim-checked body apart)
        blobs = iter(encode_many([env for env, _copies in selected if len(env.body) <= threshold], hop))
        for env, copies in selected:
            blob = next(blobs) if len(env.body) <= threshold else b""
            claim = None
            if len(env.body) > threshold:
                claim = uuid.uuid4().hex
                self.stx.put_state(CLAIMS, {claim: env.body, f"{claim} refs": str(len(copies)).encode()})
                blob = encode(env, extra_hop=hop, body=b"")
            expires = env.expires_at.timestamp() if env.expires_at is not None else None
            for queue in copies:
                stored.append(Stored(queue, env.message_id, blob, self.now, self.now, expires, claim=claim))
                self.rows.append(self._sent_row(queue, env, event, f"from {channel}" if topic else component))
                self.count(queue, "sent")
        self.stx.put(stored)
        self.sent_to.update(m.channel for m in stored)
        return [env.message_id for env in envs]

    def _sent_row(self, channel: str, env: Envelope, event: str, detail: str | None) -> JournalRow:
        return JournalRow(self.now, channel, env.message_id, event, detail, trace_id_of(env), search_keys(env))

    def envelope(self, m: Stored) -> Envelope:
        env = decode(m.blob)
        if m.claim is not None:
            body = self.stx.state(CLAIMS, [m.claim]).get(m.claim)
            if body is None:
                raise TransportError(f"message {m.message_id}: its claim-checked body {m.claim} is missing")
            env.body = body
        return env

    def receive(self, channel: str, consumer: str, *, max: int = 1, lease_seconds: float | None = None,
                selector: Selector | str | None = None) -> list[Delivery]:
        check_channel_name(channel)
        sel = as_selector(selector)
        cfg = self.t.channel_config(channel)
        backoff = policy.backoff_for(cfg, self.t.backoff)
        until = self.now + policy.lease_for(lease_seconds, cfg, self.t.lease_seconds)
        token = self.t._rng.getrandbits(62)
        hop = HistoryEntry(consumer, f"receive {channel}")
        out: list[Delivery] = []
        after: tuple[float, int] | None = None
        if sel is None:  # the common case: lease the oldest ready messages at once
            journalled = self.stx.journals_receipts
            for m in self.stx.take(channel, now=self.now, limit=max, token=token, until=until,
                                   consumer=consumer, max_attempts=backoff.max_attempts):
                lost, m.token = m.token is not None, token  # m: the store's copy, leased now
                env = self._deliverable(m, backoff, lease_lost=lost)
                if env is not None:
                    self._deliver(out, m, env, consumer, hop, until, attempt=m.attempts + 1, journalled=journalled)
        while sel is not None and len(out) < max:
            page = self.stx.scan(channel, ready_at=self.now, after=after, limit=200)
            if not page:
                break
            after = (page[-1].visible_at, page[-1].tag)
            chosen: dict[int, Envelope] = {}
            for m in page:
                if len(out) + len(chosen) >= max:
                    break
                env = self._deliverable(m, backoff, lease_lost=m.token is not None)
                if env is not None and sel(env):
                    chosen[m.tag] = env
            for m in self.stx.lease([m for m in page if m.tag in chosen], token=token, until=until):
                self._deliver(out, replace(m, token=token), chosen[m.tag], consumer, hop, until, attempt=m.attempts + 1)
        if out:
            self.count(channel, "received", len(out))
        return out

    def _deliverable(self, m: Stored, backoff: BackoffPolicy, *, lease_lost: bool) -> Envelope | None:
        """The envelope of ``m`` (as held now), or None when it went to the dead letters
        instead (expired, out of attempts after a lost lease, undecodable)."""
        verdict = policy.undeliverable(backoff, expired=m.expires_at is not None and m.expires_at <= self.now,
                                       lease_lost=lease_lost, attempts=m.attempts)
        if verdict is not None:
            self.bury(m, "dead", *verdict, policy.TRANSPORT)
            return None
        try:
            return self.envelope(m)
        except CouplerError as exc:
            self.bury(m, "invalid", "undecodable envelope", str(exc), policy.TRANSPORT)
            return None

    def _deliver(self, out: list[Delivery], m: Stored, env: Envelope, consumer: str, hop: HistoryEntry,
                 until: float, *, attempt: int, journalled: bool = False) -> None:
        env.attempt = attempt
        env.history.append(hop)
        out.append(Delivery(m.channel, consumer, env, m.tag, m.token or 0, attempt, until, m.claim))
        if not journalled:  # else the store's take() did
            self.rows.append(JournalRow(self.now, m.channel, m.message_id, policy.RECEIVED, consumer))

    def _lost(self, d: Delivery, what: str) -> LeaseLostError:
        return LeaseLostError(
            f"cannot {what} message {d.message_id} on {d.channel}: the lease expired and another "
            "consumer took it, or it was already settled",
            hint="settle within lease_seconds or use a longer lease",
        )

    def _lost_of(self, group: list[Delivery], what: str) -> Callable[[int | None], LeaseLostError]:
        """The error of :meth:`StorageTx.settle_checked` for deliveries ``group`` of one channel:
        of the one with tag ``tag``, or (None) of one of them, not known which."""

        def lost(tag: int | None) -> LeaseLostError:
            if tag is not None or len(group) == 1:
                return self._lost(next(d for d in group if tag is None or d.tag == tag), what)
            ids = ", ".join(d.message_id for d in group[:3]) + (", ..." if len(group) > 3 else "")
            return LeaseLostError(
                f"cannot {what} {len(group)} messages on {group[0].channel} ({ids}): the lease of one of "
                "them expired and another consumer took it, or it was already settled",
                hint="settle within lease_seconds or use a longer lease",
            )

        return lost

    def ack(self, deliveries: Delivery | Iterable[Delivery]) -> None:
        ds = [deliveries] if isinstance(deliveries, Delivery) else list(deliveries)
        by_channel: dict[str, list[Delivery]] = {}
        for d in ds:
            by_channel.setdefault(d.channel, []).append(d)
        for channel, group in by_channel.items():
            rows = [JournalRow(self.now, channel, d.message_id, policy.ACKED, d.ack_detail) for d in group]
            tags: list[tuple[int, int | None]] = [(d.tag, d.token) for d in group]
            # checked with the commit, maybe; the claims released after it are the deliveries'
            # (a message held under its lease token is the one received, its claim unchanged)
            self.stx.settle_checked(channel, tags, rows, self._lost_of(group, "acknowledge"))
            self.release_claims([d.claim for d in group if d.claim])
            self.count(channel, "acked", len(group))

    def nack(self, delivery: Delivery, error: str | BaseException, component: str, *,
             delay: float | None = None, dead: bool = False) -> Literal["retry", "dead"]:
        text = error_text(error)
        backoff = policy.backoff_for(self.t.channel_config(delivery.channel), self.t.backoff)
        decision = policy.nack_decision(backoff, delivery.attempt, dead=dead, delay=delay, rng=self.t._rng)
        lost = self._lost_of([delivery], "reject")  # checked with the commit, maybe
        if decision.outcome == "dead":
            # the dead letter is the stored message's (its id, attempts, blob and claim, the
            # delivery's while its lease is held)
            letter = self._buried(delivery.channel, delivery.message_id, "dead", decision.reason, text, component,
                                  delivery.attempt)
            self.stx.bury_checked(delivery.tag, delivery.token, letter, lost)
            self.count(delivery.channel, "failed")
            self._record_dead(letter, later=self.said)  # its warning once it is there
            return "dead"
        m = Stored(delivery.channel, delivery.message_id, b"", 0, 0, attempts=delivery.attempt,
                   token=delivery.token, tag=delivery.tag)
        self.stx.requeue_checked(m, visible_at=self.now + decision.wait, attempts=delivery.attempt, lost=lost)
        self.count(delivery.channel, "failed")
        policy.record_nacked(self, delivery, component, text, decision.wait)
        self.sent_to.add(delivery.channel)
        return "retry"

    def bury(self, m: Stored, kind: DeadKind, reason: str, error: str, component: str) -> bool:
        """Move message ``m`` to its dead-letter queue (the dead letter's insert may go with the
        next statement or the ``COMMIT``); False when it was no longer there as ``m``."""
        # its journal entry goes with the move (a store may send them as one statement); its
        # count and warning once it is known to be there
        dead = self._buried(m.channel, m.message_id, kind, reason, error, component, m.attempts, blob=m.blob,
                            claim=m.claim)
        recorded = _Recorded(self.now)
        said: list[Callable[[], None]] = []
        policy.record_dead(recorded, dead.channel, dead.message_id, queue=dead.queue, kind=dead.kind,
                           reason=dead.reason, error=dead.error, component=dead.component, attempts=dead.attempts,
                           later=said)
        if not self.stx.bury_held(m, dead, recorded.rows):
            return False
        self.counts.update(recorded.counts)
        for say in said:
            say()
        return True

    def _bury(self, channel: str | None, message_id: str | None, kind: DeadKind, reason: str, error: str,
              component: str, attempts: int, *, later: list[Callable[[], None]] | None = None,
              **data: Any) -> Callable[[], int]:
        """Add a dead letter; returns the function answering its id (see StorageTx.bury_later)."""
        dead = self._buried(channel, message_id, kind, reason, error, component, attempts, **data)
        answer = self.stx.bury_later(dead)
        self._record_dead(dead, later=later)
        return answer

    def _buried(self, channel: str | None, message_id: str | None, kind: DeadKind, reason: str, error: str,
                component: str, attempts: int, **data: Any) -> Buried:
        """The dead letter of a message of ``channel``, in its dead-letter queue."""
        cfg = self.t.channel_config(channel) if channel else ChannelConfig()
        queue = policy.dead_letter_queue(cfg, kind, dead_letter=self.t.dead_letter_default,
                                         invalid=self.t.invalid_default)
        return Buried(kind, queue, channel, message_id, reason, error, component, attempts, self.now, **data)

    def _record_dead(self, dead: Buried, later: list[Callable[[], None]] | None = None) -> None:
        policy.record_dead(self, dead.channel, dead.message_id, queue=dead.queue, kind=dead.kind, reason=dead.reason,
                           error=dead.error, component=dead.component, attempts=dead.attempts, later=later)

    def invalid(self, envelope: Envelope | bytes, reason: str, component: str, *,
                channel: str | None = None, delivery: Delivery | None = None) -> int:
        return self.invalid_later(envelope, reason, component, channel=channel, delivery=delivery)()

    def invalid_later(self, envelope: Envelope | bytes, reason: str, component: str, *,
                      channel: str | None = None, delivery: Delivery | None = None) -> Callable[[], int]:
        """:meth:`invalid`, returning a function that answers the dead letter's id: a store may
        send the move with the next statement or the ``COMMIT`` (and the function, called
        before that, sends it). A delivery's lease is checked then: a lost one raises
        LeaseLostError there, and nothing of the transaction commits. The warning is logged
        once the transaction has committed."""
        if delivery is not None:
            # the dead letter is the stored message's (its id, attempts, blob and claim, the
            # delivery's while its lease is held), made from the row deleted, as a nack's
            letter = self._buried(delivery.channel, delivery.message_id, "invalid", reason, reason, component,
                                  delivery.attempt)
            answer = self.stx.bury_checked(delivery.tag, delivery.token, letter,
                                           self._lost_of([delivery], "move to the invalid channel"))
            self._record_dead(letter, later=self.said)
            return answer
        if isinstance(envelope, Envelope):
            return self._bury(channel, envelope.message_id, "invalid", reason, reason, component,
                              envelope.attempt, later=self.said, blob=envelope.to_bytes())
        return self._bury(channel, None, "invalid", reason, reason, component, 0, later=self.said,
                          raw=bytes(envelope))

    def dead_letter(self, b: Buried) -> DeadLetter:
        env = None
        if b.blob is not None:
            with_claim = Stored(b.channel or "", b.message_id or "", b.blob, 0, 0, claim=b.claim)
            env = self.envelope(with_claim)
        return DeadLetter(b.id, b.kind, b.queue, b.channel, env, b.raw, b.reason, b.error, b.component,
                          b.attempts, datetime.fromtimestamp(b.dead_at, UTC))

    def purge(self, channel: str, *, journal: bool = True) -> int:
        tags: list[tuple[int, int | None]] = [(m.tag, None) for m in self.stx.scan(channel, ready_at=None, limit=1 << 62)]
        gone = self.stx.remove(channel, tags) if tags else []
        self.release_claims([m.claim for m in gone if m.claim])
        if journal:
            self.record(channel, None, policy.PURGED, f"{len(gone)} message(s)")
        return len(gone)

    def release_claims(self, claims: list[str]) -> None:
        """One message copy or dead letter fewer refers to each of ``claims``."""
        if claims:
            self.stx.release(dict(Counter(claims)))

    # -- idempotency -----------------------------------------------------------------------

    def seen(self, consumer: str, keys: Iterable[str]) -> set[str]:
        return set(self.stx.state(f"seen:{consumer}", list(keys)))

    def mark_seen(self, consumer: str, keys: Iterable[str]) -> None:
        self.stx.put_state(f"seen:{consumer}", dict.fromkeys(keys, b""),
                           expires_at=self.now + self.t.idempotency_retention)

    def record_claimed(self, consumer: str, keys: Iterable[str]) -> bool:
        # the claims are rows of the keyed state too: deleted in this transaction
        self.stx.record_claimed(f"seen:{consumer}", sorted(set(keys)), self.now + self.t.idempotency_retention,
                                f"claim:{consumer}")
        return True

    def mark_new(self, consumer: str, keys: Iterable[str]) -> set[str]:
        # one upsert of the keys not there yet: a concurrent one of the same key waits on its
        # row until this transaction ends (PostgreSQL's unique index), then finds it there;
        # in one order, so two transactions of several keys (two batches) never deadlock
        return self.stx.put_state(f"seen:{consumer}", dict.fromkeys(sorted(set(keys)), b""),
                                  expires_at=self.now + self.t.idempotency_retention, only_new=True)


class _Recorded:
    """The journal rows and counts of one operation, kept apart (a :class:`policy.Recorder`)."""

    def __init__(self, now: float):
        self.now = now
        self.rows: list[JournalRow] = []
        self.counts: Counter[tuple[str, str]] = Counter()

    def journal(self, channel: str | None, message_id: str | None, event: str, detail: str | None = None) -> None:
        self.rows.append(JournalRow(self.now, channel, message_id, event, detail))

    def count(self, channel: str, counter: str, n: int = 1) -> None:
        self.counts[(channel, counter)] += n


class _Claimed(Exception):
    """A key of :meth:`StorageTransport.claim` is claimed already: its transaction rolls back."""


class StateIdentityRepository(IdentityRepository):
    """The Application Repository in the keyed state table (scope ``identity``)."""

    def __init__(self, transport: StorageTransport):
        self._t = transport

    def register(self, identity: Identity | str, channel: str, *, adapter: str | None = None) -> Registration:
        ident = Identity.parse(identity) if isinstance(identity, str) else identity
        if ident.cls is None:
            raise IdentityError("an application identity needs at least its class", where=str(ident))
        with self._t.transaction() as tx:
            reg = Registration(tx.t._rng.getrandbits(48), ident, channel, adapter, tx.now)
            tx.stx.put_state(IDENTITIES, {f"{ident} {channel}": json.dumps([ident.to_json(), channel, adapter, reg.id, tx.now]).encode()})
            tx.record(channel, None, policy.IDENTITY_REGISTERED, str(ident))
        return reg

    def unregister(self, *, adapter: str | None = None, identity: Identity | str | None = None) -> int:
        if adapter is None and identity is None:
            raise IdentityError("unregister needs an adapter or an identity")
        ident = Identity.parse(identity) if isinstance(identity, str) else identity
        gone = [r for r in self.list()
                if (adapter is None or r.adapter == adapter) and (ident is None or r.identity == ident)]
        with self._t.transaction() as tx:
            tx.stx.put_state(IDENTITIES, {f"{r.identity} {r.channel}": None for r in gone})
        return len(gone)

    def list(self) -> list[Registration]:
        with self._t.transaction() as tx:
            values = tx.stx.state(IDENTITIES)
        regs = []
        for value in values.values():
            ident, channel, adapter, id_, at = json.loads(value)
            regs.append(Registration(id_, Identity.from_dict(ident), channel, adapter, at))
        return sorted(regs, key=lambda r: (str(r.identity), r.id))


__all__ = ["Buried", "JournalRow", "StorageTransaction", "StorageTransport", "StorageTx", "Stored"]
