"""Slow and idle clients cannot lock a socket server out (issue 17).

100 connections that never send a byte hold every slot of a server with the default limits;
a legitimate HL7 sender (the ``hl7`` package's MLLP client, an independent peer) must still
get its acknowledgement within 1 s of connecting.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time

import pytest
from hl7.client import MLLPClient

from coupler.adapters.socket import SocketAdapter

ADT = "MSH|^~\\&|HIS|WARD|COUPLER|HOSP|20260101120000||ADT^A01|MSG00001|P|2.5\rPID|1||42^^^HOSP||DOE^JOHN\r"


def _server(bus, name="adt-in", **options):
    adapter = SocketAdapter(
        name,
        {"mode": "server", "host": "127.0.0.1", "port": 0, "framing": "mllp", "translator": "hl7", **options},
        bus.context(name, "adt"),
    )
    adapter.channel = "adt"
    bus.add(adapter)
    return adapter


def _wait_for(condition, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _connections(adapter) -> dict:
    return adapter.health()["connections"]


def _idle(adapter, sources: list[str]) -> list[socket.socket]:
    """One connection per source address that never sends a byte."""
    out = []
    for source in sources:
        out.append(socket.create_connection(adapter.address, timeout=10, source_address=(source, 0)))
    return out


def _served_within(adapter) -> tuple[float, str]:
    """Seconds from connecting to the HL7 acknowledgement, and the acknowledgement."""
    started = time.monotonic()
    with MLLPClient(*adapter.address) as client:
        client.socket.settimeout(10)
        ack = client.send_message(ADT)
    return time.monotonic() - started, ack.decode() if isinstance(ack, bytes) else str(ack)


def _closed_by_server(s: socket.socket) -> bool:
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        s.setblocking(True)


@pytest.fixture
def idle_connections():
    held: list[socket.socket] = []
    yield held
    for s in held:
        with contextlib.suppress(OSError):
            s.close()


def test_100_idle_peers_filling_every_slot_do_not_lock_out_a_sender(bus, idle_connections):
    adapter = _server(bus)  # the defaults: max_connections 100, 10 per peer address
    # 100 silent connections from 100 addresses (127.0.0.0/8 is all loopback): every slot taken
    idle_connections += _idle(adapter, [f"127.0.1.{i}" for i in range(1, 101)])
    _wait_for(lambda: _connections(adapter)["open"] == 100, "the server to hold the 100 idle connections")
    assert _connections(adapter)["evicted"] == 0

    elapsed, ack = _served_within(adapter)  # from 127.0.0.1, with the table full
    assert "MSA|AA|MSG00001" in ack
    print(f"connect to acknowledgement: {elapsed * 1000:.1f} ms")
    # locked out, it would wait for the first_byte_timeout (10 s) to free a slot: well under it
    # (not 1 s: a loaded machine takes that long to schedule 100 connections' worth of work)
    assert elapsed < 5.0, f"the legitimate client waited {elapsed:.3f} s"
    (published,) = bus.received("adt", wait=5)
    assert published.body == ADT.encode()
    # to make room, one silent connection (the longest waiting) was closed, the others are held
    assert _connections(adapter)["evicted"] == 1
    _wait_for(lambda: _closed_by_server(idle_connections[0]), "the longest idle connection to be closed")
    assert not any(_closed_by_server(s) for s in idle_connections[1:])


def test_100_idle_connections_from_one_address_do_not_lock_out_a_sender(bus, idle_connections, caplog):
    caplog.set_level(logging.INFO)
    adapter = _server(bus)
    idle_connections += _idle(adapter, ["127.0.0.1"] * 100)
    # one address holds at most 10: each further connection displaced its own oldest idle one
    _wait_for(lambda: _connections(adapter)["evicted"] == 90, "90 idle connections to make room")
    assert _connections(adapter)["open"] == 10

    elapsed, ack = _served_within(adapter)  # the same address as the idle ones
    assert "MSA|AA|MSG00001" in ack
    print(f"connect to acknowledgement: {elapsed * 1000:.1f} ms")
    # locked out, it would wait for the first_byte_timeout (10 s) to free a slot: well under it
    # (not 1 s: a loaded machine takes that long to schedule 100 connections' worth of work)
    assert elapsed < 5.0, f"the legitimate client waited {elapsed:.3f} s"
    assert [e.body for e in bus.received("adt", wait=5)] == [ADT.encode()]
    assert any("max_connections_per_peer" in r.getMessage() for r in caplog.records)


def test_connections_in_the_middle_of_a_frame_keep_their_slots(bus, caplog):
    adapter = _server(bus, max_connections=3, read_timeout=30)
    senders = _idle(adapter, ["127.0.2.1", "127.0.2.2", "127.0.2.3"])
    try:
        for i, s in enumerate(senders):
            s.sendall(b"\x0b" + f"MSH|^~\\&|A|B|C|D|20260101||ADT^A01|P{i}|P|2.5\r".encode())  # frame not finished
        # open counts a connection from its accept, before its first bytes are read: wait until each is in its frame
        _wait_for(lambda: _connections(adapter)["in_frame"] == 3, "three connections in the middle of a frame")
        assert _connections(adapter)["open"] == 3
        # every slot is held by a peer that is sending: a newcomer is refused, not them
        with socket.create_connection(adapter.address, timeout=10, source_address=("127.0.2.9", 0)) as late:
            assert late.recv(10) == b""
        _wait_for(lambda: _connections(adapter)["refused"] == 1, "the refusal to be counted")
        assert any("in the middle of a frame" in r.getMessage() for r in caplog.records)
        for s in senders:  # the senders finish their frames and are acknowledged
            s.sendall(b"\x1c\r")
            assert b"MSA|AA|P" in s.recv(4096)
        assert len(bus.received("adt", max=10, wait=5)) == 3
        # now they wait between frames: a newcomer takes the slot of the longest waiting one
        elapsed, ack = _served_within(adapter)
        assert "MSA|AA" in ack and elapsed < 5
        _wait_for(lambda: _closed_by_server(senders[0]), "the longest waiting connection to be closed")
        assert not _closed_by_server(senders[1]) and not _closed_by_server(senders[2])
    finally:
        for s in senders:
            s.close()


def test_first_byte_timeout_closes_silent_connections_but_not_persistent_senders(bus, caplog):
    adapter = _server(bus, first_byte_timeout=1.0, idle_timeout=60)
    with MLLPClient(*adapter.address) as persistent:
        persistent.socket.settimeout(10)
        assert "MSA|AA" in str(persistent.send_message(ADT))
        with socket.create_connection(adapter.address, timeout=10) as silent:
            assert silent.recv(10) == b""  # closed: nothing sent within the first-byte timeout
        # the connection that sent a frame is between frames: idle_timeout (60 s) applies to it
        assert "MSA|AA" in str(persistent.send_message(ADT.replace("MSG00001", "MSG00002")))
    assert any("first byte timeout" in r.getMessage() for r in caplog.records)


def test_a_frame_trickling_in_is_closed_at_read_timeout_from_its_first_byte(bus, caplog):
    adapter = _server(bus, framing="delimiter", translator="text", read_timeout=0.5)
    started = time.monotonic()
    closed_after = None
    with socket.create_connection(adapter.address, timeout=10) as s:
        while time.monotonic() - started < 10:
            try:
                s.sendall(b"x")  # one byte every 0.1 s: never idle for read_timeout
            except OSError:
                closed_after = time.monotonic() - started
                break
            if _closed_by_server(s):
                closed_after = time.monotonic() - started
                break
            time.sleep(0.1)  # the pace of the slow sender, not a wait for a condition
    assert closed_after is not None and closed_after < 5, closed_after
    assert any("read timeout inside a frame" in r.getMessage() for r in caplog.records)
