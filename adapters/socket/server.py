"""The listening side: accept connections, cut frames, hand each to a handler, write replies.

Each connection is read by one task. A frame is handled completely (the handler usually
waits for the bus) before the next bytes are read, so while the bus is behind the adapter
stops reading and TCP flow control pushes back on the sender; nothing is dropped. Reads are
bounded by the frame decoder's room, so a connection never buffers more than one maximal
frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from coupler.canonical.errors import CouplerError
from coupler.translators.framing import FrameError, FrameTooLarge, Framing

CHUNK = 64 * 1024


class CloseConnection(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised by a handler: write ``reply`` (if any), then close the connection."""

    def __init__(self, reason: str, reply: bytes | None = None):
        super().__init__(reason)
        self.reason = reason
        self.reply = reply


#: a frame handler: (payload, peer) -> the payload to write back, or None for none
FrameHandler = Callable[[bytes, str], Awaitable[bytes | None]]


@dataclass
class ServerLimits:
    idle_timeout: float = 300.0
    read_timeout: float = 30.0
    max_connections: int = 100


class FrameServer:
    """A TCP (optionally TLS) server speaking one framing."""

    def __init__(
        self,
        framing: Framing,
        handler: FrameHandler,
        *,
        limits: ServerLimits,
        logger: logging.Logger,
        ssl_context: ssl.SSLContext | None = None,
    ):
        self.framing = framing
        self.handler = handler
        self.limits = limits
        self.logger = logger
        self.ssl_context = ssl_context
        self.active = 0
        self.refused = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> tuple[str, int]:
        try:
            self._server = await asyncio.start_server(
                self._accept, host, port, ssl=self.ssl_context, limit=CHUNK, reuse_address=True
            )
        except OSError as exc:
            raise CouplerError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                hint="is another process using the port? choose another port or stop it",
            ) from exc
        sock = self._server.sockets[0].getsockname()
        return sock[0], sock[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = _peer(writer)
        if self.active >= self.limits.max_connections:
            self.refused += 1
            self.logger.warning(
                "connection from %s refused: %d connections already open (max_connections)",
                peer, self.active, extra={"peer": peer},
            )
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            return
        self.active += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            reason = await self._serve(reader, writer, peer)
            self.logger.debug("connection from %s closed: %s", peer, reason, extra={"peer": peer})
        except asyncio.CancelledError:
            pass
        except (ConnectionError, ssl.SSLError) as exc:
            self.logger.info("connection from %s lost: %s", peer, exc, extra={"peer": peer})
        finally:
            self.active -= 1
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 2)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str) -> str:
        decoder = self.framing.decoder()
        while True:
            partial = decoder.buffered > 0
            timeout = self.limits.read_timeout if partial else self.limits.idle_timeout
            try:
                data = await asyncio.wait_for(reader.read(min(CHUNK, decoder.room())), timeout)
            except TimeoutError:
                what = "read timeout inside a frame" if partial else "idle timeout"
                self.logger.warning(
                    "closing connection from %s: %s (%g s)", peer, what, timeout, extra={"peer": peer}
                )
                return what
            if not data:
                if partial:
                    self.logger.warning(
                        "connection from %s closed in the middle of a frame (%d bytes discarded)",
                        peer, decoder.buffered, extra={"peer": peer},
                    )
                return "closed by peer"
            try:
                frames = decoder.feed(data)
            except FrameTooLarge as exc:
                self.logger.warning("closing connection from %s: %s", peer, exc, extra={"peer": peer})
                return f"oversized frame: {exc}"
            except FrameError as exc:
                self.logger.warning("closing connection from %s: bad framing: %s", peer, exc, extra={"peer": peer})
                return f"bad framing: {exc}"
            for payload in frames:
                try:
                    reply = await self.handler(payload, peer)
                except CloseConnection as close:
                    if close.reply is not None:
                        writer.write(self.framing.encode(close.reply))
                        await writer.drain()
                    self.logger.warning("closing connection from %s: %s", peer, close.reason, extra={"peer": peer})
                    return close.reason
                if reply is not None:
                    writer.write(self.framing.encode(reply))
                    await writer.drain()


def _peer(writer: asyncio.StreamWriter) -> str:
    info = writer.get_extra_info("peername")
    if isinstance(info, tuple) and len(info) >= 2:
        return f"{info[0]}:{info[1]}"
    return str(info)
