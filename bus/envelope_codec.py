"""Fast envelope (de)serialisation for the transports' hot path.

Produces and reads exactly the bytes of :meth:`Envelope.to_bytes` / :meth:`Envelope.from_bytes`
(``coupler.Envelope`` v1, one version byte first), but builds the Avro record directly instead
of through ``dataclasses.asdict`` and rebuilds the envelope without re-validating what this
process or another Coupler process already validated before writing it. Anything unexpected
falls back to the canonical implementation, which raises the proper :class:`EnvelopeError`.
"""

from __future__ import annotations

import functools
import io
from typing import Any

import fastavro

from coupler.canonical import Envelope, FormatIndicator, MessageKind
from coupler.canonical.envelope import ENVELOPE_VERSION, HistoryEntry, Sequence, envelope_schema

_HEADER = bytes([ENVELOPE_VERSION])


def encode(
    env: Envelope,
    *,
    extra_hop: HistoryEntry | None = None,
    body: bytes | None = None,
    properties: dict[str, str] | None = None,
) -> bytes:
    """``env.to_bytes()``, optionally with one more history entry, another body or properties."""
    fmt = env.format
    seq = env.sequence
    history = [{"component": h.component, "action": h.action, "timestamp": h.timestamp} for h in env.history]
    if extra_hop is not None:
        history.append(
            {"component": extra_hop.component, "action": extra_hop.action, "timestamp": extra_hop.timestamp}
        )
    record = {
        "message_id": env.message_id,
        "timestamp": env.timestamp,
        "kind": env.kind.value,
        "format": {"name": fmt.name, "version": fmt.version, "content_type": fmt.content_type},
        "correlation_id": env.correlation_id,
        "return_address": env.return_address,
        "expires_at": env.expires_at,
        "sequence": (
            {"id": seq.id, "position": seq.position, "size": seq.size, "end": seq.end} if seq else None
        ),
        "history": history,
        "attempt": env.attempt,
        "origin": env.origin,
        "properties": env.properties if properties is None else properties,
        "body": env.body if body is None else body,
    }
    out = io.BytesIO()
    out.write(_HEADER)
    try:
        fastavro.schemaless_writer(out, envelope_schema(), record)
    except (ValueError, TypeError, OverflowError):
        return env.to_bytes()  # raises the canonical error
    return out.getvalue()


@functools.lru_cache(maxsize=4096)
def _format(name: str, version: int, content_type: str) -> FormatIndicator:
    return FormatIndicator(name, version, content_type)


def _frozen(cls: type, values: dict[str, Any]) -> Any:
    obj = object.__new__(cls)
    obj.__dict__.update(values)
    return obj


def decode(blob: bytes) -> Envelope:
    """``Envelope.from_bytes(blob)`` without re-validating headers written by Coupler."""
    if not blob or blob[0] != ENVELOPE_VERSION:
        return Envelope.from_bytes(blob)
    stream = io.BytesIO(blob)
    stream.seek(1)
    try:
        rec = fastavro.schemaless_reader(stream, envelope_schema(), None)
    except Exception:  # noqa: BLE001 - the canonical reader reports it properly
        return Envelope.from_bytes(blob)
    if stream.tell() != len(blob):
        return Envelope.from_bytes(blob)
    fmt = rec["format"]
    seq = rec["sequence"]
    env = object.__new__(Envelope)
    env.__dict__.update(
        format=_format(fmt["name"], fmt["version"], fmt["content_type"]),
        body=rec["body"],
        kind=MessageKind(rec["kind"]),
        message_id=rec["message_id"],
        timestamp=rec["timestamp"],
        correlation_id=rec["correlation_id"],
        return_address=rec["return_address"],
        expires_at=rec["expires_at"],
        sequence=_frozen(Sequence, seq) if seq else None,
        history=[_frozen(HistoryEntry, h) for h in rec["history"]],
        attempt=rec["attempt"],
        origin=rec["origin"],
        properties=rec["properties"],
    )
    return env
