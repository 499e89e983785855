"""The client half of the SOAP adapter (``mode = "client"``, outbound): ``request`` and
``send`` commands and delivered messages call the remote operation through the WSDL, with a
timeout and retries on transport errors only; SOAP faults become error replies. Every call
sends ``traceparent``, a child of the message's trace.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

from coupler.adapters.common.lazy import lazy_module
from coupler.bus.api import (
    Command,
    CommandFault,
    Document,
    LoopThread,
    Reply,
)
from coupler.canonical.errors import CouplerError
from coupler.canonical.tracecontext import TRACEPARENT, TraceContext
from coupler.canonical.tracecontext import current as current_trace
from coupler.translators.soap import Addressing, UsernameToken, unwrap, wrap
from coupler.translators.soap.envelope import CONTENT_TYPES

from .codec import BoundOperation, from_document, to_document

if TYPE_CHECKING:
    import aiohttp
    from aiohttp import web
else:  # imported when an adapter starts: every coupler command loads the plugins
    aiohttp = lazy_module("aiohttp")
    web = lazy_module("aiohttp.web")


if TYPE_CHECKING:
    from .adapter import SoapAdapter


class SoapClient:
    """The outbound half of a :class:`~.adapter.SoapAdapter`: calls on the adapter's loop thread."""

    def __init__(self, adapter: SoapAdapter):
        self.a = adapter
        self._session: aiohttp.ClientSession | None = None
        self._client_ssl: Any = None

    def start(self, address: str) -> None:
        self._client_ssl = self.a.tls.client_context() if self.a.tls else None
        if self.a.username and not self.a.digest and address.startswith("http://"):
            self.a.logger.warning(
                "SOAP adapter %s sends the password of %s as PasswordText over plain HTTP to %s; "
                "use an https:// address or password_digest = true", self.a.name, self.a.username, address,
            )

    def stop(self, loop: LoopThread) -> None:
        if self._session is not None:
            loop.run(self._session.close(), timeout=15)

    def op(self, name: str) -> BoundOperation:
        if self.a.mode != "client" or self.a._loop is None:
            raise CommandFault(f"SOAP adapter {self.a.name!r} is a server; it cannot call operations", code="unsupported")
        ops = self.a.operations[self.a.version]
        if not name and len(ops) == 1:
            return next(iter(ops.values()))
        if name not in ops:
            raise CommandFault(f"the service has no operation {name!r} (it has {', '.join(ops)})", code="invalid")
        return ops[name]

    def request(self, command: Command) -> Reply:
        op = self.op(command.operation)
        if command.document is None:
            raise CommandFault("a request command needs a document", code="invalid")
        timeout = min(command.timeout or self.a.timeout, self.a.timeout)
        body = self._call(op, command.document, timeout)
        if op.output is None:
            return Reply(details={"status": "sent"})
        try:
            record = op.output.decode(body)
        except CouplerError as exc:
            raise CommandFault(f"the response of {op.name} does not fit the WSDL: {exc}", code="failed") from None
        return Reply(documents=[to_document(record, self.a._format(op.name, "Response"))], details={"status": "answered"})

    def send(self, command: Command) -> Reply:
        assert command.document is not None
        op = self.op(command.operation or command.document.properties.get("soap.operation", ""))
        body = self._call(op, command.document, self.a.timeout)
        if op.output is None:
            return Reply(details={"status": "delivered"})
        try:  # a request-response operation: its response is the reply document
            record = op.output.decode(body)
        except CouplerError as exc:
            raise CommandFault(f"the response of {op.name} does not fit the WSDL: {exc}", code="failed") from None
        return Reply(documents=[to_document(record, self.a._format(op.name, "Response"))], details={"status": "delivered"})

    def deliver(self, envelope: Any) -> None:
        document = Document.from_envelope(envelope)
        op = self.op(document.properties.get("soap.operation") or self.a.default_operation)
        self._call(op, document, self.a.timeout)

    def _call(self, op: BoundOperation, document: Document, timeout: float) -> list[Any]:
        assert op.input is not None and self.a._loop is not None
        try:
            elements = op.input.encode(from_document(document))
        except CouplerError as exc:
            raise CommandFault(f"{op.name}: the document does not fit the request message: {exc}", code="invalid") from None
        security = UsernameToken(self.a.username, self.a.password, digest=self.a.digest) if self.a.username else None
        addressing = Addressing(message_id=f"urn:uuid:{uuid.uuid4()}", action=op.operation.soap_action or op.name, to=self.a.url) if self.a.addressing else None
        payload = wrap(elements, version=self.a.version, security=security, addressing=addressing)
        headers = {"Content-Type": CONTENT_TYPES[self.a.version]}
        # the message's trace goes on to the service (W3C Trace Context)
        parent = TraceContext.parse(document.properties.get(TRACEPARENT)) or current_trace()
        headers[TRACEPARENT] = (parent.child() if parent else TraceContext.new()).header
        action = op.operation.soap_action or ""
        if self.a.version == "1.1":
            headers["SOAPAction"] = f'"{action}"'
        elif action:
            headers["Content-Type"] += f'; action="{action}"'
        status, body = self.a._loop.run(self._post_with_retries(payload, headers, timeout), timeout=timeout * (self.a.retries + 1) + 5)
        try:
            message = unwrap(body, name=f"response of {op.name}")
        except CouplerError as exc:
            raise CommandFault(f"{self.a.url} answered HTTP {status} without a SOAP envelope: {_one_line(str(exc))}",
                               code="failed") from None
        if message.version != self.a.version:  # as zeep: a 1.1 request is not answered by a 1.2 envelope
            raise CommandFault(f"{self.a.url} answered HTTP {status} with a SOAP {message.version} envelope to a "
                               f"SOAP {self.a.version} request", code="failed", hint="check soap_version")
        if message.fault is not None:
            f = message.fault
            code = "invalid" if f.code == "Sender" else "failed"
            detail = f" (detail: {f.detail})" if f.detail else ""
            raise CommandFault(_one_line(f"SOAP fault {f.code}: {f.reason}{detail}"), code=code)
        if status >= 300:
            raise CommandFault(f"{self.a.url} answered HTTP {status}", code="failed")
        return message.body

    async def _post_with_retries(self, payload: bytes, headers: dict[str, str], timeout: float) -> tuple[int, bytes]:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        last: Exception | None = None
        headers = {**headers, "Accept-Encoding": "gzip, deflate"}  # aiohttp inflates these a step at a time
        for attempt in range(self.a.retries + 1):
            try:
                async with self._session.post(
                    self.a.url or "", data=payload, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout),
                    ssl=self._client_ssl if self._client_ssl is not None else True,
                ) as response:
                    return response.status, await self._read(response)
            except TimeoutError:
                raise CommandFault(f"no answer from {self.a.url} within {timeout:g} s", code="timeout") from None
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:  # transport errors only
                last = exc  # are retried (a body cut short included)
                self.a.logger.info("calling %s failed (attempt %d): %s", self.a.url, attempt + 1, _one_line(str(exc)))
                if attempt < self.a.retries:
                    await asyncio.sleep(min(0.2 * 2**attempt, 2.0))
            except aiohttp.ClientError as exc:  # an answer that cannot be read (an encoding not asked for...)
                raise CommandFault(f"{self.a.url} answered what cannot be read: {type(exc).__name__}: "
                                   f"{_one_line(str(exc))}", code="failed") from None
        raise CommandFault(f"cannot reach {self.a.url}: {_one_line(str(last))}", code="failed",
                           hint="is the SOAP service running?")

    async def _read(self, response: aiohttp.ClientResponse) -> bytes:
        """The answer's body, decoded, of at most ``max_response_bytes`` (a claim of more is
        refused unread; a body without end, or a gzip bomb, is cut there)."""
        limit = self.a.max_response_bytes
        if response.content_length is not None and response.content_length > limit and "Content-Encoding" not in response.headers:
            raise CommandFault(f"{self.a.url} answered HTTP {response.status} claiming {response.content_length} "
                               f"bytes, more than max_response_bytes = {limit}", code="failed")
        body = bytearray()
        try:
            async for chunk in response.content.iter_any():
                body += chunk
                if len(body) > limit:
                    raise CommandFault(f"{self.a.url} answered HTTP {response.status} with more than "
                                       f"max_response_bytes = {limit}", code="failed",
                                       hint="raise max_response_bytes if the answer is right")
        except aiohttp.ClientPayloadError as exc:
            if not _undecodable(exc):
                raise  # cut short: a transport error, called again
            encoding = response.headers.get("Content-Encoding", "")[:40]  # not gzip, say: calling again is no use
            raise CommandFault(f"the response of {self.a.url} cannot be read as {encoding}: {_one_line(str(exc), 200)}",
                               code="failed") from None
        return bytes(body)


def _undecodable(exc: BaseException) -> bool:
    """Whether aiohttp's ``exc`` (a ClientPayloadError) is a body not in its Content-Encoding,
    rather than one cut short."""
    from aiohttp.http_exceptions import ContentEncodingError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ContentEncodingError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _one_line(text: str, chars: int = 1000) -> str:
    """``text`` (a fault's reason and detail, a parser's error) with its line breaks as spaces."""
    return " ".join(text[: chars * 4].split())[:chars]
