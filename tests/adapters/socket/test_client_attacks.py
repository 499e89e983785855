"""Client mode against legacy servers that misbehave, real TCP servers on loopback (threads
with plain sockets): a server that closes connections it considers idle (and one that closes
after every answer) loses no frame and fails no request; a server that stops reading holds a
send no longer than ``write_timeout``, and the stalled connection is let go. (Replies that
are random bytes or claim huge sizes: test_framing_fuzz.py; a reply that never comes:
test_client.py.)"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from coupler.adapters.socket import SocketAdapter
from coupler.bus.api import CommandFault, Document
from coupler.bus.model.commands import command_envelope, parse_command
from coupler.canonical import FormatIndicator
from coupler.translators.framing import LengthPrefixed
from tests.bus.site_helpers import wait_for

FMT = FormatIndicator("test.Text", 1, "text/plain")
FRAMING = LengthPrefixed()


class LegacyServer:
    """A listening socket whose every connection is handled by ``handler(conn, index)`` on a
    thread of its own; the connections are closed when the test ends."""

    def __init__(self, handler: Callable[[socket.socket, int], None]):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.handler = handler
        self.connections: list[socket.socket] = []
        self.closed = 0  # connections the server has closed
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections.append(conn)
            threading.Thread(target=self._serve, args=(conn, len(self.connections) - 1), daemon=True).start()

    def _serve(self, conn: socket.socket, index: int) -> None:
        try:
            self.handler(conn, index)
        except OSError:
            pass

    def close(self) -> None:
        self._stop.set()
        self.listener.close()
        for conn in self.connections:
            conn.close()


@pytest.fixture
def legacy() -> Iterator[Callable[[Callable[[socket.socket, int], None]], LegacyServer]]:
    servers: list[LegacyServer] = []

    def start(handler: Callable[[socket.socket, int], None]) -> LegacyServer:
        servers.append(LegacyServer(handler))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def read_frame(conn: socket.socket) -> bytes:
    decoder = FRAMING.decoder()
    conn.settimeout(10)
    while True:
        data = conn.recv(65536)
        if not data:
            raise EOFError("the client closed the connection")
        frames = decoder.feed(data)
        if frames:
            return frames[0]


def client(bus, port: int, **options) -> SocketAdapter:
    adapter = SocketAdapter("legacy", {"mode": "client", "port": port, "retries": 0, **options}, bus.context("legacy"))
    adapter.format = FMT
    bus.add(adapter)
    return adapter


def request(adapter: SocketAdapter, body: bytes) -> bytes:
    env = command_envelope("request", adapter.name, document=Document(FMT, body))
    return adapter.handle(parse_command(env)).documents[0].body


def test_a_server_closing_idle_connections_loses_no_one_way_frame(bus, legacy) -> None:
    """The server reads one frame per connection and closes it (an idle timeout). Each send
    after that went out on the closed connection, was taken as delivered and never read: every
    other frame was lost. A connection the server closed is now replaced before writing."""
    got: list[bytes] = []

    def one_frame_then_close(conn: socket.socket, index: int) -> None:
        got.append(read_frame(conn))
        conn.close()
        server.closed += 1

    server = legacy(one_frame_then_close)
    adapter = client(bus, server.port)
    sent = [b"frame-%d" % i for i in range(6)]
    for i, body in enumerate(sent):
        adapter.deliver(Document(FMT, body).to_envelope())
        wait_for(lambda i=i: server.closed == i + 1, f"the server to read frame {i} and close its connection",
                 timeout=10)
    wait_for(lambda: len(got) == len(sent), f"the {len(sent)} frames delivered to arrive (got {got})", timeout=10)
    assert got == sent


def test_a_server_closing_after_every_answer_answers_every_request(bus, legacy) -> None:
    """A legacy server that serves one request per connection: each request after the first
    was written on the connection it had closed and failed ("the server closed the
    connection"); now every one is answered."""

    def answer_once(conn: socket.socket, index: int) -> None:
        frame = read_frame(conn)
        conn.sendall(FRAMING.encode(frame.upper()))
        conn.close()
        server.closed += 1

    server = legacy(answer_once)
    adapter = client(bus, server.port, response_timeout=10)
    for i in range(6):
        assert request(adapter, b"ask-%d" % i) == b"ASK-%d" % i
        wait_for(lambda i=i: server.closed == i + 1, "the server to close the connection after its answer")


def test_a_server_that_stops_reading_fails_the_send_at_write_timeout(bus, legacy) -> None:
    """The first connection is never read: a frame larger than the kernel's buffers stalled its
    send (and the adapter's delivery worker) for ever. Now it fails after ``write_timeout``
    with a one-line fault ``timeout`` (the bus retries the delivery), the stalled connection is
    let go, and the next send goes out on a new connection."""
    got: list[bytes] = []
    release = threading.Event()

    def stall_first(conn: socket.socket, index: int) -> None:
        if index == 0:
            release.wait(60)  # reads nothing until the test has seen the send fail
            return
        got.append(read_frame(conn))

    server = legacy(stall_first)
    adapter = client(bus, server.port, write_timeout=1.0, max_frame_bytes=64 << 20)
    outcome: list[BaseException | None] = []

    def send_big() -> None:
        try:
            adapter.deliver(Document(FMT, b"x" * (48 << 20)).to_envelope())
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            outcome.append(exc)

    started = time.monotonic()
    sender = threading.Thread(target=send_big, daemon=True)
    sender.start()
    sender.join(20)
    took = time.monotonic() - started
    assert outcome, f"the send to a server that reads nothing was still blocked after {took:.0f} s"
    [fault] = outcome
    assert isinstance(fault, CommandFault), fault
    message = str(fault)
    assert fault.code == "timeout" and "\n" not in message, message
    assert f"127.0.0.1:{server.port}" in message and "write_timeout" in message, message
    adapter.deliver(Document(FMT, b"after").to_envelope())
    wait_for(lambda: got == [b"after"], "the next frame to arrive on a new connection", timeout=10)
    # the stalled connection was let go: read now, it ends (reset or end of stream), not hangs
    stalled = server.connections[0]
    stalled.settimeout(10)
    release.set()
    try:
        while stalled.recv(1 << 20):
            pass
    except ConnectionResetError:
        pass


def test_requests_queued_behind_a_server_that_never_answers_end_at_their_own_timeout(bus, legacy) -> None:
    """One connection, a server that reads every request and answers none, 12 requests at
    once with ``response_timeout = 1``: each waited for the connection without a bound, so the
    last one ended after 12 s, and was still written to the server long after its caller had
    given up. Now a request that gets no connection within its timeout fails with fault
    ``timeout`` and is never written."""
    read: list[bytes] = []

    def never_answer(conn: socket.socket, index: int) -> None:
        decoder = FRAMING.decoder()
        conn.settimeout(60)
        while data := conn.recv(65536):
            read.extend(decoder.feed(data))

    server = legacy(never_answer)
    adapter = client(bus, server.port, response_timeout=1.0)
    ended: dict[int, tuple[float, str]] = {}

    def ask(i: int) -> None:
        started = time.monotonic()
        try:
            request(adapter, b"ask-%d" % i)
            code = "answered"
        except CommandFault as fault:
            code = fault.code
        ended[i] = (time.monotonic() - started, code)

    threads = [threading.Thread(target=ask, args=(i,), daemon=True) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(ended) == 12, f"{12 - len(ended)} requests still waiting after 30 s"
    assert {code for _, code in ended.values()} == {"timeout"}, ended
    slowest = max(took for took, _ in ended.values())
    assert slowest < 5, f"the slowest request took {slowest:.1f} s (response_timeout 1 s)"
    assert len(read) < 12, f"all {len(read)} requests were written, also those whose callers had given up"


def test_a_server_closing_the_connection_under_correlated_requests_fails_them_at_once(bus, legacy) -> None:
    """``correlation = "field"``: the server reads the requests and closes the connection
    without answering (it crashed). The requests waited for their whole ``response_timeout``
    (20 s here); they fail at once now, with fault ``failed`` in one line, and the next request
    goes out on a new connection."""

    def crash_then_answer(conn: socket.socket, index: int) -> None:
        if index == 0:
            read_frame(conn)
            conn.close()
            return
        while True:
            frame = read_frame(conn)
            conn.sendall(FRAMING.encode(frame[:4] + b"=" + frame[4:].upper()))

    server = legacy(crash_then_answer)
    adapter = client(bus, server.port, response_timeout=20.0, correlation="field", correlation_offset=0,
                     correlation_length=4)
    started = time.monotonic()
    with pytest.raises(CommandFault) as lost:
        request(adapter, b"0001first")
    took = time.monotonic() - started
    assert took < 5, f"the request failed after {took:.1f} s (response_timeout 20 s)"
    message = str(lost.value)
    assert lost.value.code == "failed" and "\n" not in message and "closed" in message, message
    assert request(adapter, b"0002second") == b"0002=SECOND"


def test_a_close_the_event_loop_has_not_handled_yet_is_seen_before_writing() -> None:
    """The server closes an idle connection and the next send follows at once, before the
    client's event loop has handled the end of stream (a busy loop; the race check's delay on
    the loop's reads): the frame was written on the closed connection and lost, or the
    request failed. The kernel is asked too now."""
    from coupler.adapters.socket.client import Connection

    listener = socket.create_server(("127.0.0.1", 0))

    async def check() -> tuple[bool, bool]:
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.getsockname()[1])
        server_side, _ = listener.accept()  # queued by the kernel: does not block
        conn = Connection(reader, writer, FRAMING)
        try:
            open_before = conn.peer_closed()
            server_side.close()  # on loopback the end of stream is in the client's kernel now
            return open_before, conn.peer_closed()  # no await between: the loop has not run
        finally:
            writer.close()

    try:
        open_before, closed_after = asyncio.run(check())
    finally:
        listener.close()
    assert (open_before, closed_after) == (False, True)
