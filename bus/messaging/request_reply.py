"""Request-Reply: a request carries a Return Address; its replies carry its message id as
their Correlation Identifier.

:func:`request_reply` is the requester's side, used by adapters (``context.request``), the
Control Bus (``coupler ctl ping``, ``coupler send`` through it): it sends the request with a return
address and collects the replies correlated to it, selecting them on the reply channel so
that the replies of other requests are left for their own requesters. The replier's side is
the daemon's command worker (a Command Message's reply, :mod:`coupler.bus.model.commands`),
and ``context.reply`` for an adapter answering a plain channel message.
"""

from __future__ import annotations

import threading
import time

from coupler.bus.model.commands import REPLY_COUNT, CommandFault
from coupler.bus.transport.base import Transport
from coupler.canonical import Envelope
from coupler.canonical.tracecontext import ensure_trace


def request_reply(
    transport: Transport,
    envelope: Envelope,
    channel: str,
    *,
    reply_channel: str,
    consumer: str,
    timeout: float,
    component: str,
    count: int | None = 1,
    stopping: threading.Event | None = None,
) -> list[Envelope]:
    """Send ``envelope`` to ``channel`` and collect its correlated replies on ``reply_channel``.

    Waits until ``count`` replies came (``None``: as many as the first reply's
    ``coupler.reply-count`` property says, see :mod:`coupler.bus.model.commands`) or ``timeout``
    passed; raises :class:`CommandFault` (code ``timeout``) when no reply came at all.
    """
    # a request starts a trace (or joins the current one); its replies are children in it
    envelope = ensure_trace(envelope.replace(return_address=reply_channel))
    transport.send(channel, envelope, component=component)
    selector = f"correlation_id = '{envelope.message_id}'"
    deadline = time.monotonic() + timeout
    replies: list[Envelope] = []
    expected = count
    while expected is None or len(replies) < expected:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or (stopping is not None and stopping.is_set()):
            break
        batch = transport.receive_wait(
            reply_channel, consumer, max=10, selector=selector, wait=min(remaining, 0.5)
        )
        if batch:
            transport.ack(batch)
        for d in batch:
            replies.append(d.envelope)
            if expected is None:
                expected = int(d.envelope.properties.get(REPLY_COUNT, "1") or 1)
    if not replies:
        raise CommandFault(
            f"no reply to {envelope.message_id} on {reply_channel} within {timeout:g} s",
            code="timeout",
            hint="is the daemon running and the target's adapter started?",
        )
    return replies

