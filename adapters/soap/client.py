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
            raise CommandFault(f"{self.a.url} answered HTTP {status} without a SOAP envelope: {exc}", code="failed") from None
        if message.fault is not None:
            f = message.fault
            code = "invalid" if f.code == "Sender" else "failed"
            detail = f" (detail: {f.detail})" if f.detail else ""
            raise CommandFault(f"SOAP fault {f.code}: {f.reason}{detail}", code=code)
        if status >= 300:
            raise CommandFault(f"{self.a.url} answered HTTP {status}", code="failed")
        return message.body

    async def _read(self, response: Any) -> bytes:
        """The response's body, read no further than ``max_response_bytes`` (a partner's answer
        of any size was read whole into memory)."""
        limit = self.a.max_response_bytes
        too_large = CommandFault(f"the response of {self.a.url} is larger than {limit} bytes (max_response_bytes)",
                                 code="failed", hint="raise max_response_bytes if the service answers that much")
        if response.content_length is not None and response.content_length > limit:
            raise too_large
        body = bytearray()
        try:
            async for chunk in response.content.iter_chunked(64 * 1024):
                body += chunk
                if len(body) > limit:
                    raise too_large
        except aiohttp.ClientPayloadError as exc:  # a body not in its Content-Encoding (not gzip, say)
            encoding = response.headers.get("Content-Encoding", "")[:40]
            how = f"cannot be read as {encoding}" if encoding else "cannot be read"  # or was cut short
            raise CommandFault(f"the response of {self.a.url} {how}: {' '.join(str(exc).split())[:200]}",
                               code="failed") from None
        return bytes(body)

    async def _post_with_retries(self, payload: bytes, headers: dict[str, str], timeout: float) -> tuple[int, bytes]:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        last: Exception | None = None
        for attempt in range(self.a.retries + 1):
            try:
                async with self._session.post(
                    self.a.url or "", data=payload, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout),
                    ssl=self._client_ssl if self._client_ssl is not None else True,
                ) as response:
                    return response.status, await self._read(response)
            except TimeoutError:
                raise CommandFault(f"no answer from {self.a.url} within {timeout:g} s", code="timeout") from None
            except aiohttp.ClientConnectionError as exc:  # transport errors only are retried
                last = exc
                self.a.logger.info("calling %s failed (attempt %d): %s", self.a.url, attempt + 1, exc)
                if attempt < self.a.retries:
                    await asyncio.sleep(min(0.2 * 2**attempt, 2.0))
        raise CommandFault(f"cannot reach {self.a.url}: {last}", code="failed", hint="is the SOAP service running?")
