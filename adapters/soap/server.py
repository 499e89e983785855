"""The server half of the SOAP adapter (``mode = "server"``, inbound): an aiohttp server
that answers ``GET PATH?wsdl`` with the WSDL (every SOAP port's address rewritten to the real
endpoint, imported XSDs served at ``PATH?xsd=FILE``) and ``POST PATH`` with SOAP 1.1 or 1.2.
A request's body is translated to a record through the WSDL's XSD types and becomes a
``request`` command for ``target`` (or, one-way, a message on the adapter's channel, HTTP 202);
the Reply's first document becomes the SOAP response, a Fault a SOAP fault. Whatever one
request raises is contained to it (Invalid Message Channel, a Receiver fault).
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from lxml import etree

from coupler.adapters.common.lazy import lazy_module
from coupler.bus.api import (
    BodyRefused,
    CommandFault,
    ConnectionLimit,
    Document,
    LoopThread,
    bound_address,
    listen,
    read_body,
    request_command,
)
from coupler.canonical.errors import CouplerError, describe_exception
from coupler.canonical.serverlog import OneLineServerLog
from coupler.canonical.tracecontext import TRACEPARENT, TraceContext
from coupler.translators.soap import Addressing, SoapFault, UsernameToken, unwrap, wrap
from coupler.translators.soap.addressing import ANONYMOUS, NONE
from coupler.translators.soap.envelope import CONTENT_TYPES
from coupler.translators.soap.wsdl import SOAP11_BINDING, SOAP12_BINDING, XS
from coupler.translators.soap.wssecurity import (
    SecurityError,
    TokenExpired,
    check_token,
    replay_key,
)
from coupler.translators.xml.security import parse_document

from .codec import BoundOperation, SoapCodecError, from_document, to_document

if TYPE_CHECKING:
    import aiohttp
    from aiohttp import web
else:  # imported when an adapter starts: every coupler command loads the plugins
    aiohttp = lazy_module("aiohttp")
    web = lazy_module("aiohttp.web")


if TYPE_CHECKING:
    from .adapter import SoapAdapter

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



class SoapServer:
    """The inbound half of a :class:`~.adapter.SoapAdapter`: its HTTP server on the adapter's
    loop thread, the bus reached from a thread pool."""

    def __init__(self, adapter: SoapAdapter):
        self.a = adapter
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        self.connections: ConnectionLimit | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._nonces = _NonceMemory()

    def start(self, loop: LoopThread) -> str:
        """Listen; returns the endpoint's URL."""
        self._executor = ThreadPoolExecutor(16, thread_name_prefix=f"soap-{self.a.name}-bus")
        return loop.run(self._start_server(), timeout=30)

    def stop(self, loop: LoopThread) -> None:
        try:
            if self._listener is not None:
                self._listener.close()
            if self._runner is not None:
                loop.run(self._runner.cleanup(), timeout=15)
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=True, cancel_futures=True)

    async def _start_server(self) -> str:
        app = web.Application(client_max_size=self.a.max_request_bytes)
        app.router.add_get(self.a.path, self._get)
        app.router.add_post(self.a.path, self._post)
        # keepalive_timeout also bounds a new connection's wait for its headers (aiohttp arms it on
        # connect; AppRunner's own default is an hour)
        self._runner = web.AppRunner(app, access_log=None, keepalive_timeout=self.a.keepalive_timeout,
                                     logger=OneLineServerLog(self.a.logger, f"adapters[{self.a.name}]"))
        await self._runner.setup()
        ssl_context = self.a.tls.server_context() if self.a.tls else None
        try:
            self._listener, self.connections = await listen(self._runner, self.a.host, self.a.listen_port, ssl_context=ssl_context,
                                          max_connections=self.a.max_connections, logger=self.a.logger,
                                          where=f"adapters[{self.a.name}]")
        except OSError as exc:
            raise CouplerError(f"cannot listen on {self.a.host}:{self.a.listen_port}: {exc.strerror or exc}") from exc
        host, port = bound_address(self._listener)
        return self.a.endpoint or f"{'https' if ssl_context else 'http'}://{host}:{port}{self.a.path}"

    async def _get(self, request: web.Request) -> web.Response:
        if "xsd" in request.query:
            return self._xsd(request.query["xsd"])
        if "wsdl" not in request.query:
            return web.Response(status=404, text="GET ?wsdl for the service description\n")
        return web.Response(body=self._wsdl_text(), content_type="text/xml", charset="utf-8")

    def _wsdl_text(self) -> bytes:
        tree = parse_document(self.a.wsdl_path)
        for tag in (f"{{{SOAP11_BINDING}}}address", f"{{{SOAP12_BINDING}}}address"):
            for elem in tree.iter(tag):
                elem.set("location", self.a.url or "")
        for elem in tree.iter(f"{{{XS}}}import", f"{{{XS}}}include"):
            location = elem.get("schemaLocation")
            if location and "://" not in location:
                elem.set("schemaLocation", f"{self.a.url}?xsd={location}")
        return etree.tostring(tree, xml_declaration=True, encoding="UTF-8")

    def _xsd(self, name: str) -> web.Response:
        """A schema the WSDL imports, from beside the WSDL (only files it names)."""
        known = {e.get("schemaLocation") for e in parse_document(self.a.wsdl_path).iter(f"{{{XS}}}import", f"{{{XS}}}include")}
        if name not in known:  # first: a name the WSDL does not give (a NUL in it) is never a path
            return web.Response(status=404, text="no such schema\n")
        base = self.a.wsdl_path.parent.resolve()
        target = (base / name).resolve()
        if base not in target.parents or not target.is_file():
            return web.Response(status=404, text="no such schema\n")
        tree = parse_document(target)
        for elem in tree.iter(f"{{{XS}}}import", f"{{{XS}}}include"):
            location = elem.get("schemaLocation")
            if location and "://" not in location:
                elem.set("schemaLocation", f"{self.a.url}?xsd={location}")
        return web.Response(body=etree.tostring(tree, xml_declaration=True, encoding="UTF-8"), content_type="text/xml", charset="utf-8")

    async def _post(self, request: web.Request) -> web.Response:
        """One SOAP request. Whatever it raises is contained to it: it goes to the Invalid
        Message Channel with its cause, the caller gets a Receiver fault, the adapter goes on."""
        body = await self._read(request)
        if isinstance(body, web.Response):  # refused: too large, too slow, or the client went away
            return body
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
            self.a.logger.error("SOAP request from %s failed: %s", request.remote, cause)
            self.a.logger.debug("the error above in full", exc_info=exc)
            await self._invalid(body, f"SOAP request from {request.remote} failed while being handled: {cause}")
            told = f"internal error ({type(exc).__name__}); the request is kept for the operator"
            return self._fault_response(version, SoapFault("Receiver", told))

    async def _read(self, request: web.Request) -> bytes | web.Response:
        """The request's body, or the answer refusing it: 413 for a body (or a declared
        Content-Length) over ``max_request_bytes``, unread; 408 for one not received within
        ``read_timeout``. Either closes the connection."""
        try:
            return await read_body(request, self.a.max_request_bytes, self.a.read_timeout,
                                   limit_name="max_request_bytes", timeout_name="read_timeout")
        except BodyRefused as exc:
            if exc.kind == "lost":  # the client went away (or reset) in the middle of its body
                self.a.logger.info("SOAP request from %s dropped: %s", request.remote, exc.reason)
            else:
                self.a.logger.warning("SOAP request from %s refused: %s", request.remote, exc.reason)
            if exc.kind == "encoding":  # a body not in its Content-Encoding (not gzip, say): kept as invalid
                await self._invalid(b"", f"SOAP request from {request.remote}: {exc.reason}")
                version = "1.2" if request.content_type == "application/soap+xml" else "1.1"
                response = self._fault_response(version, SoapFault("Sender", exc.reason))
            else:
                response = web.Response(status=exc.status, text=exc.reason + "\n")
            response.force_close()  # the rest of the body is not read: the connection cannot be kept
            return response

    async def _answer(self, request: web.Request, body: bytes, version: str,
                      callback: list[tuple[str | None, str | None]]) -> web.Response:
        try:
            message = unwrap(body, name="request")
        except CouplerError as exc:
            await self._invalid(body, f"SOAP request from {request.remote}: not a SOAP envelope: {exc}")
            return self._fault_response(version, SoapFault("Sender", f"not a SOAP envelope: {exc}"))
        version = message.version
        if version not in self.a.operations:
            return self._fault_response(version, SoapFault("VersionMismatch", f"this endpoint speaks SOAP {', '.join(self.a.operations)}"))
        if self.a.users:
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
        document = to_document(record, self.a._format(op.name, ""))
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
            self.a.logger.error("reply to %s cannot be written as SOAP: %s", op.name, exc)
            return self._fault_response(version, SoapFault("Receiver", f"the reply cannot be written: {exc}"))
        payload = wrap(elements, version=version, addressing=reply_addressing)
        return web.Response(body=payload, headers={"Content-Type": CONTENT_TYPES[version]})

    async def _authenticate(self, token: UsernameToken | None, *, secure: bool, remote: str | None) -> SoapFault | None:
        """None when ``token`` authenticates a user with a fresh, unused nonce; else the fault."""
        try:
            check_token(token, self.a.users.get, self.a.token_policy, secure=secure)
            assert token is not None
            key = replay_key(token)
            if key is not None and not await asyncio.get_running_loop().run_in_executor(self._executor, self._remember, key):
                raise SecurityError(f"user {token.username!r}: the nonce was used before (a replayed request)")
        except SecurityError as exc:
            self.a.logger.warning("SOAP request from %s refused: %s", remote, exc)
            if isinstance(exc, TokenExpired):
                return SoapFault("Sender", "the security token has expired", subcode=WSSE_EXPIRED)
            return SoapFault("Sender", "authentication failed", subcode=WSSE_FAILED)
        return None

    def _remember(self, key: str) -> bool:
        """Record a nonce for the freshness window: False when it was seen within it. In the
        site's store when the adapter runs in a daemon (every daemon of a site shares it)."""
        if self.a.context is None:
            return self._nonces.remember(key, self.a.token_policy.window)
        return self.a.context.remember("wsse-nonce", key, self.a.token_policy.window)

    def _find_operation(self, version: str, body: list[Any], action: str) -> BoundOperation | None:
        ops = self.a.operations[version].values()
        if not body:  # an operation whose input message has no part: by SOAPAction when there are several
            empty = [op for op in ops if op.empty_request]
            if len(empty) == 1:
                return empty[0]
            if empty:
                return next((op for op in empty if action and op.operation.soap_action == action
                             and op.name not in self.a.unserved[version]), None)
        tag = body[0].tag if body else None
        for op in ops:
            if tag is not None and op.request_element == tag:
                return op
        return next((op for op in ops if action and op.operation.soap_action == action), None)

    async def _invalid(self, body: bytes, reason: str) -> None:
        """Keep a request the adapter cannot read in the Invalid Message Channel (never fails)."""
        if self.a.context is None:
            return
        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, self.a.context.invalid, body, reason)
        except Exception as exc:  # the store failing must not take the adapter down either
            self.a.logger.error("cannot record an invalid SOAP request (%s): %s", reason, exc)

    def _publish(self, document: Document) -> None:
        assert self.a.context is not None
        self.a.context.publish(document.to_envelope(origin=self.a.name), self.a.channel)

    def _ask(self, document: Document, operation: str) -> Any:
        assert self.a.context is not None and self.a.target
        return request_command(
            self.a.context, document, target=self.a.target, operation=operation,
            timeout=self.a.timeout, command_channel=self.a.command_channel,
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
            if not any(address.startswith(prefix) for prefix in self.a.settings.reply_addresses):
                self.a.logger.warning("SOAP request from %s refused: its %s names %r, not an address this endpoint "
                                    "may call (reply_addresses)", remote, header, address[:200])
                return SoapFault("Sender", f"{header} {address[:200]!r}: this endpoint answers on the request's "
                                 "connection only (anonymous)", subcode=WSA_ONLY_ANONYMOUS)
        return named.get("ReplyTo"), named.get("FaultTo")

    async def _send_to_reply_address(self, address: str, response: web.Response) -> None:
        """POST ``response`` (a SOAP envelope) to an allowed non-anonymous reply address."""
        timeout = aiohttp.ClientTimeout(total=self.a.timeout)
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
