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


@pytest.mark.parametrize("framing", ["delimiter", "mllp"])
def test_a_translator_that_raises_a_non_coupler_exception_costs_one_frame_only(bus, framing):
    translator = "tests.adapters.socket.poison:explosive"
    adapter = SocketAdapter(
        f"poison-{framing}",
        {"mode": "server", "host": "127.0.0.1", "port": 0, "framing": framing, "translator": translator,
         "fault_response": "ERR {code}: {reason}"},
        bus.context(f"poison-{framing}", "inbox"),
    )
    adapter.channel = "inbox"
    bus.add(adapter)
    encode = adapter.settings.framer.encode
    poison = b"BOOM|^~\\&|A|B|C|D|1||ADT^A01|X1|P|2.5\r" if framing == "mllp" else b"BOOM 1"
    valid = b"MSH|^~\\&|A|B|C|D|1||ADT^A01|OK1|P|2.5\r" if framing == "mllp" else b"fine"
    with socket.create_connection(adapter.address, timeout=10) as s:
        s.sendall(encode(poison))
        answer = s.recv(4096)
        if framing == "mllp":  # a reject, and the connection stays open for the next message
            assert b"MSA|AR" in answer and b"ZeroDivisionError" in answer
            s.sendall(encode(valid))
            assert b"MSA|AA|OK1" in s.recv(4096)
        else:  # the fault response, then the connection is closed
            assert answer.startswith(b"ERR invalid: internal error while translating it (ZeroDivisionError)")
            while s.recv(100):
                pass
    if framing != "mllp":
        with socket.create_connection(adapter.address, timeout=10) as s:  # the server goes on
            s.sendall(encode(valid))
    assert [e.body for e in bus.received("inbox", wait=5)] == [valid]
    (dead,) = _dead_letters(bus, 1)
    assert dead.raw == poison and dead.component == f"adapter:poison-{framing}"
    assert "ZeroDivisionError" in dead.reason and "translating" in dead.reason
    assert adapter.health()["status"] == "ok"


def test_a_reply_translator_that_raises_is_contained_too(bus, upper):
    adapter = SocketAdapter(
        "poison-reply",
        {"mode": "server", "host": "127.0.0.1", "port": 0, "framing": "delimiter",
         "translator": "tests.adapters.socket.poison:explosive", "exchange": "request-reply",
         "target": "uppercase", "fault_response": "ERR {code}"},
        bus.context("poison-reply"),
    )
    bus.add(adapter)
    with socket.create_connection(adapter.address, timeout=10) as s:
        s.sendall(b"kaboom\n")  # upper-cased by the service: the reply translator raises KeyError
        assert s.recv(100) == b"ERR failed\n"
    with socket.create_connection(adapter.address, timeout=10) as s:
        s.sendall(b"hello\n")
        assert s.recv(100) == b"HELLO\n"
    (dead,) = _dead_letters(bus, 1)
    assert dead.raw == b"kaboom" and "KeyError" in dead.reason
