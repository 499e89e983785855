"""The socket adapter's TCP server under the attacks the other servers get
(tests/adapters/hostile.py): length prefixes claiming 2**31-1 and 2**32-1 bytes close the
connection at once without the memory growing; 400 idle connections from 400 addresses do not
lock a sender out and the server lets them all go; clients resetting the connection in the
middle of a frame leave no traceback. (Slow and silent clients: test_slow_clients.py.)"""

from __future__ import annotations

import logging
import socket

from coupler.adapters.socket import SocketAdapter
from coupler.translators.framing import LengthPrefixed
from tests.adapters.hostile import closed_after, reset, vm_hwm
from tests.bus.site_helpers import wait_for


def _server(bus, **options):
    adapter = SocketAdapter("sock-in", {"mode": "server", "host": "127.0.0.1", "port": 0, **options},
                            bus.context("sock-in", "inbox"))
    adapter.channel = "inbox"
    bus.add(adapter)
    return adapter


def _open(adapter) -> int:
    return adapter.health()["connections"]["open"]


def _served(adapter, bus, body: bytes) -> None:
    with socket.create_connection(adapter.address, timeout=10) as s:
        s.sendall(LengthPrefixed().encode(body))
    assert [e.body for e in bus.received("inbox", wait=5)] == [body]


def test_length_prefixes_claiming_gigabytes_close_at_once_without_memory_growth(bus, caplog):
    adapter = _server(bus, framing="length")  # max_frame_bytes: the default
    before = vm_hwm()
    for claimed in (2**31 - 1, 2**32 - 1):
        with socket.create_connection(adapter.address, timeout=10) as s:
            s.sendall(claimed.to_bytes(4, "big") + b"x" * 1000)
            took, answer = closed_after(s, 5)
        assert answer == b"" and took < 5
    assert vm_hwm() - before < 16 << 20
    assert sum("exceeds the maximum" in r.getMessage() for r in caplog.records) == 2
    _served(adapter, bus, b"still serving")


def test_400_idle_connections_do_not_lock_a_sender_out(bus):
    adapter = _server(bus, framing="length")  # max_connections 100: the newest take the oldest's slots
    held = []
    try:
        for i in range(400):
            held.append(socket.create_connection(adapter.address, timeout=10,
                                                 source_address=(f"127.0.{3 + i // 200}.{1 + i % 200}", 0)))
        wait_for(lambda: adapter.health()["connections"]["evicted"] >= 300, "300 idle connections to make room")
        _served(adapter, bus, b"served while 400 idle clients connect")
    finally:
        for s in held:
            s.close()
    wait_for(lambda: _open(adapter) == 0, "the server to let the idle connections go")
    _served(adapter, bus, b"served after")


def test_resets_in_the_middle_of_a_frame_leave_no_traceback(bus, caplog):
    caplog.set_level(logging.DEBUG)
    adapter = _server(bus, framing="length")
    for data in (b"\x00\x00", (1000).to_bytes(4, "big") + b"x" * 100, b""):
        s = socket.create_connection(adapter.address, timeout=10)
        if data:
            s.sendall(data)
        wait_for(lambda: _open(adapter) == 1, "the server to take the connection")
        reset(s)
        wait_for(lambda: _open(adapter) == 0, "the server to let the reset connection go")
    _served(adapter, bus, b"still serving")
    shown = [r for r in caplog.records if r.levelno >= logging.ERROR or (r.exc_info and r.levelno >= logging.INFO)]
    assert not shown, [r.getMessage() for r in shown]
