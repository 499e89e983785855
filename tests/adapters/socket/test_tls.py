"""TLS with a server certificate and client authentication (certificates made here)."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from coupler.adapters.socket import SocketAdapter
from coupler.bus.api import Document
from coupler.bus.model.commands import command_envelope, parse_command
from coupler.canonical import FormatIndicator


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject, issuer, key, issuer_key, *, ca=False, usage=None, ip=None):
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if usage:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if ip:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _write(path, cert, key=None):
    path.with_suffix(".crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    if key is not None:
        path.with_suffix(".key").write_bytes(
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        )
    return path.with_suffix(".crt"), path.with_suffix(".key")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("Test CA", "Test CA", ca_key, ca_key, ca=True)
    server_key, client_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    server = _cert("server", "Test CA", server_key, ca_key, usage=ExtendedKeyUsageOID.SERVER_AUTH, ip="127.0.0.1")
    client = _cert("client", "Test CA", client_key, ca_key, usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    ca_crt, _ = _write(d / "ca", ca)
    s_crt, s_key = _write(d / "server", server, server_key)
    c_crt, c_key = _write(d / "client", client, client_key)
    return {"ca": str(ca_crt), "server": (str(s_crt), str(s_key)), "client": (str(c_crt), str(c_key))}


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
