"""The SOAP Channel Adapter: serve a WSDL's operations (inbound) or call them (outbound).

The adapter (options, the WSDL read once, lifecycle) is here; its halves are
:mod:`.server` (inbound) and :mod:`.client` (outbound), each running on the adapter's loop
thread (:class:`coupler.bus.api.LoopThread`).

Inbound (``mode = "server"``): an aiohttp server answers ``GET PATH?wsdl`` with the WSDL
(every SOAP port's address rewritten to the real endpoint, imported XSDs served at
``PATH?xsd=FILE``) and ``POST PATH`` with SOAP 1.1 or 1.2. A request's body is translated
to a record through the WSDL's XSD types and becomes a ``request`` command for ``target``
(operation = the WSDL operation, document = the record as JSON); the Reply's first document
becomes the SOAP response; a Fault becomes a SOAP fault (``invalid``, ``unsupported`` and
``unserved`` -> Sender/Client, others -> Receiver/Server, with the Coupler fault code in the
detail). A Reply with the detail ``soap.fault = NAME`` answers with the operation's declared
fault NAME, its document as the fault detail. One-way operations are published on the
adapter's channel (HTTP 202).

Outbound (``mode = "client"``): ``request`` and ``send`` commands call the remote
operation named by the command's ``operation`` through the WSDL, with a timeout and retries
on transport errors only; SOAP faults become error replies.

Trace context: a request's W3C ``traceparent`` header is continued (the document carries a
child of it); every outbound call sends ``traceparent``, a child of the message's trace.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import ValidationInfo, field_validator

from coupler.adapters.common.lazy import lazy_module
from coupler.adapters.common.tls import TLSOptions
from coupler.bus.api import (
    DEFAULT_MAX_CONNECTIONS,
    Adapter,
    AdapterContext,
    Bool,
    Command,
    CommandFault,
    Int,
    LoopThread,
    Num,
    OptionsModel,
    Reply,
    Str,
    option,
    site_schema_roots,
)
from coupler.canonical import FormatIndicator
from coupler.canonical.errors import CouplerError
from coupler.translators.soap import read_wsdl
from coupler.translators.soap.wsdl import Port
from coupler.translators.soap.wssecurity import (
    TokenPolicy,
)
from coupler.translators.xml.security import MAX_MODEL_PARTICLES

from .client import SoapClient
from .codec import BoundOperation, Schemas, bind_port
from .server import SoapServer, _soap_action  # noqa: F401  (_soap_action: tests read it here)

if TYPE_CHECKING:
    import aiohttp
    from aiohttp import web
else:  # imported when an adapter starts: every coupler command loads the plugins
    aiohttp = lazy_module("aiohttp")
    web = lazy_module("aiohttp.web")

class SoapConfigError(CouplerError):
    """An option of the SOAP adapter that is missing or wrong."""


class SoapOptions(OptionsModel):
    """``[adapters.options]`` of ``type = "soap"`` (docs/adapters/soap.md)."""

    mode: Literal["server", "client"] = option("`server` serves the WSDL's operations; `client` calls them.")
    wsdl: Str = option("The WSDL file (relative to site.toml).")
    catalog: Str | None = option(
        "An OASIS XML catalog mapping the http(s) locations the WSDL imports to local files (relative to "
        "site.toml); nothing is fetched over the network.", default=None)
    schema_roots: list[Str] = option(
        "Directories (relative to site.toml) the WSDL's imports and includes may read besides the WSDL's own "
        "directory, the site's folder (the directory of site.toml) and its `[schemas] paths`, e.g. the root of a "
        "schema distribution kept elsewhere that the WSDL names with `../`; a location elsewhere is refused, not "
        "opened.", default_factory=list)
    max_model_particles: Int = option(
        "The most particles (elements, wildcards) one content model of the WSDL's schemas may have; a wider one "
        "is refused (0: no limit): xmlschema checks a content model in time quadratic in its particles "
        "(4,000: 38 s, 8,000: 8 minutes).", default=MAX_MODEL_PARTICLES, ge=0)
    service: Str | None = option("The WSDL service (default: the first with SOAP ports).", default=None)
    port: Str | None = option("The WSDL port (default: the service's SOAP 1.1 and 1.2 ports).", default=None)
    soap_version: Literal["1.1", "1.2"] | None = option(
        "Client: the SOAP version spoken (default: 1.1 when the service has a 1.1 port).", default=None)
    target: Str | None = option("Server: the command target that serves the requests (required).", default=None,
                                validate_default=True)
    command_channel: Str = option("Server: the command channel of `target`.", default="coupler.commands")
    host: Str = option("Server: the address to listen on.", default="127.0.0.1")
    listen_port: Int = option("Server: the TCP port (0: any free one).", default=0, ge=0, le=65535)
    path: Str | None = option("Server: the URL path (default: `/SERVICE`).", default=None)
    max_request_bytes: Int = option("Server: larger request bodies are answered HTTP 413 unread.",
                                    default=1024 * 1024, ge=1)
    read_timeout: Num = option(
        "Server: seconds to receive a whole request body, however slowly it comes (then HTTP 408, the "
        "connection closed).", default=30.0, gt=0)
    keepalive_timeout: Num = option(
        "Server: seconds a connection may stay open without a request in progress: a new one to send its "
        "request line and headers, however slowly they come, a kept-alive one between requests (then closed; "
        "aiohttp's `web.run_app` default).", default=75.0, gt=0)
    max_connections: Int = option(
        "Server: connections open at once; a new one beyond is answered 503 and closed at once, so the "
        "clients connected go on being served (one WARNING line every 10 s while it lasts).", default=DEFAULT_MAX_CONNECTIONS, ge=1)
    users: dict[str, Str] = option(
        "Server: user name -> password; every request must then carry a WS-Security UsernameToken of one "
        "of them.", default_factory=dict)
    username_token_ttl: Num = option(
        "Server: seconds a UsernameToken's `Created` may lie in the past (WSS4J `utTimeToLive`); older is "
        "refused, `wsse:MessageExpired`.", default=TokenPolicy.ttl, gt=0)
    username_token_future_ttl: Num = option(
        "Server: seconds it may lie in the future, the clock-skew allowance (WSS4J `utFutureTimeToLive`). "
        "Nonces are remembered site-wide for both together; one used again is refused.",
        default=TokenPolicy.future_ttl, ge=0)
    allow_password_text_over_http: Bool = option(
        "Server: accept a PasswordText token on a connection without TLS.",
        default=TokenPolicy.allow_password_text_over_http)
    address: Str | None = option("Client: the endpoint URL (default: the WSDL port's address).", default=None)
    operation: Str | None = option(
        "Client: the operation documents from the adapter's channel call (default: their `soap.operation` "
        "property, or the only operation).", default=None)
    timeout: Num = option("Client: seconds per call in all (the whole answer, however slowly it comes).",
                          default=30.0, gt=0)
    retries: Int = option("Client: attempts after a transport error (never after a SOAP fault).", default=2, ge=0)
    max_response_bytes: Int = option(
        "Client: the largest answer read (after gzip/deflate are inflated); a larger one, or a Content-Length "
        "claiming more, fails the call without being read whole.", default=10 * 1024 * 1024, gt=0)
    username: Str | None = option("Client: the WS-Security UsernameToken user.", default=None)
    password: Str | None = option("Client: its password.", default=None)
    password_digest: Bool = option("Client: send PasswordDigest instead of PasswordText.", default=False)
    addressing: Bool = option("WS-Addressing headers on requests and responses.", default=False)
    reply_addresses: list[Str] = option(
        "Server: addresses (URL prefixes) a request's WS-Addressing ReplyTo or FaultTo may name; the response "
        "(or fault) is then POSTed there and the request answered 202. A request naming any other address is "
        "refused with the fault wsa:OnlyAnonymousAddressSupported: the server never calls out to an address a "
        "client chose. Empty: responses go back on the request's connection only.",
        default_factory=list)
    formats: dict[str, Str] = option(
        "Format indicators (NAME@V) of operations' documents: `{ OPERATION = ..., OPERATIONResponse = ... }`.",
        default_factory=dict)
    tls: TLSOptions | None = option("TLS: HTTPS server (`tls.cert`, `tls.key`) or client settings (see `tls.*`).",
                                    default=None)

    @field_validator("target")
    @classmethod
    def _server_has_a_target(cls, target: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("mode") == "server" and not target:
            raise ValueError("the command target that serves the requests is required")
        return target


class SoapAdapter(Adapter):
    """Channel Adapter for SOAP over HTTP (site.toml ``type = "soap"``)."""

    type_name: ClassVar[str] = "soap"
    commands: ClassVar[tuple[str, ...]] = ("send", "request", "ping", "describe")
    directions: ClassVar[tuple[str, ...]] = ("inbound", "outbound")
    path_options: ClassVar[tuple[str, ...]] = ("wsdl", "catalog", "schema_roots", "tls.cert", "tls.key", "tls.ca")
    options_model = SoapOptions

    def __init__(self, name: str, options: dict[str, Any], context: AdapterContext | None = None):
        super().__init__(name, options, context)
        o: SoapOptions = self.parse_options(name, self.options)
        self.settings = o
        self.mode = o.mode
        self.wsdl_path = Path(o.wsdl)
        # a site's folder and schema directories are roots too (a distribution's wsdl/ imports ../xsd/)
        roots: list[str | Path] = [*site_schema_roots(context), *o.schema_roots]
        self.description = read_wsdl(self.wsdl_path, catalog=o.catalog, schema_roots=roots,
                                     max_model_particles=o.max_model_particles)
        self.schemas = Schemas(self.description)
        where = f"adapters[{name}].options"
        # a WSDL without services (WS-Notification style): its bindings, at options.address
        services = [s for s in self.description.callable_services() if o.service in (None, s.name)]
        if not services:
            raise SoapConfigError(f"no SOAP service {o.service or ''} in {self.wsdl_path}", where=f"{where}.service")
        self.service = services[0]
        self.ports: dict[str, Port] = {}
        for port in self.service.ports:
            if o.port in (None, port.name):
                self.ports.setdefault(port.soap_version, port)
        if not self.ports:
            raise SoapConfigError(f"no port {o.port!r} in service {self.service.name}", where=f"{where}.port")
        self.operations = {v: {op.name: op for op in bind_port(self.schemas, p)} for v, p in self.ports.items()}
        #: server: operations whose request (an empty body) cannot be told apart from another's
        self.unserved: dict[str, set[str]] = {v: set() for v in self.ports}
        if self.mode == "server":
            for v, port in self.ports.items():
                self.unserved[v] = self._indistinct_empty_requests(port, self.operations[v])
        self.target = o.target
        self.timeout = o.timeout
        self.retries = o.retries
        self.max_response_bytes = o.max_response_bytes
        self.command_channel = o.command_channel
        self.users: dict[str, str] = dict(o.users)
        self.username = o.username
        self.password = o.password
        self.digest = o.password_digest
        self.token_policy = TokenPolicy(
            ttl=o.username_token_ttl,
            future_ttl=o.username_token_future_ttl,
            allow_password_text_over_http=o.allow_password_text_over_http,
        )
        self.tls: TLSOptions | None = o.tls
        if self.tls is not None:
            self.tls._adapter = name
        self.addressing = o.addressing
        try:
            self.formats = {k: FormatIndicator.parse(v, "application/json") for k, v in o.formats.items()}
        except CouplerError as exc:
            raise SoapConfigError(exc.message, where=f"{where}.formats") from None
        self.version = o.soap_version or ("1.1" if "1.1" in self.ports else "1.2")
        self.host = o.host
        self.listen_port = o.listen_port
        self.path = o.path or f"/{self.service.name}"
        self.endpoint = o.address
        self.max_request_bytes = o.max_request_bytes
        self.max_response_bytes = o.max_response_bytes
        self.read_timeout = o.read_timeout
        self.keepalive_timeout = o.keepalive_timeout
        self.max_connections = o.max_connections
        #: the operation documents from the adapter's channel call (default: their soap.operation)
        self.default_operation = o.operation or ""
        self.url: str | None = None
        self._loop: LoopThread | None = None
        #: the two halves: the server (inbound) or the client (outbound), as ``mode`` says
        self.server: SoapServer | None = SoapServer(self) if self.mode == "server" else None
        self.client: SoapClient | None = SoapClient(self) if self.mode == "client" else None

    def _indistinct_empty_requests(self, port: Port, ops: dict[str, BoundOperation]) -> set[str]:
        """The operations whose request is an empty SOAP body and whose SOAPAction is missing or
        another such operation's: a server cannot tell which one a request is for, so it does
        not serve them (each refused with one line; the other operations are served). One such
        operation alone takes every empty body, whatever its SOAPAction."""
        empty = [op for op in ops.values() if op.empty_request]
        if len(empty) < 2:
            return set()
        refused = set()
        for op in empty:
            action = op.operation.soap_action or ""
            twins = [o.name for o in empty if o is not op and (o.operation.soap_action or "") == action]
            if action and not twins:
                continue
            refused.add(op.name)
            why = f"its SOAPAction {action!r} is also that of {', '.join(twins)}" if action else "it has no SOAPAction"
            self.logger.warning(
                "%s: binding %s operation %s is not served: its request is an empty SOAP body (its input message has "
                "no part) and %s, so a request cannot be told apart from the others (give each operation without "
                "input parts its own soapAction in the WSDL)",
                op.operation.where or self.wsdl_path, port.binding.rsplit("}", 1)[-1], op.name, why)
        return refused

    @property
    def logger(self) -> logging.Logger:
        return self.context.logger if self.context is not None else logging.getLogger(f"coupler.adapter.{self.name}")

    def _format(self, op: str, suffix: str) -> FormatIndicator:
        """The format of an operation's request (suffix "") or response documents."""
        fmt = self.formats.get(f"{op}{suffix}")
        if fmt is None and suffix == "" and self.format is not None:
            fmt = self.format
        return fmt or FormatIndicator(f"soap.{op}{suffix}", 1, "application/json")

    def supported_directions(self) -> tuple[str, ...]:
        """A server takes requests in, a client calls out."""
        return ("inbound",) if self.mode == "server" else ("outbound",)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self._loop = LoopThread(f"soap-{self.name}").start()
        if self.server is not None:
            self.url = self.server.start(self._loop)
            self.logger.info("SOAP adapter %s serving %s (WSDL at %s?wsdl)", self.name, self.url, self.url)
        elif self.client is not None:
            address = self.endpoint or self.ports[self.version].address
            if not address:
                raise SoapConfigError("the WSDL port has no address; set options.address", where=f"adapter {self.name}: options.address")
            self.url = address
            self.client.start(address)

    def stop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is None:
            return
        try:
            for half in (self.server, self.client):
                if half is not None:
                    half.stop(loop)
        finally:
            loop.stop()

    # -- client ------------------------------------------------------------------------------

    def on_request(self, command: Command) -> Reply:
        return self._client().request(command)

    def on_send(self, command: Command) -> Reply:
        return self._client().send(command)

    def deliver(self, envelope: Any) -> None:
        self._client().deliver(envelope)

    def _client(self) -> SoapClient:
        if self.client is None or self._loop is None:
            raise CommandFault(f"SOAP adapter {self.name!r} is a server; it cannot call operations", code="unsupported")
        return self.client

    def health(self) -> dict[str, Any]:
        health = super().health()
        if self.server is not None and self.server.connections is not None:
            health["connections"] = self.server.connections.health()
        return health

    def describe(self) -> dict[str, Any]:
        data = super().describe()
        data.update(
            mode=self.mode,
            url=self.url,
            wsdl=str(self.wsdl_path),
            service=self.service.name,
            operations=sorted({name for ops in self.operations.values() for name in ops}),
            soap_versions=sorted(self.operations),
        )
        return data
