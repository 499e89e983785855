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
#: a server's listen backlog unless it says (the http adapter's is 512)
DEFAULT_BACKLOG = 128
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
    else is its protocol's (aiohttp's RequestHandler). On a TLS server it is the protocol of the
    TLS transport (:class:`_Handshake` starts it): what arrives with the end of the handshake,
    before the RequestHandler has that transport, is handed on after it."""

    __slots__ = ("inner", "limit", "lost", "early")

    def __init__(self, inner: asyncio.Protocol, limit: ConnectionLimit):
        self.inner, self.limit = inner, limit
        self.lost = False
        #: data (``None``: the end of it) received before ``connection_made``: a TLS transport
        #: hands on what came with the handshake's last message at once, before ``start_tls``
        #: has returned it
        self.early: list[bytes | None] | None = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.inner.connection_made(transport)
        early, self.early = self.early, None
        for data in early or ():
            if data is None:
                self.inner.eof_received()  # the TLS transport shuts down after it whatever it answers
            else:
                self.inner.data_received(data)

    def data_received(self, data: bytes) -> None:
        if self.early is not None:
            self.early.append(data)
        else:
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        if self.early is not None:
            self.early.append(None)
            return None
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self.limit._release(self)
        if self.early is None:  # else the RequestHandler never had the connection: nothing to tell it
            self.inner.connection_lost(exc)


class _Handshake(asyncio.Protocol):
    """The plain TCP connection of a TLS server until its handshake begins: ``app`` (a
    :class:`_Counted`, or a :class:`_Refused` that does not count) is given the TLS transport
    once the handshake is done; a counted connection whose handshake fails, times out or never
    begins stops counting then, not when asyncio's objects for it are collected."""

    def __init__(self, limit: ConnectionLimit, app: _Counted | _Refused):
        self.limit, self.app = limit, app

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.pause_reading()  # nothing is read before start_tls has the transport
        self.limit._start_tls(transport, self.app)

    def data_received(self, data: bytes) -> None:
        pass  # never: reading is paused until start_tls resumes it on its own protocol

    def connection_lost(self, exc: Exception | None) -> None:  # before start_tls had it
        if isinstance(self.app, _Counted):
            self.limit._release(self.app)


class ConnectionLimit:
    """The protocol factory of a server holding at most ``maximum`` connections: beyond, a new
    connection is answered ``503 Service Unavailable`` and closed at once, so the clients
    already connected go on being served and the process keeps its file descriptors. One
    WARNING line says so (then at most one every ``Throttled.seconds`` while it lasts, with the
    count refused meanwhile).

    ``factory`` is the server's own protocol factory (aiohttp's ``web.Server``, which the
    documented low-level API hands to ``loop.create_server``). A connection counts from the
    moment it is accepted until it is lost. With ``ssl_context``, the server listens without TLS
    and this starts TLS on each connection (``loop.start_tls``, at most
    ``TLS_HANDSHAKE_SECONDS``): one whose handshake fails or times out stops counting at once.
    (Listening with TLS, asyncio tells nothing of a failed handshake: its connection would go on
    counting until asyncio's objects for it were collected, and an exception's traceback holds
    them in a cycle, CPython gh-109534, so until a garbage collection.)"""

    def __init__(self, factory: Any, maximum: int, logger: logging.Logger | logging.LoggerAdapter[Any],
                 where: str, option: str = "max_connections", *, ssl_context: ssl.SSLContext | None = None,
                 backlog: int = 0):
        self.factory = factory
        self.ssl_context = ssl_context
        self.maximum = maximum
        #: the listen backlog: as many connections again may be accepted in a burst before the
        #: first of them is counted (asyncio accepts up to that many at once)
        self.backlog = backlog
        self.logger, self.where, self.option = logger, where, option
        self.open = 0
        self.refused = 0
        self._handshakes: set[asyncio.Task[asyncio.Transport | None]] = set()
        self._report = Throttled()
        reason = f"{maximum} connections already open ({option}); try again later\n".encode()
        self._answer = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(reason)) + reason

    @property
    def tls(self) -> bool:
        return self.ssl_context is not None

    def __call__(self) -> asyncio.BaseProtocol:
        app: _Counted | _Refused
        if self.open >= self.maximum:
            self.refused += 1
            more = self._report.due()
            if more is not None:
                since = f"; {more} more refused since the last report" if more else ""
                self.logger.warning("%s: a new connection refused (503): %d connections are open, the most "
                                    "%s allows%s. Raise %s if the clients are legitimate", self.where, self.open,
                                    self.option, since, self.option)
            app = _Refused(self._answer)  # over TLS: answered once its handshake is done
        else:
            app = _Counted(self.factory(), self)
            self.open += 1
        return _Handshake(self, app) if self.tls else app

    def health(self) -> dict[str, int]:
        """The connections open, the most allowed, and how many were refused."""
        return {"open": self.open, "max": self.maximum, "refused": self.refused}

    def close(self) -> None:
        """Abort the connections still in their TLS handshake (the server is closing; the
        others are aiohttp's to close)."""
        for task in list(self._handshakes):
            task.cancel()

    def _start_tls(self, transport: asyncio.Transport, app: _Counted | _Refused) -> None:
        """Start TLS on ``transport`` (accepted without it); :meth:`_handshake_done` then."""
        assert self.ssl_context is not None
        task = asyncio.get_running_loop().create_task(asyncio.get_running_loop().start_tls(
            transport, app, self.ssl_context, server_side=True, ssl_handshake_timeout=TLS_HANDSHAKE_SECONDS))
        self._handshakes.add(task)
        task.add_done_callback(lambda done: self._handshake_done(transport, app, done))

    def _handshake_done(self, transport: asyncio.Transport, app: _Counted | _Refused,
                        task: asyncio.Task[asyncio.Transport | None]) -> None:
        """``app`` made with the TLS transport; or, the handshake failed (a client speaking plain
        HTTP), timed out or was cancelled, or the connection was lost right after it, the
        connection closed and, counted, no longer counting: now, not at a garbage collection."""
        self._handshakes.discard(task)
        tls = None if task.cancelled() or task.exception() is not None else task.result()
        if tls is None or tls.is_closing():
            transport.close()  # start_tls has closed it if it began
            if isinstance(app, _Counted):
                self._release(app)
            return
        app.connection_made(tls)

    def _release(self, counted: _Counted) -> None:
        if not counted.lost:
            counted.lost = True
            self.open -= 1


async def listen(runner: web.BaseRunner, host: str, port: int, *, ssl_context: ssl.SSLContext | None,
                 max_connections: int, logger: logging.Logger | logging.LoggerAdapter[Any], where: str,
                 backlog: int = DEFAULT_BACKLOG, option: str = "max_connections") -> tuple[asyncio.Server, ConnectionLimit]:
    """Serve ``runner`` (set up) on ``host``:``port`` with at most ``max_connections`` at once;
    the listening server (close it before ``runner.cleanup()``) and its :class:`ConnectionLimit`
    (``open``, ``refused``: the server's health). OSError if the address cannot be listened on.

    aiohttp's sites (``web.TCPSite``) hand the runner's ``web.Server`` to
    ``loop.create_server`` as it is and have no place for a limit; ``web.Server`` is the
    documented protocol factory, so this hands it on through the limit instead."""
    assert runner.server is not None, "runner.setup() first"
    limit = ConnectionLimit(runner.server, max_connections, logger, where, option, ssl_context=ssl_context,
                            backlog=backlog)
    # without ssl=: the limit starts TLS on each connection itself, so that it knows when a
    # handshake fails (ConnectionLimit)
    server = await asyncio.get_running_loop().create_server(limit, host, port, backlog=backlog)
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


__all__ = ["DEFAULT_BACKLOG", "DEFAULT_MAX_CONNECTIONS", "BodyRefused", "ConnectionLimit", "bound_address", "listen", "listening",
           "read_body", "refuse_declared"]
