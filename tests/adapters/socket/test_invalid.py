"""Frames the socket adapter cannot translate land in the Invalid Message Channel with the reason."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from coupler.adapters.socket import SocketAdapter
from coupler.bus.api import CommandFault, Document
from coupler.bus.model.commands import command_envelope, parse_command
from coupler.canonical import FormatIndicator


def _dead_letters(bus, n: int, wait: float = 10.0):
    deadline = time.monotonic() + wait
    while True:
        got = bus.transport.dead_letters(kind="invalid")
        if len(got) >= n or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_untranslatable_frame_is_kept_as_invalid_and_the_connection_closed(bus):
    adapter = SocketAdapter(
        "sock-in",
        {"mode": "server", "host": "127.0.0.1", "port": 0, "framing": "delimiter", "translator": "text",
         "fault_response": "ERR {code}"},
        bus.context("sock-in", "inbox"),
    )
    adapter.channel = "inbox"
    bus.add(adapter)
    with socket.create_connection(adapter.address, timeout=10) as s:
        s.sendall(b"caf\xe9\n")  # Latin-1, not the UTF-8 the translator expects
        answer = b""
        while chunk := s.recv(100):
            answer += chunk
    assert answer == b"ERR invalid\n"  # the fault response, then the adapter closed the connection
    (dead,) = _dead_letters(bus, 1)
    assert dead.raw == b"caf\xe9" and dead.envelope is None
    assert dead.component == "adapter:sock-in" and dead.channel == "inbox"
    assert "cannot be translated" in dead.reason and "utf-8" in dead.reason
    assert bus.received("inbox", wait=0.2) == []


def test_untranslatable_mllp_message_is_kept_as_invalid_and_rejected(bus):
    adapter = SocketAdapter(
        "adt-in", {"mode": "server", "host": "127.0.0.1", "port": 0, "framing": "mllp", "translator": "hl7"},
        bus.context("adt-in", "adt"),
    )
    adapter.channel = "adt"
    bus.add(adapter)
    with socket.create_connection(adapter.address, timeout=10) as s:
        s.sendall(b"\x0bPID|1||42\r\x1c\r")  # no MSH segment: not an HL7 message
        ack = s.recv(4096)
    assert b"MSA|AR" in ack
    (dead,) = _dead_letters(bus, 1)
    assert dead.raw == b"PID|1||42\r" and "MSH" in dead.reason


def test_untranslatable_reply_of_a_legacy_server_is_kept_as_invalid(bus):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    adapter = SocketAdapter(
        "legacy", {"mode": "client", "port": port, "framing": "delimiter", "translator": "text", "response_timeout": 5},
        bus.context("legacy"),
    )
    bus.add(adapter)

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(100)
            conn.sendall(b"\xff\xfe broken\n")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    doc = Document(FormatIndicator("t.Text", 1, "text/plain"), b"hello")
    try:
        with pytest.raises(CommandFault, match="cannot be translated") as fault:
            adapter.handle(parse_command(command_envelope("request", "legacy", document=doc)))
        assert fault.value.code == "failed"
    finally:
        t.join(5)
        listener.close()
    (dead,) = _dead_letters(bus, 1)
    assert dead.raw == b"\xff\xfe broken" and dead.component == "adapter:legacy"
