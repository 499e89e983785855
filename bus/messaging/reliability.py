"""Reliability patterns on top of a Transport: Idempotent Receiver and stuck-message monitoring.

Redelivery with backoff, dead letters, the Invalid Message Channel, expiration, leases, the
Message Store journal and the Claim Check live in the transport itself
(:mod:`coupler.bus.transport.base`, :mod:`coupler.bus.model.backoff`); Message Sequence in
:mod:`coupler.bus.messaging.sequence`, request-reply in :mod:`coupler.bus.messaging.request_reply`, the Message
Throttle in :mod:`coupler.bus.messaging.throttle`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from coupler.bus.model.selectors import field_getter
from coupler.bus.transport.base import Delivery, Transport
from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError

log = logging.getLogger(__name__)


class BusinessKeyError(CouplerError):
    """A business-key expression that names no field, or a message that lacks the key."""


class DuplicateMessageError(CouplerError):
    """Acknowledging a message another instance of the same consumer already processed."""


class IdempotentReceiver:
    """Drops messages a consumer has already processed (Idempotent Receiver).

    A message is a duplicate when its ``message_id`` — or, with ``business_key``, the value of
    that expression — was recorded for this ``consumer`` within the retention window of the
    transport. ``business_key`` is a comma-separated list of header or property names (as in
    Message Selectors), e.g. ``"origin, properties.order_no"``; their values joined make the
    key. Recording happens in the same transaction as the acknowledgement, so a message is
    either processed-and-recorded or neither. Use it inside ``transport.transaction()`` to make
    the processing itself part of that transaction (exactly-once processing).
    """

    def __init__(
        self,
        transport: Transport,
        channel: str,
        consumer: str,
        *,
        business_key: str | None = None,
    ):
        self.transport = transport
        self.channel = channel
        self.consumer = consumer
        self.business_key = business_key
        self._getters = []
        if business_key is not None:
            names = [n.strip() for n in business_key.split(",")]
            if not all(names):
                raise BusinessKeyError(
                    f"empty field in business-key expression {business_key!r}",
                    hint="e.g. origin, properties.order_no",
                )
            self._getters = [(n, field_getter(n)) for n in names]
        self._held: dict[int, list[Delivery]] = {}
        self._inflight: dict[str, Delivery] = {}
        self.duplicates = 0

    def keys(self, envelope: Envelope) -> list[str]:
        """The idempotency keys of a message: its id, and its business key when configured."""
        keys = [f"id:{envelope.message_id}"]
        if self._getters:
            values = []
            for name, get in self._getters:
                value = get(envelope)
                if value is None:
                    raise BusinessKeyError(
                        f"message {envelope.message_id} has no {name} for the business key "
                        f"{self.business_key!r}",
                        where=f"channel {self.channel}",
                    )
                values.append(str(value))
            keys.append("key:" + "\x1f".join(values))
        return keys

    def receive(
        self, *, max: int = 1, wait: float = 0.0, lease_seconds: float | None = None
    ) -> list[Delivery]:
        """Receive, dropping (acknowledging) duplicates; returns the fresh messages only."""
        got = self.transport.receive_wait(
            self.channel, self.consumer, max=max, wait=wait, lease_seconds=lease_seconds
        )
        if not got:
            return []
        keyed: list[tuple[Delivery, list[str]]] = []
        for d in got:
            try:
                keyed.append((d, self.keys(d.envelope)))
            except BusinessKeyError as exc:
                self.transport.invalid(d.envelope, exc.message, self.consumer, delivery=d)
        fresh: list[Delivery] = []
        with self.transport.transaction() as tx:
            already = tx.seen(self.consumer, [k for _, ks in keyed for k in ks])
            dups: list[Delivery] = []
            first_of = self._inflight
            for d, ks in keyed:
                if any(k in already for k in ks):
                    dups.append(d)
                    continue
                original = next((first_of[k] for k in ks if k in first_of), None)
                if original is not None:  # the same message twice in this batch
                    self._held.setdefault(original.tag, []).append(d)
                    continue
                for k in ks:
                    first_of[k] = d
                fresh.append(d)
            if dups:
                tx.ack(dups)
        if dups:
            self.duplicates += len(dups)
            log.info(
                "%s dropped %d duplicate(s) on %s: %s",
                self.consumer, len(dups), self.channel, ", ".join(d.message_id for d in dups[:5]),
            )
        return fresh

    def ack(self, deliveries: Delivery | Iterable[Delivery]) -> None:
        """Acknowledge and record as processed, in one transaction."""
        ds = [deliveries] if isinstance(deliveries, Delivery) else list(deliveries)
        held = [h for d in ds for h in self._held.get(d.tag, [])]
        keys = [k for d in ds for k in self.keys(d.envelope)]
        with self.transport.transaction() as tx:
            already = tx.seen(self.consumer, keys)
            if already:  # a competing instance of this consumer processed it meanwhile
                raise DuplicateMessageError(
                    f"{self.consumer} already processed {sorted(already)[0]} (on {self.channel})",
                    hint="the surrounding transaction is rolled back; the copy is dropped on redelivery",
                )
            tx.mark_seen(self.consumer, keys)
            tx.ack(ds + held)
        self._forget(ds)
        self.duplicates += len(held)

    def _forget(self, ds: list[Delivery]) -> None:
        tags = {d.tag for d in ds}
        for d in ds:
            self._held.pop(d.tag, None)
        for key in [k for k, d in self._inflight.items() if d.tag in tags]:
            del self._inflight[key]

    def nack(self, delivery: Delivery, error: str | BaseException, *, delay: float | None = None) -> str:
        """Negative acknowledgement; copies held back as duplicates of it are released too."""
        with self.transport.transaction() as tx:
            outcome = tx.nack(delivery, error, self.consumer, delay=delay)
            for held in self._held.get(delivery.tag, []):
                tx.nack(held, "released with the original", self.consumer, delay=0)
        self._forget([delivery])
        return outcome


@dataclass(frozen=True)
class StuckAlert:
    """A channel whose oldest message is older than allowed."""

    channel: str
    oldest_age: float
    limit: float
    depth: int

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


class StuckMonitor:
    """Stuck-message monitoring: alert when a channel's oldest message is too old.

    ``max_age`` is the limit in seconds for every channel, or a mapping from channel name to
    limit (``"*"`` for the others). :meth:`check` logs a warning when a channel becomes stuck
    and an info line when it recovers; :attr:`alerts` and :meth:`status` give the current
    state for the control bus.
    """

    def __init__(self, transport: Transport, max_age: float | dict[str, float]):
        self.transport = transport
        self.limits = dict(max_age) if isinstance(max_age, dict) else {"*": float(max_age)}
        self.alerts: dict[str, StuckAlert] = {}

    def limit_for(self, channel: str) -> float | None:
        return self.limits.get(channel, self.limits.get("*"))

    def check(self) -> list[StuckAlert]:
        current: dict[str, StuckAlert] = {}
        for st in self.transport.stats():
            limit = self.limit_for(st.channel)
            if limit is None or st.oldest_age is None or st.oldest_age <= limit:
                continue
            current[st.channel] = StuckAlert(st.channel, st.oldest_age, limit, st.depth)
        for name, alert in current.items():
            if name not in self.alerts:
                log.warning(
                    "channel %s is stuck: oldest message is %.1f s old (limit %.1f s), %d waiting",
                    name, alert.oldest_age, alert.limit, alert.depth,
                )
        for name in self.alerts.keys() - current.keys():
            log.info("channel %s is no longer stuck", name)
        self.alerts = current
        return list(current.values())

    @property
    def stuck(self) -> bool:
        return bool(self.alerts)

    def status(self) -> dict[str, Any]:
        return {"stuck": self.stuck, "alerts": [a.to_json() for a in self.alerts.values()]}
