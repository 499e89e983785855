"""The messaging patterns site.toml puts around a consumer (a route or an outbound adapter).

* ``[[channels]] reassemble``: Message Sequence reassembly on the channel
  (:class:`~coupler.bus.messaging.sequence.SequenceAssembler`): a part is held, the part that
  completes its sequence sends the whole document back to the queue the consumer reads, and
  the consumer only ever handles whole documents.
* ``idempotent_key``: an Idempotent Receiver
  (:class:`~coupler.bus.messaging.idempotency.IdempotentReceiver`): duplicates are
  acknowledged without being handled; a route's keys are checked and recorded in one step at
  the start of the transaction that handles and acknowledges the message
  (:meth:`ConsumerPatterns.screen`); an outbound adapter's, whose delivery no transaction
  holds, are claimed with a lease before the delivery, and looked for then
  (:meth:`ConsumerPatterns.claim`), and recorded with the acknowledgement after it, in the
  transaction that ends the claim (:meth:`ConsumerPatterns.record`).
* ``throttle``: a Message Throttle (:class:`~coupler.bus.messaging.throttle.Throttle`): each
  worker takes a token before it handles a message; ``concurrency`` workers share it.

A route's worker takes up to :data:`ROUTE_BATCH` messages at a time and handles them in one
transaction (:meth:`ConsumerPatterns.batch_size`), where the transport commits step state with
the acknowledgement and no throttle rate spaces the messages out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from coupler.bus.config.models import ChannelSettings, ThrottleConfig
from coupler.bus.messaging.idempotency import IdempotentReceiver
from coupler.bus.messaging.sequence import SequenceAssembler
from coupler.bus.messaging.throttle import Throttle
from coupler.bus.model.selectors import BodyReader
from coupler.bus.transport.base import Delivery, TransactionOps, Transport
from coupler.canonical.errors import CouplerError

log = logging.getLogger("coupler.daemon")

#: how a worker receives: ``receive(wait)`` -> the deliveries it leased (at most its batch size)
Receiver = Callable[[float], list[Delivery]]
#: how many messages a route's worker leases and handles in one transaction of the store
ROUTE_BATCH = 100


@dataclass
class ConsumerPatterns:
    """What one consumer declared; :meth:`receiver` and :meth:`handler` apply it."""

    consumer: str
    idempotent: IdempotentReceiver | None = None
    throttle: Throttle | None = None
    concurrency: int = 1
    assembler: SequenceAssembler | None = None
    #: the handler claims the Idempotent Receiver's keys before it handles a message (an
    #: outbound adapter's delivery, :meth:`claim`), which looks for recorded keys then: the
    #: receiver does not look before it (it still refuses a message without the key)
    claims: bool = False

    @classmethod
    def declared(
        cls,
        transport: Transport,
        consumer: str,
        source: str,
        *,
        channel: ChannelSettings | None,
        idempotent_key: str | None,
        throttle: ThrottleConfig | None,
        where: str,
        body: BodyReader | None = None,
    ) -> ConsumerPatterns:
        """The patterns of ``consumer`` reading queue ``source`` (its channel's settings
        ``channel``; ``where`` is its key path in site.toml)."""
        patterns = cls(consumer)
        if idempotent_key is not None:
            patterns.idempotent = IdempotentReceiver(consumer, idempotent_key, where=f"{where}.idempotent_key", body=body)
        if throttle is not None:
            patterns.throttle = Throttle(throttle.rate, burst=throttle.burst)
            patterns.concurrency = throttle.concurrency
        if channel is not None and channel.reassemble:
            patterns.assembler = SequenceAssembler(
                transport, source, consumer, timeout=channel.sequence_timeout_seconds, forward=source
            )
        if patterns.idempotent or patterns.throttle or patterns.assembler:
            log.info("%s: %s", consumer, patterns.describe(), extra={"consumer": consumer, "channel": source})
        return patterns

    def batch_size(self, transport: Transport) -> int:
        """How many messages a route worker takes at a time: :data:`ROUTE_BATCH` on a transport
        whose transactions hold the step state, the sends and the acknowledgements together
        (SQLite, the storage transports: one commit for the batch); 1 on the broker (its
        acknowledgements go to the broker one by one after the state commits) and under a
        throttle rate (each message waits for its token)."""
        if not transport.acks_with_state or (self.throttle is not None and self.throttle.rate is not None):
            return 1
        return ROUTE_BATCH

    def describe(self) -> str:
        parts = []
        if self.assembler is not None:
            parts.append(f"reassembles message sequences of {self.assembler.channel}")
        if self.idempotent is not None:
            parts.append(f"idempotent receiver keyed on {self.idempotent.key}")
        if self.throttle is not None:
            rate = f"{self.throttle.rate:g}/s" if self.throttle.rate else "no rate limit"
            parts.append(f"throttled to {rate}, {self.concurrency} at a time")
        return ", ".join(parts) or "plain consumer"

    def receiver(self, transport: Transport, receive: Receiver) -> Receiver:
        """``receive`` with the parts of sequences held back and duplicates dropped."""
        if self.assembler is None and self.idempotent is None:
            return receive
        assembler, idempotent = self.assembler, self.idempotent

        def patterned(wait: float) -> list[Delivery]:
            got = receive(wait)
            if assembler is not None:
                whole = []
                for d in got:
                    if d.envelope.sequence is None:
                        whole.append(d)
                    else:  # held, or completes its document, which goes back to the queue
                        assembler.offer(d)
                got = whole
            if idempotent is not None:
                got = idempotent.fresh(transport, got, look=not self.claims)
            return got

        return patterned

    def handler(self, handle: Callable[[Delivery], None]) -> Callable[[Delivery], None]:
        """``handle`` after the throttle let the message start."""
        throttle = self.throttle
        if throttle is None:
            return handle

        def throttled(d: Delivery) -> None:
            throttle.acquire()
            handle(d)

        return throttled

    def claim(self, transport: Transport, d: Delivery, component: str) -> bool:
        """Whether to deliver ``d`` now, for a consumer whose handling no transaction holds (an
        outbound adapter's delivery to its legacy system): the Idempotent Receiver claims the
        message's keys until ``d``'s lease ends and checks, after the claim was taken, that
        they were not recorded meanwhile (``transport.claim_fresh``: atomic across the site's
        daemons; one round trip on the shared stores). False when it settled ``d`` itself:
        acknowledged as a duplicate (its keys recorded for good by the copy delivered before;
        nothing stays claimed), or given back for later while another worker or daemon holds
        a live claim of a key, that is, delivers a copy right now: a ``nack`` (an attempt)
        delayed by the channel's lease, by when that claim is over (it ends with the other
        copy's lease), so that a copy waits once, not once per backoff step (a slow delivery
        would otherwise use up its attempts and dead-letter it). The claim ends with the
        commit that records the delivery's keys (:meth:`record`; a copy claiming them at that
        moment waits for it, then finds them recorded), with :meth:`unclaim` after a failed
        delivery, or with the lease of ``d`` (a daemon killed mid-delivery: that copy comes
        again when its lease ends, and is delivered)."""
        if self.idempotent is None:
            return True
        idempotent = self.idempotent
        keys = idempotent.keys(d.envelope)  # a keyless message was refused by the receiver
        outcome = transport.claim_fresh(self.consumer, keys, d.lease_expires_at)
        if outcome == "recorded":
            transport.ack(d)
            idempotent.duplicates += 1
            log.info("%s dropped a duplicate delivered meanwhile by another worker: %s", self.consumer, d.message_id,
                     extra={"consumer": self.consumer})
            return False
        if outcome == "claimed":
            return True
        lease = transport.channel_config(d.channel).lease_seconds or transport.lease_seconds
        given = transport.nack(d, "a copy of this message (one of its idempotency keys) is being delivered by "
                                  "another worker or daemon; tried again later", component, delay=lease)
        log.info("%s gave back %s (%s): a copy is being delivered by another worker", self.consumer, d.message_id,
                 given, extra={"consumer": self.consumer})
        return False

    def unclaim(self, transport: Transport, d: Delivery) -> None:
        """End the claim of :meth:`claim`: after a delivery that failed (its retry, or a copy,
        is then delivered), or after one whose keys :meth:`record` committed on a store that
        keeps its claims apart from its transactions (it returned False). A claim this cannot
        end ends with its lease."""
        if self.idempotent is not None:
            try:
                transport.unclaim(self.consumer, self.idempotent.keys(d.envelope))
            except CouplerError as exc:
                log.debug("%s: claim of %s left to its lease: %s", self.consumer, d.message_id, exc)

    def record(self, tx: TransactionOps, d: Delivery) -> bool:
        """Record ``d``'s keys in ``tx`` for the Idempotent Receiver when it was handled without
        :meth:`screen` (an outbound adapter's delivery, made outside any transaction, under
        the claim of :meth:`claim`), and end that claim with ``tx``'s commit
        (``tx.record_claimed``): committed, the keys are recorded and unclaimed at once.
        True when nothing is left to do once ``tx`` committed; False when the store keeps its
        claims apart (the embedded store's, in the process): then :meth:`unclaim` ends the
        claim after the commit."""
        if self.idempotent is None:
            return True
        return self.idempotent.record_claimed(tx, d.envelope)

    def settle(self, tx: TransactionOps, d: Delivery) -> None:
        """Acknowledge a handled message in ``tx`` (its keys were recorded by :meth:`screen`)."""
        tx.ack(d)

    def screen(self, tx: TransactionOps, ds: list[Delivery]) -> list[Delivery]:
        """Of ``ds``, those to handle in ``tx``, at its start: the Idempotent Receiver checks
        and records their keys in one step (``tx.mark_new``) and acknowledges in ``tx`` a
        message one of whose keys was recorded already (a copy handled since the look of
        :meth:`receiver`, or by another worker or daemon of the site right now: its
        transaction holds the key until it ends; this one waits, then finds it, or records it
        if the other rolled back). The keys commit with the handling: a handling that fails
        (rolled back) records none, and the copy is handled when it comes again."""
        if self.idempotent is None or not ds:
            return ds
        idempotent = self.idempotent
        keyed = [(d, idempotent.keys(d.envelope)) for d in ds]  # a keyless one never gets here
        new = tx.mark_new(idempotent.consumer, [k for _, ks in keyed for k in ks])
        handled, dups = [], []
        for d, ks in keyed:
            if all(k in new for k in ks):
                new.difference_update(ks)  # a second copy in this batch finds them taken
                handled.append(d)
            else:
                dups.append(d)
        if not dups:
            return handled
        tx.ack(dups)
        idempotent.duplicates += len(dups)
        log.info("%s dropped %d duplicate(s) handled meanwhile by another worker: %s", self.consumer, len(dups),
                 ", ".join(d.message_id for d in dups[:5]), extra={"consumer": self.consumer})
        return handled

    def settle_many(self, tx: TransactionOps, ds: list[Delivery]) -> None:
        """:meth:`settle` for a batch handled in ``tx`` (one statement, not one per message)."""
        tx.ack(ds)

    @property
    def sequence_timeout(self) -> float:
        return self.assembler.timeout if self.assembler is not None else 0.0

    def expire(self) -> list[str]:
        """Sequences incomplete for too long, moved to the Invalid Message Channel."""
        return self.assembler.expire() if self.assembler is not None else []


__all__ = ["ROUTE_BATCH", "ConsumerPatterns", "Receiver"]
