"""TLS with a server certificate and client authentication (certificates made here)."""

from __future__ import annotations

import socket
import ssl
import time

import pytest

from coupler.adapters.socket import SocketAdapter
from coupler.bus.api import Document
from coupler.bus.model.commands import command_envelope, parse_command
from coupler.canonical import FormatIndicator
from tests.adapters.pki import make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_tls_with_client_authentication(bus, upper, pki):
    server = SocketAdapter(
        "tls-in",
        {
            "mode": "server", "host": "127.0.0.1", "port": 0, "framing": "delimiter",
            "exchange": "request-reply", "target": "uppercase",
            "tls": {"cert": pki["server"][0], "key": pki["server"][1], "ca": pki["ca"], "client_auth": "required"},
        },
        bus.context("tls-in"),
    )
    bus.add(server)
    port = server.address[1]
    client = SocketAdapter(
        "tls-out",
        {
            "mode": "client", "port": port, "framing": "delimiter",
            "tls": {"ca": pki["ca"], "cert": pki["client"][0], "key": pki["client"][1]},
        },
        bus.context("tls-out"),
    )
    bus.add(client)
    fmt = FormatIndicator("test.Text", 1, "text/plain")
    env = command_envelope("request", "tls-out", document=Document(fmt, b"secret"))
    assert client.handle(parse_command(env)).documents[0].body == b"SECRET"

    # a client without a certificate does not get an answer
    ctx = ssl.create_default_context(cafile=pki["ca"])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with pytest.raises((ssl.SSLError, ConnectionError)):
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                tls.sendall(b"hello\n")
                if not tls.recv(100):
                    raise ConnectionResetError("closed without an answer")
    # a client that does not trust the server's CA refuses it
    untrusting = SocketAdapter("plain-out", {"mode": "client", "port": port, "tls": {}, "retries": 0}, bus.context("plain-out"))
    bus.add(untrusting)
    from coupler.bus.api import CommandFault

    with pytest.raises(CommandFault, match="CERTIFICATE_VERIFY_FAILED"):
        untrusting.handle(parse_command(command_envelope("request", "plain-out", document=Document(fmt, b"x"))))


def test_tls_connections_count_from_their_acceptance(bus, upper, pki):
    """Connections that never begin their TLS handshake take slots as silent plain ones do: one
    address holds at most max_connections_per_peer, the longest waiting closed for a newcomer,
    and a TLS client is served among them; a client speaking plain text to the TLS port is
    closed at once and stops counting."""
    from tests.adapters.hostile import closed_after
    from tests.bus.site_helpers import wait_for

    server = SocketAdapter(
        "tls-slots", {"mode": "server", "host": "127.0.0.1", "port": 0, "framing": "delimiter",
                      "exchange": "request-reply", "target": "uppercase", "max_connections_per_peer": 3,
                      "first_byte_timeout": 30.0, "tls": {"cert": pki["server"][0], "key": pki["server"][1]}},
        bus.context("tls-slots"),
    )
    bus.add(server)
    address = ("127.0.0.1", server.address[1])
    silent = [socket.create_connection(address, timeout=10) for _ in range(10)]  # no handshake
    try:
        wait_for(lambda: server.health()["connections"]["evicted"] >= 7, "7 silent connections closed for newer ones",
                 timeout=10)
        assert server.health()["connections"]["open"] == 3
        for s in silent[:7]:  # the oldest made room
            closed_after(s, 5)
        ctx = ssl.create_default_context(cafile=pki["ca"])
        with socket.create_connection(address, timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(b"hello\n")
            assert tls.recv(100) == b"HELLO\n"
        with socket.create_connection(address, timeout=10) as plain:
            plain.sendall(b"hello\n")  # no handshake: closed at once
            closed_after(plain, 5)
    finally:
        for s in silent:
            s.close()
    wait_for(lambda: server.health()["connections"]["open"] == 0, "the connections to stop counting", timeout=10)


def test_a_tls_handshake_must_finish_within_first_byte_timeout(bus, upper, pki, caplog):
    from tests.adapters.hostile import closed_after
    from tests.bus.site_helpers import wait_for

    server = SocketAdapter(
        "tls-slow", {"mode": "server", "host": "127.0.0.1", "port": 0, "framing": "delimiter",
                     "exchange": "request-reply", "target": "uppercase", "first_byte_timeout": 1.0,
                     "tls": {"cert": pki["server"][0], "key": pki["server"][1]}},
        bus.context("tls-slow"),
    )
    bus.add(server)
    connecting = time.monotonic()  # before the accept, from which first_byte_timeout counts
    with socket.create_connection(("127.0.0.1", server.address[1]), timeout=10) as silent:  # no handshake
        _, answer = closed_after(silent, 10)
    elapsed = time.monotonic() - connecting  # not from closed_after's call: the test may stall before it
    assert answer == b"" and 0.9 <= elapsed < 5, (elapsed, answer)
    wait_for(lambda: any("first byte timeout (1 s; its TLS handshake did not finish)" in r.getMessage()
                         for r in caplog.records), "the warning naming first_byte_timeout", timeout=5)
