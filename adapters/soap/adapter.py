"""The SOAP Channel Adapter: serve a WSDL's operations (inbound) or call them (outbound).

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

import asyncio
import logging
import re
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from lxml import etree
from pydantic import ValidationInfo, field_validator

from coupler.adapters.common.lazy import lazy_module
from coupler.adapters.common.tls import TLSOptions
from coupler.adapters.socket.bus import request_command
from coupler.adapters.socket.loop import LoopThread
from coupler.bus.api import (
    Adapter,
    AdapterContext,
    Bool,
    Command,
    CommandFault,
    Document,
    Int,
    Num,
    OptionsModel,
    Reply,
    Str,
    option,
)
from coupler.canonical import FormatIndicator
from coupler.canonical.errors import CouplerError, describe_exception
from coupler.canonical.tracecontext import TRACEPARENT, TraceContext
from coupler.canonical.tracecontext import current as current_trace
from coupler.translators.soap import Addressing, SoapFault, UsernameToken, read_wsdl, unwrap, wrap
from coupler.translators.soap.addressing import ANONYMOUS, NONE
from coupler.translators.soap.envelope import CONTENT_TYPES
from coupler.translators.soap.wsdl import SOAP11_BINDING, SOAP12_BINDING, XS, Port
from coupler.translators.soap.wssecurity import (
    SecurityError,
    TokenExpired,
    TokenPolicy,
    check_token,
    replay_key,
)
from coupler.translators.xml.security import parse_document

from .codec import BoundOperation, Schemas, SoapCodecError, bind_port, from_document, to_document

if TYPE_CHECKING:
    import aiohttp
    from aiohttp import web
else:  # imported when an adapter starts: every coupler command loads the plugins
    aiohttp = lazy_module("aiohttp")
    web = lazy_module("aiohttp.web")

SENDER_CODES = ("invalid", "unsupported", "unserved")
FAULT_NS = "urn:coupler:fault"
WSSE_FAILED = "wsse:FailedAuthentication"
WSSE_EXPIRED = "wsse:MessageExpired"
#: WS-Addressing 1.0 SOAP binding 6.4.1: a non-anonymous ReplyTo/FaultTo this endpoint does not serve
WSA_ONLY_ANONYMOUS = "wsa:OnlyAnonymousAddressSupported"

_ACTION = re.compile(r';\s*action\s*=\s*"?([^";]*)"?', re.IGNORECASE)


def _soap_action(request: web.Request, version: str) -> str:
    """The request's SOAPAction: the header (SOAP 1.1) or the ``action`` parameter of the
    Content-Type (SOAP 1.2)."""
    if version == "1.1":
        return request.headers.get("SOAPAction", "").strip().strip('"')
    found = _ACTION.search(request.headers.get("Content-Type", ""))
    return found.group(1) if found else ""


class SoapConfigError(CouplerError):
    """An option of the SOAP adapter that is missing or wrong."""


class _NonceMemory:
    """The nonces seen, for an adapter run without a bus (the bus keeps them in the site's store)."""

    def __init__(self) -> None:
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def remember(self, key: str, ttl: float) -> bool:
        now = time.monotonic()
        with self._lock:
            if len(self._seen) > 10_000:
                self._seen = {k: t for k, t in self._seen.items() if t > now}
            if self._seen.get(key, 0.0) > now:
                return False
            self._seen[key] = now + ttl
            return True


class SoapOptions(OptionsModel):
    """``[adapters.options]`` of ``type = "soap"`` (docs/adapters/soap.md)."""

    mode: Literal["server", "client"] = option("`server` serves the WSDL's operations; `client` calls them.")
    wsdl: Str = option("The WSDL file (relative to site.toml).")
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
    timeout: Num = option("Client: seconds per call.", default=30.0, gt=0)
    retries: Int = option("Client: attempts after a transport error (never after a SOAP fault).", default=2, ge=0)
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
    path_options: ClassVar[tuple[str, ...]] = ("wsdl", "tls.cert", "tls.key", "tls.ca")
    options_model = SoapOptions

    def __init__(self, name: str, options: dict[str, Any], context: AdapterContext | None = None):
        super().__init__(name, options, context)
        o: SoapOptions = self.parse_options(name, self.options)
        self.settings = o
        self.mode = o.mode
        self.wsdl_path = Path(o.wsdl)
        self.description = read_wsdl(self.wsdl_path)
        self.schemas = Schemas(self.description)
        where = f"adapters[{name}].options"
        services = [s for s in self.description.services if o.service in (None, s.name) and s.ports]
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
        self._nonces = _NonceMemory()
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
        #: the operation documents from the adapter's channel call (default: their soap.operation)
        self.default_operation = o.operation or ""
        self.url: str | None = None
        self._loop: LoopThread | None = None
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._client_ssl: Any = None

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
        if self.mode == "server":
            self._executor = ThreadPoolExecutor(16, thread_name_prefix=f"soap-{self.name}-bus")
            self.url = self._loop.run(self._start_server(), timeout=30)
            self.logger.info("SOAP adapter %s serving %s (WSDL at %s?wsdl)", self.name, self.url, self.url)
        else:
            address = self.endpoint or self.ports[self.version].address
            if not address:
                raise SoapConfigError("the WSDL port has no address; set options.address", where=f"adapter {self.name}: options.address")
            self.url = address
            self._client_ssl = self.tls.client_context() if self.tls else None
            if self.username and not self.digest and address.startswith("http://"):
                self.logger.warning(
                    "SOAP adapter %s sends the password of %s as PasswordText over plain HTTP to %s; "
                    "use an https:// address or password_digest = true", self.name, self.username, address,
                )

    def stop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is None:
            return
        try:
            if self._runner is not None:
                loop.run(self._runner.cleanup(), timeout=15)
            if self._session is not None:
                loop.run(self._session.close(), timeout=15)
        finally:
            loop.stop()
            if self._executor is not None:
                self._executor.shutdown(wait=True, cancel_futures=True)

    # -- server ------------------------------------------------------------------------------

    async def _start_server(self) -> str:
        app = web.Application(client_max_size=self.max_request_bytes)
        app.router.add_get(self.path, self._get)
        app.router.add_post(self.path, self._post)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        ssl_context = self.tls.server_context() if self.tls else None
        site = web.TCPSite(self._runner, self.host, self.listen_port, ssl_context=ssl_context)
        try:
            await site.start()
        except OSError as exc:
            raise CouplerError(f"cannot listen on {self.host}:{self.listen_port}: {exc.strerror or exc}") from exc
        server = site._server
        assert server is not None
        host, port = server.sockets[0].getsockname()[:2]  # type: ignore[attr-defined]
        return self.endpoint or f"{'https' if ssl_context else 'http'}://{host}:{port}{self.path}"

    async def _get(self, request: web.Request) -> web.Response:
        if "xsd" in request.query:
            return self._xsd(request.query["xsd"])
        if "wsdl" not in request.query:
            return web.Response(status=404, text="GET ?wsdl for the service description\n")
        return web.Response(body=self._wsdl_text(), content_type="text/xml", charset="utf-8")

    def _wsdl_text(self) -> bytes:
        tree = parse_document(self.wsdl_path)
        for tag in (f"{{{SOAP11_BINDING}}}address", f"{{{SOAP12_BINDING}}}address"):
            for elem in tree.iter(tag):
                elem.set("location", self.url or "")
        for elem in tree.iter(f"{{{XS}}}import", f"{{{XS}}}include"):
            location = elem.get("schemaLocation")
            if location and "://" not in location:
                elem.set("schemaLocation", f"{self.url}?xsd={location}")
        return etree.tostring(tree, xml_declaration=True, encoding="UTF-8")

    def _xsd(self, name: str) -> web.Response:
        """A schema the WSDL imports, from beside the WSDL (only files it names)."""
        base = self.wsdl_path.parent.resolve()
        target = (base / name).resolve()
        known = {e.get("schemaLocation") for e in parse_document(self.wsdl_path).iter(f"{{{XS}}}import", f"{{{XS}}}include")}
        if name not in known or base not in target.parents or not target.is_file():
            return web.Response(status=404, text="no such schema\n")
        tree = parse_document(target)
        for elem in tree.iter(f"{{{XS}}}import", f"{{{XS}}}include"):
            location = elem.get("schemaLocation")
            if location and "://" not in location:
                elem.set("schemaLocation", f"{self.url}?xsd={location}")
        return web.Response(body=etree.tostring(tree, xml_declaration=True, encoding="UTF-8"), content_type="text/xml", charset="utf-8")

    async def _post(self, request: web.Request) -> web.Response:
        """One SOAP request. Whatever it raises is contained to it: it goes to the Invalid
        Message Channel with its cause, the caller gets a Receiver fault, the adapter goes on."""
        body = await request.read()  # too large: aiohttp answers 413 (client_max_size)
        version = "1.2" if request.content_type == "application/soap+xml" else "1.1"
        try:
            callback: list[tuple[str | None, str | None]] = []  # where the request asks its answer go
            response = await self._answer(request, body, version, callback)
            if not callback:
                return response
            [(reply_to, fault_to)] = callback
            target = fault_to if response.status >= 400 and fault_to else reply_to
            if target is None:  # only FaultTo was given and this is no fault: the usual answer
                return response
            await self._send_to_reply_address(target, response)
            return web.Response(status=202)
        except Exception as exc:
            cause = describe_exception(exc)  # type, message and the line of code that raised
            self.logger.error("SOAP request from %s failed: %s", request.remote, cause)
            self.logger.debug("the error above in full", exc_info=exc)
            await self._invalid(body, f"SOAP request from {request.remote} failed while being handled: {cause}")
            told = f"internal error ({type(exc).__name__}); the request is kept for the operator"
            return self._fault_response(version, SoapFault("Receiver", told))

    async def _answer(self, request: web.Request, body: bytes, version: str,
                      callback: list[tuple[str | None, str | None]]) -> web.Response:
        try:
            message = unwrap(body, name="request")
        except CouplerError as exc:
            await self._invalid(body, f"SOAP request from {request.remote}: not a SOAP envelope: {exc}")
            return self._fault_response(version, SoapFault("Sender", f"not a SOAP envelope: {exc}"))
        version = message.version
        if version not in self.operations:
            return self._fault_response(version, SoapFault("VersionMismatch", f"this endpoint speaks SOAP {', '.join(self.operations)}"))
        if self.users:
            refused = await self._authenticate(message.security, secure=request.secure, remote=request.remote)
            if refused is not None:
                return self._fault_response(version, refused)
        if message.addressing is not None:
            addresses = self._reply_addresses(message.addressing, request.remote)
            if isinstance(addresses, SoapFault):
                return self._fault_response(version, addresses)
            if addresses is not None:
                callback.append(addresses)
        op = self._find_operation(version, message.body, _soap_action(request, version))
        if op is None:
            got = message.body[0].tag if message.body else "an empty body"
            await self._invalid(body, f"SOAP request from {request.remote}: no operation of this service takes {got}")
            return self._fault_response(version, SoapFault("Sender", f"no operation of this service takes {got}"))
        try:
            assert op.input is not None
            record = op.input.decode(message.body)
        except CouplerError as exc:
            await self._invalid(body, f"SOAP request from {request.remote}: {op.name}: invalid request: {exc}")
            return self._fault_response(version, SoapFault("Sender", f"{op.name}: invalid request: {exc}"))
        document = to_document(record, self._format(op.name, ""))
        document.properties["soap.operation"] = op.name
        caller = TraceContext.parse(request.headers.get(TRACEPARENT))
        if caller is not None:  # continue the caller's trace (W3C Trace Context)
            document.properties[TRACEPARENT] = caller.child().header
        loop = asyncio.get_running_loop()
        try:
            if op.output is None:
                await loop.run_in_executor(self._executor, self._publish, document)
                return web.Response(status=202)
            answer = await loop.run_in_executor(self._executor, self._ask, document, op.name)
        except CommandFault as fault:
            return self._fault_response(version, self._bus_fault(fault))
        except CouplerError as exc:
            return self._fault_response(version, SoapFault("Receiver", f"the bus failed: {exc}"))
        reply_addressing = None
        if message.addressing is not None:
            reply_addressing = Addressing(
                message_id=f"urn:uuid:{uuid.uuid4()}",
                relates_to=message.addressing.message_id,
                action=(op.operation.soap_action or op.name) + "Response",
            )
        try:
            if answer.details.get("soap.fault"):
                detail = op.fault_detail(answer.details["soap.fault"], answer.documents[0]) if answer.documents else None
                declared = SoapFault(answer.details.get("soap.fault_code", "Sender"), answer.details.get("soap.fault_reason", answer.details["soap.fault"]), detail=detail)
                return self._fault_response(version, declared)
            assert op.output is not None
            if answer.documents:
                elements = op.output.encode(from_document(answer.documents[0]))
            elif op.output.empty:  # the response is an empty body
                elements = []
            else:
                raise SoapCodecError(f"the reply to {op.name} carries no document")
        except CouplerError as exc:
            self.logger.error("reply to %s cannot be written as SOAP: %s", op.name, exc)
            return self._fault_response(version, SoapFault("Receiver", f"the reply cannot be written: {exc}"))
        payload = wrap(elements, version=version, addressing=reply_addressing)
        return web.Response(body=payload, headers={"Content-Type": CONTENT_TYPES[version]})

    async def _authenticate(self, token: UsernameToken | None, *, secure: bool, remote: str | None) -> SoapFault | None:
        """None when ``token`` authenticates a user with a fresh, unused nonce; else the fault."""
        try:
            check_token(token, self.users.get, self.token_policy, secure=secure)
            assert token is not None
            key = replay_key(token)
            if key is not None and not await asyncio.get_running_loop().run_in_executor(self._executor, self._remember, key):
                raise SecurityError(f"user {token.username!r}: the nonce was used before (a replayed request)")
        except SecurityError as exc:
            self.logger.warning("SOAP request from %s refused: %s", remote, exc)
            if isinstance(exc, TokenExpired):
                return SoapFault("Sender", "the security token has expired", subcode=WSSE_EXPIRED)
            return SoapFault("Sender", "authentication failed", subcode=WSSE_FAILED)
        return None

    def _remember(self, key: str) -> bool:
        """Record a nonce for the freshness window: False when it was seen within it. In the
        site's store when the adapter runs in a daemon (every daemon of a site shares it)."""
        if self.context is None:
            return self._nonces.remember(key, self.token_policy.window)
        return self.context.remember("wsse-nonce", key, self.token_policy.window)

    def _find_operation(self, version: str, body: list[Any], action: str) -> BoundOperation | None:
        ops = self.operations[version].values()
        if not body:  # an operation whose input message has no part: by SOAPAction when there are several
            empty = [op for op in ops if op.empty_request]
            if len(empty) == 1:
                return empty[0]
            if empty:
                return next((op for op in empty if action and op.operation.soap_action == action
                             and op.name not in self.unserved[version]), None)
        tag = body[0].tag if body else None
        for op in ops:
            if tag is not None and op.request_element == tag:
                return op
        return next((op for op in ops if action and op.operation.soap_action == action), None)

    async def _invalid(self, body: bytes, reason: str) -> None:
        """Keep a request the adapter cannot read in the Invalid Message Channel (never fails)."""
        if self.context is None:
            return
        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, self.context.invalid, body, reason)
        except Exception as exc:  # the store failing must not take the adapter down either
            self.logger.error("cannot record an invalid SOAP request (%s): %s", reason, exc)

    def _publish(self, document: Document) -> None:
        assert self.context is not None
        self.context.publish(document.to_envelope(origin=self.name), self.channel)

    def _ask(self, document: Document, operation: str) -> Any:
        assert self.context is not None and self.target
        return request_command(
            self.context, document, target=self.target, operation=operation,
            timeout=self.timeout, command_channel=self.command_channel,
        )

    def _bus_fault(self, fault: CommandFault) -> SoapFault:
        code = "Sender" if fault.code in SENDER_CODES else "Receiver"
        detail = f'<cf:fault xmlns:cf="{FAULT_NS}"><cf:code>{fault.code}</cf:code></cf:fault>'
        return SoapFault(code, fault.message, detail=detail)

    def _reply_addresses(self, addressing: Addressing, remote: str | None) -> SoapFault | tuple[str | None, str | None] | None:
        """Where the response and a fault go: None on the request's connection (anonymous or
        none); ``(reply_to, fault_to)`` when they name addresses the site allows
        (``reply_addresses``); else the fault refusing the request (the server never calls out
        to an address a client chose)."""
        named = {}
        for header, address in (("ReplyTo", addressing.reply_to), ("FaultTo", addressing.fault_to)):
            if address and address not in (ANONYMOUS, NONE):
                named[header] = address
        if not named:
            return None
        for header, address in named.items():
            if not any(address.startswith(prefix) for prefix in self.settings.reply_addresses):
                self.logger.warning("SOAP request from %s refused: its %s names %r, not an address this endpoint "
                                    "may call (reply_addresses)", remote, header, address[:200])
                return SoapFault("Sender", f"{header} {address[:200]!r}: this endpoint answers on the request's "
                                 "connection only (anonymous)", subcode=WSA_ONLY_ANONYMOUS)
        return named.get("ReplyTo"), named.get("FaultTo")

    async def _send_to_reply_address(self, address: str, response: web.Response) -> None:
        """POST ``response`` (a SOAP envelope) to an allowed non-anonymous reply address."""
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            async with session.post(address, data=response.body, headers={"Content-Type": response.content_type}) as r:
                if r.status >= 300:
                    raise CouplerError(f"the reply address {address} answered HTTP {r.status}")

    def _fault_response(self, version: str, fault: SoapFault) -> web.Response:
        status = 400 if version == "1.2" and fault.code == "Sender" else 500
        try:
            payload = wrap(fault=fault, version=version)
        except ValueError:  # a reason holding characters XML cannot carry
            fault.reason = "".join(c if c in "\t\n\r" or " " <= c <= "\ud7ff" or "\ue000" <= c <= "\ufffd" else "?" for c in fault.reason)
            fault.detail = None
            payload = wrap(fault=fault, version=version)
        return web.Response(status=status, body=payload, headers={"Content-Type": CONTENT_TYPES[version]})

    # -- client ------------------------------------------------------------------------------

    def _client_op(self, name: str) -> BoundOperation:
        if self.mode != "client" or self._loop is None:
            raise CommandFault(f"SOAP adapter {self.name!r} is a server; it cannot call operations", code="unsupported")
        ops = self.operations[self.version]
        if not name and len(ops) == 1:
            return next(iter(ops.values()))
        if name not in ops:
            raise CommandFault(f"the service has no operation {name!r} (it has {', '.join(ops)})", code="invalid")
        return ops[name]

    def on_request(self, command: Command) -> Reply:
        op = self._client_op(command.operation)
        if command.document is None:
            raise CommandFault("a request command needs a document", code="invalid")
        timeout = min(command.timeout or self.timeout, self.timeout)
        body = self._call(op, command.document, timeout)
        if op.output is None:
            return Reply(details={"status": "sent"})
        try:
            record = op.output.decode(body)
        except CouplerError as exc:
            raise CommandFault(f"the response of {op.name} does not fit the WSDL: {exc}", code="failed") from None
        return Reply(documents=[to_document(record, self._format(op.name, "Response"))], details={"status": "answered"})

    def on_send(self, command: Command) -> Reply:
        assert command.document is not None
        op = self._client_op(command.operation or command.document.properties.get("soap.operation", ""))
        body = self._call(op, command.document, self.timeout)
        if op.output is None:
            return Reply(details={"status": "delivered"})
        try:  # a request-response operation: its response is the reply document
            record = op.output.decode(body)
        except CouplerError as exc:
            raise CommandFault(f"the response of {op.name} does not fit the WSDL: {exc}", code="failed") from None
        return Reply(documents=[to_document(record, self._format(op.name, "Response"))], details={"status": "delivered"})

    def deliver(self, envelope: Any) -> None:
        document = Document.from_envelope(envelope)
        op = self._client_op(document.properties.get("soap.operation") or self.default_operation)
        self._call(op, document, self.timeout)

    def _call(self, op: BoundOperation, document: Document, timeout: float) -> list[Any]:
        assert op.input is not None and self._loop is not None
        try:
            elements = op.input.encode(from_document(document))
        except CouplerError as exc:
            raise CommandFault(f"{op.name}: the document does not fit the request message: {exc}", code="invalid") from None
        security = UsernameToken(self.username, self.password, digest=self.digest) if self.username else None
        addressing = Addressing(message_id=f"urn:uuid:{uuid.uuid4()}", action=op.operation.soap_action or op.name, to=self.url) if self.addressing else None
        payload = wrap(elements, version=self.version, security=security, addressing=addressing)
        headers = {"Content-Type": CONTENT_TYPES[self.version]}
        # the message's trace goes on to the service (W3C Trace Context)
        parent = TraceContext.parse(document.properties.get(TRACEPARENT)) or current_trace()
        headers[TRACEPARENT] = (parent.child() if parent else TraceContext.new()).header
        action = op.operation.soap_action or ""
        if self.version == "1.1":
            headers["SOAPAction"] = f'"{action}"'
        elif action:
            headers["Content-Type"] += f'; action="{action}"'
        status, body = self._loop.run(self._post_with_retries(payload, headers, timeout), timeout=timeout * (self.retries + 1) + 5)
        try:
            message = unwrap(body, name=f"response of {op.name}")
        except CouplerError as exc:
            raise CommandFault(f"{self.url} answered HTTP {status} without a SOAP envelope: {exc}", code="failed") from None
        if message.fault is not None:
            f = message.fault
            code = "invalid" if f.code == "Sender" else "failed"
            detail = f" (detail: {f.detail})" if f.detail else ""
            raise CommandFault(f"SOAP fault {f.code}: {f.reason}{detail}", code=code)
        if status >= 300:
            raise CommandFault(f"{self.url} answered HTTP {status}", code="failed")
        return message.body

    async def _post_with_retries(self, payload: bytes, headers: dict[str, str], timeout: float) -> tuple[int, bytes]:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                async with self._session.post(
                    self.url or "", data=payload, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout),
                    ssl=self._client_ssl if self._client_ssl is not None else True,
                ) as response:
                    return response.status, await response.read()
            except TimeoutError:
                raise CommandFault(f"no answer from {self.url} within {timeout:g} s", code="timeout") from None
            except aiohttp.ClientConnectionError as exc:  # transport errors only are retried
                last = exc
                self.logger.info("calling %s failed (attempt %d): %s", self.url, attempt + 1, exc)
                if attempt < self.retries:
                    await asyncio.sleep(min(0.2 * 2**attempt, 2.0))
        raise CommandFault(f"cannot reach {self.url}: {last}", code="failed", hint="is the SOAP service running?")

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
