"""The listening side: accept connections, cut frames, hand each to a handler, write replies.

Each connection is read by one task. A frame is handled completely (the handler usually
waits for the bus) before the next bytes are read, so while the bus is behind the adapter
stops reading and TCP flow control pushes back on the sender; nothing is dropped. Reads are
bounded by the frame decoder's room, so a connection never buffers more than one maximal
frame.

Slow and idle clients cannot lock the server out (:class:`ConnectionTable`):

* a new connection must send the first byte of a frame within ``first_byte_timeout``; between
  frames ``idle_timeout`` applies; a started frame must be complete within ``read_timeout``
  of its first byte, however slowly its bytes trickle in (HAProxy's ``timeout
  http-request``, Camel MLLP's ``receiveTimeout`` and ``readTimeout``);
* one peer address holds at most ``max_connections_per_peer`` connections (nginx
  ``limit_conn`` per ``$binary_remote_addr``);
* when every slot is taken, a new connection takes the slot of the connection that has been
  waiting longest without a frame in progress, from the peer holding the most connections
  (as nginx reuses idle keep-alive connections when its ``worker_connections`` run out).
  Connections in the middle of a frame or waiting for the bus's answer are never closed to
  make room: the slots of peers that are sending are kept. Only when every connection is
  sending is a new one refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

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
    first_byte_timeout: float = 10.0
    max_connections_per_peer: int = 10


@dataclass(eq=False)
class Slot:
    """One open connection in the table."""

    address: str  # the peer's IP address (the per-peer limit's key)
    peer: str  # address:port, for log lines
    task: asyncio.Task[None] | None
    #: when the connection last became idle (accepted, or its last frame handled)
    waiting_since: float = field(default_factory=time.monotonic)
    #: a frame is in progress (bytes of it received, or it is being handled)
    sending: bool = False
    evicted: str | None = None


class ConnectionTable:
    """The open connections of a server and the decision who gets a slot (see the module)."""

    def __init__(self, max_connections: int, max_per_peer: int):
        self.max_connections = max_connections
        self.max_per_peer = max_per_peer
        self.slots: list[Slot] = []

    def __len__(self) -> int:
        return len(self.slots)

    def per_peer(self, address: str) -> int:
        return sum(1 for s in self.slots if s.address == address)

    def admit(self, slot: Slot) -> tuple[bool, list[Slot]]:
        """Whether ``slot`` may join, and the waiting connections to close to make room."""
        victims: list[Slot] = []
        if self.per_peer(slot.address) >= self.max_per_peer:
            victim = self._longest_waiting([s for s in self.slots if s.address == slot.address])
            if victim is None:
                return False, []
            victims.append(victim)
        elif len(self.slots) >= self.max_connections:
            counts: dict[str, int] = {}
            for s in self.slots:
                counts[s.address] = counts.get(s.address, 0) + 1
            candidates = [s for s in self.slots if not s.sending]
            if not candidates:
                return False, []
            # the peer holding the most connections gives one up first, then the longest waiting
            victim = max(candidates, key=lambda s: (counts[s.address], -s.waiting_since))
            victims.append(victim)
        for v in victims:
            self.slots.remove(v)
        self.slots.append(slot)
        return True, victims

    @staticmethod
    def _longest_waiting(slots: list[Slot]) -> Slot | None:
        waiting = [s for s in slots if not s.sending]
        return min(waiting, key=lambda s: s.waiting_since) if waiting else None

    def leave(self, slot: Slot) -> None:
        with contextlib.suppress(ValueError):
            self.slots.remove(slot)


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
        self.table = ConnectionTable(limits.max_connections, limits.max_connections_per_peer)
        self.refused = 0
        self.evicted = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def _first_byte_timeout(self) -> float:
        """A new connection's time to start a frame (a TLS handshake must finish within it too)."""
        return min(self.limits.first_byte_timeout, self.limits.idle_timeout)

    @property
    def active(self) -> int:
        return len(self.table)

    @property
    def in_frame(self) -> int:
        """Open connections in the middle of a frame (bytes of it received, or it being handled):
        the ones a newcomer may not take the slot of."""
        return sum(1 for s in self.table.slots if s.sending)

    async def start(self, host: str, port: int) -> tuple[str, int]:
        try:
            # without ssl=: TLS is started on each connection in its slot (_serve), so that a
            # connection counts during its handshake as a silent plain one does
            self._server = await asyncio.start_server(
                self._accept, host, port, limit=CHUNK, reuse_address=True,
                backlog=max(128, self.limits.max_connections),
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
        if self.ssl_context is not None:  # nothing read before start_tls has the transport (_serve):
            transport = writer.transport  # a ClientHello read meanwhile would go to the stream
            assert isinstance(transport, asyncio.Transport)
            transport.pause_reading()
        address, peer = _peer(writer)
        task = asyncio.current_task()
        slot = Slot(address, peer, task)
        admitted, victims = self.table.admit(slot)
        for victim in victims:
            self.evicted += 1
            limit = "max_connections_per_peer" if victim.address == address else "max_connections"
            victim.evicted = f"closed to make room for {peer} ({limit}; it sent nothing for {time.monotonic() - victim.waiting_since:.1f} s)"
            if victim.task is not None:
                victim.task.cancel()
        if not admitted:
            self.refused += 1
            full = self.table.per_peer(address) >= self.limits.max_connections_per_peer
            self.logger.warning(
                "connection from %s refused: %s, every one of them in the middle of a frame",
                peer,
                f"{address} already has {self.table.per_peer(address)} connections (max_connections_per_peer)"
                if full else f"{len(self.table)} connections already open (max_connections)",
                extra={"peer": peer},
            )
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            return
        assert task is not None
        self._tasks.add(task)
        try:
            reason = await self._serve(reader, writer, slot)
            self.logger.debug("connection from %s closed: %s", peer, reason, extra={"peer": peer})
        except asyncio.CancelledError:
            if slot.evicted:
                self.logger.info("connection from %s %s", peer, slot.evicted, extra={"peer": peer})
        except (ConnectionError, ssl.SSLError) as exc:
            self.logger.info("connection from %s lost: %s", peer, exc, extra={"peer": peer})
        except Exception as exc:  # a bug must cost this connection only, never the server
            self.logger.error(
                "connection from %s closed after an unexpected error: %s: %s", peer, type(exc).__name__, exc,
                extra={"peer": peer},
            )
            self.logger.debug("unexpected error serving %s", peer, exc_info=True)
        finally:
            self.table.leave(slot)
            self._tasks.discard(task)
            writer.close()
            # a connection whose TLS handshake did not finish: the stream is told nothing more
            if self.ssl_context is None or writer.get_extra_info("sslcontext") is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(writer.wait_closed(), 2)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, slot: Slot) -> str:
        peer, limits = slot.peer, self.limits
        connected = slot.waiting_since
        if self.ssl_context is not None:
            # the handshake within first_byte_timeout, the connection holding its slot meanwhile
            # (waiting: a newcomer may take it); listening with TLS, asyncio would hand over a
            # connection only once its handshake was done, and silent ones would take no slot
            try:
                await asyncio.wait_for(writer.start_tls(self.ssl_context,
                                                        ssl_handshake_timeout=self._first_byte_timeout + 1),
                                       self._first_byte_timeout)
            except TimeoutError:
                self.logger.warning("closing connection from %s: first byte timeout (%g s; its TLS handshake did "
                                    "not finish)", peer, self._first_byte_timeout, extra={"peer": peer})
                return "TLS handshake timeout"
            except (ssl.SSLError, ConnectionError) as exc:  # a client speaking plain text, or not trusting us
                reason = str(exc) or f"{type(exc).__name__}: the client closed the connection"
                self.logger.info("connection from %s closed: its TLS handshake failed: %s", peer, reason,
                                 extra={"peer": peer})
                return f"TLS handshake failed: {reason}"
        decoder = self.framing.decoder()
        first = True  # nothing received yet on this connection
        frame_deadline = 0.0  # when the frame in progress must be complete
        while True:
            partial = decoder.buffered > 0
            if partial:
                timeout, what = frame_deadline - time.monotonic(), "read timeout inside a frame"
            elif first:  # counted from connecting, a TLS handshake included
                timeout, what = self._first_byte_timeout - (time.monotonic() - connected), "first byte timeout"
            else:
                timeout, what = limits.idle_timeout, "idle timeout"
            try:
                if timeout <= 0:
                    raise TimeoutError
                data = await asyncio.wait_for(reader.read(min(CHUNK, decoder.room())), timeout)
            except TimeoutError:
                limit = limits.read_timeout if partial else self._first_byte_timeout if first else timeout
                self.logger.warning(
                    "closing connection from %s: %s (%g s)", peer, what, limit, extra={"peer": peer}
                )
                return what
            if not data:
                if partial:
                    self.logger.warning(
                        "connection from %s closed in the middle of a frame (%d bytes discarded)",
                        peer, decoder.buffered, extra={"peer": peer},
                    )
                return "closed by peer"
            first = False
            if not partial:
                frame_deadline = time.monotonic() + limits.read_timeout
            slot.sending = True
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
            if not frames:
                continue
            if decoder.buffered:
                frame_deadline = time.monotonic() + limits.read_timeout  # the next frame has begun
            else:
                slot.sending = False
                slot.waiting_since = time.monotonic()


def _peer(writer: asyncio.StreamWriter) -> tuple[str, str]:
    """The peer's address (the per-peer limit's key) and ``address:port`` for log lines."""
    info = writer.get_extra_info("peername")
    if isinstance(info, tuple) and len(info) >= 2:
        return str(info[0]), f"{info[0]}:{info[1]}"
    return str(info), str(info)
