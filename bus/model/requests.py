"""How an inbound adapter asks the bus: a document in, the answer (or a fault) out.

An inbound request either becomes a common ``request`` command to a target (the dispatcher
hands it to the adapter serving that target and its Reply comes back), or a plain
Request-Reply on a channel (whoever consumes the channel answers with
``context.reply``). The inbound half of any request-reply adapter (the socket and SOAP
adapters) uses these through :mod:`coupler.bus.api`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coupler.bus.model.adapter import AdapterContext
from coupler.bus.model.commands import (
    FAULT_CODES,
    CommandFault,
    Document,
    command_envelope,
    parse_reply,
)
from coupler.canonical import Envelope, MessageKind

DEFAULT_COMMAND_CHANNEL = "coupler.commands"


@dataclass(frozen=True)
class Answer:
    """What the bus answered: documents and details of a Reply."""

    documents: list[Document]
    details: dict[str, str]


def request_command(
    context: AdapterContext,
    document: Document,
    *,
    target: str,
    operation: str = "",
    timeout: float = 30.0,
    command_channel: str = DEFAULT_COMMAND_CHANNEL,
    headers: dict[str, Any] | None = None,
) -> Answer:
    """Send a ``request`` command for ``target`` and wait for its reply.

    Raises :class:`CommandFault` with the fault's code when the bus answers with a Fault
    (nobody serves the target, the serving adapter failed, ...) or ``timeout`` when no
    answer comes in time.
    """
    envelope = command_envelope(
        "request",
        target,
        document=document,
        operation=operation,
        timeout=timeout,
        origin=context.name,
        **(headers or {}),
    )
    reply = context.request(envelope, command_channel, timeout=timeout)
    info = parse_reply(reply)
    if not info.ok:
        raise CommandFault(info.reason or "the bus answered with a fault", code=info.code or "failed")
    return Answer(list(info.documents), dict(info.details))


def request_channel(
    context: AdapterContext,
    document: Document,
    *,
    channel: str,
    timeout: float = 30.0,
    headers: dict[str, Any] | None = None,
) -> Answer:
    """Request-Reply on a plain channel: the reply envelope's body is the answer."""
    envelope = document.to_envelope(kind=MessageKind.COMMAND, origin=context.name, **(headers or {}))
    reply: Envelope = context.request(envelope, channel, timeout=timeout)
    fault = reply.properties.get("coupler.fault")
    if fault:
        raise CommandFault(reply.body.decode("utf-8", "replace") or fault, code=fault if fault in FAULT_CODES else "failed")
    return Answer([Document.from_envelope(reply)], {})

