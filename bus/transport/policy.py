"""The delivery policy every transport applies, written once.

Both transports (:mod:`coupler.bus.transport.sqlite`, :mod:`coupler.bus.transport.amqp`)
store messages their own way, but decide the same things the same way, here:

* **Redelivery** (:func:`nack_decision`): a negative acknowledgement dead-letters the message
  when the caller says so (reason ``rejected``) or when the channel's backoff policy has no
  attempt left (``failed N attempt(s)``); otherwise it is redelivered after the caller's
  delay or the policy's delay for the attempt that failed.
* **Undeliverable on receipt** (:func:`undeliverable`): an expired message is never
  delivered (reason ``expired``); a message whose lease ran out after the last attempt is
  dead-lettered (reason ``lease expired``).
* **Where a dead letter goes** (:func:`dead_letter_queue`): the channel's own dead-letter or
  invalid queue, else the site-wide one.
* **What is journalled and counted** (:func:`record_dead`, :func:`record_nacked`): the event
  names of the Message Store journal (:data:`SENT` ... :data:`LEASE_EXPIRED`) and the
  per-channel counters (:data:`COUNTERS`).

A transport hands the recording functions its own *recorder* (:class:`Recorder`): whatever
collects journal entries and counter increments for the operation at hand (the SQLite write
transaction, the AMQP transport's journal batch).
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from coupler.bus.model.backoff import BackoffPolicy
from coupler.bus.transport.base import ChannelConfig, DeadKind, Delivery

log = logging.getLogger("coupler.bus.transport")

# -- journal event names ---------------------------------------------------------------------

SENT = "sent"
PUBLISHED = "published"
RECEIVED = "received"
ACKED = "acked"
NACKED = "nacked"
DEAD_LETTERED = "dead-lettered"
INVALID = "invalid"
EXPIRED = "expired"
LEASE_EXPIRED = "lease expired"
REPLAYED = "replayed"
PURGED = "purged"
DEAD_LETTERS_PURGED = "dead-letters purged"
SUBSCRIBED = "subscribed"
UNSUBSCRIBED = "unsubscribed"
IDENTITY_REGISTERED = "identity registered"

#: the per-channel counters every transport keeps (``ChannelStats`` fields)
COUNTERS = ("sent", "received", "acked", "failed", "dead", "invalid", "expired")

# -- reasons a message dies ------------------------------------------------------------------

REASON_EXPIRED = "expired"
ERROR_EXPIRED = "message expired before delivery"
REASON_LEASE_EXPIRED = "lease expired"
REASON_REJECTED = "rejected"
#: the component named on dead letters the transport itself decided
TRANSPORT = "transport"


class Recorder(Protocol):
    """Collects the journal entries and counter increments of one operation."""

    def journal(self, channel: str | None, message_id: str | None, event: str, detail: str | None = None) -> None: ...

    def count(self, channel: str, counter: str, n: int = 1) -> None: ...


def backoff_for(cfg: ChannelConfig, default: BackoffPolicy) -> BackoffPolicy:
    """The redelivery policy of a channel: its own, else the transport's."""
    return cfg.backoff or default


def lease_for(requested: float | None, cfg: ChannelConfig, default: float) -> float:
    """The lease of a receive: asked for, else the channel's, else the transport's."""
    return requested or cfg.lease_seconds or default


@dataclass(frozen=True)
class NackDecision:
    """What a negative acknowledgement does: ``retry`` after ``wait`` seconds, or ``dead``
    with ``reason``."""

    outcome: Literal["retry", "dead"]
    wait: float = 0.0
    reason: str = ""


def nack_decision(
    policy: BackoffPolicy, attempt: int, *, dead: bool, delay: float | None, rng: random.Random | None = None
) -> NackDecision:
    """Redeliver or dead-letter after failed attempt ``attempt`` (1-based)."""
    if dead:
        return NackDecision("dead", reason=REASON_REJECTED)
    if policy.exhausted(attempt):
        return NackDecision("dead", reason=f"failed {attempt} attempt(s)")
    return NackDecision("retry", policy.delay(attempt, rng) if delay is None else delay)


def undeliverable(
    policy: BackoffPolicy, *, expired: bool, lease_lost: bool, attempts: int
) -> tuple[str, str] | None:
    """``(reason, error)`` when a message met on receipt must be dead-lettered instead of
    delivered (``attempts`` deliveries were made before), else None."""
    if expired:
        return REASON_EXPIRED, ERROR_EXPIRED
    if lease_lost and policy.exhausted(attempts):
        return REASON_LEASE_EXPIRED, f"not acknowledged within the lease after {attempts} attempt(s)"
    return None


def dead_letter_queue(cfg: ChannelConfig, kind: DeadKind, *, dead_letter: str, invalid: str) -> str:
    """The dead-letter queue of a channel for ``kind``: its own, else the site-wide one."""
    if kind == "dead":
        return cfg.dead_letter or dead_letter
    return cfg.invalid or invalid


def record_dead(
    recorder: Recorder,
    channel: str | None,
    message_id: str | None,
    *,
    queue: str,
    kind: DeadKind,
    reason: str,
    error: str,
    component: str,
    attempts: int,
    later: list[Callable[[], None]] | None = None,
) -> None:
    """Count, journal and log a message moved to dead-letter queue ``queue``; ``later``: the
    warning is appended to it instead (said once the move has committed, by a store that
    checks the lease only then)."""
    counter = EXPIRED if reason == REASON_EXPIRED else kind
    if channel:
        recorder.count(channel, counter)
    # the Invalid Message Channel's error is its reason: say it once
    why = reason if not error or error == reason else f"{reason}: {error}"
    recorder.journal(channel, message_id, DEAD_LETTERED if counter == "dead" else counter,
                     f"{queue}: {why} ({component})")
    said = functools.partial(log.warning, "message %s on %s -> %s: %s (component %s, attempts %d)",
                             message_id, channel, queue, why, component, attempts)
    if later is None:
        said()
    else:
        later.append(said)


def record_nacked(recorder: Recorder, delivery: Delivery, component: str, error: str, wait: float) -> None:
    """Journal a negative acknowledgement that leads to a redelivery after ``wait`` seconds."""
    recorder.journal(delivery.channel, delivery.message_id, NACKED,
                     f"{component}: {error} (attempt {delivery.attempt}, retry in {wait:.3f} s)")


__all__ = [
    "COUNTERS",
    "NackDecision",
    "Recorder",
    "backoff_for",
    "dead_letter_queue",
    "lease_for",
    "nack_decision",
    "record_dead",
    "record_nacked",
    "undeliverable",
]
