"""Host-key verification: always on, against known_hosts or a pinned fingerprint.

An unknown or changed key refuses the connection with an error showing the key's SHA-256
fingerprint (as ``ssh-keygen -lf`` prints it). Trust on first use is only done when
configured; it appends the key to the known_hosts file and logs a warning.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.lazy import lazy_module

if TYPE_CHECKING:
    import paramiko
else:
    paramiko = lazy_module("paramiko")  # imported when a key is checked

from ..common.errors import HostKeyError


def fingerprint(key: paramiko.PKey) -> str:
    """``SHA256:...`` of a public key, as OpenSSH shows it."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def host_id(host: str, port: int) -> str:
    """The name of a host in known_hosts (``[host]:port`` for a port other than 22)."""
    return host if port == 22 else f"[{host}]:{port}"


def known_key_types(known_hosts: Path | None, host: str, port: int) -> list[str]:
    """Key types known_hosts has for this host (to negotiate one of them)."""
    if known_hosts is None or not known_hosts.exists():
        return []
    keys = paramiko.HostKeys(str(known_hosts)).lookup(host_id(host, port))
    return list(keys.keys()) if keys else []


def verify(
    key: paramiko.PKey,
    *,
    host: str,
    port: int,
    known_hosts: Path | None,
    pinned: str | None,
    trust_on_first_use: bool,
    log: logging.Logger,
) -> None:
    """Raise :class:`HostKeyError` unless ``key`` is the one this server is known by."""
    fp = fingerprint(key)
    where = f"sftp://{host}:{port}"
    if pinned:
        if fp.removeprefix("SHA256:") == pinned.strip().removeprefix("SHA256:"):
            return
        raise HostKeyError(
            f"host key {key.get_name()} {fp} does not match the pinned fingerprint {pinned}; "
            "connection refused (the server's key changed, or this is not the server you think)",
            where=where, hint="check with the server's administrator before changing host_key_fingerprint",
        )
    hid = host_id(host, port)
    known = paramiko.HostKeys()
    if known_hosts is not None and known_hosts.exists():
        known.load(str(known_hosts))
    entry = known.lookup(hid)
    if entry is not None and key.get_name() in entry:
        if entry[key.get_name()] == key:
            return
        raise HostKeyError(
            f"host key CHANGED: the server offers {key.get_name()} {fp}, known_hosts has another key; "
            "connection refused (possible man-in-the-middle)",
            where=f"{where} (known_hosts {known_hosts})",
            hint=f"if the change is expected, remove the old entry: ssh-keygen -R '{hid}' -f {known_hosts}",
        )
    if trust_on_first_use and known_hosts is not None:
        known_hosts.parent.mkdir(parents=True, exist_ok=True)
        line = f"{hid} {key.get_name()} {key.get_base64()}\n"
        fd = os.open(known_hosts, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        log.warning(
            "trust on first use: accepted the unknown host key %s %s of %s and added it to %s",
            key.get_name(), fp, hid, known_hosts,
        )
        return
    raise HostKeyError(
        f"unknown host key {key.get_name()} {fp}; connection refused",
        where=where,
        hint=(
            f"verify the fingerprint with the server's administrator, then add it to "
            f"{known_hosts or 'a known_hosts file'} (ssh-keyscan -p {port} {host}) or set host_key_fingerprint"
        ),
    )
