"""TLS options of the network adapters (``[adapters.options.tls]``): the socket and SOAP
adapters, as servers and as clients.

Server: ``cert`` and ``key`` (PEM), ``ca`` (the CA of client certificates) and
``client_auth`` (``none``, ``optional``, ``required``). Client: ``ca`` (the CA of the server;
default: the system's), ``cert``/``key`` for client authentication, ``server_hostname`` and
``verify``. TLS 1.2 at least.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any, Literal

from pydantic import PrivateAttr

from coupler.bus.api import OptionsModel, Str, option, validate_options

from .errors import AdapterConfigError


class TLSConfigError(AdapterConfigError):
    """A certificate or key that cannot be loaded, or TLS settings that do not fit together."""


class TLSOptions(OptionsModel):
    """``[adapters.options.tls]``: TLS (1.2 at least) of a network adapter, server or client."""

    cert: Path | None = option(
        "Server: its certificate (PEM); with it the adapter speaks TLS (1.2 at least). Client: a "
        "certificate for client authentication.", default=None)
    key: Path | None = option("The private key of `tls.cert` (PEM).", default=None)
    ca: Path | None = option(
        "Server: the CA of client certificates. Client: the CA of the server (default: the system's).",
        default=None)
    client_auth: Literal["none", "optional", "required"] = option(
        "Server: `none`, `optional` or `required` client certificates (needs `tls.ca`).", default="none")
    server_hostname: Str | None = option("Client: the host name the server's certificate must name "
                                         "(default: the host connected to).", default=None)
    verify: bool = option("Client: verify the server's certificate.", default=True, strict=True)
    _adapter: str = PrivateAttr(default="")

    def _where(self, key: str) -> str:
        return f"adapters[{self._adapter}].options.tls.{key}" if self._adapter else f"options.tls.{key}"

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
    tls = validate_options(TLSOptions, options["tls"], prefix=f"adapters[{adapter}].options.tls")
    tls._adapter = adapter
    return tls
