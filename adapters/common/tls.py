"""TLS options of the network adapters (``[adapters.options.tls]``): the socket and SOAP
adapters, as servers and as clients.

Server: ``cert`` and ``key`` (PEM), ``ca`` (the CA of client certificates) and
``client_auth`` (``none``, ``optional``, ``required``). Client: ``ca`` (the CA of the server;
default: the system's), ``cert``/``key`` for client authentication, ``server_hostname`` and
``verify``. TLS 1.2 at least.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coupler.bus.api import OptionDoc

from .errors import AdapterConfigError

CLIENT_AUTH = ("none", "optional", "required")

#: the TLS options in the generated configuration reference
TLS_OPTION_DOCS = (
    OptionDoc("tls.cert", "string", None, "Server: its certificate (PEM); with it the adapter speaks TLS (1.2 at least). Client: a certificate for client authentication."),
    OptionDoc("tls.key", "string", None, "The private key of `tls.cert` (PEM)."),
    OptionDoc("tls.ca", "string", None, "Server: the CA of client certificates. Client: the CA of the server (default: the system's)."),
    OptionDoc("tls.client_auth", "string", "none", "Server: `none`, `optional` or `required` client certificates (needs `tls.ca`)."),
)


class TLSConfigError(AdapterConfigError):
    """A TLS option that is missing or wrong, or a certificate that cannot be loaded."""


@dataclass(frozen=True)
class TLSOptions:
    cert: Path | None = None
    key: Path | None = None
    ca: Path | None = None
    client_auth: str = "none"  # server: none | optional | required
    server_hostname: str | None = None
    verify: bool = True
    adapter: str = ""

    def _where(self, key: str) -> str:
        return f"adapter {self.adapter}: options.tls.{key}" if self.adapter else f"options.tls.{key}"

    def server_context(self) -> ssl.SSLContext:
        if self.cert is None:
            raise TLSConfigError("a TLS server needs options.tls.cert (and key)", where=self._where("cert"))
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        self._load_chain(ctx)
        if self.client_auth != "none":
            if self.ca is None:
                raise TLSConfigError("client authentication needs options.tls.ca", where=self._where("ca"))
            self._load_ca(ctx)
            ctx.verify_mode = ssl.CERT_REQUIRED if self.client_auth == "required" else ssl.CERT_OPTIONAL
        return ctx

    def client_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.ca is not None:
            self._load_ca(ctx)
        if not self.verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert is not None:
            self._load_chain(ctx)
        return ctx

    def _load_chain(self, ctx: ssl.SSLContext) -> None:
        try:
            ctx.load_cert_chain(str(self.cert), str(self.key) if self.key else None)
        except (OSError, ssl.SSLError) as exc:
            raise TLSConfigError(f"cannot load the certificate {self.cert}: {exc}", where=self._where("cert")) from None

    def _load_ca(self, ctx: ssl.SSLContext) -> None:
        try:
            ctx.load_verify_locations(cafile=str(self.ca))
        except (OSError, ssl.SSLError) as exc:
            raise TLSConfigError(f"cannot load the CA certificates {self.ca}: {exc}", where=self._where("ca")) from None


def parse_tls(adapter: str, options: dict[str, Any]) -> TLSOptions | None:
    """The ``tls`` table of ``options`` (None when absent), checked."""
    if "tls" not in options:
        return None
    t = options["tls"]
    if not isinstance(t, dict):
        raise TLSConfigError("expected a table {cert, key, ca, client_auth}", where=f"adapter {adapter}: options.tls")

    def get(key: str, kind: type) -> Any:
        value = t.get(key)
        if value is not None and not isinstance(value, kind):
            raise TLSConfigError(f"expected {kind.__name__}, got {value!r}", where=f"adapter {adapter}: options.tls.{key}")
        return value

    unknown = sorted(set(t) - {"cert", "key", "ca", "client_auth", "server_hostname", "verify"})
    if unknown:
        raise TLSConfigError(f"unknown key {unknown[0]!r}", where=f"adapter {adapter}: options.tls.{unknown[0]}")
    client_auth = get("client_auth", str) or "none"
    if client_auth not in CLIENT_AUTH:
        raise TLSConfigError(
            f"{client_auth!r} is not one of {', '.join(CLIENT_AUTH)}", where=f"adapter {adapter}: options.tls.client_auth"
        )
    verify = get("verify", bool)
    return TLSOptions(
        cert=Path(get("cert", str)) if t.get("cert") else None,
        key=Path(get("key", str)) if t.get("key") else None,
        ca=Path(get("ca", str)) if t.get("ca") else None,
        client_auth=client_auth,
        server_hostname=get("server_hostname", str),
        verify=True if verify is None else verify,
        adapter=adapter,
    )
