"""Certificates made for a test (the ``cryptography`` package): a CA, a server, a client."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


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


def make_pki(d: Path) -> dict:
    """A test CA, a server certificate for 127.0.0.1 and a client certificate, in ``d``:
    ``{"ca": crt, "server": (crt, key), "client": (crt, key)}`` (paths as strings)."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("Test CA", "Test CA", ca_key, ca_key, ca=True)
    server_key, client_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    server = _cert("server", "Test CA", server_key, ca_key, usage=ExtendedKeyUsageOID.SERVER_AUTH, ip="127.0.0.1")
    client = _cert("client", "Test CA", client_key, ca_key, usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    ca_crt, _ = _write(d / "ca", ca)
    s_crt, s_key = _write(d / "server", server, server_key)
    c_crt, c_key = _write(d / "client", client, client_key)
    return {"ca": str(ca_crt), "server": (str(s_crt), str(s_key)), "client": (str(c_crt), str(c_key))}
