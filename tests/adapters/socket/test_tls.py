"""TLS with a server certificate and client authentication (certificates made here)."""

from __future__ import annotations

import socket
import ssl

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
