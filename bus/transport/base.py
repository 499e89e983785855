"""The Transport interface: durable channels behind one API.

Everything above the messaging infrastructure (router, daemon, control bus, channel tools,
adapters through ``bus/api.py``) talks to a :class:`Transport`. The embedded default is
:class:`coupler.bus.transport.sqlite.transport.SqliteTransport`; a broker (RabbitMQ) can replace it by
implementing this interface and passing the contract tests in ``tests/bus/contract/``.

Vocabulary
----------
channel
    A named Point-to-Point queue (the default kind; created on first use) or a
    Publish-Subscribe topic (``declare(name, kind="topic")``). A topic keeps nothing itself:
    every message sent to it is copied into each of its durable subscriptions, which are
    queues named ``subscription_channel(topic, name)`` and are received from like any queue.
consumer
    The name of whoever receives (an adapter, a route, ``cli``). Competing consumers on one
    queue each get different messages. Leases and idempotency records are per consumer.
delivery
    One received message under a lease (:class:`Delivery`). It must be acknowledged
    (:meth:`Transport.ack`) or negatively acknowledged (:meth:`Transport.nack`) before
    ``lease_expires_at``; otherwise it becomes visible again and is delivered again.
Dead Letter Channel / Invalid Message Channel
    Dead messages (failed ``max_attempts`` times, expired, or refused on purpose) and
    invalid messages (cannot be decoded, validated or converted) are kept with their
    original envelope, reason, error, failing component and attempt count. They live in
    named dead-letter queues: one site-wide by default (``dead-letters`` and ``invalid``),
    or one per channel (``declare(..., dead_letter="orders.dead")``). They are inspected
    with :meth:`Transport.dead_letters` and friends, not received like a queue.

Guarantees every implementation gives
-------------------------------------
* :meth:`send` returns only after the messages are durable (Guaranteed Delivery).
* A received message is invisible to other consumers until its lease expires or it is
  nacked; ``Delivery.attempt`` (also ``Delivery.envelope.attempt``) counts deliveries,
  starting at 1.
* An expired message (``expires_at`` passed) is never delivered; it is dead-lettered with
  reason ``expired``.
* Every state change is written to the Message Store journal (:meth:`journal`).
* :meth:`transaction` groups receive, send, ack and nack: all happen or none do
  (Transactional Client).

Threads: a Transport object may be shared by threads (each gets its own connection);
:class:`Delivery` objects may be acked from any thread of the same process.
"""

from __future__ import annotations

import abc
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from coupler.bus.model.backoff import BackoffPolicy
from coupler.bus.model.names import CHANNEL_NAME_RULE, is_channel_name, is_queue_name
from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError

if TYPE_CHECKING:
    from coupler.bus.model.files import FileState
    from coupler.bus.model.identities import IdentityRepository
    from coupler.bus.model.selectors import Selector

#: the site-wide Dead Letter Channel and Invalid Message Channel
DEFAULT_DEAD_LETTER = "dead-letters"
DEFAULT_INVALID = "invalid"

ChannelKind = Literal["queue", "topic"]
DeadKind = Literal["dead", "invalid"]
#: what :meth:`Transport.claim_fresh` did: claimed the keys (none recorded), found one recorded
#: (nothing claimed), or found one under another live claim (nothing claimed)
ClaimOutcome = Literal["claimed", "recorded", "busy"]


class TransportError(CouplerError):
    """The store cannot be opened or used (locked, corrupt, unreachable broker, bad channel)."""


class LeaseLostError(TransportError):
    """An ack/nack for a delivery whose lease has been taken over or which was already settled."""


class UnknownDeadLetterError(TransportError):
    """A dead letter id that does not exist (any more)."""


def check_channel_name(channel: str) -> str:
    """``channel`` when it is a valid channel (or subscription) name, else :class:`TransportError`."""
    if not is_queue_name(channel):
        raise TransportError(f"bad channel name {channel!r}", hint=f"use {CHANNEL_NAME_RULE}, e.g. orders.in")
    return channel


def check_subscription_name(subscription: str) -> str:
    """``subscription`` when it can name a durable subscription, else :class:`TransportError`."""
    if not is_channel_name(subscription):
        raise TransportError(f"bad subscription name {subscription!r}", hint=f"use {CHANNEL_NAME_RULE}")
    return subscription


def envelope_list(channel: str, envelopes: Envelope | Iterable[Envelope]) -> list[Envelope]:
    """The envelopes of a send to ``channel`` as a list; :class:`TransportError` for anything
    that is not an :class:`Envelope`."""
    envs = [envelopes] if isinstance(envelopes, Envelope) else list(envelopes)
    for env in envs:
        if not isinstance(env, Envelope):
            raise TransportError(f"send to {channel}: expected an Envelope, got {type(env).__name__}")
    return envs


def durable_already() -> None:
    """What :meth:`Transport.durable_later` yields when sends are durable when they return."""


def error_text(error: str | BaseException) -> str:
    """The text a nack records for ``error``: the string itself, or ``Type: message``."""
    return error if isinstance(error, str) else f"{type(error).__name__}: {error}"


def unknown_dead_letter(id: int) -> UnknownDeadLetterError:
    """The error for a dead letter id that does not exist (any more)."""
    return UnknownDeadLetterError(f"no dead letter with id {id}", hint="list them with `coupler ctl dlq list`")


def not_replayable(id: int, *, has_envelope: bool) -> TransportError:
    """The error for a dead letter that has no envelope or names no channel to go back to."""
    return TransportError(
        f"dead letter {id} cannot be replayed: "
        + ("its bytes are not an envelope" if not has_envelope else "it names no channel"),
        hint="inspect it with `coupler ctl dlq show` and purge it",
    )


def replacement(id: int, stored: Envelope, envelope: Envelope) -> Envelope:
    """The message a replay of dead letter ``id`` (holding ``stored``) sends in its place:
    a copy of ``envelope``, which must carry the same message id."""
    if envelope.message_id != stored.message_id:
        raise TransportError(f"dead letter {id} holds message {stored.message_id}, not {envelope.message_id}",
                             hint="replay it with its own message id")
    return envelope.replace()


def purged_dead_letters_detail(n: int, kind: DeadKind | None) -> str:
    """The journal detail of a purge of dead letters."""
    return f"{n} {kind or 'dead and invalid'}"


@dataclass(frozen=True)
class ChannelConfig:
    """How a channel behaves; stored with the channel so that every process agrees.

    ``dead_letter`` / ``invalid`` name the dead-letter queues (site-wide by default);
    ``backoff`` is the redelivery policy (transport default when None); ``format`` binds a
    Datatype Channel to a canonical format name (``acme.Customer``); ``lease_seconds`` is
    the default lease of a receive.
    """

    kind: ChannelKind = "queue"
    dead_letter: str | None = None
    invalid: str | None = None
    backoff: BackoffPolicy | None = None
    format: str | None = None
    lease_seconds: float | None = None
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind,
            "dead_letter": self.dead_letter,
            "invalid": self.invalid,
            "backoff": self.backoff.to_dict() if self.backoff else None,
            "format": self.format,
            "lease_seconds": self.lease_seconds,
            "description": self.description,
        }
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChannelConfig:
        data = dict(data)
        if data.get("backoff") is not None:
            data["backoff"] = BackoffPolicy.from_dict(data["backoff"])
        return cls(**data)


def declared_config(channel: str, config: ChannelConfig | None, settings: dict[str, Any]) -> ChannelConfig:
    """The configuration a ``declare(channel, config, **settings)`` stores: ``settings``
    (``backoff`` may be a dict) over ``config`` (or the defaults), checked."""
    check_channel_name(channel)
    if "backoff" in settings and isinstance(settings["backoff"], dict):
        settings["backoff"] = BackoffPolicy.from_dict(settings["backoff"])
    try:
        base = config or ChannelConfig()
        cfg = ChannelConfig(**{**base.__dict__, **settings})
    except TypeError as exc:
        raise TransportError(f"channel {channel}: {exc}", where=f"channels.{channel}") from exc
    if cfg.kind not in ("queue", "topic"):
        raise TransportError(f"channel {channel}: unknown kind {cfg.kind!r}", hint="use queue or topic")
    return cfg


@dataclass
class Delivery:
    """A message received under a lease.

    ``tag`` identifies the stored message, ``token`` this particular lease of it; ``attempt``
    is 1 on the first delivery and grows with every redelivery.
    """

    channel: str
    consumer: str
    envelope: Envelope
    tag: int
    token: int
    attempt: int
    lease_expires_at: float
    #: the claim-check reference of the stored body (transport internal; None for most)
    claim: str | None = None
    #: what the consumer did with it, journaled with its acknowledgement (the mapping it ran,
    #: the file it wrote, why a route discarded it): the trace shows it (bus/runtime/trace.py)
    note: str | None = None

    @property
    def message_id(self) -> str:
        return self.envelope.message_id

    @property
    def ack_detail(self) -> str:
        """The journal detail of its acknowledgement: the consumer, then its ``note``."""
        return f"{self.consumer}: {self.note}" if self.note else self.consumer


@dataclass(frozen=True)
class DeadLetter:
    """A message in a Dead Letter Channel (``kind="dead"``) or Invalid Message Channel."""

    id: int
    kind: DeadKind
    queue: str
    channel: str | None
    envelope: Envelope | None
    raw: bytes | None
    reason: str
    error: str
    component: str
    attempts: int
    dead_at: datetime

    def to_json(self) -> dict[str, Any]:
        env = self.envelope
        return {
            "id": self.id,
            "kind": self.kind,
            "queue": self.queue,
            "channel": self.channel,
            "message_id": env.message_id if env else None,
            "format": str(env.format) if env else None,
            "reason": self.reason,
            "error": self.error,
            "component": self.component,
            "attempts": self.attempts,
            "dead_at": self.dead_at.isoformat(),
            "body_size": len(env.body) if env else len(self.raw or b""),
        }


@dataclass(frozen=True)
class ChannelStats:
    """Depth, age of the oldest message and counters of one channel."""

    channel: str
    kind: ChannelKind
    depth: int
    ready: int
    in_flight: int
    oldest_age: float | None
    sent: int = 0
    received: int = 0
    acked: int = 0
    failed: int = 0
    dead: int = 0
    invalid: int = 0
    expired: int = 0
    subscriptions: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["subscriptions"] = list(self.subscriptions)
        return data


@dataclass(frozen=True)
class JournalEntry:
    """One state change in the Message Store."""

    id: int
    at: datetime
    channel: str | None
    message_id: str | None
    event: str
    detail: str | None
    #: the W3C trace id of the message (rows of messages being stored: sent, published, replayed)
    trace_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": self.at.isoformat(),
            "channel": self.channel,
            "message_id": self.message_id,
            "event": self.event,
            "detail": self.detail,
            "trace_id": self.trace_id,
        }


@dataclass(frozen=True)
class JournalQuery:
    """Which Message Store journal entries to read: every filter given must hold.

    ``trace_ids``: the entries of the messages of these W3C traces; ``key``: the entries of
    messages stored with this correlation id or business key (whole values only,
    :mod:`coupler.canonical.tracecontext`); ``message_ids``: the entries of these messages;
    ``since``: entries recorded at or after this time. At most ``limit`` entries, oldest first.
    """

    message_id: str | None = None
    channel: str | None = None
    event: str | None = None
    since: datetime | None = None
    limit: int = 1000
    trace_ids: tuple[str, ...] | None = None
    key: str | None = None
    message_ids: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        # any iterable is accepted; kept as a tuple so that the query is a value
        for name in ("trace_ids", "message_ids"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))

    @property
    def key_pattern(self) -> str | None:
        """``key`` as it appears in a row's search keys (``|v1|v2|``)."""
        return None if self.key is None else f"|{self.key.replace('|', '/')}|"

    def matches(self, entry: JournalEntry, keys: str | None) -> bool:
        """Whether ``entry`` (stored with search ``keys``) is selected; for stores that filter
        in Python (the SQL stores translate the query: :mod:`coupler.bus.transport.sql_filters`)."""
        for wanted, value in ((self.message_id, entry.message_id), (self.channel, entry.channel),
                              (self.event, entry.event)):
            if wanted is not None and wanted != value:
                return False
        if self.trace_ids is not None and entry.trace_id not in self.trace_ids:
            return False
        if self.message_ids is not None and entry.message_id not in self.message_ids:
            return False
        pattern = self.key_pattern
        if pattern is not None and pattern not in (keys or ""):
            return False
        return self.since is None or entry.at >= self.since


class LocalClaims:
    """The claims with a lease that :meth:`Transport.claim`'s default keeps in this process:
    ``(scope, key)`` -> until when (epoch seconds), under a lock of their own (claims may come
    from any thread). A claim whose ``until`` has passed claims nothing; the expired ones are
    dropped once there are more than :attr:`PRUNE_AT` (deliveries that never gave theirs up)."""

    PRUNE_AT = 4096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._until: dict[tuple[str, str], float] = {}

    def claim(self, scope: str, keys: Iterable[str], until: float, now: float) -> bool:
        """Claim every one of ``keys`` in ``scope`` until ``until``, all or none: False
        (nothing claimed) when one of them has a claim that is still live at ``now``."""
        wanted = [(scope, k) for k in set(keys)]
        with self._lock:
            claims = self._until
            if any(claims.get(k, 0.0) > now for k in wanted):
                return False
            claims.update((k, until) for k in wanted)
            if len(claims) > self.PRUNE_AT:
                for k in [k for k, u in claims.items() if u <= now]:
                    del claims[k]
        return True

    def unclaim(self, scope: str, keys: Iterable[str]) -> None:
        """End the claims of ``keys`` in ``scope`` (those not claimed: nothing)."""
        with self._lock:
            for k in keys:
                self._until.pop((scope, k), None)


#: makes the :class:`LocalClaims` of a transport whose class's ``__init__`` did not
#: (one that does not call ``Transport.__init__``), once
_local_claims_made = threading.Lock()


class TransactionOps(abc.ABC):
    """The operations that can take part in one transaction (see :meth:`Transport.transaction`)."""

    @abc.abstractmethod
    def send(
        self,
        channel: str,
        envelopes: Envelope | Iterable[Envelope],
        *,
        component: str = "bus",
    ) -> list[str]:
        """Store messages on ``channel`` (fan-out when it is a topic); returns their ids.

        Appends a Message History entry ``(component, "send <channel>")`` to each stored copy;
        the caller's envelope objects are not changed.
        """

    @abc.abstractmethod
    def receive(
        self,
        channel: str,
        consumer: str,
        *,
        max: int = 1,
        lease_seconds: float | None = None,
        selector: Selector | str | None = None,
    ) -> list[Delivery]:
        """Lease up to ``max`` visible messages of ``channel`` (oldest first), without waiting.

        Expired messages met on the way are dead-lettered (reason ``expired``); messages whose
        lease expired after ``max_attempts`` deliveries are dead-lettered too. ``selector`` (a
        Message Selector) leases only matching messages and leaves the others in place.
        """

    @abc.abstractmethod
    def ack(self, deliveries: Delivery | Iterable[Delivery]) -> None:
        """Settle deliveries: the messages are done and removed from their channel.

        Raises :class:`LeaseLostError` when a lease was taken over by another consumer; inside
        a transaction a store may raise it later, at an operation after it or when the
        transaction ends (the RabbitMQ store; the PostgreSQL one, which sends the check with
        the next statement or the commit), and nothing of the transaction commits.
        """

    @abc.abstractmethod
    def nack(
        self,
        delivery: Delivery,
        error: str | BaseException,
        component: str,
        *,
        delay: float | None = None,
        dead: bool = False,
    ) -> Literal["retry", "dead"]:
        """Negative acknowledgement: redeliver after the backoff delay, or dead-letter.

        The message is dead-lettered when ``dead`` is true or when the channel's backoff
        policy has no attempt left; otherwise it becomes visible again after ``delay`` or the
        policy's delay for ``delivery.attempt``.

        Raises :class:`LeaseLostError` when the lease was taken over by another consumer; as
        for :meth:`ack`, inside a transaction a store may raise it later (the PostgreSQL one),
        and nothing of the transaction commits.
        """

    @abc.abstractmethod
    def invalid(
        self,
        envelope: Envelope | bytes,
        reason: str,
        component: str,
        *,
        channel: str | None = None,
        delivery: Delivery | None = None,
    ) -> int:
        """Put a message on the Invalid Message Channel (of ``channel``, or site-wide).

        When ``delivery`` is given it is settled at the same time (it does not come back);
        :class:`LeaseLostError` when its lease was taken over by another consumer, and, as for
        :meth:`nack`, nothing of the transaction commits (a store may check it with the
        commit). ``envelope`` may be raw bytes that could not be decoded. Returns the dead
        letter id.
        """

    def invalid_later(
        self,
        envelope: Envelope | bytes,
        reason: str,
        component: str,
        *,
        channel: str | None = None,
        delivery: Delivery | None = None,
    ) -> Callable[[], int]:
        """:meth:`invalid`, returning a function that answers the dead letter's id: for a
        caller inside a transaction that does not need the id before the transaction ends (a
        store may then send the move with the commit: the PostgreSQL one saves a round trip).
        Call the function after the transaction has committed (called inside it, it may send
        what the store kept); after a rollback there is no dead letter and no id."""
        id_ = self.invalid(envelope, reason, component, channel=channel, delivery=delivery)
        return lambda: id_

    @abc.abstractmethod
    def seen(self, consumer: str, keys: Iterable[str]) -> set[str]:
        """Of ``keys``, those ``consumer`` already recorded as processed (Idempotent Receiver)."""

    @abc.abstractmethod
    def mark_seen(self, consumer: str, keys: Iterable[str]) -> None:
        """Record ``keys`` as processed by ``consumer`` (kept for the idempotency retention)."""

    def record_claimed(self, consumer: str, keys: Iterable[str]) -> bool:
        """:meth:`mark_seen` of ``keys`` for ``consumer``, and the end of the claims
        (:meth:`Transport.claim`, scope ``consumer``) of them with this transaction's commit:
        a copy claiming them afterwards finds them recorded, and the one that waited for this
        transaction finds them too (an outbound adapter's delivery: recorded and unclaimed
        with its acknowledgement). True when the claims end with the commit; False when this
        store keeps the claims apart from its transactions (this default: the process's own
        claims), and the caller ends them with :meth:`Transport.unclaim` once committed."""
        self.mark_seen(consumer, keys)
        return False

    def mark_new(self, consumer: str, keys: Iterable[str]) -> set[str]:
        """:meth:`seen` and :meth:`mark_seen` in one step: record those of ``keys`` that
        ``consumer`` has not recorded yet, and return them. Atomic against every other
        transaction (other threads, other daemons of the site): a transaction recording one
        of the keys meanwhile waits for this one to end, and then finds it recorded (or, if
        this one rolled back, records it). The keys are committed with this transaction and
        never before what it stores: a check-then-act (``invalid_once``) acts once.

        This default is right for a store whose transactions exclude each other (SQLite's
        write transaction); others override it."""
        fresh = set(keys)
        fresh -= self.seen(consumer, fresh)
        if fresh:
            self.mark_seen(consumer, fresh)
        return fresh

    # -- keyed state of stateful steps (Aggregator, Resequencer, Process Manager) -----------

    #: whether a state change commits in the same transaction as the acknowledgement (SQLite,
    #: the storage transports); False on the broker, where the step records the ids of the
    #: messages it counted beside its state (see :mod:`coupler.bus.runtime.steps`)
    acks_with_state: bool = True

    def get_state(self, scope: str, keys: Iterable[str] | None = None, *, lock: bool = False) -> dict[str, bytes]:
        """The unexpired values of ``keys`` of ``scope`` (all its keys when None), in this
        transaction; ``lock``: keep other transactions (other daemons) from changing them until
        this one ends."""
        raise TransportError(f"{type(self).__name__} keeps no step state", hint="use transport.transaction()")

    def put_state(self, scope: str, values: dict[str, bytes | None], *, expires_at: float | None = None) -> None:
        """Write (None: delete) keyed state, committed with this transaction; ``expires_at``
        (epoch seconds): the values are gone after that time."""
        raise TransportError(f"{type(self).__name__} keeps no step state", hint="use transport.transaction()")


class Transport(TransactionOps):
    """Durable messaging: channels, leases, redelivery, dead letters, the Message Store.

    Methods of :class:`TransactionOps` called on the transport itself run in a transaction
    of their own (or join the transaction open in the calling thread).
    """

    #: the claims of :meth:`claim`'s default, kept in this process (made by ``__init__``, or
    #: by the first claim when a subclass's ``__init__`` does not call it)
    _local_claims: LocalClaims | None = None

    def __init__(self) -> None:
        self._local_claims = LocalClaims()

    def _process_claims(self) -> LocalClaims:
        claims = self._local_claims
        if claims is None:
            with _local_claims_made:  # two threads' first claims at once: one LocalClaims
                claims = self._local_claims
                if claims is None:
                    claims = self._local_claims = LocalClaims()
        return claims

    def keep_policy(
        self,
        *,
        backoff: BackoffPolicy | None = None,
        lease_seconds: float = 30.0,
        claim_threshold: int = 256 * 1024,
        journal_retention: float = 7 * 86400.0,
        idempotency_retention: float = 7 * 86400.0,
        dead_letter: str = DEFAULT_DEAD_LETTER,
        invalid: str = DEFAULT_INVALID,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Keep the settings every transport takes, with their defaults (the common
        ``[store]`` keys, applied by :mod:`coupler.bus.transport.policy`): a transport's
        constructor passes its ``**settings`` on."""
        self.backoff = backoff or BackoffPolicy()
        self.lease_seconds, self.claim_threshold, self.clock = lease_seconds, claim_threshold, clock
        self.journal_retention, self.idempotency_retention = journal_retention, idempotency_retention
        self.dead_letter_default, self.invalid_default = dead_letter, invalid

    # -- lifecycle -------------------------------------------------------------------------

    @abc.abstractmethod
    def open(self) -> Transport:
        """Connect / create the store. Idempotent. Returns self."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release connections. Messages stay in the store."""

    def __enter__(self) -> Transport:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions ----------------------------------------------------------------------

    @abc.abstractmethod
    @contextmanager
    def transaction(self) -> Iterator[TransactionOps]:
        """Transactional Client: ``with transport.transaction() as tx: ...``.

        Everything done through ``tx`` commits together when the block ends, or is rolled
        back when it raises (received messages stay visible, sent messages vanish, acks are
        undone). A nested ``transaction()`` in the same thread joins the outer one.
        """

    # -- TransactionOps on the transport itself: a transaction of their own ------------------

    def send(self, channel: str, envelopes: Envelope | Iterable[Envelope], *, component: str = "bus") -> list[str]:
        with self.transaction() as tx:
            return tx.send(channel, envelopes, component=component)

    def receive(self, channel: str, consumer: str, *, max: int = 1, lease_seconds: float | None = None,
                selector: Selector | str | None = None) -> list[Delivery]:
        with self.transaction() as tx:
            return tx.receive(channel, consumer, max=max, lease_seconds=lease_seconds, selector=selector)

    def ack(self, deliveries: Delivery | Iterable[Delivery]) -> None:
        with self.transaction() as tx:
            tx.ack(deliveries)

    def nack(self, delivery: Delivery, error: str | BaseException, component: str, *,
             delay: float | None = None, dead: bool = False) -> Literal["retry", "dead"]:
        with self.transaction() as tx:
            return tx.nack(delivery, error, component, delay=delay, dead=dead)

    def invalid(self, envelope: Envelope | bytes, reason: str, component: str, *,
                channel: str | None = None, delivery: Delivery | None = None) -> int:
        with self.transaction() as tx:
            return tx.invalid(envelope, reason, component, channel=channel, delivery=delivery)

    def seen(self, consumer: str, keys: Iterable[str]) -> set[str]:
        with self.transaction() as tx:
            return tx.seen(consumer, keys)

    def mark_seen(self, consumer: str, keys: Iterable[str]) -> None:
        with self.transaction() as tx:
            tx.mark_seen(consumer, keys)

    def mark_new(self, consumer: str, keys: Iterable[str]) -> set[str]:
        with self.transaction() as tx:
            return tx.mark_new(consumer, keys)

    @contextmanager
    def durable_later(self) -> Iterator[Callable[[], None]]:
        """Sends of this thread inside the block may return once their messages are committed,
        before they are on disk; the function it yields returns once everything they stored
        is durable, and may be called from any thread, after the block. A producer that
        remembers its progress elsewhere (a table's rows marked processed) waits for it
        before it does so, and meanwhile reads what comes next. By default sends are durable
        when they return and the function returns at once; the embedded store defers its
        group commit's disk sync."""
        yield durable_already

    # -- receiving with waiting ------------------------------------------------------------

    @abc.abstractmethod
    def receive_wait(
        self,
        channel: str,
        consumer: str,
        *,
        max: int = 1,
        lease_seconds: float | None = None,
        selector: Selector | str | None = None,
        wait: float = 0.0,
    ) -> list[Delivery]:
        """Like :meth:`receive`, but wait up to ``wait`` seconds for a first message."""

    # -- channels --------------------------------------------------------------------------

    @abc.abstractmethod
    def declare(self, channel: str, config: ChannelConfig | None = None, **settings: Any) -> ChannelConfig:
        """Create or reconfigure a channel (``kind``, ``dead_letter``, ``backoff``, ``format``...)."""

    @abc.abstractmethod
    def channel_config(self, channel: str) -> ChannelConfig:
        """The configuration of ``channel`` (defaults when it was never declared)."""

    @abc.abstractmethod
    def channels(self) -> list[str]:
        """Every known channel: declared ones and those holding or having held messages."""

    @abc.abstractmethod
    def subscribe(self, topic: str, subscription: str, *, selector: str | None = None) -> str:
        """Create a durable subscription to ``topic``; returns the channel to receive from.

        From now on every message sent to the topic (and matching ``selector``, a Message
        Selector, when given) is kept for this subscription until it is consumed, also while
        the subscriber is down.
        """

    @abc.abstractmethod
    def unsubscribe(self, topic: str, subscription: str) -> None:
        """Remove a durable subscription and the messages it still holds."""

    @staticmethod
    def subscription_channel(topic: str, subscription: str) -> str:
        """The queue holding ``subscription``'s copies of ``topic``'s messages."""
        return f"{topic}#{subscription}"

    @abc.abstractmethod
    def stats(self, channel: str | None = None) -> list[ChannelStats]:
        """Statistics of one channel or of all of them."""

    @abc.abstractmethod
    def peek(self, channel: str, max: int = 10) -> list[Envelope]:
        """The next messages of ``channel`` without leasing them (leased ones included)."""

    @abc.abstractmethod
    def purge(self, channel: str) -> int:
        """Channel Purger: delete every message of ``channel``; returns how many."""

    # -- dead letters ----------------------------------------------------------------------

    @abc.abstractmethod
    def dead_letters(
        self, queue: str | None = None, *, kind: DeadKind | None = None, limit: int = 100
    ) -> list[DeadLetter]:
        """Dead letters, newest first; of one dead-letter queue and/or kind, or all."""

    @abc.abstractmethod
    def dead_letter(self, id: int) -> DeadLetter:
        """One dead letter, or :class:`UnknownDeadLetterError`."""

    @abc.abstractmethod
    def replay(self, id: int, channel: str | None = None, *, body: bytes | None = None,
               envelope: Envelope | None = None) -> str:
        """Send a dead letter back to its channel (or ``channel``) with a fresh attempt count;
        with ``body``, the message carries that body instead (edit and replay); with
        ``envelope`` (the dead letter's message id, see :func:`replacement`), that message goes
        in its place (an edited record run through its inbound mapping again).

        Returns the message id; the dead letter is removed in the same transaction.
        """

    @abc.abstractmethod
    def purge_dead_letters(self, queue: str | None = None, *, kind: DeadKind | None = None) -> int:
        """Delete dead letters (of one queue and/or kind, or all); returns how many."""

    # -- message store ---------------------------------------------------------------------

    def journal(self, query: JournalQuery | None = None, /, **filters: Any) -> list[JournalEntry]:
        """Query the Message Store journal (oldest first): ``query``, or a
        :class:`JournalQuery` made of the keyword ``filters`` (``message_id``, ``channel``,
        ``event``, ``since``, ``limit``, ``trace_ids``, ``key``, ``message_ids``)."""
        if query is None:
            query = JournalQuery(**filters)
        elif filters:
            raise TypeError("journal(): give a JournalQuery or keyword filters, not both")
        return self.query_journal(query)

    @abc.abstractmethod
    def query_journal(self, query: JournalQuery) -> list[JournalEntry]:
        """The journal entries matching ``query``, oldest first (see :class:`JournalQuery`)."""

    @abc.abstractmethod
    def maintain(self) -> dict[str, int]:
        """Housekeeping: dead-letter expired messages, purge the journal and idempotency
        records past their retention, delete unreferenced claim-check files. Returns counts."""

    # -- application identities (queue-less addressing) ------------------------------------

    @property
    @abc.abstractmethod
    def identities(self) -> IdentityRepository:
        """The Application Repository of this store (see :mod:`coupler.bus.model.identities`)."""

    # -- a replay cache ---------------------------------------------------------------------

    @abc.abstractmethod
    def remember(self, scope: str, key: str, ttl: float) -> bool:
        """Record ``key`` in ``scope`` for ``ttl`` seconds, atomically, and durably before
        returning: True when it was not recorded within the last ``ttl`` seconds, False when it
        was (a replay: a WS-Security nonce used twice). Every daemon of a site sees the same
        records (the idempotency records of the store, purged after the idempotency window,
        which must be longer than any ``ttl``)."""

    # -- claims with a lease (an outbound adapter's Idempotent Receiver) ----------------------

    def claim(self, scope: str, keys: Iterable[str], until: float) -> bool:
        """Claim every one of ``keys`` in ``scope`` until ``until`` (epoch seconds), all or
        none, atomically against every other worker and daemon of the site: True when none of
        them is claimed by a live claim (one whose ``until`` has not passed), False (nothing
        claimed) when one is. A claim ends with :meth:`unclaim` or when ``until`` passes, so
        a process that dies holding one blocks nobody for longer than that.

        Nothing is durable here: a claim lost in a crash is a claim that expired. This default
        keeps the claims in this process (:class:`LocalClaims`), which is right for a store that one daemon uses
        (the embedded SQLite store: one daemon per data directory); the stores several daemons
        share keep them in the store (the storage transports, the broker's PostgreSQL)."""
        now = getattr(self, "clock", time.time)()  # keep_policy's clock (a transport that kept none: time)
        return self._process_claims().claim(scope, keys, until, now)

    def unclaim(self, scope: str, keys: Iterable[str]) -> None:
        """Give up the claims of ``keys`` in ``scope`` (see :meth:`claim`)."""
        self._process_claims().unclaim(scope, keys)

    def claim_fresh(self, consumer: str, keys: Iterable[str], until: float) -> ClaimOutcome:
        """:meth:`claim` of ``keys`` in scope ``consumer`` until ``until``, then :meth:`seen`
        of them for ``consumer``, checked after the claim was taken (a delivery that recorded
        them and ended its claim meanwhile is seen): ``"claimed"`` when every key is claimed
        and none recorded; ``"recorded"`` when one is recorded already (nothing stays claimed:
        a duplicate); ``"busy"`` when another live claim holds one and none is recorded
        (nothing claimed). This default makes the two calls (and :meth:`unclaim` when the
        keys were claimed and found recorded); a shared store does it in one round trip."""
        keys = list(keys)
        claimed = self.claim(consumer, keys, until)
        if self.seen(consumer, keys):
            if claimed:
                self.unclaim(consumer, keys)
            return "recorded"
        return "claimed" if claimed else "busy"

    # -- metrics ----------------------------------------------------------------------------

    def exports_shared_figures(self) -> bool:
        """Whether this process should export the figures every daemon of the site shares
        (channel depths and counters) to Prometheus: always for a store of one daemon; on a
        multi-node site, only the one daemon that holds the store's metrics lock."""
        return True

    # -- the seen-state of polling adapters ------------------------------------------------

    def file_state(self, adapter: str, owner: str) -> FileState | None:
        """The file seen-state of ``adapter`` shared by every daemon of the site, claims made
        as ``owner`` (one daemon's adapter instance); None when the store keeps none (a
        single-node site: the adapter keeps ``files.db`` in its data directory)."""
        return None
