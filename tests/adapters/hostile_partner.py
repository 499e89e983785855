"""A partner that answers badly: a raw-socket HTTP server on a thread whose every connection
reads one request (head and ``Content-Length`` body) and then runs ``answer(connection)``,
a script that writes whatever bytes it likes, as slowly as it likes, for as long as it likes
(until the test stops it or the client goes away)."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import zlib
from collections.abc import Callable
from functools import cache


class Gone(Exception):
    """The client closed the connection (or the server is stopping)."""


class Connection:
    def __init__(self, sock: socket.socket, stopping: threading.Event):
        self.sock = sock
        self.stopping = stopping

    def send(self, data: bytes) -> None:
        if self.stopping.is_set():
            raise Gone
        try:
            self.sock.sendall(data)
        except OSError:
            raise Gone from None

    def pause(self, seconds: float) -> None:
        if self.stopping.wait(seconds):
            raise Gone

    def reset(self) -> None:
        """Abort: a TCP RST instead of a FIN."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


Answer = Callable[[Connection], None]


class HostilePartner:
    def __init__(self, answer: Answer | None = None):
        self.answer: Answer = answer or (lambda c: c.send(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"))
        self.requests = 0
        self.stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._accept, daemon=True, name="hostile-partner")

    def start(self) -> HostilePartner:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(10)

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        sock.settimeout(10)
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                more = sock.recv(65536)
                if not more:
                    return
                data += more
            head, _, body = data.partition(b"\r\n\r\n")
            length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(body) < length:
                more = sock.recv(65536)
                if not more:
                    return
                body += more
            self.requests += 1
            self.answer(Connection(sock, self.stopping))
        except (Gone, OSError):
            pass
        finally:
            with contextlib.suppress(OSError):
                sock.close()


@cache
def gzip_bomb(size: int) -> bytes:
    """``size`` zero bytes gzipped (about a thousandth of it)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    parts = [z.compress(chunk) for _ in range(size >> 20)]
    return b"".join(parts) + z.flush()
