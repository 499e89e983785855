"""Fuzzing the socket adapter's framing over real connections (issue 17): random and mutated
streams, lengths claiming far more than is sent, to a server, and as the replies of a legacy
server to a client. The server only ever closes a connection (with a logged reason) and goes
on serving; the client only ever answers with a CommandFault; no case takes more than 2 s or
allocates more than what was sent (far below 200 MB).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import tracemalloc
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coupler.adapters.socket import SocketAdapter
from coupler.bus.api import CommandFault, Document
from coupler.bus.model.commands import command_envelope, parse_command
from coupler.canonical import FormatIndicator
from tests.translators.framing.test_framing_fuzz import streams

OPTIONS = {
    "length": {"framing": "length", "length_bytes": 4, "max_frame_bytes": 64 * 1024},
    "length2": {"framing": "length", "length_bytes": 2, "byteorder": "little", "max_frame_bytes": 4096},
    "delimiter": {"framing": "delimiter", "delimiter": "CRLF", "max_frame_bytes": 4096},
    "mllp": {"framing": "mllp", "max_frame_bytes": 64 * 1024, "translator": "hl7"},
}
FUZZ = settings(
    max_examples=25,
    deadline=2000,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@contextlib.contextmanager
def peak_allocation() -> Iterator[list[int]]:
    out: list[int] = []
    tracemalloc.start()
    try:
        yield out
        out.append(tracemalloc.get_traced_memory()[1])
    finally:
        tracemalloc.stop()


def _send_all_and_wait_close(address, stream: bytes) -> None:
    """Send ``stream``, end the connection and wait until the server has finished with it."""
    with socket.create_connection(address, timeout=2) as s:
        with contextlib.suppress(OSError):  # the server may close on a bad frame mid-stream
            s.sendall(stream)
            s.shutdown(socket.SHUT_WR)
        with contextlib.suppress(OSError):
            while s.recv(65536):
                pass


@pytest.mark.parametrize("kind", sorted(OPTIONS))
def test_server_survives_random_and_mutated_streams(bus, kind, caplog):
    caplog.set_level(logging.WARNING)
    adapter = SocketAdapter(
        f"fuzz-{kind}", {"mode": "server", "host": "127.0.0.1", "port": 0, **OPTIONS[kind]},
        bus.context(f"fuzz-{kind}", "inbox"),
    )
    adapter.channel = "inbox"
    bus.add(adapter)
    framing = adapter.settings.framer

    @FUZZ
    @given(data=st.data())
    def case(data: st.DataObject) -> None:
        stream = data.draw(streams(framing))
        with peak_allocation() as peak:
            _send_all_and_wait_close(adapter.address, stream)
        assert peak[0] < 8 * len(stream) + 4 * framing.max_wire + 1024 * 1024

    case()
    # no exception escaped the handling of a connection, and the server still serves
    assert not [r for r in caplog.records if "unexpected error" in r.getMessage()]
    assert adapter.health()["status"] == "ok"
    valid = b"MSH|^~\\&|A|B|C|D|1||ADT^A01|LAST|P|2.5\r" if kind == "mllp" else b"still serving"
    bus.received("inbox", max=10_000, wait=0.5)  # what the fuzz cases published
    with socket.create_connection(adapter.address, timeout=5) as s:
        s.sendall(framing.encode(valid))
        if kind == "mllp":
            assert b"MSA|AA|LAST" in s.recv(4096)
    deadline_bodies = [e.body for e in bus.received("inbox", max=10_000, wait=5)]
    assert valid in deadline_bodies


@pytest.mark.parametrize("kind", ["length", "delimiter", "mllp"])
def test_client_answers_random_replies_with_a_fault_at_most(bus, kind):
    listener = socket.create_server(("127.0.0.1", 0))
    replies: list[bytes] = []
    stop = threading.Event()

    def legacy_server() -> None:  # answers each request with the next fuzzed reply
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    conn.recv(65536)
                    conn.sendall(replies.pop(0) if replies else b"")

    thread = threading.Thread(target=legacy_server, daemon=True)
    thread.start()
    options = {k: v for k, v in OPTIONS[kind].items() if k != "translator"}
    client = SocketAdapter(
        f"fuzz-out-{kind}",
        {"mode": "client", "port": listener.getsockname()[1], "response_timeout": 0.5, "retries": 0,
         "connections": 1, **options, "acknowledge": False},
        bus.context(f"fuzz-out-{kind}"),
    )
    bus.add(client)
    framing = client.settings.framer
    fmt = FormatIndicator("t.Raw", 1, "application/octet-stream")

    @FUZZ
    @given(data=st.data())
    def case(data: st.DataObject) -> None:
        replies.append(data.draw(streams(framing)))
        env = command_envelope("request", client.name, document=Document(fmt, b"request"))
        try:
            reply = client.handle(parse_command(env))
        except CommandFault:
            return
        assert len(reply.documents[0].body) <= framing.max_frame

    try:
        case()
    finally:
        stop.set()
        thread.join(5)
        listener.close()
