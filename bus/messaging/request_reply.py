"""Request-Reply: a request carries a Return Address and a Correlation Identifier."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from coupler.bus.transport.base import Transport
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError


class RequestTimeout(CouplerError):
    """No reply came within the timeout."""


def request(
    transport: Transport,
    channel: str,
    envelope: Envelope,
    *,
    reply_channel: str,
    timeout: float = 30.0,
    component: str = "requester",
) -> Envelope:
    """Send ``envelope`` to ``channel`` and wait for the reply correlated to it.

    The request gets ``return_address = reply_channel`` and expires with the timeout (a late
    replier never sees a request nobody waits for). The reply is the first message on
    ``reply_channel`` whose ``correlation_id`` is the request's ``message_id``; other replies
    on that channel are left for their own requesters.
    """
    req = envelope.replace(
        return_address=reply_channel,
        expires_at=datetime.now(UTC) + timedelta(seconds=timeout),
    )
    transport.send(channel, req, component=component)
    deadline = time.monotonic() + timeout
    selector = f"correlation_id = '{req.message_id}'"
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RequestTimeout(
                f"no reply to {req.message_id} on {reply_channel} within {timeout:g} s",
                where=f"channel {channel}",
                hint="is a consumer of the channel running?",
            )
        got = transport.receive_wait(
            reply_channel, component, max=1, selector=selector, wait=min(remaining, 1.0)
        )
        if got:
            transport.ack(got)
            return got[0].envelope


def reply(
    transport: Transport,
    request_envelope: Envelope,
    body: bytes,
    format: FormatIndicator | str,
    *,
    component: str = "replier",
    **headers: object,
) -> Envelope:
    """Send the Reply Message of ``request_envelope`` to its return address."""
    if not request_envelope.return_address:
        raise CouplerError(
            f"message {request_envelope.message_id} has no return address to reply to",
            hint="the sender must set return_address",
        )
    answer = request_envelope.reply(body, format, **headers)
    transport.send(request_envelope.return_address, answer, component=component)
    return answer
