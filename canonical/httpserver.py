"""What the daemon's HTTP servers (the http and SOAP adapters, the operator console) hold every
client to, written once: a request body read within its size and its time
(:func:`read_body`). Each server answers a refusal in its own format (problem+json, a SOAP
server's text, the console's JSON) and names its own options; what they log about clients
that misbehave otherwise is :mod:`.serverlog`.

aiohttp is imported only when a server runs: the daemon and every ``coupler`` command import
the canonical package at start, and most never serve HTTP.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aiohttp import web


class BodyRefused(Exception):  # noqa: N818 - an answer, not an error of the server
    """A request body that is not taken: ``status`` 413 (over the limit), 408 (not arrived in
    time) or 400 (the connection was lost in the middle of it), and ``reason``, one line. The
    connection cannot be kept after it (the rest of the body is not read)."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


def _named(text: str, option: str | None) -> str:
    return f"{text} ({option})" if option else text


def refuse_declared(request: web.BaseRequest, limit: int, limit_name: str | None = None) -> None:
    """BodyRefused (413) when the request's ``Content-Length`` says more than ``limit`` bytes:
    answered at once, nothing of the body read (a claim of 10**12 bytes is never waited for)."""
    if request.content_length is not None and request.content_length > limit:
        raise BodyRefused(413, _named(f"the request body is larger than {limit} bytes", limit_name))


async def read_body(request: web.BaseRequest, limit: int, timeout: float, *, limit_name: str | None = None,
                    timeout_name: str | None = None) -> bytes:
    """The request's body, at most ``limit`` bytes (the application's ``client_max_size`` must
    be ``limit``: aiohttp stops reading there) arriving within ``timeout`` seconds however
    slowly it comes; else :class:`BodyRefused`. ``limit_name``/``timeout_name`` are the
    server's names of those options, said in the reason."""
    from aiohttp import web

    refuse_declared(request, limit, limit_name)
    try:
        if request.content.is_eof():  # all of it came with the headers: no timer needed
            return await request.read()
        return await asyncio.wait_for(request.read(), timeout)
    except web.HTTPRequestEntityTooLarge:
        raise BodyRefused(413, _named(f"the request body is larger than {limit} bytes", limit_name)) from None
    except TimeoutError:
        raise BodyRefused(408, _named(f"the request body did not arrive within {timeout:g} s", timeout_name)) from None
    except ConnectionError as exc:  # the client went away (or reset) in the middle of its body
        raise BodyRefused(400, f"the connection was lost in the middle of the body ({exc})") from None


__all__ = ["BodyRefused", "read_body", "refuse_declared"]
