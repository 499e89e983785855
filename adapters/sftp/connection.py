"""One SFTP connection: connect with timeouts, verify the host key, log in, reconnect.

A broken connection is dropped and the next operation reconnects, waiting with an
exponential backoff (``reconnect_delay`` doubling up to ``reconnect_max_delay``) after a
failed attempt. Every SFTP request has ``read_timeout``, so no operation hangs forever.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..common.lazy import lazy_module

if TYPE_CHECKING:
    import paramiko
else:
    paramiko = lazy_module("paramiko")  # imported when a connection is made

from coupler.bus.api import Bool, Int, Num, OptionsModel, Str, option

from ..common.errors import AdapterConfigError, HostKeyError, RemoteError
from . import hostkeys

T = TypeVar("T")

#: the logger of the adapter's SSH transports. paramiko's transport thread logs a failed
#: handshake or a lost connection as ERROR lines holding its traceback, which the daemon (it
#: lets paramiko's warnings and errors through) showed at every attempt; the adapter reports
#: each failure itself, in one line, so those lines are kept only when DEBUG is on.
SSH_LOG = "paramiko.coupler"


class _TracebacksAtDebug(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR or logging.getLogger(SSH_LOG).isEnabledFor(logging.DEBUG)


for _name in (SSH_LOG, f"{SSH_LOG}.sftp"):  # the transport and its SFTP channel
    logging.getLogger(_name).addFilter(_TracebacksAtDebug())


@dataclass
class ConnectionSettings:
    host: str
    port: int = 22
    username: str = ""
    password: str | None = None
    private_key: Path | None = None
    passphrase: str | None = None
    known_hosts: Path | None = None
    host_key_fingerprint: str | None = None
    trust_on_first_use: bool = False
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    reconnect_delay: float = 1.0
    reconnect_max_delay: float = 60.0

    @property
    def label(self) -> str:
        return f"sftp://{self.username}@{self.host}:{self.port}"


class ConnectionOptions(OptionsModel):
    """The SFTP connection's options (``[adapters.options]`` of ``type = "sftp"``)."""

    host: Str = option("The SFTP server.")
    port: Int = option("Its SSH port.", default=22, ge=1, le=65535)
    username: Str = option("The SSH user.")
    password: Str | None = option("Its password (better: `password_env`).", default=None)
    password_env: Str | None = option("The environment variable holding the password.", default=None)
    private_key: Str | None = option("The private key file (OpenSSH or PEM), relative to site.toml.", default=None)
    passphrase: Str | None = option("The private key's passphrase (better: `passphrase_env`).", default=None)
    passphrase_env: Str | None = option("The environment variable holding the passphrase.", default=None)
    known_hosts: Str | None = option("The known_hosts file the server's key is checked against.", default=None)
    host_key_fingerprint: Str | None = option("The server key's SHA256 fingerprint (instead of known_hosts).",
                                              default=None)
    trust_on_first_use: Bool = option("Record the server's key in `known_hosts` on the first connection.",
                                      default=False)
    connect_timeout: Num = option("Seconds to connect.", default=10.0, ge=0.1)
    read_timeout: Num = option("Seconds a remote operation may take.", default=30.0, ge=0.1)
    reconnect_delay: Num = option("Seconds before the first reconnection.", default=1.0, ge=0)
    reconnect_max_delay: Num = option("Longest delay between reconnections.", default=60.0, ge=0)


def _secret(opts: ConnectionOptions, adapter: str, key: str) -> str | None:
    value = getattr(opts, key)
    env = getattr(opts, f"{key}_env")
    if env:
        if env not in os.environ:
            raise AdapterConfigError(f"environment variable {env} is not set", where=f"adapters[{adapter}].options.{key}_env")
        value = os.environ[env]
    return value


def read_connection_settings(opts: ConnectionOptions, adapter: str) -> ConnectionSettings:
    where = f"adapters[{adapter}].options"
    s = ConnectionSettings(
        host=opts.host,
        port=opts.port,
        username=opts.username,
        password=_secret(opts, adapter, "password"),
        passphrase=_secret(opts, adapter, "passphrase"),
        host_key_fingerprint=opts.host_key_fingerprint,
        trust_on_first_use=opts.trust_on_first_use,
        connect_timeout=opts.connect_timeout,
        read_timeout=opts.read_timeout,
        reconnect_delay=opts.reconnect_delay,
        reconnect_max_delay=opts.reconnect_max_delay,
    )
    s.private_key = Path(opts.private_key).expanduser() if opts.private_key else None
    s.known_hosts = Path(opts.known_hosts).expanduser() if opts.known_hosts else None
    if s.private_key is None and s.password is None:
        raise AdapterConfigError("set private_key or password (or password_env)", where=where)
    if s.known_hosts is None and not s.host_key_fingerprint:
        raise AdapterConfigError(
            "host-key verification is always on: set known_hosts or host_key_fingerprint", where=where,
            hint="trust_on_first_use = true with a known_hosts path records the key on first connection",
        )
    if s.trust_on_first_use and s.known_hosts is None:
        raise AdapterConfigError("trust_on_first_use needs known_hosts (where to record the key)", where=where)
    return s


def load_private_key(path: Path, passphrase: str | None) -> paramiko.PKey:
    """An RSA, ECDSA or Ed25519 private key (OpenSSH or PEM format), decrypted with ``passphrase``."""
    try:
        # positional: the parameter is `passphrase` in paramiko 3.4-4.x and `password` in 5.x
        return paramiko.PKey.from_path(path, passphrase.encode() if passphrase else None)
    except FileNotFoundError as exc:
        raise AdapterConfigError(f"private key {path} does not exist", where="options.private_key") from exc
    except paramiko.PasswordRequiredException as exc:
        raise AdapterConfigError(f"private key {path} is encrypted: set passphrase (or passphrase_env)", where="options.private_key") from exc
    except (paramiko.SSHException, ValueError) as exc:
        raise AdapterConfigError(f"cannot load private key {path}: {exc} (wrong passphrase?)", where="options.private_key") from exc


class SftpConnection:
    """A lazily opened, self-healing SFTP session (thread-safe: one operation at a time)."""

    def __init__(self, settings: ConnectionSettings, logger: logging.Logger | None = None):
        self.s = settings
        self.log = logger or logging.getLogger("coupler.adapter.sftp")
        self._lock = threading.RLock()
        self._transport: paramiko.Transport | None = None
        self._sftp: paramiko.SFTPClient | None = None
        self._pkey = load_private_key(settings.private_key, settings.passphrase) if settings.private_key else None
        self._delay = 0.0
        self._next_attempt = 0.0
        self.connects = 0
        self.failures = 0
        self.last_error: str | None = None
        self.connected_since: float | None = None

    # -- connecting --------------------------------------------------------------------------

    def _open(self) -> paramiko.SFTPClient:
        s = self.s
        try:
            sock = socket.create_connection((s.host, s.port), timeout=s.connect_timeout)
        except OSError as exc:
            raise RemoteError(f"cannot connect: {exc.strerror or exc}", where=s.label, hint="is the server up and the port right?") from exc
        transport = paramiko.Transport(sock)
        transport.set_log_channel(SSH_LOG)
        try:
            transport.banner_timeout = s.connect_timeout
            transport.handshake_timeout = s.connect_timeout
            transport.auth_timeout = s.connect_timeout
            known_types = hostkeys.known_key_types(s.known_hosts, s.host, s.port)
            if known_types:  # negotiate a key type known_hosts can vouch for
                options = transport.get_security_options()
                options.key_types = tuple(known_types) + tuple(t for t in options.key_types if t not in known_types)
            transport.start_client(timeout=s.connect_timeout)
            if not (transport.is_active() and transport.initial_kex_done):  # it returns at its timeout too
                raise paramiko.SSHException(f"the key exchange did not finish within {s.connect_timeout:g} s")
            hostkeys.verify(
                transport.get_remote_server_key(), host=s.host, port=s.port, known_hosts=s.known_hosts,
                pinned=s.host_key_fingerprint, trust_on_first_use=s.trust_on_first_use, log=self.log,
            )
            try:
                if self._pkey is not None:
                    transport.auth_publickey(s.username, self._pkey)
                else:
                    transport.auth_password(s.username, s.password or "")
            except paramiko.AuthenticationException as exc:
                raise RemoteError(f"login of {s.username!r} refused: {exc}", where=s.label, hint="check username, key or password") from exc
            sftp = paramiko.SFTPClient.from_transport(transport)
            assert sftp is not None
            sftp.get_channel().settimeout(s.read_timeout)
        except BaseException as exc:
            transport.close()
            if isinstance(exc, HostKeyError | RemoteError):
                raise
            if isinstance(exc, paramiko.SSHException | OSError | EOFError):
                if not transport.remote_version:  # no "SSH-2.0-..." line came
                    raise RemoteError(
                        f"no SSH server answered within {s.connect_timeout:g} s (connect_timeout)", where=s.label,
                        hint=f"is {s.port} the SSH port of {s.host}?",
                    ) from exc
                failure = transport.get_exception() or exc  # what the transport thread met, not its aftermath
                raise RemoteError(f"SSH handshake failed: {str(failure) or type(failure).__name__}", where=s.label) from exc
            raise
        self._transport, self._sftp = transport, sftp
        return sftp

    def sftp(self) -> paramiko.SFTPClient:
        """The open session, reconnecting (after the backoff delay) when needed."""
        with self._lock:
            if self._sftp is not None and self._transport is not None and self._transport.is_active():
                return self._sftp
            self.close()
            wait = self._next_attempt - time.monotonic()
            if wait > 0:
                raise RemoteError(
                    f"not connected; next reconnection attempt in {wait:.1f} s (last error: {self.last_error})",
                    where=self.s.label,
                )
            try:
                sftp = self._open()
            except HostKeyError as exc:
                self._failed(str(exc))
                raise
            except RemoteError as exc:
                self._failed(str(exc))
                raise
            self._delay = 0.0
            self.connects += 1
            self.connected_since = time.time()
            self.last_error = None
            self.log.info("connected to %s", self.s.label)
            return sftp

    def _failed(self, error: str) -> None:
        self.failures += 1
        self.last_error = error  # never empty: health reports ``down`` while it is set
        self._delay = min(max(self._delay * 2, self.s.reconnect_delay), self.s.reconnect_max_delay)
        self._next_attempt = time.monotonic() + self._delay

    def call(self, what: str, fn: Callable[[paramiko.SFTPClient], T]) -> T:
        """Run ``fn`` on the session; a broken connection becomes a :class:`RemoteError`."""
        with self._lock:
            sftp = self.sftp()
            try:
                return fn(sftp)
            except (EOFError, paramiko.SSHException, OSError) as exc:
                alive = self._transport is not None and self._transport.is_active()
                if alive and not isinstance(exc, TimeoutError | ConnectionError | EOFError | paramiko.SSHException):
                    raise  # an SFTP status (no such file, permission denied): the connection is fine
                lost = f"{what}: connection lost: {str(exc) or type(exc).__name__}"  # EOFError() says nothing
                self._lost(lost)
                raise RemoteError(lost, where=self.s.label) from exc

    def _lost(self, error: str) -> None:
        self.log.warning("%s: %s", self.s.label, error)
        self.close()
        self._failed(error)

    def close(self) -> None:
        with self._lock:
            for thing in (self._sftp, self._transport):
                if thing is not None:
                    try:
                        thing.close()
                    except Exception:  # noqa: BLE001 - closing a broken connection
                        pass
            self._sftp = self._transport = None
            self.connected_since = None

    def health(self) -> dict[str, Any]:
        """The counters, and ``next_attempt_in``: the seconds before the connection may be
        tried again after a failure (0 when the next operation connects at once, ``None``
        while connected). Read without the lock: a hung operation does not hold it up."""
        connected = self._transport is not None and self._transport.is_active()
        return {
            "connected": connected,
            "connects": self.connects,
            "connect_failures": self.failures,
            "last_connect_error": self.last_error,
            "reconnect_delay": self._delay,
            # rounded up: 0 only once an attempt is due (a caller waiting for 0 is not refused)
            "next_attempt_in": None if connected else math.ceil(max(0.0, self._next_attempt - time.monotonic()) * 1000) / 1000,
        }
