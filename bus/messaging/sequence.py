"""Message Sequence: split a large document into parts and reassemble it on receipt.

:func:`split` cuts an envelope's body into parts of at most ``part_size`` bytes; each part
is a message of its own with the same headers, a fresh ``message_id`` and
``sequence = {id: original message_id, position, size}``.

:class:`SequenceAssembler` collects the parts durably: each arriving part is moved, in one
transaction with its acknowledgement, to a holding channel of its sequence
(``coupler.sequence.<channel>:<digest of its id>``); the part that completes the sequence takes all of them out in
the same transaction and yields the original envelope. A sequence still incomplete after
``timeout`` seconds is moved to the Invalid Message Channel with the reason (see
:meth:`SequenceAssembler.expire`). The daemon reassembles on every channel that declares
``reassemble = true`` in site.toml, before its consumers see the messages.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Iterator

from coupler.bus.transport.base import Delivery, TransactionOps, Transport
from coupler.canonical import Envelope
from coupler.canonical.envelope import Sequence
from coupler.canonical.errors import CouplerError

HOLDING_PREFIX = "coupler.sequence."
#: how long the part completing a sequence waits for the held parts to be handed out
_TAKE_SECONDS = 5.0
#: the original body length, kept on every part for the consistency check
LENGTH_PROPERTY = "coupler.sequence.length"


class SequenceError(CouplerError):
    """A part that does not fit its sequence (bad position, inconsistent size)."""


def split(envelope: Envelope, part_size: int) -> list[Envelope]:
    """``envelope`` as a Message Sequence of parts of at most ``part_size`` body bytes."""
    if part_size < 1:
        raise SequenceError(f"part size must be >= 1 byte, got {part_size}")
    body = envelope.body
    count = max(1, math.ceil(len(body) / part_size))
    parts = []
    for position in range(count):
        chunk = body[position * part_size : (position + 1) * part_size]
        props = dict(envelope.properties)
        props[LENGTH_PROPERTY] = str(len(body))
        part = Envelope(
            format=envelope.format,
            body=chunk,
            kind=envelope.kind,
            timestamp=envelope.timestamp,
            correlation_id=envelope.correlation_id,
            return_address=envelope.return_address,
            expires_at=envelope.expires_at,
            sequence=Sequence(id=envelope.message_id, position=position, size=count),
            history=list(envelope.history),
            origin=envelope.origin,
            properties=props,
        )
        parts.append(part)
    return parts


def join(parts: list[Envelope]) -> Envelope:
    """The original envelope from all its parts (any order)."""
    if not parts:
        raise SequenceError("no parts to join")
    ordered = sorted(parts, key=lambda p: p.sequence.position if p.sequence else -1)
    first = ordered[0]
    seq = first.sequence
    if seq is None:
        raise SequenceError(f"message {first.message_id} is not part of a sequence")
    positions = [p.sequence.position for p in ordered if p.sequence]
    if positions != list(range(len(ordered))):
        raise SequenceError(f"sequence {seq.id}: parts {positions} are not 0..{len(ordered) - 1}")
    body = b"".join(p.body for p in ordered)
    props = dict(first.properties)
    expected = props.pop(LENGTH_PROPERTY, None)
    if expected is not None and int(expected) != len(body):
        raise SequenceError(f"sequence {seq.id}: reassembled {len(body)} bytes, expected {expected}")
    env = Envelope(
        format=first.format,
        body=body,
        kind=first.kind,
        message_id=seq.id,
        timestamp=first.timestamp,
        correlation_id=first.correlation_id,
        return_address=first.return_address,
        expires_at=first.expires_at,
        history=list(first.history),
        origin=first.origin,
        properties=props,
    )
    return env


def _expected_count(parts: list[Envelope]) -> int | None:
    for p in parts:
        seq = p.sequence
        if seq is None:
            continue
        if seq.size is not None:
            return seq.size
        if seq.end:
            return seq.position + 1
    return None


class SequenceAssembler:
    """Reassembles the Message Sequences that ``consumer`` receives from ``channel``, durably.

    Each part is moved, in one transaction with its acknowledgement, to the holding channel of
    its sequence (:meth:`holding_channel`); the part that completes the sequence takes the
    others out in the same transaction and the original document is rebuilt. With
    ``forward`` (the daemon passes the channel itself), the document is sent there in that
    transaction, so that it is received, retried and dead-lettered like any message. A
    sequence still incomplete ``timeout`` seconds after its oldest part arrived goes to the
    Invalid Message Channel (:meth:`expire`).
    """

    def __init__(self, transport: Transport, channel: str, consumer: str, *, timeout: float = 300.0,
                 forward: str | None = None):
        self.transport = transport
        self.channel = channel
        self.consumer = consumer
        self.timeout = timeout
        self.forward = forward
        self._prefix = f"{HOLDING_PREFIX}{channel}:"

    def holding_channel(self, sequence_id: str) -> str:
        """``coupler.sequence.<channel>:<digest of the sequence id>`` (a message id may hold
        characters a channel name may not)."""
        return f"{self._prefix}{hashlib.sha1(sequence_id.encode()).hexdigest()}"

    def offer(self, delivery: Delivery) -> Envelope | None:
        """Take one received message; returns the whole document when it completes one.

        A message that is not part of a sequence is returned as it is (and left for the
        caller to acknowledge); a part is acknowledged here.
        """
        env = delivery.envelope
        seq = env.sequence
        if seq is None:
            return env
        holding = self.holding_channel(seq.id)
        with self.transport.transaction() as tx:
            if seq.position < 0 or (seq.size is not None and seq.position >= seq.size):
                # (here and below) the dead letters' ids not wanted: the moves go with the commit
                tx.invalid_later(
                    env, f"sequence {seq.id}: position {seq.position} outside 0..{(seq.size or 0) - 1}",
                    self.consumer, delivery=delivery,
                )
                return None
            held = self.transport.peek(holding, max=100_000)
            expected = _expected_count([*held, env])
            positions = {p.sequence.position for p in [*held, env] if p.sequence}
            if expected is None or len(positions) < expected:
                tx.send(holding, env.replace(attempt=0), component=self.consumer)
                tx.ack(delivery)
                return None
            parts = self._take(tx, holding, len(held), seq.id)
            unique: dict[int, Envelope] = {seq.position: env}
            for d in parts:
                if d.envelope.sequence is not None:
                    unique.setdefault(d.envelope.sequence.position, d.envelope)
            tx.ack([*parts, delivery])
            try:
                whole = join(list(unique.values()))
            except SequenceError as exc:
                for part in unique.values():
                    tx.invalid_later(part, exc.message, self.consumer, channel=delivery.channel)
                return None
            whole.record_hop(self.consumer, f"reassemble {expected} parts")
            if self.forward is not None:
                tx.send(self.forward, whole, component=self.consumer)
            return whole

    def _take(self, tx: TransactionOps, holding: str, count: int, seq_id: str) -> list[Delivery]:
        """The ``count`` parts held in ``holding``. A broker may hand out a message it just
        had back (a peek returns what it looked at) a moment later: wait for it a little,
        then give up (the transaction rolls back and the part is delivered again)."""
        parts: list[Delivery] = []
        deadline = time.monotonic() + _TAKE_SECONDS
        while len(parts) < count:
            got = tx.receive(holding, self.consumer, max=count - len(parts), lease_seconds=3600)
            parts += got
            if not got:
                if time.monotonic() > deadline:
                    raise SequenceError(
                        f"sequence {seq_id}: {count} part(s) held in {holding}, only {len(parts)} could be taken",
                        hint="the part is delivered again and retries",
                    )
                time.sleep(0.01)
        return parts

    def pending(self) -> Iterator[tuple[str, int, float]]:
        """Incomplete sequences: (holding channel, parts held, age of the oldest part in seconds)."""
        for st in self.transport.stats():
            rest = st.channel[len(self._prefix) :]
            if st.channel.startswith(self._prefix) and ":" not in rest and st.depth:
                yield st.channel, st.depth, st.oldest_age or 0.0

    def expire(self) -> list[str]:
        """Move sequences incomplete for longer than ``timeout`` to the Invalid Message Channel."""
        expired = []
        for holding, count, age in list(self.pending()):
            if age <= self.timeout:
                continue
            with self.transport.transaction() as tx:
                parts = tx.receive(holding, self.consumer, max=count + 1000, lease_seconds=3600)
                expected = _expected_count([d.envelope for d in parts])
                seq_id = next((d.envelope.sequence.id for d in parts if d.envelope.sequence), holding)
                reason = (
                    f"incomplete sequence {seq_id}: {len(parts)} of "
                    f"{expected if expected is not None else 'an unknown number of'} parts after "
                    f"{self.timeout:g} s"
                )
                for d in parts:
                    tx.invalid_later(d.envelope, reason, self.consumer, channel=self.channel, delivery=d)
            expired.append(seq_id)
        return expired
