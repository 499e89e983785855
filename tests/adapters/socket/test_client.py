"""Client mode against small real TCP servers (threads with plain sockets)."""

from __future__ import annotations

import socket
import socketserver
import threading

import pytest

from coupler.adapters.socket import SocketAdapter
from coupler.bus.api import CommandFault, Document
from coupler.bus.model.commands import command_envelope, parse_command
from coupler.canonical import FormatIndicator
from coupler.translators.framing import LengthPrefixed

FMT = FormatIndicator("test.Text", 1, "text/plain")
FRAMING = LengthPrefixed(size=2)


def _read(sock: socket.socket, decoder) -> list[bytes]:
    data = sock.recv(65536)
    if not data:
        raise EOFError
    return decoder.feed(data)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture
def serve():
    servers = []

    def start(handler):
        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                try:
                    handler(self.request)
                except (EOFError, OSError):
                    pass

        server = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server.server_address[1]

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def _echo_reversed(sock):
    decoder = FRAMING.decoder()
    while True:
        for frame in _read(sock, decoder):
            sock.sendall(FRAMING.encode(frame[::-1]))


def _request(adapter, body: bytes, timeout=None):
    env = command_envelope("request", adapter.name, document=Document(FMT, body), timeout=timeout)
    return adapter.handle(parse_command(env))


def _client(bus, port, name="legacy", **options):
    adapter = SocketAdapter(
        name, {"mode": "client", "port": port, "framing": "length", "length_bytes": 2, **options}, bus.context(name)
    )
    adapter.format = FMT
    return bus.add(adapter)


def test_request_gets_the_reply_from_the_same_connection(bus, serve):
    adapter = _client(bus, serve(_echo_reversed))
    for word in (b"abc", b"hello world"):
        reply = _request(adapter, word)
        assert [d.body for d in reply.documents] == [word[::-1]]
        assert reply.documents[0].format == FMT


def test_send_is_one_way(bus, serve):
    got = []
    done = threading.Event()

    def collect(sock):
        decoder = FRAMING.decoder()
        while True:
            got.extend(_read(sock, decoder))
            if len(got) == 2:
                done.set()

    adapter = _client(bus, serve(collect))
    adapter.deliver(Document(FMT, b"one").to_envelope())
    adapter.deliver(Document(FMT, b"two").to_envelope())
    assert done.wait(5)
    assert got == [b"one", b"two"]


def test_reply_timeout_is_a_timeout_fault_and_the_connection_is_renewed(bus, serve):
    calls = []

    def slow_first(sock):
        calls.append(sock)
        decoder = FRAMING.decoder()
        while True:
            for frame in _read(sock, decoder):
                if len(calls) == 1:
                    continue  # the first connection never answers
                sock.sendall(FRAMING.encode(frame.upper()))

    adapter = _client(bus, serve(slow_first), response_timeout=1.0)
    with pytest.raises(CommandFault, match="no reply from 127.0.0.1") as info:
        _request(adapter, b"lost")
    assert info.value.code == "timeout"
    assert _request(adapter, b"found").documents[0].body == b"FOUND"
    assert len(calls) == 2


def test_unreachable_server_is_a_failed_fault_after_retries(bus):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nobody listens there once closed
    adapter = _client(bus, port, retries=1)
    with pytest.raises(CommandFault, match=f"cannot send to 127.0.0.1:{port}") as info:
        _request(adapter, b"x")
    assert info.value.code == "failed"
    with pytest.raises(CommandFault, match="not reachable"):
        adapter.handle(parse_command(command_envelope("ping", "legacy")))


def test_replies_correlated_by_a_field_out_of_order(bus, serve):
    """The server answers two requests in reverse order; the field puts them right."""

    def reverse_pairs(sock):
        decoder = FRAMING.decoder()
        pending: list[bytes] = []
        while True:
            pending.extend(_read(sock, decoder))
            while len(pending) >= 2:
                a, b = pending.pop(0), pending.pop(0)
                sock.sendall(FRAMING.encode(b[:4] + b"=" + b[4:].upper()))
                sock.sendall(FRAMING.encode(a[:4] + b"=" + a[4:].upper()))

    adapter = _client(bus, serve(reverse_pairs), correlation="field", correlation_offset=0, correlation_length=4)
    results: dict[bytes, bytes] = {}

    def ask(body):
        results[body] = _request(adapter, body).documents[0].body

    threads = [threading.Thread(target=ask, args=(b,)) for b in (b"0001alpha", b"0002beta")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == {b"0001alpha": b"0001=ALPHA", b"0002beta": b"0002=BETA"}


def test_server_mode_does_not_serve_outbound_commands(bus):
    adapter = SocketAdapter("srv", {"mode": "server", "host": "127.0.0.1", "port": 0}, bus.context("srv", "in"))
    adapter.channel = "in"
    bus.add(adapter)
    with pytest.raises(CommandFault, match="is a server") as info:
        _request(adapter, b"x")
    assert info.value.code == "unsupported"
