from __future__ import annotations

import socket
import time

import pytest

from coupler.adapters.socket import SocketAdapter
from coupler.canonical import Envelope, FormatIndicator
from coupler.translators.framing import LengthPrefixed
from tests.bus.site_helpers import wait_for


def _server(bus, name="sock-in", channel="inbox", **options):
    adapter = SocketAdapter(name, {"mode": "server", "host": "127.0.0.1", "port": 0, **options}, bus.context(name, channel))
    adapter.channel = channel
    bus.add(adapter)
    return adapter


def _connect(adapter, timeout=10.0) -> socket.socket:
    s = socket.create_connection(adapter.address, timeout=timeout)
    return s


def _recv_frame(s: socket.socket, framing) -> bytes:
    decoder = framing.decoder()
    while True:
        data = s.recv(65536)
        if not data:
            raise ConnectionResetError("closed")
        frames = decoder.feed(data)
        if frames:
            return frames[0]


def test_one_way_frames_are_published_on_the_channel(bus):
    adapter = _server(bus, framing="delimiter", delimiter="CRLF", translator="text")
    with _connect(adapter) as s:
        s.sendall(b"first\r\nsec")
        s.sendall(b"ond\r\n")
    got = []
    deadline = time.monotonic() + 10
    while len(got) < 2 and time.monotonic() < deadline:
        got += bus.received("inbox", wait=0.5)
    assert [e.body for e in got] == [b"first", b"second"]
    assert all(e.origin == "sock-in" for e in got)
    assert got[0].format == FormatIndicator("socket.Payload", 1, "text/plain")
    assert got[0].properties["socket.peer"].startswith("127.0.0.1:")


def test_request_reply_through_a_command_is_answered_on_the_same_connection(bus, upper):
    adapter = _server(bus, exchange="request-reply", target="uppercase", framing="length", length_bytes=2)
    framing = LengthPrefixed(size=2)
    with _connect(adapter) as s:
        for word in (b"hello", b"bus", b"x" * 300):
            s.sendall(framing.encode(word))
            assert _recv_frame(s, framing) == word.upper()
        # pipelined: two requests before reading; replies come in order
        s.sendall(framing.encode(b"one") + framing.encode(b"two"))
        decoder = framing.decoder()
        replies: list[bytes] = []
        while len(replies) < 2:
            replies += decoder.feed(s.recv(4096))
        assert replies == [b"ONE", b"TWO"]


def test_request_reply_on_a_plain_channel(bus):
    bus.respond("lookup", lambda req: Envelope(format=req.format, body=req.body[::-1], kind="reply"))
    adapter = _server(bus, exchange="request-reply", request_channel="lookup", framing="delimiter")
    with _connect(adapter) as s:
        s.sendall(b"abc\n")
        assert s.recv(100) == b"cba\n"


def test_a_fault_closes_the_connection_or_sends_the_fault_response(bus, upper):
    quiet = _server(bus, name="quiet", exchange="request-reply", target="uppercase", framing="delimiter")
    with _connect(quiet) as s:
        s.sendall(b"FAIL now\n")
        assert s.recv(100) == b""  # closed without an answer
    loud = _server(
        bus, name="loud", exchange="request-reply", target="uppercase", framing="delimiter",
        fault_response="ERR {code}: {reason}",
    )
    with _connect(loud) as s:
        s.sendall(b"REJECT me\n")
        assert s.recv(200) == b"ERR invalid: this service refuses rejects\n"
    unserved = _server(
        bus, name="lost", exchange="request-reply", target="nobody", framing="delimiter",
        fault_response="ERR {code}",
    )
    with _connect(unserved) as s:
        s.sendall(b"anyone?\n")
        assert s.recv(200) == b"ERR unserved\n"


def test_oversized_frame_closes_the_connection_with_a_logged_reason(bus, caplog):
    adapter = _server(bus, framing="length", max_frame_bytes=1024)
    with _connect(adapter) as s:
        s.sendall((10**9).to_bytes(4, "big") + b"x" * 100)
        assert s.recv(10) == b""
    assert any("exceeds the maximum of 1024 bytes" in r.getMessage() for r in caplog.records)
    # the adapter still serves other connections
    with _connect(adapter) as s:
        s.sendall(LengthPrefixed().encode(b"fine"))
    assert [e.body for e in bus.received("inbox", wait=5)] == [b"fine"]


def test_idle_and_read_timeouts_close_connections(bus, caplog):
    adapter = _server(bus, framing="delimiter", idle_timeout=1.0, read_timeout=1.0)
    with _connect(adapter) as s:
        assert s.recv(10) == b""  # nothing sent: first byte timeout (at most the idle timeout)
    with _connect(adapter) as s:
        s.sendall(b"one frame\n")
        assert s.recv(10) == b""  # nothing after it: idle timeout
    with _connect(adapter) as s:
        s.sendall(b"half a fra")
        assert s.recv(10) == b""
    messages = [r.getMessage() for r in caplog.records]
    assert any("first byte timeout" in m for m in messages)
    assert any("idle timeout" in m for m in messages)
    assert any("read timeout inside a frame" in m for m in messages)


def test_max_connections(bus, caplog):
    adapter = _server(bus, framing="delimiter", max_connections=2)
    first, second = _connect(adapter), _connect(adapter)
    try:
        first.sendall(b"a\n")
        second.sendall(b"b")  # in the middle of its frame
        assert len(bus.received("inbox", wait=5)) == 1
        # the first frame has been handled, the second connection's frame has begun
        wait_for(lambda: adapter.health()["connections"]["in_frame"] == 1, "one connection in a frame")
        assert adapter.health()["connections"]["open"] == 2
        # the table is full: a third connection takes the slot of the one waiting between frames
        with _connect(adapter) as third:
            third.sendall(b"c\n")
            assert [e.body for e in bus.received("inbox", wait=5)] == [b"c"]
        assert first.recv(10) == b""
        second.sendall(b"\n")  # the connection that was sending kept its slot
        assert [e.body for e in bus.received("inbox", wait=5)] == [b"b"]
        assert adapter.health()["connections"]["evicted"] == 1
    finally:
        first.close()
        second.close()


def test_start_fails_with_a_clear_error_when_the_port_is_taken(bus):
    taken = _server(bus, name="first", framing="delimiter")
    other = SocketAdapter("second", {"mode": "server", "host": "127.0.0.1", "port": taken.address[1]}, bus.context("second", "inbox"))
    other.channel = "inbox"
    with pytest.raises(Exception, match=r"cannot listen on 127\.0\.0\.1:\d+"):
        other.start()
    other.stop()


def test_describe_and_ping(bus):
    adapter = _server(bus, framing="mllp")
    info = adapter.describe()
    assert info["mode"] == "server" and info["framing"]["start"] == "0b"
    assert info["address"] == f"127.0.0.1:{adapter.address[1]}"
