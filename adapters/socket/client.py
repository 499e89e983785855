"""The connecting side: a small pool of connections to one legacy server.

Replies are correlated in one of two ways:

``connection``
    one request at a time per connection; the next frame on it is the reply. A connection
    whose reply timed out is closed (a late reply must not answer the next request).
``field``
    requests share the connections; a reader task per connection matches each incoming
    frame to the waiting request by a correlation field (a byte slice of the payload).

Connections are opened lazily and again after a failure; connecting and writing are retried
(transport errors only), a request is never sent twice once it has been written. A pooled
connection the server closed while it lay idle (a legacy server's idle timeout, or one that
serves one request per connection) is replaced before a frame is written on it: written
there, a one-way frame would be taken as delivered and never read. A write the server does
not read within ``write_timeout`` fails with fault ``timeout`` and the connection is reset.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import select
import ssl
from collections import deque
from collections.abc import Callable

from coupler.bus.api import CommandFault
from coupler.translators.framing import FrameDecoder, FrameError, Framing

from .server import CHUNK


class Connection:
    """One open connection with its frame decoder."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, framing: Framing):
        self.reader = reader
        self.writer = writer
        self.framing = framing
        self.decoder: FrameDecoder = framing.decoder()
        self.ready: deque[bytes] = deque()
        self.lock = asyncio.Lock()
        self.closed = False
        self.reader_task: asyncio.Task[None] | None = None
        #: correlation keys of the requests written on it still waiting for their reply
        self.waiting: set[bytes] = set()

    async def read_frame(self) -> bytes:
        while not self.ready:
            data = await self.reader.read(min(CHUNK, self.decoder.room()))
            if not data:
                raise ConnectionResetError("the server closed the connection")
            self.ready.extend(self.decoder.feed(data))
        return self.ready.popleft()

    def peer_closed(self) -> bool:
        """Whether the server has closed (or reset) this connection: a frame written on it
        now would never be read. Asked of the kernel too: the event loop may not have handled
        the end of stream yet (a busy loop, a send that follows the server's close at once)."""
        return (self.closed or self.writer.is_closing() or self.reader.at_eof()
                or self.reader.exception() is not None or hung_up(self.writer))

    async def write(self, payload: bytes, timeout: float) -> None:
        """Write one frame; :class:`WriteStalled` when the server has not taken it within
        ``timeout`` seconds (it stopped reading)."""
        self.writer.write(self.framing.encode(payload))
        try:
            await asyncio.wait_for(self.writer.drain(), timeout)
        except TimeoutError:
            raise WriteStalled(timeout) from None

    def close(self, *, reset: bool = False) -> None:
        """Close; ``reset``: at once, dropping what is still unwritten (a server that stopped
        reading would hold a graceful close, and the socket, for ever)."""
        self.closed = True
        if self.reader_task is not None:
            self.reader_task.cancel()
        if reset:
            self.writer.transport.abort()
        else:
            self.writer.close()


#: poll events of a socket whose peer has closed its side or reset it (POLLRDHUP: Linux)
_HUNG_UP = getattr(select, "POLLRDHUP", 0) | select.POLLHUP | select.POLLERR if hasattr(select, "poll") else 0


def hung_up(writer: asyncio.StreamWriter) -> bool:
    """Whether the kernel already holds the peer's end of stream or reset on ``writer``'s socket
    (also under TLS, whose close_notify comes before it); False where it cannot tell."""
    sock = writer.get_extra_info("socket")
    if sock is None or not _HUNG_UP:
        return False
    poller = select.poll()
    poller.register(sock.fileno(), _HUNG_UP)
    return any(events & _HUNG_UP for _, events in poller.poll(0))


class WriteStalled(Exception):
    """The server did not read a frame written to it within the write timeout."""

    def __init__(self, timeout: float):
        super().__init__(f"the server read nothing of the frame for {timeout:g} s")
        self.timeout = timeout


class FrameClient:
    """Requests over a pool of ``size`` connections to ``host:port``."""

    def __init__(
        self,
        framing: Framing,
        host: str,
        port: int,
        *,
        size: int = 1,
        connect_timeout: float = 10.0,
        write_timeout: float = 30.0,
        retries: int = 2,
        ssl_context: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        correlate: Callable[[bytes], bytes] | None = None,
        logger: logging.Logger,
    ):
        self.framing = framing
        self.host, self.port = host, port
        self.size = size
        self.connect_timeout = connect_timeout
        self.write_timeout = write_timeout
        self.retries = retries
        self.ssl_context = ssl_context
        self.server_hostname = server_hostname
        self.correlate = correlate
        self.logger = logger
        self._slots: list[Connection | None] = [None] * size
        self._idle: asyncio.Queue[int] | None = None
        self._next = itertools.cycle(range(size))
        self._pending: dict[bytes, asyncio.Future[bytes]] = {}
        self._connecting: dict[int, asyncio.Lock] = {}

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def _queue(self) -> asyncio.Queue[int]:
        if self._idle is None:
            self._idle = asyncio.Queue()
            for i in range(self.size):
                self._idle.put_nowait(i)
        return self._idle

    async def _connect(self, slot: int) -> Connection:
        conn = self._slots[slot]
        if conn is not None and not conn.peer_closed():
            return conn
        async with self._connecting.setdefault(slot, asyncio.Lock()):  # one connect per slot
            conn = self._slots[slot]
            if conn is not None and not conn.peer_closed():
                return conn
            if conn is not None:  # closed by the server while idle: replaced, not written to
                self.logger.debug("connection to %s closed by the server; opening a new one", self.address)
                conn.close()
            return await self._open(slot)

    async def _open(self, slot: int) -> Connection:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    self.host,
                    self.port,
                    ssl=self.ssl_context,
                    server_hostname=self.server_hostname if self.ssl_context else None,
                    limit=CHUNK,
                ),
                self.connect_timeout,
            )
        except TimeoutError as exc:
            raise ConnectionError(f"connecting to {self.address} timed out after {self.connect_timeout:g} s") from exc
        conn = Connection(reader, writer, self.framing)
        if self.correlate is not None:
            conn.reader_task = asyncio.create_task(self._read_replies(conn))
        self._slots[slot] = conn
        return conn

    def _drop(self, slot: int, *, reset: bool = False) -> None:
        conn = self._slots[slot]
        if conn is not None:
            conn.close(reset=reset)
        self._slots[slot] = None

    async def _send(self, slot: int, payload: bytes) -> Connection:
        """Write ``payload`` on ``slot``'s connection, reconnecting on transport errors."""
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                conn = await self._connect(slot)
                await conn.write(payload, self.write_timeout)
                return conn
            except WriteStalled as exc:  # part of the frame may be out: never sent again
                self._drop(slot, reset=True)
                raise CommandFault(
                    f"sending to {self.address} stalled: {exc} (write_timeout)", code="timeout",
                    hint="is the legacy server reading? the delivery is retried",
                ) from None
            except (OSError, ssl.SSLError) as exc:
                last = exc
                self._drop(slot)
                self.logger.info("send to %s failed (attempt %d): %s", self.address, attempt + 1, exc)
                if attempt < self.retries:
                    await asyncio.sleep(min(0.1 * 2**attempt, 2.0))
        raise CommandFault(
            f"cannot send to {self.address}: {last}",
            code="failed",
            hint="is the legacy server running and reachable?",
        )

    async def exchange(self, payload: bytes, *, reply: bool, timeout: float) -> bytes | None:
        """Send ``payload``; with ``reply``, wait up to ``timeout`` s for the correlated reply."""
        if self.correlate is not None and reply:
            return await self._exchange_by_field(payload, timeout)
        idle = self._queue()
        slot = await self._take_slot(idle, timeout)
        try:
            conn = await self._send(slot, payload)
            if not reply:
                return None
            try:
                return await asyncio.wait_for(conn.read_frame(), timeout)
            except TimeoutError:
                self._drop(slot)
                raise CommandFault(f"no reply from {self.address} within {timeout:g} s", code="timeout") from None
            except (OSError, FrameError) as exc:
                self._drop(slot)
                raise CommandFault(f"reading the reply from {self.address} failed: {exc}", code="failed") from None
        finally:
            idle.put_nowait(slot)

    async def _take_slot(self, idle: asyncio.Queue[int], timeout: float) -> int:
        """A free connection of the pool, waited for ``timeout`` seconds at most: a request
        whose caller has given up is never written."""
        getter = asyncio.ensure_future(idle.get())
        try:
            return await asyncio.wait_for(asyncio.shield(getter), timeout)
        except TimeoutError:
            if getter.done() and not getter.cancelled():  # taken just as the time ran out: given back
                idle.put_nowait(getter.result())
            else:
                getter.cancel()
            raise CommandFault(
                f"all {self.size} connection(s) to {self.address} stayed busy for {timeout:g} s; not sent",
                code="timeout", hint="the legacy server answers slowly: raise connections or response_timeout",
            ) from None

    async def _exchange_by_field(self, payload: bytes, timeout: float) -> bytes:
        assert self.correlate is not None
        key = self.correlate(payload)
        if key in self._pending:
            raise CommandFault(f"a request with correlation key {key!r} is already waiting", code="invalid")
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        conn: Connection | None = None
        try:
            conn = await self._send(next(self._next), payload)
            conn.waiting.add(key)
            if conn.closed:  # lost while the request was written
                raise ConnectionResetError("the connection was lost")
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise CommandFault(
                f"no reply with correlation key {key!r} from {self.address} within {timeout:g} s", code="timeout"
            ) from None
        except ConnectionError as exc:  # the connection the request went out on is gone: no reply comes
            raise CommandFault(
                f"no reply with correlation key {key!r} from {self.address}: {exc} after the request was written",
                code="failed",
            ) from None
        finally:
            self._pending.pop(key, None)
            if conn is not None:
                conn.waiting.discard(key)

    async def _read_replies(self, conn: Connection) -> None:
        try:
            while True:
                frame = await conn.read_frame()
                try:
                    key = self.correlate(frame) if self.correlate else b""
                except Exception as exc:  # a reply we cannot correlate is logged, not fatal
                    self.logger.warning("reply from %s without a correlation field: %s", self.address, exc)
                    continue
                future = self._pending.get(key)
                if future is None or future.done():
                    self.logger.warning("reply from %s with unknown correlation key %r dropped", self.address, key)
                    continue
                future.set_result(frame)
        except asyncio.CancelledError:
            raise
        except (OSError, FrameError) as exc:
            self.logger.info("connection to %s lost: %s", self.address, exc)
            conn.closed = True
            conn.writer.close()
            for key in conn.waiting:  # the requests written on it fail now, not at their timeout
                future = self._pending.get(key)
                if future is not None and not future.done():
                    future.set_exception(ConnectionResetError(f"the connection was lost ({exc})"))

    async def probe(self) -> None:
        """Open (or reuse) the first connection: is the server reachable?"""
        await self._connect(0)

    async def close(self) -> None:
        for slot in range(self.size):
            conn = self._slots[slot]
            if conn is not None:
                conn.close()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(conn.writer.wait_closed(), 2)
            self._slots[slot] = None
