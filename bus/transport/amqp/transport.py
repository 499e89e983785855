"""The broker transport: the bus on RabbitMQ (AMQP 0-9-1) with shared state in PostgreSQL.

For sites that outgrow one machine: several daemons, on several hosts, share one RabbitMQ
cluster and one PostgreSQL database, with no change to adapters, routes or translators
(``[store] type = "amqp"`` in ``site.toml``). It implements :class:`Transport` and passes the
same contract tests as the embedded SQLite transport.

How the patterns map onto the broker (every name starts with the site's ``prefix``):

* Point-to-Point channel -> durable **quorum queue** ``q:<channel>``; each process has one
  long-lived consumer on it (**manual acknowledgements**) to which the broker pushes
  messages ahead (prefetch); receives take them from there, so competing consumers share
  the queue and a receive costs no round trip. (A receive with a selector also
  takes the rest of the queue with ``basic.get``.)
* Publish-Subscribe channel -> durable **topic exchange** ``t:<topic>`` with one durable
  quorum queue per subscription (``q:<topic>#<subscription>``). Subscriptions without a
  selector are bound with ``all.#``; a subscription with a Message Selector gets its own
  binding and the publisher sends it a copy of each matching message.
* Guaranteed Delivery -> persistent messages and **publisher confirms**: ``send`` returns
  after the broker confirmed every message; the confirms of the sends of all threads of a
  process arrive pipelined (:meth:`Link.send`).
* Claim Check -> a body over ``claim_threshold`` is stored in PostgreSQL in chunks first;
  the message carries its reference (``coupler-claim``) and an empty body, so a daemon on
  any host reads it. The references are counted per queue; the body goes with the last.
* Leases -> a received message stays unacknowledged on the broker; the transport's
  connection thread expires the lease (the message is sent back to its queue with its
  attempt count) when it is not settled in time. When a daemon dies its connection closes
  and the broker gives its unacknowledged messages to the other consumers.
* Redelivery with backoff -> the failed message is republished to a **delay queue**
  (``delay:<ms>``, a per-queue TTL; buckets 25 % apart) whose **dead-letter exchange** is
  the default exchange: when the delay is over it goes back to its channel's queue.
* Message Expiration -> per-message TTL (``expiration``). The broker dead-letters what
  expires in a queue to ``expired``, from where the transport files it in the Dead Letter
  Channel with reason ``expired``; a message found expired on receipt goes there directly.
* Dead Letter / Invalid Message Channels -> quorum queues ``dl:<name>``; every dead letter
  carries its record (id, reason, error, component, attempts) in a ``coupler-dead`` header.
* Attempts -> the ``coupler-attempts`` header (republished messages) plus the broker's
  ``x-delivery-count`` (messages returned to the queue by the broker) less the returns the
  transport made without an attempt (browses, selector skips, unused prefetch), which it
  records in PostgreSQL before returning them. The queues' ``x-delivery-limit`` stops a
  message that crashes every consumer that takes it.
* Stuck messages -> ``stats`` gives the age of the oldest message this process holds and of
  the queue's first ready one (looked at on a spare channel), from its send hop.

PostgreSQL (:class:`~coupler.bus.transport.amqp.store.PgStore`) keeps what every daemon must agree on:
channel configurations, subscriptions, the Message Store journal, counters, idempotency keys,
the Application Repository, dead-letter ids, claim-checked bodies, the returns without an
attempt, and the list of broker objects of the site. Nothing is written there per message
on the hot path: the journal and counters go in batches from a writer thread.

Transactions (Transactional Client): ``receive`` happens at once; sends, acks, nacks and
idempotency keys are kept until the block ends, then published (confirmed), recorded and
acknowledged in that order; a rollback returns the received messages to their queues. AMQP
cannot make the broker and PostgreSQL commit atomically, so a crash between the publish and
the acknowledgement delivers the input again: at least once, with the Idempotent Receiver
dropping the duplicate.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import logging
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any, Literal

import pika
import pika.exceptions as px

from coupler.bus.model.backoff import BackoffPolicy
from coupler.bus.model.identities import IdentityRepository
from coupler.bus.model.selectors import Selector, as_selector
from coupler.bus.transport.amqp.codec import (
    H_ATTEMPTS,
    H_CLAIM,
    H_DEAD,
    H_LEASE_LOST,
    H_RAW,
    Received,
    from_amqp,
    to_amqp,
)
from coupler.bus.transport.amqp.file_state import PgFileState
from coupler.bus.transport.amqp.link import CHANNEL_ERRORS, Link
from coupler.bus.transport.amqp.names import Names
from coupler.bus.transport.amqp.store import PgIdentityRepository, PgStore, StateTx
from coupler.bus.transport.base import (
    DEFAULT_DEAD_LETTER,
    DEFAULT_INVALID,
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
from coupler.bus.transport.codec import decode, encode
from coupler.bus.transport.policy import (
    ACKED,
    DEAD_LETTERS_PURGED,
    ERROR_EXPIRED,
    LEASE_EXPIRED,
    PUBLISHED,
    PURGED,
    REASON_EXPIRED,
    RECEIVED,
    REPLAYED,
    SENT,
    SUBSCRIBED,
    UNSUBSCRIBED,
    NackDecision,
    backoff_for,
    dead_letter_queue,
    lease_for,
    nack_decision,
    record_dead,
    record_nacked,
)
from coupler.bus.transport.sql_filters import journal_trace
from coupler.canonical import Envelope
from coupler.canonical.envelope import HistoryEntry
from coupler.canonical.errors import CouplerError

log = logging.getLogger(__name__)

DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
_CONFIG_TTL = 1.0  # seconds a channel configuration read from PostgreSQL is reused
_BROWSE_LIMIT = 100_000
max_ = max  # the builtin, where a parameter is called max
_PREFETCH_MIN = 20  # messages pushed ahead to a consumer: twice the batch asked, at least this
_IDLE_SECONDS = 5.0  # a consumer nobody received from for this long returns what it holds
_SETTLE_WAIT = 0.05  # a receive without waiting waits this long for messages the queue reports
_FIRST_WAIT = 1.0  # ... and up to this long for the first of them
#: acknowledgements are coalesced: sent together (one ``multiple`` ack) when this many are
#: waiting, with the next operation on the connection, or this many seconds after the first
#: (each acknowledgement of a quorum queue is a Raft command of the broker's)
_ACK_COALESCE = 10
_ACK_DELAY = 0.005
#: a send of many messages is encoded and published in chunks of this many
_PUBLISH_CHUNK = 25


@dataclass
class _Lease:
    id: int
    generation: int
    tag: int
    channel: str
    queue: str
    consumer: str
    stored: Envelope | None
    received: Received
    attempt: int
    expires_at: float
    #: the reference of its claim-checked body (``stored`` then has an empty body)
    claim: str | None = None
    #: the transport returned it to its queue before (a ``returns`` record to forget)
    returned: bool = False

    @property
    def message_id(self) -> str:
        props = self.received.properties
        return str(props.message_id or "") if props is not None else ""

    def as_stored(self) -> Envelope:
        """The envelope as it is stored in the queue (without this delivery's hop and
        attempt; an empty body when it is claim-checked), decoded again when needed."""
        if self.stored is None:
            props = self.received.properties
            env = from_amqp(props, self.received.body).envelope
            assert env is not None
            self.stored = env
        return self.stored


@dataclass
class _Consumer:
    """This process's long-lived consumer on one queue and what the broker pushed to it.

    ``buffer`` holds ``(delivery_tag, properties, body)`` of messages delivered but not yet
    leased to a receive (at most ``prefetch`` together with the leases of the queue); they
    are returned to the queue when the consumer is cancelled (idle, channel lost, close).
    """

    queue: str
    channel: str
    generation: int
    prefetch: int
    tag: str | None = None
    buffer: deque[tuple[int, Any, bytes]] = field(default_factory=deque)
    used: float = field(default_factory=time.monotonic)


@dataclass
class _Journal:
    """Journal rows and counter increments collected by one operation."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, channel: str | None, message_id: str | None, event: str, detail: str | None = None) -> None:
        self.rows.append((channel, message_id, event, detail))

    journal = add  # a policy.Recorder

    def add_sent(self, channel: str, envelope: Envelope, event: str, detail: str | None) -> None:
        """The row of a message being stored, with its trace id and search keys."""
        self.rows.append((channel, envelope.message_id, event, detail, *journal_trace(envelope)))

    def count(self, channel: str, counter: str, n: int = 1) -> None:
        self.counts[(channel, counter)] += n

    def merge(self, other: _Journal) -> None:
        self.rows.extend(other.rows)
        self.counts.update(other.counts)


class AmqpTransport(Transport):
    """Durable channels on RabbitMQ; shared state in PostgreSQL.

    ``url`` is the AMQP URL of the broker (a cluster is reached through a load balancer or
    any of its nodes), ``postgres`` the PostgreSQL DSN (or an open :class:`PgStore`),
    ``prefix`` the name prefix of every broker object of the site, ``postgres_schema`` the
    PostgreSQL schema of its tables. ``delivery_limit`` is the number of times the broker
    returns a message to its queue (consumer crashes, lost connections) before it gives up
    on it (dead letter with reason ``delivery limit``). ``file_lease_seconds`` is how long a
    daemon's claim on a polled file lasts without progress before another daemon may take
    the file over (:class:`~coupler.bus.transport.amqp.file_state.PgFileState`).
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        postgres: str | PgStore = "postgresql://127.0.0.1:5432/postgres",
        prefix: str = "coupler.",
        postgres_schema: str = "coupler",
        backoff: BackoffPolicy | None = None,
        lease_seconds: float = 30.0,
        journal_retention: float = 7 * 86400.0,
        idempotency_retention: float = 7 * 86400.0,
        dead_letter: str = DEFAULT_DEAD_LETTER,
        invalid: str = DEFAULT_INVALID,
        delivery_limit: int = 50,
        reconnect_timeout: float = 60.0,
        file_lease_seconds: float = 300.0,
        prefetch_limit: int = 1000,
        claim_threshold: int = 256 * 1024,
        name: str = "coupler",
    ):
        self.url = url
        self.store = postgres if isinstance(postgres, PgStore) else PgStore(postgres, schema=postgres_schema)
        self.names = Names(prefix, delivery_limit)
        self.keep_policy(backoff=backoff, lease_seconds=lease_seconds, claim_threshold=claim_threshold,
                         journal_retention=journal_retention, idempotency_retention=idempotency_retention,
                         dead_letter=dead_letter, invalid=invalid)
        self.reconnect_timeout = reconnect_timeout
        self.file_lease_seconds = file_lease_seconds
        self.name = name
        self._link: Link | None = None
        self._local = threading.local()
        #: guards _leases and _consumers (the link's thread and callers share them)
        self._cond = threading.Condition(threading.RLock())
        self._leases: dict[int, _Lease] = {}
        self._consumers: dict[str, _Consumer] = {}
        #: (generation, delivery tag) of messages taken from a buffer and not yet leased
        self._limbo: set[tuple[int, int]] = set()
        self._subscribers: dict[str, tuple[float, list[tuple[str, Selector]]]] = {}
        #: per channel with ready messages: (since when this process has seen it waiting
        #: without an acknowledgement, its acked count then) -- see stats()
        self._waiting: dict[str, tuple[float, int]] = {}
        self.prefetch_limit = prefetch_limit
        self._lease_ids = itertools.count(1)
        self._declared: set[str] = set()
        self._configs: dict[str, tuple[float, ChannelConfig]] = {}
        self._rng = random.Random()
        self._identities = PgIdentityRepository(self.store)
        self._next_sweep = 0.0
        self._link_generation = 0
        #: delivery tags acknowledged by the application, not yet sent (and their generation)
        self._ack_tags: list[int] = []
        self._ack_generation = 0

    def __repr__(self) -> str:
        host = self._link.params.host if self._link else self.url.rsplit("@", 1)[-1]
        return f"AmqpTransport({host!r}, prefix={self.names.prefix!r}, store={self.store!r})"

    # -- lifecycle -------------------------------------------------------------------------

    def open(self) -> AmqpTransport:
        if self._link is not None:
            return self
        self.store.open()
        link = Link(
            self.url,
            name=self.name,
            reconnect_timeout=self.reconnect_timeout,
            tick=self._tick,
            on_new_channel=self._on_new_channel,
            on_deferred=self._send_pending_acks,
        )
        try:
            link.start(self._declare_basics)
        except BaseException:
            link.stop()
            self.store.close()
            raise
        self._link = link
        self.publish_outbox(0.0)
        return self

    def publish_outbox(self, min_age: float) -> int:
        """Publish the outputs of state changes whose process died before it published them
        (at open, and by :meth:`maintain` for entries older than ``min_age`` seconds); returns
        how many messages. A copy already published is published again with the same id (an
        Idempotent Receiver drops it)."""
        n = 0
        with self.store.stale_outbox(time.time() - min_age) as entries:
            journal = _Journal()
            sends = [send for _key, entry in entries for send in _outbox_sends(entry)]

            if sends:
                self._send_confirmed(sends, journal)
                n = sum(len(envs) for _c, envs, _comp in sends)
            self._record(journal)
        if n:
            log.warning("published %d message(s) of state changes a stopped process had not published", n)
        return n

    def close(self) -> None:
        if self._link is not None and self._ack_tags:  # coalesced acknowledgements go out now
            with contextlib.suppress(TransportError):
                self._link.call(self._send_pending_acks, retry=False, timeout=2)
        if self._link is not None and self._consumers:
            # read what the broker already pushed first: a prefetched message still unread in
            # the socket when the channel closes would go back counted as an attempt
            with contextlib.suppress(TransportError):
                self._link.call(self._drain_pushed, retry=False, timeout=2)
        with self._cond:  # pushed ahead, never leased: their return is no attempt
            unused = {c.queue: [p.message_id for _t, p, _b in c.buffer] for c in self._consumers.values()}
        if self._link is not None:
            for queue, ids in unused.items():
                with contextlib.suppress(TransportError):
                    self.store.add_returns(queue, ids)
        link, self._link = self._link, None
        if link is not None:
            link.stop()  # unsettled deliveries go back to their queues on the broker
        with self._cond:
            # prefetched messages that arrived while the ones above were recorded (a busy
            # machine's connection thread is late): their return is no attempt either
            late = {c.queue: [p.message_id for _t, p, _b in c.buffer if p.message_id not in unused.get(c.queue, ())]
                    for c in self._consumers.values()}
            self._leases.clear()
            self._consumers.clear()
        if link is not None:
            for queue, ids in late.items():
                if ids:
                    with contextlib.suppress(TransportError):
                        self.store.add_returns(queue, ids)
        self._configs.clear()
        self._subscribers.clear()
        self.store.close()

    def _drain_pushed(self, link: Link) -> None:
        """Process deliveries until none arrives for 20 ms (at most 0.5 s)."""
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            held = sum(len(c.buffer) for c in self._consumers.values())
            link.pump(0.02)
            if sum(len(c.buffer) for c in self._consumers.values()) == held:
                return

    def file_state(self, adapter: str, owner: str) -> PgFileState:
        """The seen-state of polling adapter ``adapter``, shared by every daemon of the site."""
        return PgFileState(self.store, adapter, owner, lease_seconds=self.file_lease_seconds)

    def destroy(self) -> None:
        """Delete every broker object of the site and its PostgreSQL schema (decommission)."""
        self.open()
        objects = self.store.broker_objects()

        def delete(link: Link) -> None:
            for name, kind in objects:
                with contextlib.suppress(*CHANNEL_ERRORS):
                    if kind == "exchange":
                        link.ch.exchange_delete(name)
                    else:
                        link.ch.queue_delete(name)
                    continue
                link._channel_lost(TransportError(f"could not delete {name}"))

        self._call(delete)
        self.close()
        self.store.open().drop()
        self.store.close()

    def _call(self, fn: Callable[[Link], Any], *, retry: bool = True) -> Any:
        if self._link is None:
            raise TransportError("the AMQP transport is not open", hint="call open() first")
        return self._link.call(fn, retry=retry)

    def _on_new_channel(self, link: Link) -> None:
        # every delivery of the old channel (leased or pushed ahead) went back to the broker
        with self._cond:
            self._leases.clear()
            self._consumers.clear()
            self._cond.notify_all()
        if link.conn is not None:
            link.ch.basic_qos(prefetch_count=0)

    def _declare_basics(self, link: Link) -> None:
        link.ch.exchange_declare(self.names.expired, "fanout", durable=True)
        self.store.add_broker_object(self.names.expired, "exchange")
        self._queue(link, self.names.expired, self.names.dead_arguments())
        link.ch.queue_bind(self.names.expired, self.names.expired)
        for name in (self.dead_letter_default, self.invalid_default):
            self._queue(link, self.names.dead(name), self.names.dead_arguments())

    def _queue(self, link: Link, queue: str, arguments: dict[str, Any]) -> str:
        if queue not in self._declared:
            self.store.add_broker_object(queue, "queue")
            link.ch.queue_declare(queue, durable=True, arguments=arguments)
            self._declared.add(queue)
        return queue

    def _channel_queue(self, link: Link, channel: str) -> str:
        return self._queue(link, self.names.queue(channel), self.names.channel_arguments())

    def _dead_queue(self, link: Link, name: str) -> str:
        return self._queue(link, self.names.dead(name), self.names.dead_arguments())

    def _topic_exchange(self, link: Link, topic: str) -> str:
        exchange = self.names.topic(topic)
        if exchange not in self._declared:
            self.store.add_broker_object(exchange, "exchange")
            link.ch.exchange_declare(exchange, "topic", durable=True)
            self._declared.add(exchange)
        return exchange

    # -- transactions ----------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[TransactionOps]:
        current = getattr(self._local, "tx", None)
        if current is not None:
            yield current
            return
        tx = _AmqpTx(self)
        self._local.tx = tx
        try:
            yield tx
        except BaseException:
            self._local.tx = None
            tx.rollback()
            raise
        self._local.tx = None
        tx.commit()

    def _tx(self) -> _AmqpTx | None:
        return getattr(self._local, "tx", None)

    # -- TransactionOps on the transport itself --------------------------------------------

    def send(self, channel: str, envelopes: Envelope | Iterable[Envelope], *, component: str = "bus") -> list[str]:
        tx = self._tx()
        if tx is not None:
            return tx.send(channel, envelopes, component=component)
        envs = self._check_envelopes(channel, envelopes)
        if not envs:
            return []
        journal = _Journal()
        self._send_confirmed([(channel, envs, component)], journal)
        self._record(journal)
        return [e.message_id for e in envs]

    def receive(
        self,
        channel: str,
        consumer: str,
        *,
        max: int = 1,
        lease_seconds: float | None = None,
        selector: Selector | str | None = None,
    ) -> list[Delivery]:
        tx = self._tx()
        if tx is not None:
            return tx.receive(channel, consumer, max=max, lease_seconds=lease_seconds, selector=selector)
        return self._receive(channel, consumer, max=max, lease_seconds=lease_seconds, selector=selector)

    def ack(self, deliveries: Delivery | Iterable[Delivery]) -> None:
        tx = self._tx()
        if tx is not None:
            tx.ack(deliveries)
            return
        ds = [deliveries] if isinstance(deliveries, Delivery) else list(deliveries)
        if ds:
            journal = _Journal()
            self._ack_now(ds, journal)
            self._record(journal)

    def nack(
        self,
        delivery: Delivery,
        error: str | BaseException,
        component: str,
        *,
        delay: float | None = None,
        dead: bool = False,
    ) -> Literal["retry", "dead"]:
        tx = self._tx()
        if tx is not None:
            return tx.nack(delivery, error, component, delay=delay, dead=dead)
        decision = self._nack_plan(delivery, dead, delay)
        journal = _Journal()
        self._call(
            lambda link: self._nack(link, delivery, error_text(error), component, decision, journal),
            retry=False,
        )
        self._record(journal)
        return decision.outcome

    def invalid(
        self,
        envelope: Envelope | bytes,
        reason: str,
        component: str,
        *,
        channel: str | None = None,
        delivery: Delivery | None = None,
    ) -> int:
        tx = self._tx()
        if tx is not None:
            return tx.invalid(envelope, reason, component, channel=channel, delivery=delivery)
        dead_id = self.store.next_dead_letter_id()
        journal = _Journal()
        self._call(
            lambda link: self._invalid(link, dead_id, envelope, reason, component, channel, delivery, journal),
            retry=delivery is None,
        )
        self._record(journal)
        return dead_id

    def seen(self, consumer: str, keys: Iterable[str]) -> set[str]:
        return self.store.seen(consumer, keys)

    def remember(self, scope: str, key: str, ttl: float) -> bool:
        return self.store.remember(scope, key, ttl)

    def claim(self, scope: str, keys: Iterable[str], until: float) -> bool:
        return self.store.claim(scope, keys, until)

    def unclaim(self, scope: str, keys: Iterable[str]) -> None:
        self.store.unclaim(scope, keys)

    def claim_fresh(self, consumer: str, keys: Iterable[str], until: float) -> ClaimOutcome:
        return self.store.claim_fresh(consumer, keys, until)

    def mark_seen(self, consumer: str, keys: Iterable[str]) -> None:
        tx = self._tx()
        if tx is not None:
            tx.mark_seen(consumer, keys)
        else:
            self.store.mark_seen(consumer, keys)

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
        sel = as_selector(selector)
        deadline = time.monotonic() + wait
        if sel is not None or self._tx() is not None:
            pause = 0.0005
            while True:
                got = self.receive(channel, consumer, max=max, lease_seconds=lease_seconds, selector=sel)
                left = deadline - time.monotonic()
                if got or left <= 0:
                    return got
                time.sleep(min(pause, left))
                pause = min(pause * 2, 0.01)
        # the queue's consumer pushes messages into this process: wait for the first one
        got = self._receive(channel, consumer, max=max, lease_seconds=lease_seconds, selector=None,
                            settle=False)
        queue = self.names.queue(channel)
        while not got:
            with self._cond:
                c = self._consumers.get(queue)
                left = deadline - time.monotonic()
                if left <= 0:
                    return []
            if c is not None and not c.buffer:  # read the connection here until some arrive
                link = self._link
                if link is None:
                    raise TransportError("the AMQP transport is not open", hint="call open() first")
                link.wait_io(min(left, 0.5), partial(self._pushed, queue, c))
            got = self._receive(channel, consumer, max=max, lease_seconds=lease_seconds, selector=None,
                                settle=False)
        return got

    def _pushed(self, queue: str, c: _Consumer) -> bool:
        """Whether consumer ``c`` of ``queue`` got messages (or was replaced meanwhile)."""
        return bool(c.buffer) or self._consumers.get(queue) is not c

    # -- the work, holding the connection -----------------------------------------------

    def _check_envelopes(self, channel: str, envelopes: Envelope | Iterable[Envelope]) -> list[Envelope]:
        check_channel_name(channel)
        return envelope_list(channel, envelopes)

    def _record(self, journal: _Journal) -> None:
        self.store.record(journal.rows, journal.counts)

    def _ensure(self, name: str, declare: Callable[[Link], Any]) -> str:
        """``name`` after ``declare`` made sure it exists on the broker (once per process)."""
        if name not in self._declared:
            self._call(declare)
        return name

    def _channel_messages(
        self, channel: str, envs: list[Envelope], component: str, journal: _Journal, *, attempts: int = 0,
    ) -> tuple[list[tuple[str, str, bytes, Any]], list[Envelope]]:
        """The AMQP messages of a send of ``envs`` to ``channel`` (with a history hop), and
        the copies that expired before they could be sent."""
        hop = HistoryEntry(component, f"send {channel}")
        now = datetime.now(UTC)
        copies = envs  # the send hop is added to the AMQP headers, the caller's envelopes stay
        messages: list[tuple[str, str, bytes, Any]] = []
        expired: list[Envelope] = []
        if self.channel_config(channel).kind == "topic":
            exchange = self._ensure(self.names.topic(channel), lambda link: self._topic_exchange(link, channel))
            with_selector = self._selective_subscriptions(channel)
            for env in copies:
                if env.is_expired(now):
                    continue  # a copy expired before it was published reaches no subscription
                keys = [Names.ALL_KEY] + [Names.selector_key(name) for name, sel in with_selector if sel(env)]
                if len(env.body) > self.claim_threshold:
                    refs = self._subscriber_queues(channel, keys)
                    if not refs:
                        continue  # no subscription takes it
                    body, props = to_amqp(env.replace(body=b""), now=now, hop=hop,
                                          extra={H_CLAIM: self.store.put_claim(env.body, refs)})
                else:
                    body, props = to_amqp(env, now=now, hop=hop)
                messages.extend((exchange, key, body, props) for key in keys)
                journal.add_sent(channel, env, PUBLISHED, component)
            journal.count(channel, "sent", len(copies))
            return messages, []
        queue = self._ensure(self.names.queue(channel), lambda link: self._channel_queue(link, channel))
        for env in copies:
            if env.is_expired(now):
                expired.append(env.replace(history=[*env.history, hop]))
                continue
            if len(env.body) > self.claim_threshold:  # Claim Check: the body waits in PostgreSQL
                ref = self.store.put_claim(env.body, {queue: 1})
                body, props = to_amqp(env.replace(body=b""), attempts=attempts, now=now, hop=hop,
                                      extra={H_CLAIM: ref})
            else:
                body, props = to_amqp(env, attempts=attempts, now=now, hop=hop)
            messages.append(("", queue, body, props))
            journal.add_sent(channel, env, SENT, component)
        if messages:
            journal.count(channel, "sent", len(messages))
        return messages, expired

    def _send_confirmed(
        self, sends: list[tuple[str, list[Envelope], str]], journal: _Journal, *, generation: int | None = None,
    ) -> None:
        """Publish the ``(channel, envelopes, component)`` of ``sends`` and return when the
        broker confirmed them all (pipelined with the other publishes of this process; what it
        nacks published again after a growing pause: :meth:`Link.send`). A large batch is
        encoded and published in chunks of ``_PUBLISH_CHUNK``: the broker stores the first
        chunks while the next are encoded. ``generation``: publish them on that channel only
        (that of deliveries being settled with them), failing when the connection breaks;
        None: again on a new connection when it breaks before every confirm is in."""
        if self._link is None:
            raise TransportError("the AMQP transport is not open", hint="call open() first")
        expired: list[tuple[str, Envelope]] = []
        last_send = len(sends) - 1

        def chunks() -> Iterator[tuple[list[tuple[str, str, bytes, Any]], bool]]:
            for n, (channel, envs, component) in enumerate(sends):
                for i in range(0, len(envs), _PUBLISH_CHUNK):
                    messages, late = self._channel_messages(channel, envs[i:i + _PUBLISH_CHUNK], component,
                                                            journal)
                    expired.extend((channel, env) for env in late)
                    yield messages, n == last_send and i + _PUBLISH_CHUNK >= len(envs)

        self._link.send(chunks(), generation=generation)
        if expired:
            self._call(lambda link: [
                self._dead(link, channel, env, env.body, {}, "dead", "expired",
                           "message expired before it was sent", "transport", 0, journal)
                for channel, env in expired
            ])

    def _subscriber_queues(self, topic: str, keys: list[str]) -> dict[str, int]:
        """The queues a message published to ``topic`` with routing ``keys`` lands in."""
        out: dict[str, int] = {}
        for _t, name, sub_channel, sel in self.store.subscriptions(topic):
            if (Names.selector_key(name) if sel else Names.ALL_KEY) in keys:
                out[self.names.queue(sub_channel)] = 1
        return out

    def _selective_subscriptions(self, topic: str) -> list[tuple[str, Selector]]:
        """The subscriptions of ``topic`` that have a selector (read again after a second)."""
        cached = self._subscribers.get(topic)
        if cached is not None and time.monotonic() - cached[0] < _CONFIG_TTL:
            return cached[1]
        subs = [(name, Selector.parse(sel)) for _t, name, _c, sel in self.store.subscriptions(topic) if sel]
        self._subscribers[topic] = (time.monotonic(), subs)
        return subs

    def _receive(
        self,
        channel: str,
        consumer: str,
        *,
        max: int = 1,
        lease_seconds: float | None = None,
        selector: Selector | str | None = None,
        settle: bool = True,
    ) -> list[Delivery]:
        """Lease up to ``max`` messages of ``channel``.

        Without a selector they come from the queue's consumer in this process, to which the
        broker pushes messages ahead (``prefetch``): no round trip per receive. ``settle``: when
        fewer than ``max`` were pushed, ask the queue how many are ready and wait a moment for
        them (a receive that does not wait must still see what was sent before it).
        """
        check_channel_name(channel)
        if max < 1:
            return []
        sel = as_selector(selector)
        cfg = self.channel_config(channel)
        lease = lease_for(lease_seconds, cfg, self.lease_seconds)
        policy = backoff_for(cfg, self.backoff)
        journal = _Journal()
        queue = self.names.queue(channel)
        with self._cond:
            c = self._consumers.get(queue)
            if c is not None:
                c.used = time.monotonic()
        if c is None:
            self._call(lambda link: self._start_consumer(link, channel, max))
        elif settle and len(c.buffer) < max:
            self._call(lambda link: self._settle(link, queue, max))
        taken = self._take(channel, consumer, max, lease, sel, policy, journal)
        if sel is not None and len(taken) < max:  # the rest of the queue, on the broker
            taken += self._call(lambda link: self._get(link, channel, consumer, max - len(taken), lease,
                                                       sel, policy, journal))
        for d in taken:
            journal.add(channel, d.message_id, RECEIVED, consumer)
        if taken:
            journal.count(channel, "received", len(taken))
        self._record(journal)
        return taken

    # the queue's consumer ------------------------------------------------------------------

    def _start_consumer(self, link: Link, channel: str, max: int) -> None:
        """Start this process's consumer on ``channel``'s queue (holding the connection), then
        wait a moment for the messages the queue has ready."""
        queue = self._channel_queue(link, channel)
        with self._cond:
            c = self._consumers.get(queue)
            if c is not None and c.generation == link.generation:
                return
            prefetch = min(self.prefetch_limit, 2 * max if 2 * max > _PREFETCH_MIN else _PREFETCH_MIN)
            c = _Consumer(queue, channel, link.generation, prefetch)
            self._consumers[queue] = c

        def on_message(_ch: Any, method: Any, props: Any, body: bytes) -> None:
            with self._cond:
                if self._consumers.get(queue) is c:
                    c.buffer.append((method.delivery_tag, props, body))
                    self._cond.notify_all()
                    return
            link.ch._impl.basic_nack(method.delivery_tag, requeue=True)  # cancelled meanwhile

        # counted before the consumer starts: the queue hands ready messages to it at once
        ready = int(link.ch.queue_declare(queue, passive=True).method.message_count)
        if link.prefetch != prefetch:
            link.ch.basic_qos(prefetch_count=prefetch)
            link.prefetch = prefetch
        c.tag = link.ch.basic_consume(queue, on_message, auto_ack=False)
        self._settle(link, queue, max, ready)

    def _settle(self, link: Link, queue: str, max: int, ready: int | None = None) -> None:
        """Wait (up to ``_SETTLE_WAIT``) until the consumer of ``queue`` holds ``max`` messages
        or as many as the queue reports ready (holding the connection)."""
        if ready is None:
            ready = int(link.ch.queue_declare(queue, passive=True).method.message_count)
        # what the broker delivered before its answer waits in pika: into the buffer with it
        link.pump(0.0)
        deadline = time.monotonic() + _SETTLE_WAIT
        c = self._consumers.get(queue)
        if c is None:
            return
        with self._cond:
            held = sum(1 for x in self._leases.values() if x.queue == queue)
            want = min(max, len(c.buffer) + ready, c.prefetch - held)
        # the first message may take longer (a new consumer is registered through Raft)
        first = time.monotonic() + _FIRST_WAIT
        assert link.conn is not None
        while len(c.buffer) < want:
            now = time.monotonic()
            if now >= deadline and (c.buffer or now >= first):
                break
            link.pump(0.002, lambda: len(c.buffer) >= want)

    def _take(
        self, channel: str, consumer: str, max: int, lease: float, sel: Selector | None,
        policy: BackoffPolicy, journal: _Journal,
    ) -> list[Delivery]:
        """Lease up to ``max`` of the messages pushed to this process for ``channel``."""
        queue = self.names.queue(channel)
        with self._cond:
            c = self._consumers.get(queue)
            if c is None or not c.buffer:
                return []
            if sel is None:
                n = min(max, len(c.buffer))
                items = [c.buffer.popleft() for _ in range(n)]
            else:
                items = list(c.buffer)
                c.buffer.clear()
            generation = c.generation
            limbo = {(generation, tag) for tag, _p, _b in items}
            self._limbo |= limbo
        try:
            taken, keep, settle, leases = self._lease_items(channel, consumer, generation, items, max, lease,
                                                            sel, policy)
            with self._cond:
                if keep and self._consumers.get(queue) is c:
                    c.buffer.extendleft(reversed(keep))
                for x in leases:
                    self._leases[x.id] = x
                self._limbo -= {(generation, tag) for tag, _p, _b in keep}
                self._limbo -= {(generation, x.tag) for x in leases}
            if settle:
                self._call(lambda link: self._settle_dead(link, channel, generation, settle, journal))
        finally:
            with self._cond:
                self._limbo -= limbo
        return taken

    def _lease_items(
        self, channel: str, consumer: str, generation: int, items: list[tuple[int, Any, bytes]], max: int,
        lease: float, sel: Selector | None, policy: BackoffPolicy,
    ) -> tuple[list[Delivery], list[tuple[int, Any, bytes]], list[tuple[int, Any, bytes, Received | None, str]],
               list[_Lease]]:
        """Decode messages the broker delivered and lease up to ``max`` of them.

        Returns the deliveries, the messages to keep for later (over ``max``, not matching
        ``sel``), those to dead-letter (undecodable, expired, out of attempts) and the leases.
        Attempts are exact: the broker's count of returns less the returns the transport
        made without an attempt (its ``returns`` records).
        """
        queue = self.names.queue(channel)
        now = datetime.now(UTC)
        taken: list[Delivery] = []
        settle: list[tuple[int, Any, bytes, Received | None, str]] = []
        keep: list[tuple[int, Any, bytes]] = []
        leases: list[_Lease] = []
        decoded: list[tuple[tuple[int, Any, bytes], Received]] = []
        for item in items:
            try:
                decoded.append((item, from_amqp(item[1], item[2])))
            except CouplerError as exc:
                settle.append((*item, None, str(exc)))
        returned = [rec.envelope.message_id for _i, rec in decoded if rec.returned and rec.envelope]
        known = self.store.returns(queue, returned) if returned else {}
        hop = HistoryEntry(consumer, f"receive {channel}")  # one entry (immutable) for the batch
        for item, rec in decoded:
            tag, props, body = item
            env = rec.envelope
            assert env is not None
            prior = rec.republished + max_(0, rec.returned - known.get(env.message_id, 0))
            if env.is_expired(now):
                settle.append((tag, props, body, rec, "expired"))
                continue
            if rec.headers.get(H_LEASE_LOST) and policy.exhausted(prior):
                settle.append((tag, props, body, rec, "lease expired"))
                continue
            if len(taken) >= max or (sel is not None and not sel(env)):
                keep.append(item)
                continue
            claim = rec.claim
            if claim is not None:
                try:
                    env.body = self.store.get_claim(claim)
                except TransportError as exc:
                    settle.append((tag, props, body, None, str(exc)))
                    continue
            env.attempt = prior + 1
            env.history.append(hop)
            lease_id = next(self._lease_ids)
            expires = time.time() + lease
            leases.append(_Lease(lease_id, generation, tag, channel, queue, consumer, None, rec,
                                 prior + 1, expires, claim, env.message_id in known))
            taken.append(Delivery(channel, consumer, env, lease_id, generation, prior + 1, expires, claim))
        return taken, keep, settle, leases

    def _settle_dead(
        self, link: Link, channel: str, generation: int,
        items: list[tuple[int, Any, bytes, Received | None, str]], journal: _Journal,
    ) -> None:
        """Dead-letter what a receive found undecodable, expired or out of attempts."""
        if generation != link.generation:
            return  # the channel is gone: they went back to the queue
        for tag, props, body, rec, why in items:
            if rec is None:
                self._dead(link, channel, None, body, dict(props.headers or {}), "invalid",
                           "undecodable envelope", why, "transport", 0, journal)
            elif why == "expired":
                self._dead(link, channel, rec.envelope, body, rec.headers, "dead", "expired",
                           "message expired before delivery", "transport", rec.attempts, journal)
            else:
                self._dead(link, channel, rec.envelope, body, rec.headers, "dead", "lease expired",
                           f"not acknowledged within the lease after {rec.attempts} attempt(s)",
                           "transport", rec.attempts, journal)
            link.ch._impl.basic_ack(tag)

    def _release_idle(self, link: Link) -> None:
        """Cancel the consumers nobody received from lately; what they hold goes back."""
        now = time.monotonic()
        with self._cond:
            idle = [c for c in self._consumers.values() if now - c.used > _IDLE_SECONDS]
            for c in idle:
                del self._consumers[c.queue]
        for c in idle:
            if c.generation != link.generation:
                continue
            if c.tag is not None:
                link.ch.basic_cancel(c.tag)
            if c.buffer:  # pushed ahead, never leased: their return is no attempt
                self.store.add_returns(c.queue, [p.message_id for _t, p, _b in c.buffer])
            for tag, _props, _body in c.buffer:
                link.ch._impl.basic_nack(tag, requeue=True)

    def _get(
        self, link: Link, channel: str, consumer: str, max: int, lease: float,
        sel: Selector | None, policy: BackoffPolicy, journal: _Journal,
    ) -> list[Delivery]:
        """A selector's receive from the messages not pushed to this process: ``basic.get``
        one after the other, the ones that do not match go back to the queue (recorded as
        returns without an attempt)."""
        queue = self._channel_queue(link, channel)
        taken: list[Delivery] = []
        skipped: list[tuple[int, Any, bytes]] = []
        try:
            while len(taken) < max and len(skipped) < _BROWSE_LIMIT:

                method, props, body = link.ch.basic_get(queue, auto_ack=False)
                if method is None:
                    break
                got, keep, settle, leases = self._lease_items(
                    channel, consumer, link.generation, [(method.delivery_tag, props, body)], 1, lease, sel, policy,
                )
                skipped += keep
                if settle:
                    self._settle_dead(link, channel, link.generation, settle, journal)
                with self._cond:
                    for x in leases:
                        self._leases[x.id] = x
                taken += got
        finally:
            if skipped:
                self.store.add_returns(queue, [p.message_id for _t, p, _b in skipped])
            for tag, _p, _b in skipped:
                link.ch.basic_nack(tag, requeue=True)
        return taken

    def _lease(self, link: Link | None, d: Delivery, what: str, *, settle: bool = False) -> _Lease:
        """The lease of ``d`` (removed when ``settle``), or :class:`LeaseLostError`."""
        generation = link.generation if link is not None else self._generation()
        with self._cond:
            lease = self._leases.get(d.tag)
            if lease is None or lease.generation != generation or d.token != lease.generation:
                raise LeaseLostError(
                    f"cannot {what} message {d.message_id} on {d.channel}: the lease expired and the "
                    "message went back to its queue, the connection to the broker was lost, or it "
                    "was already settled",
                    hint="settle within lease_seconds or use a longer lease",
                )
            if settle:
                del self._leases[lease.id]
            return lease

    def _generation(self) -> int:
        link = self._link
        if link is None:
            raise TransportError("the AMQP transport is not open", hint="call open() first")
        return link.generation

    def _ack_now(self, ds: list[Delivery], journal: _Journal) -> None:
        """Settle ``ds`` (all or none). The acknowledgements are coalesced: they go out with
        the next operation on the connection, when ``_ACK_COALESCE`` are waiting, or
        ``_ACK_DELAY`` after the first of them (a thread waiting for the broker sends them;
        AMQP acks have no answer, so nothing waits for them). A process killed in between
        gets those messages redelivered, as when an ack is lost with its connection: at least
        once, the Idempotent Receiver drops the duplicate."""
        generation = self._generation()
        with self._cond:
            leases = [self._lease(None, d, "acknowledge") for d in ds]
            for lease in leases:
                del self._leases[lease.id]
            self._cond.notify_all()
            if self._ack_generation != generation:  # those of a lost channel went back anyway
                self._ack_tags, self._ack_generation = [], generation
            first = not self._ack_tags
            self._ack_tags.extend(lease.tag for lease in leases)
            now = len(self._ack_tags) >= _ACK_COALESCE
        link = self._link
        assert link is not None
        if now:
            link.submit(self._send_pending_acks)
        elif first:
            link.defer(time.monotonic() + _ACK_DELAY)
        self._settled(leases)
        for channel, n in Counter(d.channel for d in ds).items():
            journal.count(channel, "acked", n)
        for d in ds:
            journal.add(d.channel, d.message_id, ACKED, d.ack_detail)

    def _send_pending_acks(self, link: Link) -> None:
        """Send the coalesced acknowledgements (holding the connection)."""
        with self._cond:
            tags, generation = self._ack_tags, self._ack_generation
            self._ack_tags = []
        if tags and generation == link.generation:
            self._send_acks(link, tags)  # sent when the operation ends (Link.call flushes)

    def _send_acks(self, link: Link, tags: list[int]) -> None:
        """Acknowledge delivery ``tags`` of the current channel: one ``multiple`` ack when no
        other delivery below the highest of them is still held (the usual case of one
        consumer acknowledging what it received, in order)."""
        impl = link.ch._impl
        top = max(tags)
        with self._cond:
            held = min((x.tag for x in self._leases.values() if x.generation == link.generation), default=top + 1)
            for c in self._consumers.values():
                if c.buffer and c.generation == link.generation:
                    held = min(held, min(tag for tag, _p, _b in c.buffer))
            held = min([held, *(tag for g, tag in self._limbo if g == link.generation)])
        if held > top:
            impl.basic_ack(top, multiple=True)
            return
        for tag in tags:
            impl.basic_ack(tag)

    def _settled(self, leases: list[_Lease]) -> None:
        """Acknowledged messages leave their queue: forget their claim references and
        return records (only messages that have them cost a PostgreSQL write)."""
        for lease in leases:
            if lease.claim is not None:
                self.store.move_claim(lease.claim, lease.queue, None)
        self._forget_returns(leases)

    def _forget_returns(self, leases: list[_Lease]) -> None:
        returned = [x for x in leases if x.returned]
        for queue in {x.queue for x in returned}:
            self.store.forget_returns(queue, [x.message_id for x in returned if x.queue == queue])

    def _ack(self, link: Link, ds: list[Delivery], journal: _Journal) -> None:
        with self._cond:
            leases = [self._lease(link, d, "acknowledge") for d in ds]  # all or none
            for lease in leases:
                del self._leases[lease.id]
        for lease in leases:
            link.ch._impl.basic_ack(lease.tag)
        self._settled(leases)
        for channel, n in Counter(d.channel for d in ds).items():
            journal.count(channel, "acked", n)
        for d in ds:
            journal.add(d.channel, d.message_id, ACKED, d.ack_detail)

    def _nack_plan(self, d: Delivery, dead: bool, delay: float | None) -> NackDecision:
        policy = backoff_for(self.channel_config(d.channel), self.backoff)
        return nack_decision(policy, d.attempt, dead=dead, delay=delay, rng=self._rng)

    def _nack(
        self, link: Link, d: Delivery, text: str, component: str, decision: NackDecision, journal: _Journal,
    ) -> None:
        lease = self._lease(link, d, "reject", settle=True)
        journal.count(d.channel, "failed")
        if decision.outcome == "dead":
            self._dead(link, d.channel, lease.as_stored(), lease.received.body, lease.received.headers,
                       "dead", decision.reason, text, component, d.attempt, journal)
            self._forget_returns([lease])
        else:
            self._republish(link, lease, decision.wait)
            record_nacked(journal, d, component, text, decision.wait)
        link.ch._impl.basic_ack(lease.tag)

    def _republish(self, link: Link, lease: _Lease, wait: float, *, lease_lost: bool = False) -> None:
        """Send the leased message again (after ``wait`` seconds) with its attempts so far."""
        extra: dict[str, Any] = {H_LEASE_LOST: True} if lease_lost else {}
        if lease.claim is not None:
            extra[H_CLAIM] = lease.claim  # the copy refers to the same stored body
        stored = lease.as_stored()
        body, props = to_amqp(stored, attempts=lease.attempt, extra=extra)
        if lease.returned:  # a new copy: the broker counts its returns from 0
            self.store.forget_returns(lease.queue, [stored.message_id])
        if wait <= 0:
            link.publish([("", lease.queue, body, props)])
            return
        bucket = Names.delay_bucket(wait)
        name = self.names.delay(bucket)
        if name not in self._declared:
            self.store.add_broker_object(name, "exchange")
            link.ch.exchange_declare(name, "fanout", durable=True)
            self._queue(link, name, self.names.delay_arguments(bucket))
            link.ch.queue_bind(name, name)
        link.publish([(name, lease.queue, body, props)])

    def _dead(
        self, link: Link, channel: str | None, env: Envelope | None, body: bytes, headers: dict[str, Any],
        kind: DeadKind, reason: str, error: str, component: str, attempts: int, journal: _Journal,
        *, dead_id: int | None = None,
    ) -> int:
        """Publish a dead letter (the message and why it died) to its dead-letter queue."""
        cfg = self.channel_config(channel) if channel else ChannelConfig()
        name = dead_letter_queue(cfg, kind, dead_letter=self.dead_letter_default, invalid=self.invalid_default)
        dead_id = dead_id if dead_id is not None else self.store.next_dead_letter_id()
        record = {
            "id": dead_id, "kind": kind, "queue": name, "channel": channel, "reason": reason,
            "error": error, "component": component, "attempts": attempts, "dead_at": time.time(),
        }
        claim = headers.get(H_CLAIM)
        claim = claim.decode() if isinstance(claim, bytes) else claim
        extra: dict[str, Any] = {H_DEAD: json.dumps(record)}
        if claim:
            extra[H_CLAIM] = claim
        if env is not None:
            body, props = to_amqp(env.replace(expires_at=None, body=b"" if claim else env.body),
                                  attempts=attempts, extra=extra)
        else:
            props = pika.BasicProperties(delivery_mode=2, headers={H_RAW: True, **extra})
        dead_queue = self._dead_queue(link, name)
        if claim:  # the dead letter keeps the body (before the message leaves its queue)
            self.store.move_claim(claim, self.names.queue(channel) if channel else None, dead_queue)
        link.publish([("", dead_queue, body, props)])
        record_dead(journal, channel, env.message_id if env is not None else None, queue=name, kind=kind,
                    reason=reason, error=error, component=component, attempts=attempts)
        return dead_id

    def _invalid(
        self, link: Link, dead_id: int, envelope: Envelope | bytes, reason: str, component: str,
        channel: str | None, delivery: Delivery | None, journal: _Journal,
    ) -> None:
        if delivery is not None:
            lease = self._lease(link, delivery, "move to the invalid channel", settle=True)
            self._dead(link, lease.channel, lease.as_stored(), lease.received.body, lease.received.headers,
                       "invalid", reason, reason, component, lease.attempt, journal, dead_id=dead_id)
            self._forget_returns([lease])
            link.ch._impl.basic_ack(lease.tag)
        elif isinstance(envelope, Envelope):
            self._dead(link, channel, envelope, envelope.body, {}, "invalid", reason, reason,
                       component, envelope.attempt, journal, dead_id=dead_id)
        else:
            self._dead(link, channel, None, bytes(envelope), {}, "invalid", reason, reason,
                       component, 0, journal, dead_id=dead_id)

    # -- the connection thread's periodic work ---------------------------------------------

    def _tick(self, link: Link) -> None:
        now = time.time()
        with self._cond:
            expired = [lease for lease in self._leases.values() if lease.expires_at <= now]
            for lease in expired:
                del self._leases[lease.id]
        journal = _Journal()
        for lease in expired:
            if lease.generation != link.generation:
                continue
            self._republish(link, lease, 0.0, lease_lost=True)
            link.ch._impl.basic_ack(lease.tag)
            journal.add(lease.channel, lease.received.envelope.message_id if lease.received.envelope else None,
                        LEASE_EXPIRED, lease.consumer)
        if time.monotonic() >= self._next_sweep:
            self._next_sweep = time.monotonic() + 1.0
            self._sweep_expired(link, journal)
            self._release_idle(link)
        if journal.rows or journal.counts:
            self._record(journal)

    def _sweep_expired(self, link: Link, journal: _Journal) -> int:
        """File what the broker dead-lettered (TTL, delivery limit) in the Dead Letter Channels."""
        n = 0
        while True:
            method, props, body = link.ch.basic_get(self.names.expired, auto_ack=False)
            if method is None:
                return n
            headers = dict(props.headers or {})
            deaths = headers.get("x-death") or [{}]
            why = deaths[0].get("reason", b"expired")
            why = why.decode() if isinstance(why, bytes) else str(why)
            source = deaths[0].get("queue", b"")
            source = source.decode() if isinstance(source, bytes) else str(source)
            channel = self.names.channel_of(source)
            try:
                rec = from_amqp(props, body)
                env, attempts = rec.envelope, rec.attempts
            except CouplerError:
                env, attempts = None, 0
            if why == "expired":
                reason, error = REASON_EXPIRED, ERROR_EXPIRED
            else:
                reason = why.replace("_", " ")
                error = (f"the broker returned it to {channel} more than {self.names.delivery_limit} "
                         "times without acknowledgement (consumers crashed or lost their connection)")
            self._dead(link, channel, env, body, headers, "dead" if env else "invalid", reason, error,
                       "broker", attempts, journal)
            link.ch.basic_ack(method.delivery_tag)
            n += 1

    # -- channels --------------------------------------------------------------------------

    def declare(self, channel: str, config: ChannelConfig | None = None, **settings: Any) -> ChannelConfig:
        cfg = declared_config(channel, config, settings)
        self.store.save_channel(channel, cfg)
        self._configs.pop(channel, None)

        def on_broker(link: Link) -> None:
            if cfg.kind == "topic":
                self._topic_exchange(link, channel)
            else:
                self._channel_queue(link, channel)
            for name in (cfg.dead_letter, cfg.invalid):
                if name:
                    self._dead_queue(link, name)

        self._call(on_broker)
        return cfg

    def channel_config(self, channel: str) -> ChannelConfig:
        cached = self._configs.get(channel)
        if cached is not None and time.monotonic() - cached[0] < _CONFIG_TTL:
            return cached[1]
        cfg = self.store.channel(channel)
        if cfg is None and "#" in channel:  # a subscription inherits its topic's settings
            topic_cfg = self.store.channel(channel.split("#", 1)[0])
            if topic_cfg is not None:
                cfg = ChannelConfig(**{**topic_cfg.__dict__, "kind": "queue"})
        cfg = cfg or ChannelConfig()
        self._configs[channel] = (time.monotonic(), cfg)
        return cfg

    def channels(self) -> list[str]:
        return self.store.channel_names()

    def subscribe(self, topic: str, subscription: str, *, selector: str | None = None) -> str:
        check_channel_name(topic)
        check_subscription_name(subscription)
        if selector is not None:
            Selector.parse(selector)
        channel = self.subscription_channel(topic, subscription)
        check_channel_name(channel)
        self.store.add_subscription(topic, subscription, channel, selector)
        self._configs.pop(topic, None)

        def bind(link: Link) -> None:
            exchange = self._topic_exchange(link, topic)
            queue = self._channel_queue(link, channel)
            key = Names.selector_key(subscription) if selector else Names.ALL_BINDING
            for old in (Names.ALL_BINDING, Names.selector_key(subscription)):
                if old != key:
                    link.ch.queue_unbind(queue, exchange, routing_key=old)
            link.ch.queue_bind(queue, exchange, routing_key=key)

        self._call(bind)
        self._record(_Journal(rows=[(topic, None, SUBSCRIBED, subscription)]))
        return channel

    def unsubscribe(self, topic: str, subscription: str) -> None:
        channel = self.subscription_channel(topic, subscription)
        self.store.remove_subscription(topic, subscription)

        def delete(link: Link) -> None:
            queue = self.names.queue(channel)
            link.ch.queue_delete(queue)
            self._declared.discard(queue)

        self._call(delete)
        self.store.drop_queue_claims(self.names.queue(channel))
        self._record(_Journal(rows=[(topic, None, UNSUBSCRIBED, subscription)]))

    def _depth(self, link: Link, channel: str) -> int:
        """Ready messages of a channel's queue (0 when it does not exist), on a spare channel."""
        assert link.conn is not None
        spare = link.conn.channel()
        try:
            return int(spare.queue_declare(self.names.queue(channel), passive=True).method.message_count)
        except px.ChannelClosedByBroker:
            return 0
        finally:
            with contextlib.suppress(Exception):
                spare.close()

    def stats(self, channel: str | None = None) -> list[ChannelStats]:
        """Statistics; ``in_flight`` counts the messages this process holds (leased or pushed
        ahead to it; AMQP does not tell how many other consumers hold). ``oldest_age`` is the
        age of the oldest of the messages this process holds (the time since it was sent to
        the channel, redeliveries included) and, for ready messages, the time since this
        process first saw the queue waiting with no acknowledgement on the channel since.

        The ready messages are never looked at: a ``basic.get`` given back counts as a delivery
        towards the quorum queue's ``x-delivery-limit``, so a monitor peeking every few seconds
        dead-lettered an idle message after ``delivery_limit`` looks. An operator therefore sees
        a waiting channel's age from the second look of a process on (the monitor's next cycle)."""
        kinds = self.store.kinds()
        counters = self.store.counters(channel)
        subs: dict[str, list[str]] = {}
        for topic, name, _c, _s in self.store.subscriptions():
            subs.setdefault(topic, []).append(name)
        names = {channel} if channel else set(kinds) | set(counters)
        now = time.time()

        def depths(link: Link) -> dict[str, tuple[int, int, float | None]]:
            out: dict[str, tuple[int, int, float | None]] = {}
            for name in names:
                if kinds.get(name) == "topic":
                    out[name] = (0, 0, None)
                    continue
                queue = self.names.queue(name)
                with self._cond:
                    leased = [x.received.enqueued_at for x in self._leases.values() if x.channel == name]
                    c = self._consumers.get(queue)
                    ahead = [props for _t, props, _b in c.buffer] if c is not None else []
                times = leased + [Received(None, b"", dict(p.headers or {})).enqueued_at for p in ahead]
                ready = self._depth(link, name)
                if ready:
                    acked = int(counters.get(name, {}).get("acked", 0))
                    since, then = self._waiting.get(name, (now, acked))
                    if acked != then:  # the queue moved since: its head is a newer message
                        since = now
                    self._waiting[name] = (since, acked)
                    times.append(since)
                else:
                    self._waiting.pop(name, None)
                out[name] = (ready, len(leased) + len(ahead), min(times) if times else None)
            return out

        depth = self._call(depths)
        result = []
        for name in sorted(names):
            ready, held, oldest = depth[name]
            counts = counters.get(name, {})
            result.append(ChannelStats(
                channel=name, kind=kinds.get(name, "queue"),  # type: ignore[arg-type]
                depth=ready + held, ready=ready, in_flight=held,
                oldest_age=max(0.0, now - oldest) if oldest is not None else None,
                **counts, subscriptions=tuple(subs.get(name, ())),
            ))
        return result

    def _browse_all(self, link: Link, names: list[str], visit: Callable[[Any, Any, bytes, Any], bool | None]) -> None:
        """:meth:`_browse` the dead-letter queues ``names``."""
        for name in names:
            self._browse(link, self.names.dead(name), visit)

    def _browse(self, link: Link, queue: str, visit: Callable[[Any, Any, bytes, Any], bool | None]) -> None:
        """Look at every message of ``queue`` on a spare channel; ``visit`` returns True to
        take (acknowledge) one; the others go back to the queue when the channel closes."""
        assert link.conn is not None
        spare = link.conn.channel()
        try:
            for _ in range(_BROWSE_LIMIT):
                method, props, body = spare.basic_get(queue, auto_ack=False)
                if method is None:
                    break
                if visit(spare, props, body, method):
                    spare.basic_ack(method.delivery_tag)
        except px.ChannelClosedByBroker:
            pass  # the queue does not exist: nothing to see
        finally:
            with contextlib.suppress(Exception):
                spare.close()  # what it holds goes back to the queue

    def peek(self, channel: str, max: int = 10) -> list[Envelope]:
        """The next ready messages (those leased by consumers are not visible on a broker)."""
        out: list[Envelope] = []

        def visit(_ch: Any, props: Any, body: bytes, _m: Any) -> None:
            if len(out) < max:
                with contextlib.suppress(CouplerError):
                    rec = from_amqp(props, body)
                    if rec.envelope is not None:
                        rec.envelope.attempt = rec.republished
                        if rec.claim:
                            rec.envelope.body = self.store.get_claim(rec.claim)
                        out.append(rec.envelope)


        with self._cond:  # pushed to this process: the head of the queue
            c = self._consumers.get(self.names.queue(channel))
            ahead = list(c.buffer)[:max] if c is not None else []
        for _tag, props, body in ahead:
            visit(None, props, body, None)
        if len(out) < max:
            self._call(lambda link: self._browse_some(link, self.names.queue(channel), visit, max - len(out)))
        return out

    def _browse_some(self, link: Link, queue: str, visit: Any, max: int) -> None:
        """Look at the first ``max`` ready messages of ``queue`` (a channel's) on a spare
        channel; they go back to the queue, recorded as returns without an attempt."""
        assert link.conn is not None
        spare = link.conn.channel()
        seen: list[str] = []
        try:
            for _ in range(max):
                method, props, body = spare.basic_get(queue, auto_ack=False)
                if method is None:
                    break
                seen.append(props.message_id)
                visit(spare, props, body, method)
        except px.ChannelClosedByBroker:
            pass
        finally:
            with contextlib.suppress(TransportError):
                self.store.add_returns(queue, seen)
            with contextlib.suppress(Exception):
                spare.close()  # what it holds goes back to the queue
            # ... asynchronously (a quorum queue applies the return through Raft): wait a
            # moment until they are ready again, so that a receive that follows sees them
            deadline = time.monotonic() + 1.0
            while seen and time.monotonic() < deadline:
                if int(link.ch.queue_declare(queue, passive=True).method.message_count) >= len(seen):
                    break
                link.pump(0.002)

    def purge(self, channel: str) -> int:
        def run(link: Link) -> int:
            queue = self._channel_queue(link, channel)
            n = int(link.ch.queue_purge(queue).method.message_count)
            # what this process holds goes too; what other processes hold cannot be reached
            with self._cond:
                held = [x for x in self._leases.values() if x.channel == channel]
                for lease in held:
                    del self._leases[lease.id]
                tags = [x.tag for x in held if x.generation == link.generation]
                c = self._consumers.get(queue)
                if c is not None and c.generation == link.generation:
                    tags += [tag for tag, _p, _b in c.buffer]
                    c.buffer.clear()
            for tag in tags:
                link.ch._impl.basic_ack(tag)
            return n + len(tags)

        n = self._call(run)
        self.store.drop_queue_claims(self.names.queue(channel))
        self._record(_Journal(rows=[(channel, None, PURGED, f"{n} message(s)")]))
        return n

    # -- dead letters ----------------------------------------------------------------------

    def _dead_queue_names(self, queue: str | None) -> list[str]:
        if queue is not None:
            return [queue]
        names = {self.dead_letter_default, self.invalid_default}
        for name in self.store.channel_names():
            cfg = self.store.channel(name)
            if cfg is not None:
                names.update(n for n in (cfg.dead_letter, cfg.invalid) if n)
        return sorted(names)

    def _dead_letter(self, props: Any, body: bytes, *, restore: bool = True) -> DeadLetter | None:
        """The dead letter of a message of a dead-letter queue (with its claim-checked body
        read back when ``restore``)."""
        headers = dict(props.headers or {})
        raw_record = headers.get(H_DEAD)
        if raw_record is None:
            return None
        rec = json.loads(raw_record.decode() if isinstance(raw_record, bytes) else raw_record)
        env = None
        raw = None
        if headers.get(H_RAW):
            raw = body
        else:
            try:
                env = from_amqp(props, body).envelope
            except CouplerError:
                raw = body
        if env is not None:
            env.attempt = int(rec["attempts"])
            claim = _claim_of(headers)
            if claim and restore:
                with contextlib.suppress(TransportError):  # listed without its body
                    env.body = self.store.get_claim(claim)
        return DeadLetter(
            id=int(rec["id"]), kind=rec["kind"], queue=rec["queue"], channel=rec["channel"],
            envelope=env, raw=raw, reason=rec["reason"], error=rec["error"],
            component=rec["component"], attempts=int(rec["attempts"]),
            dead_at=datetime.fromtimestamp(float(rec["dead_at"]), UTC),
        )

    def _sweep(self) -> None:
        journal = _Journal()
        self._call(lambda link: self._sweep_expired(link, journal))
        self._record(journal)

    def dead_letters(
        self, queue: str | None = None, *, kind: DeadKind | None = None, limit: int = 100
    ) -> list[DeadLetter]:
        self._sweep()
        found: list[DeadLetter] = []

        def visit(_ch: Any, props: Any, body: bytes, _m: Any) -> None:
            dl = self._dead_letter(props, body)
            if dl is not None and (kind is None or dl.kind == kind):
                found.append(dl)

        names = self._dead_queue_names(queue)
        self._call(lambda link: self._browse_all(link, names, visit))
        found.sort(key=lambda dl: dl.id, reverse=True)
        return found[:limit]

    def dead_letter(self, id: int) -> DeadLetter:
        for dl in self.dead_letters(limit=_BROWSE_LIMIT):
            if dl.id == id:
                return dl
        raise unknown_dead_letter(id)

    def replay(self, id: int, channel: str | None = None, *, body: bytes | None = None,
               envelope: Envelope | None = None) -> str:
        target_dl = self.dead_letter(id)
        journal = _Journal()
        if target_dl.envelope is None or (channel or target_dl.channel) is None:
            raise not_replayable(id, has_envelope=target_dl.envelope is not None)
        target = channel or target_dl.channel
        assert target is not None
        env = target_dl.envelope
        edited = body is not None or envelope is not None
        if envelope is not None:  # another message in its place (same id)
            env = replacement(id, env, envelope)
        env.attempt = 0
        if body is not None:  # edit and replay
            env.body = body
        env.record_hop("dead-letter", f"replay {id}")
        done: list[bool] = []

        def visit(_ch: Any, props: Any, body: bytes, _m: Any) -> bool:
            dl = self._dead_letter(props, body, restore=False)
            if dl is None or dl.id != id or done:
                return False
            done.append(True)
            return True

        def find_claim(_ch: Any, props: Any, body: bytes, _m: Any) -> None:
            dl = self._dead_letter(props, body, restore=False)
            if dl is not None and dl.id == id:
                claims.append(_claim_of(dict(props.headers or {})))

        claims: list[str | None] = []

        def run(link: Link) -> None:
            queue = self._channel_queue(link, target)
            dead_queue = self.names.dead(target_dl.queue)
            self._browse(link, dead_queue, find_claim)
            claim = claims[0] if claims else None
            if claim and edited:  # the edited body goes in the message: the stored one is let go
                self.store.move_claim(claim, dead_queue, None)
                body, props = to_amqp(env)
            elif claim:  # the message in the channel refers to the stored body again
                self.store.move_claim(claim, dead_queue, queue)
                body, props = to_amqp(env.replace(body=b""), extra={H_CLAIM: claim})
            else:
                body, props = to_amqp(env)
            link.publish([("", queue, body, props)])
            self._browse(link, dead_queue, visit)

        self._call(run, retry=False)
        journal.add_sent(target, env, SENT, "dead-letter")
        journal.count(target, "sent")
        journal.add(target, env.message_id, REPLAYED, f"dead letter {id}")
        self._record(journal)
        return env.message_id

    def purge_dead_letters(self, queue: str | None = None, *, kind: DeadKind | None = None) -> int:
        names = self._dead_queue_names(queue)
        counted: list[int] = []

        claims: list[tuple[str, str]] = []

        def visit(_ch: Any, props: Any, body: bytes, m: Any) -> bool:
            dl = self._dead_letter(props, body, restore=False)
            if kind is None or (dl is not None and dl.kind == kind):
                counted.append(1)
                claim = _claim_of(dict(props.headers or {}))
                if claim:
                    claims.append((claim, m.routing_key))
                return True
            return False

        self._call(lambda link: self._browse_all(link, names, visit), retry=False)
        for claim, dead_queue in claims:  # their bodies go when nothing else refers to them
            self.store.move_claim(claim, dead_queue, None)
        n = len(counted)
        self._record(_Journal(rows=[(queue, None, DEAD_LETTERS_PURGED, purged_dead_letters_detail(n, kind))]))
        return n

    # -- message store ---------------------------------------------------------------------

    def query_journal(self, query: JournalQuery) -> list[JournalEntry]:
        return self.store.journal(query)

    def exports_shared_figures(self) -> bool:
        return self.store.hold_lock("metrics")

    def maintain(self) -> dict[str, int]:
        journal = _Journal()
        expired = self._call(lambda link: self._sweep_expired(link, journal))
        self._record(journal)
        now = time.time()
        counts = self.store.purge_older(now - self.journal_retention, now - self.idempotency_retention)
        return {"expired": expired, **counts, "state": self.store.forget_state(), "outbox": self.publish_outbox(60.0)}

    @property
    def identities(self) -> IdentityRepository:
        return self._identities


def _outbox_entry(sends: list[tuple[str, list[Envelope], str]]) -> bytes:
    """The outputs of a transaction as an outbox entry of the store."""
    return json.dumps({"at": time.time(), "sends": [
        [channel, component, [base64.b64encode(encode(e)).decode("ascii") for e in envs]]
        for channel, envs, component in sends]}).encode()


def _outbox_sends(entry: bytes) -> list[tuple[str, list[Envelope], str]]:
    data = json.loads(entry)
    return [(channel, [decode(base64.b64decode(b)) for b in blobs], component) for channel, component, blobs in data["sends"]]


def _claim_of(headers: dict[str, Any]) -> str | None:
    claim = headers.get(H_CLAIM)
    return claim.decode() if isinstance(claim, bytes) else claim


def amqp_transport_for_site(site: Any, amqp: Any) -> AmqpTransport:
    """The opened broker transport of a site whose ``[store] type`` is ``amqp``, with its
    ``[store.amqp]`` options (:class:`~coupler.bus.transport.amqp.plugin.AmqpOptions`)."""
    return AmqpTransport(
        amqp.url,
        postgres=amqp.postgres,
        postgres_schema=amqp.postgres_schema,
        prefix=amqp.prefix,
        delivery_limit=amqp.delivery_limit,
        reconnect_timeout=amqp.reconnect_timeout_seconds,
        file_lease_seconds=amqp.file_lease_seconds,
        name=f"coupler {site.name}",
        **site.store.transport_settings(),
    ).open()


class _AmqpTx(TransactionOps):
    """A Transactional Client on AMQP: receives now, the rest when the block ends."""

    def __init__(self, transport: AmqpTransport):
        self.t = transport
        self.received: list[Delivery] = []
        self.sends: list[tuple[str, list[Envelope], str]] = []
        self.acks: list[Delivery] = []
        self.nacks: list[tuple[Delivery, str, str, NackDecision]] = []
        self.invalids: list[tuple[int, Envelope | bytes, str, str, str | None, Delivery | None]] = []
        #: keys to record (consumer, keys, whether their claims end with them)
        self.marks: list[tuple[str, list[str], bool]] = []
        #: step state: a PostgreSQL transaction opened by the first get/put, committed after
        #: the outputs are published and before the acknowledgements
        self.state: StateTx | None = None
        #: the keys of mark_new: a PostgreSQL transaction of their own, holding each new key's
        #: row until it commits after the outputs (the dead letters) are confirmed
        self.keys: StateTx | None = None

    #: the broker acknowledges apart from PostgreSQL: stateful steps record what they counted
    acks_with_state = False

    def _state(self) -> StateTx:
        if self.state is None:
            self.state = self.t.store.state_tx()
        return self.state

    def get_state(self, scope: str, keys: Iterable[str] | None = None, *, lock: bool = False) -> dict[str, bytes]:
        return self._state().get(f"step:{scope}", keys, lock)

    def put_state(self, scope: str, values: dict[str, bytes | None], *, expires_at: float | None = None) -> None:
        self._state().put(f"step:{scope}", values, expires_at)

    def send(self, channel: str, envelopes: Envelope | Iterable[Envelope], *, component: str = "bus") -> list[str]:
        envs = self.t._check_envelopes(channel, envelopes)
        self.sends.append((channel, envs, component))
        return [e.message_id for e in envs]

    def receive(
        self,
        channel: str,
        consumer: str,
        *,
        max: int = 1,
        lease_seconds: float | None = None,
        selector: Selector | str | None = None,
    ) -> list[Delivery]:
        got = self.t._receive(channel, consumer, max=max, lease_seconds=lease_seconds, selector=selector)
        self.received.extend(got)
        return got

    def ack(self, deliveries: Delivery | Iterable[Delivery]) -> None:
        self.acks.extend([deliveries] if isinstance(deliveries, Delivery) else deliveries)

    def nack(
        self,
        delivery: Delivery,
        error: str | BaseException,
        component: str,
        *,
        delay: float | None = None,
        dead: bool = False,
    ) -> Literal["retry", "dead"]:
        decision = self.t._nack_plan(delivery, dead, delay)
        self.nacks.append((delivery, error_text(error), component, decision))
        return decision.outcome

    def invalid(
        self,
        envelope: Envelope | bytes,
        reason: str,
        component: str,
        *,
        channel: str | None = None,
        delivery: Delivery | None = None,
    ) -> int:
        dead_id = self.t.store.next_dead_letter_id()
        self.invalids.append((dead_id, envelope, reason, component, channel, delivery))
        return dead_id

    def seen(self, consumer: str, keys: Iterable[str]) -> set[str]:
        return self.t.store.seen(consumer, keys)

    def mark_seen(self, consumer: str, keys: Iterable[str]) -> None:
        self.marks.append((consumer, list(keys), False))

    def record_claimed(self, consumer: str, keys: Iterable[str]) -> bool:
        # recorded and unclaimed in one PostgreSQL transaction, before the acknowledgements
        self.marks.append((consumer, list(keys), True))
        return True

    def mark_new(self, consumer: str, keys: Iterable[str]) -> set[str]:
        if self.keys is None:
            self.keys = self.t.store.state_tx("seen")
        return self.keys.mark_new(consumer, keys)

    def commit(self) -> None:
        t = self.t
        journal = _Journal()
        settled = [*self.acks, *(n[0] for n in self.nacks), *(i[5] for i in self.invalids if i[5])]

        def outputs() -> None:
            generation = t._generation()
            for d in settled:  # a lease lost during the transaction: nothing happens
                t._lease(None, d, "settle")
            if self.sends:  # what the broker nacks published again, as a plain send does; a
                # connection lost fails the commit when it takes the inputs' leases with it
                t._send_confirmed(self.sends, journal, generation=generation if settled else None)
            if self.invalids or self.nacks:
                t._call(settle, retry=False)

        def settle(link: Link) -> None:
            for dead_id, env, reason, component, channel, delivery in self.invalids:
                t._invalid(link, dead_id, env, reason, component, channel, delivery, journal)
            for d, text, component, decision in self.nacks:
                t._nack(link, d, text, component, decision, journal)

        try:
            # step state first, with the outputs in its outbox: a redelivered input is then
            # known as counted, and what the state change sent is published once the process
            # comes back if it dies before (the same messages, the same ids)
            outbox = None
            if self.state is not None:
                if self.sends:
                    outbox = self.state.outbox(_outbox_entry(self.sends))
                self.state.commit()
                self.state = None
            outputs()
            if self.keys is not None:  # after the broker confirmed what they were checked for
                self.keys.commit()
                self.keys = None
            if outbox is not None:
                t.store.outbox_done(outbox)
            for consumer, keys, unclaim in self.marks:
                t.store.mark_seen(consumer, keys, unclaim=consumer if unclaim else None)
            if self.acks:
                t._call(lambda link: t._ack(link, self.acks, journal), retry=False)
        except BaseException:
            self.rollback()  # what was not settled yet goes back to its queue
            raise
        finally:
            t._record(journal)

    def rollback(self) -> None:
        """Return the messages received in the transaction to their queues at once."""
        if self.state is not None:
            self.state.rollback()
            self.state = None
        if self.keys is not None:
            self.keys.rollback()
            self.keys = None
        self._release(self.received)

    def _release(self, deliveries: list[Delivery]) -> None:
        t = self.t

        back: list[_Lease] = []
        with t._cond:  # pushed to this process: back to the front of its consumer's buffer
            for d in reversed(deliveries):
                lease = t._leases.pop(d.tag, None)
                if lease is None:
                    continue
                c = t._consumers.get(lease.queue)
                if c is not None and c.generation == lease.generation:
                    c.buffer.appendleft((lease.tag, lease.received.properties, lease.received.body))
                else:
                    back.append(lease)
            t._cond.notify_all()

        def run(link: Link) -> None:
            back_now = [x for x in back if x.generation == link.generation]
            for lease in back_now:  # a rollback is no attempt
                t.store.add_returns(lease.queue, [lease.message_id])
                link.ch.basic_nack(lease.tag, requeue=True)

        if back:
            with contextlib.suppress(TransportError):
                t._call(run, retry=False)


__all__ = ["DEFAULT_URL", "AmqpTransport", "H_ATTEMPTS", "amqp_transport_for_site"]
