"""The Idempotent Receiver: a consumer drops the messages it has already processed.

A message is a duplicate for ``consumer`` when one of its keys was recorded for that consumer
within the store's idempotency window (``store.idempotency_window_seconds``). The key is
``message_id`` (a resend of the same message), or a business-key expression: a
comma-separated list of header or property names as in Message Selectors
(:func:`coupler.bus.model.selectors.field_getter`), e.g. ``"origin, properties.order_no"``,
whose values joined make the key (the same order sent again under a new message id); a
message keyed on a business key is also a duplicate when its id was recorded.

The keys live where the consumer's acknowledgements are made, through :class:`SeenStore`:
the transport (``Transport.seen`` / ``mark_seen``, and so a transaction of it), or the file
seen-state of a polling adapter's outbound side (:class:`~coupler.bus.model.files.FileState`).
:meth:`IdempotentReceiver.mark` is called in the transaction that acknowledges, so a message
is either processed-and-recorded or neither. A route's receiver records the keys at the start
of its handling transaction instead, checking them in the same step (``mark_new``,
:meth:`coupler.bus.runtime.consumers.ConsumerPatterns.screen`): a copy handled at that moment
by another worker or daemon waits for it, then is dropped. An outbound adapter, whose delivery
no transaction holds, claims the keys with a lease before the delivery and looks whether they
were recorded meanwhile (``Transport.claim_fresh``,
:meth:`coupler.bus.runtime.consumers.ConsumerPatterns.claim`), and records them with the
acknowledgement after it, in the transaction that ends the claim (:meth:`record_claimed`): a
copy delivered meanwhile elsewhere is given back, then dropped; its receiver does not look
before the claim (``fresh(look=False)``).

The daemon gives a receiver to every route and outbound adapter that declares
``idempotent_key`` in site.toml (:mod:`coupler.bus.runtime.daemon`); the file adapters'
``dedupe`` option is one keyed on ``message_id`` over their file seen-state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from coupler.bus.model.selectors import BodyReader, SelectorError, field_list
from coupler.bus.transport.base import Delivery, TransactionOps, Transport
from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError

log = logging.getLogger(__name__)

#: the key of a receiver that drops resends of the same message
MESSAGE_ID = "message_id"


class BusinessKeyError(CouplerError):
    """A business-key expression that names no field, or a message that lacks the key."""


class SeenStore(Protocol):
    """Where a consumer's processed keys are kept (a transport, a transaction, a file state)."""

    def seen(self, consumer: str, keys: Iterable[str]) -> set[str]: ...

    def mark_seen(self, consumer: str, keys: Iterable[str]) -> None: ...


def parse_key(key: str, *, where: str = "idempotent_key", body: BodyReader | None = None) -> list[tuple[str, Callable[[Envelope], Any]]]:
    """The field getters of a business-key expression (none for ``message_id``), body fields
    read by ``body``; :class:`BusinessKeyError` when a field is empty."""
    if key.strip() == MESSAGE_ID:
        return []
    try:
        return field_list(key, body)
    except SelectorError as exc:
        raise BusinessKeyError(f"business key: {exc.message}", where=where, hint=exc.hint) from None


class IdempotentReceiver:
    """The Idempotent Receiver of ``consumer``, keyed on ``key`` (see the module notes)."""

    def __init__(self, consumer: str, key: str = MESSAGE_ID, *, where: str = "idempotent_key",
                 body: BodyReader | None = None):
        self.consumer = consumer
        self.key = key
        self._getters = parse_key(key, where=where, body=body)
        #: duplicates dropped so far
        self.duplicates = 0

    def __repr__(self) -> str:
        return f"IdempotentReceiver({self.consumer!r}, key={self.key!r})"

    def keys(self, envelope: Envelope) -> list[str]:
        """The keys of a message: its id, and its business key when one is configured
        (:class:`BusinessKeyError` when the message lacks a field of it)."""
        keys = [f"id:{envelope.message_id}"]
        if self._getters:
            values = []
            for name, get in self._getters:
                try:
                    value = get(envelope)
                except SelectorError as exc:  # a body field of a body that cannot be read
                    raise BusinessKeyError(f"business key {self.key!r}: {exc.message}", where=self.consumer) from None
                if value is None:
                    raise BusinessKeyError(
                        f"message {envelope.message_id} has no {name} for the business key {self.key!r}",
                        where=self.consumer,
                    )
                values.append(str(value))
            keys.append("key:" + "\x1f".join(values))
        return keys

    def is_duplicate(self, store: SeenStore, envelope: Envelope) -> bool:
        """Whether ``envelope`` was processed already (counted in :attr:`duplicates`)."""
        if store.seen(self.consumer, self.keys(envelope)):
            self.duplicates += 1
            return True
        return False

    def processed(self, store: SeenStore, message_id: str) -> bool:
        """Whether the message with id ``message_id`` was recorded as processed."""
        return bool(store.seen(self.consumer, [f"id:{message_id}"]))

    def mark(self, store: SeenStore, envelopes: Envelope | Iterable[Envelope]) -> None:
        """Record messages as processed (in the transaction that acknowledges them)."""
        envs = [envelopes] if isinstance(envelopes, Envelope) else list(envelopes)
        store.mark_seen(self.consumer, [k for e in envs for k in self.keys(e)])

    def record_claimed(self, tx: TransactionOps, envelope: Envelope) -> bool:
        """:meth:`mark` of a message delivered under a claim of its keys, ending the claim with
        ``tx``'s commit (``tx.record_claimed``); False when the store cannot (the caller ends
        it after the commit)."""
        return tx.record_claimed(self.consumer, self.keys(envelope))

    def fresh(self, transport: Transport, deliveries: list[Delivery], *, look: bool = True) -> list[Delivery]:
        """Of received ``deliveries``, those not processed yet. Duplicates are acknowledged
        (dropped); a message without the business key goes to the Invalid Message Channel.
        ``look=False``: only the latter, for a consumer whose handler looks for the keys
        itself when it claims them (an outbound adapter's,
        :meth:`coupler.bus.runtime.consumers.ConsumerPatterns.claim`): a look here would be a
        store round trip per message that the claim makes again anyway."""
        if not deliveries:
            return []
        keyed: list[tuple[Delivery, list[str]]] = []
        for d in deliveries:
            try:
                keyed.append((d, self.keys(d.envelope)))
            except BusinessKeyError as exc:
                transport.invalid(d.envelope, exc.message, self.consumer, channel=d.channel, delivery=d)
        if not keyed or not look:
            return [d for d, _ in keyed]
        fresh: list[Delivery] = []
        # a read (no write transaction unless there are duplicates to acknowledge): the keys
        # are marked by the transaction that handles the message (``mark``), not here
        already = transport.seen(self.consumer, [k for _, ks in keyed for k in ks])
        batch: set[str] = set()  # the same message twice in one batch: the first one counts
        dups = []
        for d, ks in keyed:
            if any(k in already or k in batch for k in ks):
                dups.append(d)
            else:
                batch.update(ks)
                fresh.append(d)
        if dups:
            with transport.transaction() as tx:
                tx.ack(dups)
        if dups:
            self.duplicates += len(dups)
            log.info(
                "%s dropped %d duplicate(s): %s", self.consumer, len(dups),
                ", ".join(d.message_id for d in dups[:5]), extra={"consumer": self.consumer},
            )
        return fresh

    def ack(self, transport: Transport, deliveries: Delivery | Iterable[Delivery]) -> None:
        """Acknowledge ``deliveries`` and record them as processed, in one transaction."""
        ds = [deliveries] if isinstance(deliveries, Delivery) else list(deliveries)
        with transport.transaction() as tx:
            self.mark(tx, [d.envelope for d in ds])
            tx.ack(ds)


__all__ = ["MESSAGE_ID", "BusinessKeyError", "IdempotentReceiver", "SeenStore", "parse_key"]
