"""The Envelope: every message on the bus is a body (bytes) and standard headers.

Serialised with the Avro schema of the envelope itself (``coupler.Envelope`` version 1,
``schemas/coupler/envelope/v1.avsc``), preceded by one byte giving that version so that a
later envelope version can still read messages written by this one.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import json
import os
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import fastavro

from coupler.schemas import SCHEMA_DIR

from .errors import EnvelopeError
from .format import FormatIndicator

ENVELOPE_VERSION = 1


class MessageKind(StrEnum):
    """Command, Document, Event and Reply Messages."""

    COMMAND = "command"
    DOCUMENT = "document"
    EVENT = "event"
    REPLY = "reply"


@functools.lru_cache(maxsize=1024)
def _parse_format(text: str) -> FormatIndicator:
    """``FormatIndicator.parse(text)``, once per text (a format indicator is immutable)."""
    return FormatIndicator.parse(text)


#: ``(millisecond, its datetime)`` of the last :func:`utc_now` (a datetime is immutable: the
#: messages and history entries of one millisecond share it)
_last_now: tuple[int, datetime] = (0, datetime.fromtimestamp(0, UTC))


def utc_now() -> datetime:
    """Now in UTC, truncated to whole milliseconds."""
    global _last_now
    ms = time.time_ns() // 1_000_000
    last = _last_now
    if last[0] == ms:
        return last[1]
    now = datetime.fromtimestamp(ms // 1000, UTC).replace(microsecond=ms % 1000 * 1000)
    _last_now = (ms, now)
    return now


def to_millis(ts: datetime) -> datetime:
    """``ts`` in UTC, truncated to whole milliseconds (the envelope's resolution)."""
    if ts.tzinfo is UTC and not ts.microsecond % 1000:  # already (every envelope's own timestamps)
        return ts
    if ts.tzinfo is None:
        raise EnvelopeError(f"timestamp {ts.isoformat()} has no time zone; use UTC")
    ts = ts.astimezone(UTC)
    return ts.replace(microsecond=ts.microsecond - ts.microsecond % 1000)


@dataclass(frozen=True)
class HistoryEntry:
    """Message History: a component did an action to the message at a time."""

    component: str
    action: str
    timestamp: datetime = field(default_factory=utc_now)

    def __post_init__(self) -> None:
        object.__setattr__(self, "timestamp", to_millis(self.timestamp))


#: the history entries made in the last millisecond, by (component, action): an entry is
#: immutable, so the messages a step passes on within one millisecond (a split file's parts)
#: share it; cleared when the millisecond changes
_hops: dict[tuple[str, str], HistoryEntry] = {}
_hops_at: list[datetime | None] = [None]


def _hop(component: str, action: str) -> HistoryEntry:
    now = utc_now()
    if _hops_at[0] is not now:
        _hops.clear()
        _hops_at[0] = now
    entry = _hops.get((component, action))
    if entry is None or entry.timestamp is not now:
        entry = _hops[(component, action)] = HistoryEntry(component, action, now)
    return entry


@dataclass(frozen=True)
class Sequence:
    """Message Sequence: ``position`` (0-based) in sequence ``id`` of ``size`` parts, or ``end``."""

    id: str
    position: int
    size: int | None = None
    end: bool = False


def _check_properties(properties: dict[str, str]) -> None:
    for key, value in properties.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise EnvelopeError(f"property {key!r}: properties are strings, got {value!r}")


#: the headers :meth:`Envelope.replace` changes without building the envelope again
_CHEAP_CHANGES = frozenset({"properties", "body", "message_id", "correlation_id", "return_address", "sequence",
                            "history", "origin", "attempt"})


@dataclass
class Envelope:
    """A canonical message: standard headers (DESIGN.md) and a body."""

    format: FormatIndicator
    body: bytes = b""
    kind: MessageKind = MessageKind.DOCUMENT
    message_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    timestamp: datetime = field(default_factory=utc_now)
    correlation_id: str | None = None
    return_address: str | None = None
    expires_at: datetime | None = None
    sequence: Sequence | None = None
    history: list[HistoryEntry] = field(default_factory=list)
    attempt: int = 0
    origin: str | None = None
    properties: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.format, str):
            self.format = _parse_format(self.format)
        self.kind = MessageKind(self.kind)
        if not isinstance(self.body, bytes):
            raise EnvelopeError(f"body must be bytes, not {type(self.body).__name__}")
        self.timestamp = to_millis(self.timestamp)
        if self.expires_at is not None:
            self.expires_at = to_millis(self.expires_at)
        _check_properties(self.properties)

    @classmethod
    def many(
        cls,
        format: FormatIndicator | str,
        bodies: Iterable[bytes],
        *,
        message_ids: Iterable[str] | None = None,
        properties: Iterable[dict[str, str]] | None = None,
        sequences: Iterable[Sequence | None] | None = None,
        **headers: Any,
    ) -> list[Envelope]:
        """Envelopes of a batch (rows of a table, records of a file) sharing ``format`` and
        ``headers`` (``kind``, ``timestamp``, ``origin``, ``correlation_id``...): the shared
        headers are checked once, then each envelope is made from its body, message id (new
        random ones when not given), properties and sequence (each list as long as
        ``bodies``; the property dicts become the envelopes' own). The same envelopes as
        ``Envelope(format, body, ...)`` one by one, for a fraction of the time."""
        bodies = list(bodies)
        ids = list(message_ids) if message_ids is not None else new_message_ids(len(bodies))
        props = list(properties) if properties is not None else [{} for _ in bodies]
        seqs = list(sequences) if sequences is not None else [None] * len(bodies)
        if not len(ids) == len(props) == len(seqs) == len(bodies):
            raise EnvelopeError(f"{len(bodies)} bodies, {len(ids)} message ids, {len(props)} property sets "
                                f"and {len(seqs)} sequences: one of each per message")
        fmt = _parse_format(format) if isinstance(format, str) else format
        template = cls(format=fmt, message_id="", **headers)  # the shared headers, checked once
        history = template.history
        shared = dict(template.__dict__)
        out = []
        new = object.__new__
        for body, message_id, p, seq in zip(bodies, ids, props, seqs, strict=True):
            if type(body) is not bytes or type(message_id) is not str or not _all_text(p) or (
                    seq is not None and type(seq) is not Sequence):
                # the careful way: the error it raises names the problem
                if not isinstance(p, dict):
                    raise EnvelopeError(f"properties must be a dict of strings, not {type(p).__name__}")
                out.append(cls(**{**shared, "body": body, "message_id": message_id, "properties": p,
                                  "sequence": seq, "history": list(history)}))
                continue
            env = new(cls)
            d = env.__dict__
            d.update(shared)
            d["body"], d["message_id"], d["properties"], d["sequence"], d["history"] = body, message_id, p, seq, history[:]
            out.append(env)
        return out

    # -- behaviour ---------------------------------------------------------------------------

    def is_expired(self, now: datetime | None = None) -> bool:
        return self.expires_at is not None and (now or utc_now()) >= self.expires_at

    def record_hop(self, component: str, action: str) -> Envelope:
        """Append a Message History entry (in place) and return the envelope."""
        self.history.append(_hop(component, action))
        return self

    def replace(self, **changes: Any) -> Envelope:
        """A copy with some headers changed (history and properties are copied, not shared)."""
        if changes.keys() <= _CHEAP_CHANGES:  # checked here; the unchanged headers are valid already
            props = changes.pop("properties", None)
            if props is None:
                props = dict(self.properties)
            else:
                _check_properties(props)
            if "body" in changes and not isinstance(changes["body"], bytes):
                raise EnvelopeError(f"body must be bytes, not {type(changes['body']).__name__}")
            copy = object.__new__(type(self))
            copy.__dict__.update(self.__dict__)
            copy.__dict__.update(changes)
            if "history" not in changes:
                copy.history = list(self.history)
            copy.properties = props
            return copy
        changes.setdefault("history", list(self.history))
        changes.setdefault("properties", dict(self.properties))
        return dataclasses.replace(self, **changes)

    def reply(self, body: bytes, format: FormatIndicator | str, **headers: Any) -> Envelope:
        """A Reply Message correlated to this one (``correlation_id`` = this ``message_id``),
        in the same trace (its ``traceparent`` is a child of this message's)."""
        from .tracecontext import TRACEPARENT, trace_of

        parent = trace_of(self)
        if parent is not None:
            headers["properties"] = {TRACEPARENT: parent.child().header, **(headers.get("properties") or {})}
        return Envelope(
            format=FormatIndicator.parse(format) if isinstance(format, str) else format,
            body=body,
            kind=MessageKind.REPLY,
            correlation_id=self.message_id,
            **headers,
        )

    # -- serialisation -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The envelope as the Avro record of ``coupler.Envelope`` v1."""
        return {
            "message_id": self.message_id,
            "timestamp": self.timestamp,
            "kind": self.kind.value,
            "format": {
                "name": self.format.name,
                "version": self.format.version,
                "content_type": self.format.content_type,
            },
            "correlation_id": self.correlation_id,
            "return_address": self.return_address,
            "expires_at": self.expires_at,
            "sequence": dataclasses.asdict(self.sequence) if self.sequence else None,
            "history": [dataclasses.asdict(h) for h in self.history],
            "attempt": self.attempt,
            "origin": self.origin,
            "properties": dict(self.properties),
            "body": self.body,
        }

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> Envelope:
        fmt = record["format"]
        return cls(
            format=FormatIndicator(fmt["name"], fmt["version"], fmt["content_type"]),
            body=record["body"],
            kind=MessageKind(record["kind"]),
            message_id=record["message_id"],
            timestamp=record["timestamp"],
            correlation_id=record.get("correlation_id"),
            return_address=record.get("return_address"),
            expires_at=record.get("expires_at"),
            sequence=Sequence(**record["sequence"]) if record.get("sequence") else None,
            history=[HistoryEntry(**h) for h in record.get("history", [])],
            attempt=record.get("attempt", 0),
            origin=record.get("origin"),
            properties=dict(record.get("properties", {})),
        )

    def to_bytes(self) -> bytes:
        out = io.BytesIO()
        out.write(bytes([ENVELOPE_VERSION]))
        try:
            fastavro.schemaless_writer(out, envelope_schema(), self.to_dict())
        except (ValueError, TypeError, OverflowError) as exc:
            raise EnvelopeError(f"envelope {self.message_id} cannot be serialised: {exc}") from exc
        return out.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> Envelope:
        if not data:
            raise EnvelopeError("empty input is not an envelope", where="byte 0")
        if data[0] != ENVELOPE_VERSION:
            raise EnvelopeError(
                f"unknown envelope version {data[0]} (this Coupler reads version {ENVELOPE_VERSION})",
                where="byte 0",
            )
        stream = io.BytesIO(data)
        stream.seek(1)
        try:
            record: Any = fastavro.schemaless_reader(stream, envelope_schema(), None)
        except (EOFError, ValueError, UnicodeDecodeError, IndexError, OverflowError) as exc:
            raise EnvelopeError(
                f"not a valid envelope: {str(exc) or type(exc).__name__}", where=f"byte {stream.tell()}"
            ) from exc
        if stream.tell() != len(data):
            raise EnvelopeError(
                f"{len(data) - stream.tell()} trailing bytes after the envelope",
                where=f"byte {stream.tell()}",
            )
        try:
            return cls.from_dict(record)
        except (ValueError, TypeError) as exc:
            raise EnvelopeError(f"envelope has an invalid header: {exc}") from exc


def _all_text(properties: Any) -> bool:
    """Whether ``properties`` is a dict of strings to strings."""
    if type(properties) is not dict:
        return False
    try:  # joined in C: a TypeError for anything that is not a string
        "".join(properties)
        "".join(properties.values())
    except TypeError:
        return False
    return True


def new_message_ids(n: int) -> list[str]:
    """``n`` random message ids: version 4 UUIDs as ``str(uuid.uuid4())`` writes them, from one
    read of the system's random source (a third of the time of ``uuid4`` one by one)."""
    raw = os.urandom(16 * n).hex()
    out = []
    for i in range(0, 32 * n, 32):
        h = raw[i:i + 32]
        out.append(f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}")
    return out


def name_id(namespace: bytes, name: str) -> str:
    """``str(uuid.uuid5(uuid.UUID(bytes=namespace), name))`` without building a
    :class:`uuid.UUID`: the message id derived from what a message is (an adapter, a table and
    a row's key; a file and a record number), the same when it is read again after a crash."""
    h = hashlib.sha1(namespace + name.encode()).hexdigest()  # noqa: S324 - RFC 4122 version 5
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"


@functools.cache
def envelope_schema() -> Any:
    """The parsed Avro schema of ``coupler.Envelope`` v1 (a constant, loaded once)."""
    text = (SCHEMA_DIR / "coupler" / "envelope" / "v1.avsc").read_text()
    return fastavro.parse_schema(json.loads(text))
