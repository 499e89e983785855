"""What the daemon's HTTP servers (the http and SOAP adapters, the operator console) hold every
client to, written once: a request body read within its size and its time
(:func:`read_body`), and the number of connections open at once (:class:`ConnectionLimit`,
:func:`listen`; :func:`listening` the servers of the process, which the daemon checks against
its open-files limit). Each server answers a refusal in its own format (problem+json, a SOAP
server's text, the console's JSON) and names its own options; what they log about clients
that misbehave otherwise is :mod:`coupler.canonical.serverlog`.

aiohttp is imported only when a server runs: the daemon and every adapter import
``coupler.bus.api`` (which exports these) at start, and most never serve HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any

from coupler.canonical.errors import one_line
from coupler.canonical.serverlog import Throttled

if TYPE_CHECKING:
    import ssl

    from aiohttp import web

#: connections one HTTP server holds at once unless configured (``max_connections``)
DEFAULT_MAX_CONNECTIONS = 1024
#: seconds a TLS client has to finish its handshake (asyncio's default, made explicit: a
#: connection in its handshake counts against ``max_connections`` at most this long)
TLS_HANDSHAKE_SECONDS = 60.0


class BodyRefused(Exception):  # noqa: N818 - an answer, not an error of the server
    """A request body that is not taken: ``status`` 413 (over the limit), 408 (not arrived in
    time) or 400 (the connection was lost in the middle of it, or the body is not in its
    ``Content-Encoding``), ``reason``, one line, and ``kind``: ``size``, ``time``, ``lost`` or
    ``encoding``. The connection cannot be kept after it (the rest of the body is not read)."""

    def __init__(self, status: int, reason: str, kind: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.kind = kind


def _named(text: str, option: str | None) -> str:
    return f"{text} ({option})" if option else text


def refuse_declared(request: web.BaseRequest, limit: int, limit_name: str | None = None) -> None:
    """BodyRefused (413) when the request's ``Content-Length`` says more than ``limit`` bytes:
    answered at once, nothing of the body read (a claim of 10**12 bytes is never waited for)."""
    if request.content_length is not None and request.content_length > limit:
        raise BodyRefused(413, _named(f"the request body is larger than {limit} bytes", limit_name), "size")


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
        raise BodyRefused(413, _named(f"the request body is larger than {limit} bytes", limit_name), "size") from None
    except TimeoutError:
        raise BodyRefused(408, _named(f"the request body did not arrive within {timeout:g} s", timeout_name),
                          "time") from None
    except web.RequestPayloadError as exc:  # a body not in its Content-Encoding (not gzip, say)
        encoding = request.headers.get("Content-Encoding", "")[:40]
        raise BodyRefused(400, f"the request body cannot be read as {encoding}: {one_line(exc)}", "encoding") from None
    except ConnectionError as exc:  # the client went away (or reset) in the middle of its body
        raise BodyRefused(400, f"the connection was lost in the middle of the body ({exc})", "lost") from None


class _Refused(asyncio.Protocol):
    """A connection over the limit: answered 503 at once and closed, its request unread."""

    def __init__(self, answer: bytes):
        self.answer = answer

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(self.answer)
        transport.close()

    def data_received(self, data: bytes) -> None:
        pass


class _Counted(asyncio.Protocol):
    """One connection of the server, counted from its acceptance until it is lost; everything
    else is its protocol's (aiohttp's RequestHandler)."""

    __slots__ = ("inner", "limit", "made", "lost", "expiry", "loop", "__weakref__")

    def __init__(self, inner: asyncio.Protocol, limit: ConnectionLimit):
        self.inner, self.limit = inner, limit
        self.made = self.lost = False
        self.expiry: asyncio.TimerHandle | None = None
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.made = True
        if self.expiry is not None:
            self.expiry.cancel()
        if self.lost:  # let go as a handshake that never ended, and ended after all: it counts again
            self.lost = False
            self.limit.open += 1
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self.limit._release(self)
        self.inner.connection_lost(exc)

    def __del__(self) -> None:
        # asyncio drops the protocol of a TLS connection whose handshake failed (a client
        # speaking plain HTTP to it) without a call: it is let go here, on the server's loop
        if not self.lost and not self.made:
            with contextlib.suppress(RuntimeError):  # the loop closed: nothing counts any more
                self.loop.call_soon_threadsafe(self.limit._release, self)


class ConnectionLimit:
    """The protocol factory of a server holding at most ``maximum`` connections: beyond, a new
    connection is answered ``503 Service Unavailable`` and closed at once, so the clients
    already connected go on being served and the process keeps its file descriptors. One
    WARNING line says so (then at most one every ``Throttled.seconds`` while it lasts, with the
    count refused meanwhile).

    ``factory`` is the server's own protocol factory (aiohttp's ``web.Server``, which the
    documented low-level API hands to ``loop.create_server``). A connection counts from the
    moment it is accepted, a TLS one during its handshake too. asyncio tells the protocol of a
    failed handshake nothing: such a connection stops counting when asyncio drops its protocol
    (at once in CPython, or at the next garbage collection when an exception's traceback holds
    it), at the latest after ``TLS_HANDSHAKE_SECONDS``, when asyncio has given up on it."""

    def __init__(self, factory: Any, maximum: int, logger: logging.Logger | logging.LoggerAdapter[Any],
                 where: str, option: str = "max_connections", *, tls: bool = False, backlog: int = 0):
        self.factory = factory
        self.tls = tls
        self.maximum = maximum
        #: the listen backlog: as many connections again may be accepted in a burst before the
        #: first of them is counted (asyncio accepts up to that many at once)
        self.backlog = backlog
        self.logger, self.where, self.option = logger, where, option
        self.open = 0
        self.refused = 0
        self._report = Throttled()
        reason = f"{maximum} connections already open ({option}); try again later\n".encode()
        self._answer = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(reason)) + reason

    def __call__(self) -> asyncio.BaseProtocol:
        if self.open >= self.maximum:
            self.refused += 1
            more = self._report.due()
            if more is not None:
                since = f"; {more} more refused since the last report" if more else ""
                self.logger.warning("%s: a new connection refused (503): %d connections are open, the most "
                                    "%s allows%s. Raise %s if the clients are legitimate", self.where, self.open,
                                    self.option, since, self.option)
            return _Refused(self._answer)
        counted = _Counted(self.factory(), self)
        self.open += 1
        if self.tls:  # a plain connection is made in the loop's next turn; a TLS one after its handshake
            counted.expiry = counted.loop.call_later(TLS_HANDSHAKE_SECONDS + 1, self._expire, weakref.ref(counted))
        return counted

    def health(self) -> dict[str, int]:
        """The connections open, the most allowed, and how many were refused."""
        return {"open": self.open, "max": self.maximum, "refused": self.refused}

    def _expire(self, ref: weakref.ref[_Counted]) -> None:
        counted = ref()
        if counted is not None and not counted.made:  # a handshake that never ended: asyncio has closed it
            self._release(counted)

    def _release(self, counted: _Counted) -> None:
        if not counted.lost:
            counted.lost = True
            self.open -= 1
            if counted.expiry is not None:
                counted.expiry.cancel()


async def listen(runner: web.BaseRunner, host: str, port: int, *, ssl_context: ssl.SSLContext | None,
                 max_connections: int, logger: logging.Logger | logging.LoggerAdapter[Any], where: str,
                 backlog: int = 128, option: str = "max_connections") -> tuple[asyncio.Server, ConnectionLimit]:
    """Serve ``runner`` (set up) on ``host``:``port`` with at most ``max_connections`` at once;
    the listening server (close it before ``runner.cleanup()``) and its :class:`ConnectionLimit`
    (``open``, ``refused``: the server's health). OSError if the address cannot be listened on.

    aiohttp's sites (``web.TCPSite``) hand the runner's ``web.Server`` to
    ``loop.create_server`` as it is and have no place for a limit; ``web.Server`` is the
    documented protocol factory, so this hands it on through the limit instead."""
    assert runner.server is not None, "runner.setup() first"
    limit = ConnectionLimit(runner.server, max_connections, logger, where, option, tls=ssl_context is not None,
                            backlog=backlog)
    server = await asyncio.get_running_loop().create_server(
        limit, host, port, ssl=ssl_context, backlog=backlog,
        ssl_handshake_timeout=TLS_HANDSHAKE_SECONDS if ssl_context else None)
    with _LISTENING_LOCK:
        _LISTENING[server] = limit
    return server, limit


#: the servers :func:`listen` made in this process, and their limits (forgotten with the server)
_LISTENING: weakref.WeakKeyDictionary[asyncio.Server, ConnectionLimit] = weakref.WeakKeyDictionary()
_LISTENING_LOCK = threading.Lock()


def listening() -> list[ConnectionLimit]:
    """The limits of the HTTP servers listening in this process now (the daemon checks their
    ``max_connections`` and backlogs against its open-files limit at start)."""
    with _LISTENING_LOCK:
        return [limit for server, limit in list(_LISTENING.items()) if server.is_serving()]


def bound_address(server: asyncio.Server) -> tuple[str, int]:
    """The host and port ``server`` listens on (the port chosen when 0 was asked)."""
    host, port = server.sockets[0].getsockname()[:2]
    return host, port


__all__ = ["DEFAULT_MAX_CONNECTIONS", "BodyRefused", "ConnectionLimit", "bound_address", "listen", "listening",
           "read_body", "refuse_declared"]
