"""The daemon's control endpoint (a 0600 Unix socket) under attack: a connection that sends
nothing, or trickles its request a byte at a time, does not stop others being answered and is
closed after ``[control] request_timeout`` with a one-line answer; 400 idle connections do
not either, and their threads end once they close; a client that goes away in the middle of
its request leaves no traceback."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from pathlib import Path

from coupler.bus.runtime.control import ControlClient
from tests.adapters import hostile
from tests.adapters.hostile import closed_after
from tests.bus.site_helpers import running_daemon, wait_for, write_site


def _site(tmp_path: Path, timeout: float = 30.0) -> Path:
    return write_site(tmp_path, f"[control]\nrequest_timeout = {timeout}\n")


def _connect(path: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(path))  # blocking: waits while the accept queue is full
    s.settimeout(10)
    return s


def test_silent_and_trickling_clients_are_closed_after_request_timeout(tmp_path, caplog):
    with running_daemon(_site(tmp_path, 1.0)) as d:
        path = d.site.control_socket
        silent, trickle = _connect(path), _connect(path)
        opened = time.monotonic()
        try:
            request = b'{"op": "status", "args": {}}\n'
            trickle.sendall(request[:1])
            assert ControlClient(path).call("status")["state"] == "running"  # while both hold theirs
            answer = hostile.trickle(trickle, request[1:-1] * 100)
            if not answer:  # closed while we were sending: what it said is still to be read
                _, answer = closed_after(trickle, 30)
            trickled = time.monotonic() - opened
            assert answer, "a client trickling its request was not answered within 30 s"
            assert 0.8 <= trickled, trickled
            refusal = json.loads(answer)
            assert refusal["ok"] is False and "request_timeout" in refusal["error"]
            _, said = closed_after(silent, 30)
            assert b"request_timeout" in said and "\n" not in json.loads(said)["error"]
            print(f"trickling client answered after {trickled:.2f} s (request_timeout 1 s)")
        finally:
            silent.close()
            trickle.close()
        assert ControlClient(path).call("status")["state"] == "running"
    assert any("request_timeout" in r.getMessage() for r in caplog.records)


def test_400_idle_connections_do_not_lock_others_out_and_their_threads_end(tmp_path):
    with running_daemon(_site(tmp_path)) as d:
        path = d.site.control_socket
        before = threading.active_count()
        held = [_connect(path) for _ in range(400)]
        try:
            started = time.monotonic()
            assert ControlClient(path).call("status")["state"] == "running"
            print(f"status answered in {time.monotonic() - started:.3f} s with 400 idle connections open")
        finally:
            for s in held:
                s.close()
        wait_for(lambda: threading.active_count() <= before, "the idle connections' threads to end")
        assert ControlClient(path).call("status")["state"] == "running"


def test_a_client_going_away_in_the_middle_of_its_request_leaves_no_traceback(tmp_path, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    with running_daemon(_site(tmp_path)) as d:
        path = d.site.control_socket
        before = threading.active_count()
        for data in (b'{"op": "sta', b'{"op": "status", "args": {"x": "' + b"y" * 300_000):
            s = _connect(path)
            s.sendall(data)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()
        # a client that does not read its (long) answer and goes away
        s = _connect(path)
        s.sendall(b'{"op": "dlq_list", "args": {}}\n')
        s.close()
        wait_for(lambda: threading.active_count() <= before, "the connections' threads to end")
        assert ControlClient(path).call("status")["state"] == "running"
    assert "Traceback" not in capfd.readouterr().err
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR or (r.exc_info and r.levelno >= logging.INFO)]
    assert not errors, [r.getMessage() for r in errors]


def test_a_full_accept_queue_is_one_line_for_the_client(tmp_path):
    """A Unix socket refuses a connection with EAGAIN while its accept queue is full (TCP would
    wait): ``coupler ctl`` waits up to its timeout, then says so in one line, no traceback."""
    import pytest

    from coupler.bus.runtime.control import ControlError

    path = tmp_path / "busy.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(0)  # never accepts
    queued = []
    try:
        while True:  # fill the queue
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect(str(path))
            except BlockingIOError:
                s.close()
                break
            queued.append(s)
        with pytest.raises(ControlError, match="stayed busy for 0.3 s") as refused:
            ControlClient(path, timeout=0.3).call("status")
        assert "\n" not in str(refused.value)
    finally:
        for s in queued:
            s.close()
        listener.close()


def test_a_request_over_the_limit_is_refused_in_one_line(tmp_path, monkeypatch, caplog):
    """A request line longer than the endpoint takes is answered with one line naming the limit
    (it was cut there and answered as JSON that does not parse), and ``coupler ctl`` refuses to
    send one in one line, before connecting."""
    import pytest

    from coupler.bus.runtime import control

    monkeypatch.setattr(control, "MAX_REQUEST_BYTES", 1 << 20)
    with running_daemon(_site(tmp_path)) as d:
        path = d.site.control_socket
        s = _connect(path)
        try:
            try:
                s.sendall(b'{"op": "status", "args": {"x": "' + b"y" * (2 << 20))
            except OSError:
                pass  # refused and closed while we were sending: what it said is still to be read
            _, answer = closed_after(s, 30)
        finally:
            s.close()
        refusal = json.loads(answer)
        assert refusal["ok"] is False and "larger than 1048576 bytes" in refusal["error"], refusal
        assert "\n" not in refusal["error"]
        with pytest.raises(control.ControlError, match="larger than 1048576 bytes") as refused:
            ControlClient(path).call("status", x="y" * (2 << 20))
        assert "\n" not in str(refused.value)
        assert ControlClient(path).call("status")["state"] == "running"
    warnings = [r for r in caplog.records if "larger than 1048576 bytes" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
