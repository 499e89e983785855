"""The envelope as an AMQP 0-9-1 message: the body stays the body, headers become properties.

Standard AMQP properties carry what they have a slot for, so that any AMQP client can read
them: ``message_id``, ``correlation_id``, ``reply_to`` (return address), ``type`` (message
kind), ``content_type`` (of the format), ``timestamp`` (seconds), ``app_id`` (origin),
``expiration`` (the time to live left, in ms), ``delivery_mode`` 2 (persistent). The rest
travels in ``headers`` under ``coupler-*`` keys: the format's name and version, the
timestamp and expiry in milliseconds, the Message Sequence and Message History (JSON), the
string properties (a table), and the number of attempts already made (the version when it
is not 1 and the attempts when there were any: absent, they read as 1 and 0).
"""

from __future__ import annotations

import contextlib
import functools
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pika

from coupler.bus.transport.amqp.frames import undecodable
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.envelope import HistoryEntry, MessageKind, Sequence, utc_now
from coupler.canonical.errors import EnvelopeError
from coupler.canonical.textformats import json_loads

H_FORMAT = "coupler-format"
H_VERSION = "coupler-version"
H_TIMESTAMP = "coupler-timestamp"
H_EXPIRES = "coupler-expires-at"
H_SEQUENCE = "coupler-sequence"
H_HISTORY = "coupler-history"
H_PROPERTIES = "coupler-properties"
H_ATTEMPTS = "coupler-attempts"
H_LEASE_LOST = "coupler-lease-lost"
#: a claim-checked body: the reference of the body stored in PostgreSQL (the AMQP body is empty)
H_CLAIM = "coupler-claim"
#: dead letters: the record of why the message died, next to its envelope headers
H_DEAD = "coupler-dead"
H_RAW = "coupler-raw"


def _ms(ts: datetime) -> int:
    return int(round(ts.timestamp() * 1000))


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def to_amqp(
    env: Envelope, *, attempts: int = 0, now: datetime | None = None, extra: dict[str, Any] | None = None,
    hop: HistoryEntry | None = None,
) -> tuple[bytes, pika.BasicProperties]:
    """The AMQP body and properties of ``env``; ``attempts`` deliveries were already made;
    ``hop`` is a Message History entry added to the copy (``env`` is not changed)."""
    # a format version 1 and no attempts are left out (readers default them): every header
    # costs the producer and the consumer a few microseconds in pika's table codec
    headers: dict[str, Any] = {H_FORMAT: env.format.name, H_TIMESTAMP: _ms(env.timestamp)}
    if env.format.version != 1:
        headers[H_VERSION] = env.format.version
    if attempts:
        headers[H_ATTEMPTS] = attempts
    expiration = None
    if env.expires_at is not None:
        headers[H_EXPIRES] = _ms(env.expires_at)
        left = _ms(env.expires_at) - _ms(now or datetime.now(UTC))
        expiration = str(max(0, left))
    if env.sequence is not None:
        s = env.sequence
        headers[H_SEQUENCE] = json.dumps({"id": s.id, "position": s.position, "size": s.size, "end": s.end})
    history = [*env.history, hop] if hop is not None else env.history
    if history:
        headers[H_HISTORY] = json.dumps([[h.component, h.action, _ms(h.timestamp)] for h in history])
    if env.properties:
        headers[H_PROPERTIES] = dict(env.properties)
    if extra:
        headers.update(extra)
    props = pika.BasicProperties(
        message_id=env.message_id,
        correlation_id=env.correlation_id,
        reply_to=env.return_address,
        type=env.kind.value,
        content_type=env.format.content_type,
        timestamp=int(env.timestamp.timestamp()),
        app_id=env.origin,
        expiration=expiration,
        delivery_mode=2,
        headers=headers,
    )
    return env.body, props


@dataclass
class Received:
    """An AMQP message read back: its envelope (None when it is raw bytes) and its headers."""

    envelope: Envelope | None
    body: bytes
    headers: dict[str, Any] = field(default_factory=dict)
    properties: pika.BasicProperties | None = None

    @property
    def attempts(self) -> int:
        """Deliveries made before this one: republished attempts plus broker requeues (the
        transport subtracts the requeues that were no attempt: :attr:`returned`)."""
        return self.republished + self.returned

    @property
    def republished(self) -> int:
        """Attempts counted by the republishing transport (``coupler-attempts``; a value that is
        no count reads as 0: :func:`from_amqp` refuses such a message)."""
        return _count(self.headers.get(H_ATTEMPTS))

    @property
    def returned(self) -> int:
        """How often the broker returned this copy to its queue (``x-delivery-count``)."""
        return _count(self.headers.get("x-delivery-count"))

    @property
    def claim(self) -> str | None:
        """The reference of the claim-checked body, or None when the body is here."""
        try:
            return _text(self.headers.get(H_CLAIM))
        except UnicodeDecodeError:  # refused by from_amqp
            return None

    @property
    def enqueued_at(self) -> float:
        """When this message was sent to its channel (seconds): the time of its last send
        hop, kept when it is redelivered (0 when a foreign message's headers do not say)."""
        history = self.headers.get(H_HISTORY)
        if history:
            with contextlib.suppress(ValueError, IndexError, TypeError, KeyError, OverflowError):
                return float(json_loads(_text(history) or "")[-1][2]) / 1000.0
        with contextlib.suppress(ValueError, TypeError, OverflowError):
            return float(self.headers.get(H_TIMESTAMP) or 0) / 1000.0
        return 0.0


def _count(value: Any) -> int:
    """A count header as a number (0 when absent or not a count)."""
    return int(value) if _is_whole(value) and 0 <= value <= _INT_MAX else 0


def _whole(headers: dict[str, Any], name: str, low: int, high: int) -> int | None:
    """Header ``name`` as a whole number in ``low..high`` (None when absent); a foreign
    client's text, float, table or out-of-range number is an :class:`EnvelopeError`."""
    value = headers.get(name)
    if value is None:
        return None
    if not _is_whole(value) or not low <= value <= high:
        raise EnvelopeError(f"AMQP message has a bad {name} header: {_shown(value)} is not a whole number "
                            f"from {low} to {high}")
    return int(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLI = timedelta(milliseconds=1)
_KINDS = {k.value: k for k in MessageKind}


def _at_ms(ms: Any) -> datetime:
    """The UTC time of ``ms`` milliseconds since the epoch (exact: already whole ms)."""
    return _EPOCH + int(ms) * _MILLI


def _entry(component: str, action: str, ms: Any) -> HistoryEntry:
    """A history entry read back (its timestamp is whole milliseconds in UTC already: the
    checks of ``HistoryEntry.__post_init__`` have nothing to do)."""
    entry: Any = object.__new__(HistoryEntry)
    entry.__dict__.update(component=str(component), action=str(action), timestamp=_at_ms(ms))
    return entry


def from_amqp(props: pika.BasicProperties, body: bytes) -> Received:
    """Decode a message written by :func:`to_amqp`; raises EnvelopeError when it is not one.

    The envelope is built without ``Envelope.__post_init__``: what it checks holds by
    construction here (timestamps whole milliseconds in UTC, the kind a ``MessageKind``,
    properties strings, the body bytes, the format a ``FormatIndicator`` checked once per
    name, version and content type)."""
    cause = undecodable(props)
    if cause is not None:  # delivered by the link's frame decoder instead of breaking the connection
        which = f" {_shown(props.message_id)}" if props.message_id else ""
        raise EnvelopeError(f"AMQP message{which}: {cause}")
    headers = dict(props.headers or {})
    # the counts the transport reads from every message, raw ones too (Received.attempts)
    _whole(headers, H_ATTEMPTS, 0, _INT_MAX)
    _whole(headers, "x-delivery-count", 0, _INT_MAX)
    if headers.get(H_RAW):
        return Received(None, body, headers, props)
    try:
        name = _text(headers.get(H_FORMAT))
        _text(headers.get(H_CLAIM))  # text, read as Received.claim when the message is taken
    except UnicodeDecodeError as exc:
        raise EnvelopeError(f"AMQP message has a bad coupler header: {exc}") from None
    if not name:
        raise EnvelopeError("AMQP message without a coupler-format header: not a Coupler envelope")
    version = _whole(headers, H_VERSION, 1, _INT_MAX) or 1
    ts = _whole(headers, H_TIMESTAMP, _MIN_MS, _MAX_MS)
    expires = _whole(headers, H_EXPIRES, _MIN_MS, _MAX_MS)
    properties = headers.get(H_PROPERTIES) or {}
    if not isinstance(properties, dict):
        raise EnvelopeError(f"AMQP message has a bad {H_PROPERTIES} header: {_shown(properties)} is not a table")
    try:
        seq = headers.get(H_SEQUENCE)
        history = headers.get(H_HISTORY)
        kind = _text(props.type) or "document"
        env: Any = object.__new__(Envelope)
        env.__dict__.update(
            format=_format(name, version, _text(props.content_type) or "avro/binary"),
            body=body,
            kind=_KINDS.get(kind) or MessageKind(kind),
            message_id=_text(props.message_id) or "",
            timestamp=_at_ms(ts) if ts is not None else utc_now(),
            correlation_id=_text(props.correlation_id),
            return_address=_text(props.reply_to),
            expires_at=_at_ms(expires) if expires is not None else None,
            sequence=_sequence(json_loads(_text(seq) or "")) if seq else None,
            history=[_entry(c, a, t) for c, a, t in _history(json_loads(_text(history) or "[]"))] if history else [],
            attempt=0,
            origin=_text(props.app_id),
            properties={str(k): _text(v) or "" for k, v in properties.items()},
        )
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise EnvelopeError(f"AMQP message has a bad coupler header: {exc}") from exc
    return Received(env, body, headers, props)


#: the bounds of what the envelope's Avro record holds: an ``int`` (versions, counts,
#: sequence positions) and a timestamp in milliseconds that Python's datetime can hold
_INT_MAX = 2**31 - 1
_MIN_MS = -62135596800000  # 0001-01-01
_MAX_MS = 253402300799999  # 9999-12-31T23:59:59.999


def _sequence(data: Any) -> Sequence:
    """The Message Sequence of a ``coupler-sequence`` header (JSON), its types checked."""
    if not isinstance(data, dict):
        raise ValueError(f"{H_SEQUENCE} is not a JSON object")
    seq = Sequence(**data)
    if (not isinstance(seq.id, str) or not _is_int(seq.position) or not (seq.size is None or _is_int(seq.size))
            or not isinstance(seq.end, bool)):
        raise ValueError(f"{H_SEQUENCE} needs a text id, whole position and size (0 to {_INT_MAX}) and a boolean end")
    return seq


def _history(data: Any) -> list[Any]:
    """The ``[component, action, ms]`` entries of a ``coupler-history`` header (JSON), checked."""
    if not isinstance(data, list) or not all(
        isinstance(h, list) and len(h) == 3 and isinstance(h[0], str) and isinstance(h[1], str)
        and _is_whole(h[2]) and _MIN_MS <= h[2] <= _MAX_MS for h in data
    ):
        raise ValueError(f"{H_HISTORY} is not a JSON array of [component, action, milliseconds]")
    return data


def _is_int(value: Any) -> bool:
    return _is_whole(value) and 0 <= value <= _INT_MAX


def _is_whole(value: Any) -> bool:
    """An integer (pika reads a table's long long as its own subclass of int), not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


@functools.lru_cache(maxsize=4096)
def _format(name: str, version: int, content_type: str) -> FormatIndicator:
    return FormatIndicator(name, version, content_type)
