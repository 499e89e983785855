"""The socket Channel Adapter: TCP (and TLS) server or client, one-way or request-reply.

Server mode (inbound): every frame read from a connection is translated into a document.
One-way, it is published on the adapter's channel; request-reply, it becomes a ``request``
command for ``target`` (or a Request-Reply on ``request_channel``) and the correlated answer
is written back on the same connection. With MLLP framing each message is acknowledged
automatically: ``AA`` when the bus took it (or its request was answered), ``AR`` when it was
rejected (not HL7, untranslatable, refused as invalid or unserved), ``AE`` when the bus
failed to process it.

Client mode (outbound): ``send`` commands and documents of the adapter's channel are written
to the legacy server; ``request`` commands wait for the reply, correlated by connection or by
a field of the payload.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from coupler.bus.api import (
    Adapter,
    AdapterContext,
    Command,
    CommandFault,
    Document,
    LoopThread,
    Reply,
    request_channel,
    request_command,
)
from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError, describe_exception
from coupler.translators.framing import FrameError

from . import hl7v2
from .client import FrameClient
from .options import SocketOptions, parse_options
from .server import CloseConnection, FrameServer, ServerLimits
from .translate import PayloadTranslator, make_translator

#: fault codes meaning the bus refused the message itself (-> HL7 ``AR``); others -> ``AE``
REJECTING_FAULTS = ("invalid", "unsupported", "unserved")


class SocketAdapter(Adapter):
    """Channel Adapter for raw TCP sockets (site.toml ``type = "socket"``)."""

    type_name: ClassVar[str] = "socket"
    commands: ClassVar[tuple[str, ...]] = ("send", "request", "ping", "describe")
    directions: ClassVar[tuple[str, ...]] = ("inbound", "outbound")
    path_options: ClassVar[tuple[str, ...]] = (
        "copybook", "copybook_in", "copybook_out", "tls.cert", "tls.key", "tls.ca",
    )
    options_model = SocketOptions

    def __init__(self, name: str, options: dict[str, Any], context: AdapterContext | None = None):
        super().__init__(name, options, context)
        self.settings: SocketOptions = parse_options(name, self.options)
        self.translator: PayloadTranslator | None = None
        self.address: tuple[str, int] | None = None
        self._loop: LoopThread | None = None
        self._server: FrameServer | None = None
        self._client: FrameClient | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._in_flight: asyncio.Semaphore | None = None

    @property
    def logger(self) -> Any:
        import logging

        return self.context.logger if self.context is not None else logging.getLogger(f"coupler.adapter.{self.name}")

    def supported_directions(self) -> tuple[str, ...]:
        """A server takes documents in, a client gives them out."""
        return ("inbound",) if self.settings.mode == "server" else ("outbound",)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        s = self.settings
        self.translator = make_translator(self.options, self.format)
        self._loop = LoopThread(f"socket-{self.name}").start()
        if s.mode == "server":
            if self.context is None:
                raise CouplerError(f"socket adapter {self.name!r} in server mode needs a bus context")
            if s.exchange == "one-way" and not (self.channel or getattr(self.context, "channel", None)):
                raise CouplerError(
                    f"socket adapter {self.name!r} publishes what it receives but has no channel",
                    where=f"adapter {self.name}",
                    hint="set channel of the adapter, or exchange = \"request-reply\" with a target",
                )
            self._executor = ThreadPoolExecutor(s.max_in_flight, thread_name_prefix=f"socket-{self.name}-bus")
            self._server = FrameServer(
                s.framer,
                self._on_frame,
                limits=ServerLimits(
                    idle_timeout=s.idle_timeout,
                    read_timeout=s.read_timeout,
                    max_connections=s.max_connections,
                    first_byte_timeout=s.first_byte_timeout,
                    max_connections_per_peer=s.max_connections_per_peer,
                ),
                logger=self.logger,
                ssl_context=s.tls.server_context() if s.tls else None,
            )

            async def begin() -> tuple[str, int]:
                self._in_flight = asyncio.Semaphore(s.max_in_flight)
                assert self._server is not None
                return await self._server.start(s.bind_host, s.port)

            self.address = self._loop.run(begin(), timeout=30)
            self.logger.info("socket adapter %s listening on %s:%d", self.name, *self.address)
        else:
            correlate = s.correlation_key if s.correlation == "field" else None
            self._client = FrameClient(
                s.framer,
                s.bind_host,
                s.port,
                size=s.connections,
                connect_timeout=s.connect_timeout,
                write_timeout=s.write_timeout,
                retries=s.retries,
                ssl_context=s.tls.client_context() if s.tls else None,
                server_hostname=(s.tls.server_hostname or s.bind_host) if s.tls else None,
                correlate=correlate,
                logger=self.logger,
            )
            self.address = (s.bind_host, s.port)

    def stop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is None:
            return
        try:
            if self._server is not None:
                loop.run(self._server.close(), timeout=15)
            if self._client is not None:
                loop.run(self._client.close(), timeout=15)
        finally:
            loop.stop()
            if self._executor is not None:
                self._executor.shutdown(wait=True, cancel_futures=True)

    # -- server side -------------------------------------------------------------------------

    async def _on_frame(self, payload: bytes, peer: str) -> bytes | None:
        assert self._in_flight is not None
        async with self._in_flight:  # at most max_in_flight frames wait for the bus
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._executor, self._process, payload, peer)

    def _process(self, payload: bytes, peer: str) -> bytes | None:
        """Runs on an executor thread: the frame -> the bus -> what to write back.

        Whatever one frame raises is contained to it: it goes to the Invalid Message Channel
        with its cause, its sender gets a fault (``AR``/``AE`` with MLLP, ``fault_response``
        and the connection closed otherwise) and the adapter goes on."""
        s = self.settings
        mllp = s.is_mllp and s.acknowledge
        assert self.translator is not None and self.context is not None
        try:
            document = self.translator.decode(payload)
        except CouplerError as exc:
            self.logger.warning("frame from %s refused: %s", peer, exc, extra={"peer": peer})
            self._invalid(payload, f"frame from {peer} cannot be translated: {exc}")
            if mllp:
                return hl7v2.acknowledgement(payload, hl7v2.REJECT, str(exc))
            raise CloseConnection(f"untranslatable frame: {exc}", self._fault_payload("invalid", str(exc))) from None
        except Exception as exc:  # a translator's bug: this frame is refused, not the adapter
            return self._contain(payload, peer, "translating it", exc, code="invalid")
        try:
            return self._exchange_frame(payload, peer, document)
        except CloseConnection:
            raise
        except Exception as exc:
            return self._contain(payload, peer, "handing it to the bus", exc, code="failed")

    def _exchange_frame(self, payload: bytes, peer: str, document: Document) -> bytes | None:
        s = self.settings
        mllp = s.is_mllp and s.acknowledge
        assert self.translator is not None and self.context is not None
        document.properties.setdefault("socket.peer", peer)
        try:
            if s.exchange == "one-way":
                self.context.publish(document.to_envelope(origin=self.name), self.channel)
                return hl7v2.acknowledgement(payload, hl7v2.ACCEPT) if mllp else None
            answer = self._ask(document)
        except CommandFault as fault:
            self.logger.warning("request from %s failed (%s): %s", peer, fault.code, fault, extra={"peer": peer})
            if mllp:
                code = hl7v2.REJECT if fault.code in REJECTING_FAULTS else hl7v2.ERROR
                return hl7v2.acknowledgement(payload, code, fault.message)
            raise CloseConnection(f"the bus answered {fault.code}: {fault}", self._fault_payload(fault.code, fault.message)) from None
        except CouplerError as exc:
            self.logger.error("frame from %s not accepted by the bus: %s", peer, exc, extra={"peer": peer})
            if mllp:
                return hl7v2.acknowledgement(payload, hl7v2.ERROR, str(exc))
            raise CloseConnection(f"bus error: {exc}", self._fault_payload("failed", str(exc))) from None
        if not answer:
            return hl7v2.acknowledgement(payload, hl7v2.ACCEPT) if mllp else b""
        try:
            out = self.translator.encode(answer[0])
            if mllp and not out.startswith(b"MSH"):
                return hl7v2.acknowledgement(payload, hl7v2.ACCEPT)
            s.framer.encode(out)  # refuse here what cannot be framed, with a reason
        except CouplerError as exc:
            self.logger.error("reply to %s cannot be written: %s", peer, exc, extra={"peer": peer})
            if mllp:
                return hl7v2.acknowledgement(payload, hl7v2.ERROR, str(exc))
            raise CloseConnection(f"untranslatable reply: {exc}", self._fault_payload("failed", str(exc))) from None
        return out

    def _contain(self, payload: bytes, peer: str, doing: str, exc: Exception, *, code: str) -> bytes:
        """An unexpected exception while handling one frame: keep the frame as invalid with its
        cause and answer its sender with a fault (the adapter goes on)."""
        cause = describe_exception(exc)  # type, message and the line of code that raised
        self.logger.error("frame from %s failed while %s: %s", peer, doing, cause, extra={"peer": peer})
        self.logger.debug("the error above in full", exc_info=exc)
        self._invalid(payload, f"frame from {peer} failed while {doing}: {cause}")
        told = f"internal error while {doing} ({type(exc).__name__}); the frame is kept for the operator"
        if self.settings.is_mllp and self.settings.acknowledge:
            return hl7v2.acknowledgement(payload, hl7v2.REJECT if code == "invalid" else hl7v2.ERROR, told)
        raise CloseConnection(f"{doing} failed: {cause}", self._fault_payload(code, told))

    def _invalid(self, payload: bytes, reason: str) -> None:
        """Keep what could not be translated in the Invalid Message Channel (never fails)."""
        if self.context is None:
            return
        try:
            self.context.invalid(payload, reason)
        except Exception as exc:  # the store failing must not take the adapter down either
            self.logger.error("cannot record an invalid frame (%s): %s", reason, exc)

    def _ask(self, document: Document) -> list[Document]:
        s = self.settings
        assert self.context is not None
        if s.target:
            return request_command(
                self.context,
                document,
                target=s.target,
                operation=s.operation,
                timeout=s.reply_timeout,
                command_channel=s.command_channel,
            ).documents
        assert s.request_channel
        return request_channel(self.context, document, channel=s.request_channel, timeout=s.reply_timeout).documents

    def _fault_payload(self, code: str, reason: str) -> bytes | None:
        template = self.settings.fault_response
        if template is None:
            return None
        return template.format(code=code, reason=" ".join(reason.split())).encode("utf-8")

    # -- client side -------------------------------------------------------------------------

    def _require_client(self, what: str) -> FrameClient:
        if self._client is None or self._loop is None:
            raise CommandFault(
                f"socket adapter {self.name!r} is a {self.settings.mode}; it cannot {what}",
                code="unsupported",
                hint='use an adapter with mode = "client" for outbound messages',
            )
        return self._client

    def _exchange(self, payload: bytes, *, reply: bool, timeout: float) -> bytes | None:
        client = self._require_client("send")
        assert self._loop is not None
        return self._loop.run(client.exchange(payload, reply=reply, timeout=timeout))

    def _encode(self, document: Document) -> bytes:
        assert self.translator is not None
        try:
            payload = self.translator.encode(document)
            self.settings.framer.encode(payload)
        except (CouplerError, FrameError) as exc:
            raise CommandFault(f"document {document.format} cannot be sent: {exc}", code="invalid") from None
        return payload

    def on_request(self, command: Command) -> Reply:
        self._require_client("serve request commands")
        if command.document is None:
            raise CommandFault("a request command needs a document", code="invalid")
        timeout = command.timeout or self.settings.response_timeout
        timeout = min(timeout, self.settings.response_timeout)
        reply = self._exchange(self._encode(command.document), reply=True, timeout=timeout)
        assert reply is not None and self.translator is not None
        try:
            document = self.translator.decode(reply)
        except CommandFault:
            raise  # the translator read the reply as a refusal of the request
        except CouplerError as exc:
            reason = f"the reply from {self._client.address if self._client else '?'} cannot be translated: {exc}"
            self._invalid(reply, reason)
            raise CommandFault(reason, code="failed") from None
        return Reply(documents=[document], details={"status": "answered"})

    def on_send(self, command: Command) -> Reply:
        """One-way; a client with ``exchange = "request-reply"`` (a legacy service that answers
        every record) reads the answer and returns it as the reply document."""
        if self.settings.mode == "client" and self.settings.exchange == "request-reply":
            reply = self.on_request(command)
            reply.details["status"] = "delivered"
            return reply
        return super().on_send(command)

    def deliver(self, envelope: Envelope) -> None:
        payload = self._encode(Document.from_envelope(envelope))
        want_ack = self.settings.is_mllp and self.settings.acknowledge
        ack = self._exchange(payload, reply=want_ack, timeout=self.settings.response_timeout)
        if want_ack:
            assert ack is not None
            self._check_ack(ack)

    def _check_ack(self, ack: bytes) -> None:
        text = ack.decode("utf-8", "replace")
        for segment in text.replace("\n", "\r").split("\r"):
            if segment.startswith("MSA"):
                fields = segment.split(segment[3:4] or "|")
                code = fields[1] if len(fields) > 1 else ""
                if code in ("AA", "CA"):
                    return
                reason = fields[3] if len(fields) > 3 else ""
                raise CommandFault(
                    f"the HL7 receiver answered {code}{': ' + reason if reason else ''}",
                    code="invalid" if code in ("AR", "CR") else "failed",
                )
        raise CommandFault("the HL7 receiver's answer has no MSA segment", code="failed")

    def on_ping(self, command: Command) -> Reply:
        if self.settings.mode == "server":
            return Reply(details={"status": "ok", "payload": command.payload, "listening": self._address_text()})
        client = self._require_client("ping")
        assert self._loop is not None

        try:
            self._loop.run(client.probe(), timeout=self.settings.connect_timeout + 1)
        except (OSError, TimeoutError) as exc:
            raise CommandFault(f"{client.address} is not reachable: {exc}", code="failed") from None
        return Reply(details={"status": "ok", "payload": command.payload, "server": client.address})

    def _address_text(self) -> str:
        host, port = self.address or (self.settings.bind_host, self.settings.port)
        return f"{host}:{port}"

    def health(self) -> dict[str, Any]:
        data = super().health()
        server = self._server
        if server is not None:  # plain counters of the loop thread: cheap, no lock needed
            data["connections"] = {
                "open": server.active,
                "max": self.settings.max_connections,
                "in_frame": server.in_frame,
                "evicted": server.evicted,
                "refused": server.refused,
            }
        return data

    def describe(self) -> dict[str, Any]:
        s = self.settings
        data = super().describe()
        data.update(
            mode=s.mode,
            exchange=s.exchange,
            address=self._address_text(),
            framing=s.framer.describe(),
            tls=s.tls is not None,
        )
        return data
