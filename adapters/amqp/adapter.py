"""The amqp Channel Adapter (Messaging Bridge): queues and exchanges of other applications on
an AMQP 0-9-1 broker (RabbitMQ), and the link between two Coupler sites.

Not Coupler's own store (that is ``[store] type = "amqp"``): this adapter reads a queue that
another application fills, or publishes to an exchange another application reads.

Inbound (``queue``): each broker message is published on the adapter's channel and
acknowledged to the broker **only after the bus accepted it** (durable); a message the bus
refuses as untranslatable, or whose content header pika cannot decode (a header timestamp
beyond the calendar: the connection reads it with the cause instead of dropping), is in the
Invalid Message Channel and acknowledged; when the bus cannot take it (its store failing, a
stop) it is rejected back to the queue and read again.
Outbound (``exchange`` and ``routing_key``): each document is published persistent,
``mandatory``, with publisher confirms: ``deliver`` returns only when the broker confirmed it;
an unroutable or refused message raises, and the bus redelivers it.

``payload = "body"`` (other applications): the body as it is, the AMQP properties and headers
mapped to envelope headers and properties (see :func:`to_envelope` and :func:`to_properties`).
``payload = "envelope"`` (site to site): the whole Coupler envelope travels (id, format,
history, properties), so the far site publishes it under the same message id and its
Idempotent Receiver drops a copy sent again after a crash of either side.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import Field, Strict

from coupler.adapters.common.lazy import lazy_module
from coupler.adapters.common.secrets import secret_file, secret_from_env
from coupler.bus.api import (
    Adapter,
    AdapterContext,
    Bool,
    CommandFault,
    InvalidMessage,
    Num,
    OptionsModel,
    Reply,
    Str,
    option,
    tolerate_undecodable_amqp_headers,
    undecodable_amqp_header,
)
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError, describe_exception
from coupler.canonical.tracecontext import TRACEPARENT, TraceContext

if TYPE_CHECKING:
    import pika
    from pika.adapters.blocking_connection import BlockingChannel
else:  # imported when an adapter starts
    pika = lazy_module("pika")

_NAMESPACE = uuid.UUID("a3c9e1d2-58b4-4f6e-9d1c-0b7a28e5f3aa")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
ENVELOPE_CONTENT_TYPE = "application/vnd.coupler.envelope"
HEADER_PREFIX = "amqp.header."


PositiveInt = Annotated[int, Strict(), Field(gt=0)]


class AmqpOptions(OptionsModel):
    """``[adapters.options]`` of ``type = "amqp"`` (docs/adapters/amqp.md)."""

    url: Str = option("The broker: `amqp://user@host:5672/vhost` (`amqps://` for TLS), without its password.")
    password_env: Str | None = option("The environment variable holding the password.", default=None)
    password_file: Str | None = option("A file holding it, readable by the site's user only.", default=None)
    queue: Str | None = option("Inbound: the queue consumed.", default=None)
    declare: Bool = option("Inbound: declare the queue (durable) when it does not exist; off: it must exist.",
                           default=False)
    prefetch: PositiveInt = option("Inbound: messages taken from the broker before they are acknowledged.",
                                     default=50)
    exchange: Str = option("Outbound: the exchange published to (`\"\"`: the default exchange).", default="")
    routing_key: Str | None = option("Outbound: the routing key (with the default exchange: the queue's name).",
                                     default=None)
    payload: Literal["body", "envelope"] = option(
        "`body`: the message body with its properties mapped (other applications); `envelope`: the whole "
        "Coupler envelope (a site-to-site bridge).", default="body")
    confirm_timeout: Num = option(
        "Outbound: seconds a publish waits for its confirm while the broker holds the connection blocked "
        "(a memory or disk alarm); then the connection is closed and the delivery fails, to be retried.",
        default=30.0, gt=0)
    heartbeat: Num = option("Seconds between AMQP heartbeats.", default=30.0, gt=0)


def _envelope_id(value: str | None, queue: str) -> str | None:
    """A message id as the bus keeps it: a UUID as it is, another id derived from it."""
    if not value:
        return None
    return value if _UUID.match(value) else str(uuid.uuid5(_NAMESPACE, f"{queue}|{value}"))


def _delivery(method: Any, props: Any) -> str:
    """A delivery in words: its message id (when it has one), delivery tag, exchange and key."""
    shown = [repr(props.message_id)[:80]] if props.message_id else []
    shown.append(f"(delivery tag {method.delivery_tag}, exchange {method.exchange!r}, "
                 f"routing key {str(method.routing_key)[:80]!r})")
    return " ".join(shown)


def to_envelope(body: bytes, props: Any, method: Any, fmt: FormatIndicator | None, queue: str) -> Envelope:
    """A broker message of another application as an envelope.

    ``message_id`` -> the message id (a non-UUID id is mapped to a UUID derived from it, the
    original kept as ``amqp.message_id``); ``correlation_id``, ``expiration`` are kept;
    ``content_type`` gives the format's content type when the adapter declares no format;
    ``type``, ``app_id``, ``user_id``, the exchange and routing key become ``amqp.*``
    properties, and each header ``amqp.header.NAME`` (``traceparent`` continues the trace)."""
    properties: dict[str, str] = {
        "amqp.exchange": method.exchange or "",
        "amqp.routing_key": method.routing_key or "",
    }
    for name in ("type", "app_id", "user_id", "message_id", "reply_to"):
        value = getattr(props, name, None)
        if value:
            properties[f"amqp.{name}"] = str(value)
    for key, value in (props.headers or {}).items():
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        if key == TRACEPARENT and TraceContext.parse(text) is not None:
            properties[TRACEPARENT] = TraceContext.parse(text).child().header  # type: ignore[union-attr]
        else:
            properties[HEADER_PREFIX + key] = text
    content_type = props.content_type or "application/octet-stream"
    if fmt is None:
        fmt = FormatIndicator(f"amqp.{re.sub(r'[^A-Za-z0-9_]', '_', queue) or 'message'}", 1,
                              content_type if "/" in content_type else "application/octet-stream")
    headers: dict[str, Any] = {"format": fmt, "body": body, "properties": properties}
    message_id = _envelope_id(props.message_id, queue)
    if message_id:
        headers["message_id"] = message_id
    if props.correlation_id:
        headers["correlation_id"] = str(props.correlation_id)
    return Envelope(**headers)


def to_properties(envelope: Envelope) -> Any:
    """The AMQP properties of a document sent to another application (persistent)."""
    headers = {k.removeprefix(HEADER_PREFIX): v for k, v in envelope.properties.items()
               if not k.startswith("amqp.") or k.startswith(HEADER_PREFIX)}
    parent = TraceContext.parse(envelope.properties.get(TRACEPARENT))
    headers[TRACEPARENT] = (parent.child() if parent else TraceContext.new()).header
    headers["coupler-format"] = envelope.format.ref
    return pika.BasicProperties(
        message_id=envelope.message_id, correlation_id=envelope.correlation_id,
        content_type=envelope.format.content_type, type=envelope.format.ref, delivery_mode=2,
        timestamp=int(envelope.timestamp.timestamp()) if envelope.timestamp else int(time.time()),
        headers=headers, app_id="coupler",
    )


class AmqpAdapter(Adapter):
    """Channel Adapter for other applications' AMQP queues (site.toml ``type = "amqp"``)."""

    type_name: ClassVar[str] = "amqp"
    commands: ClassVar[tuple[str, ...]] = ("send", "ping", "describe")
    directions: ClassVar[tuple[str, ...]] = ("inbound", "outbound")
    path_options: ClassVar[tuple[str, ...]] = ("password_file",)
    options_model = AmqpOptions

    def __init__(self, name: str, options: dict[str, Any], context: AdapterContext | None = None):
        super().__init__(name, options, context)
        self.settings: AmqpOptions = self.parse_options(name, self.options)
        self.where = f"adapters[{name}].options"
        self._stop = threading.Event()
        self._consumer: threading.Thread | None = None
        self._out: Any = None  # the outbound connection and channel (one thread at a time)
        self._out_channel: BlockingChannel | None = None
        self.counts = {"received": 0, "acked": 0, "requeued": 0, "invalid": 0, "published": 0}
        self.last_error: str | None = None

    @property
    def log(self) -> logging.Logger:
        return self.context.logger if self.context is not None else logging.getLogger(f"coupler.adapter.{self.name}")

    def supported_directions(self) -> tuple[str, ...]:
        s = self.settings
        if s.queue and (s.routing_key is not None or s.exchange):
            return ("inbound", "outbound")
        return ("inbound",) if s.queue else ("outbound",)

    def _parameters(self) -> Any:
        s = self.settings
        parts = urlsplit(s.url)
        url, user = s.url, None
        if parts.username is not None and parts.password is None:  # `amqp://USER@HOST/...`, as documented:
            user = unquote(parts.username)  # pika cannot read a user without a password, so it reads the rest
            url = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
            if not (s.password_env or s.password_file):
                raise CouplerError(f"the URL names the user {user!r} but no password", where=f"{self.where}.url",
                                   hint="set password_env or password_file")
        try:
            params = pika.URLParameters(url)
        except Exception as exc:  # noqa: BLE001 - pika raises several kinds for a bad URL
            raise CouplerError(f"bad broker URL: {exc}", where=f"{self.where}.url") from None
        if s.password_env or s.password_file:
            password = (secret_from_env(s.password_env, f"{self.where}.password_env") if s.password_env
                        else secret_file(s.password_file or "", f"{self.where}.password_file"))
            params.credentials = pika.PlainCredentials(user or params.credentials.username, password)
        params.heartbeat = int(s.heartbeat)
        params.blocked_connection_timeout = s.confirm_timeout
        params.connection_attempts = 1
        return params

    def _shown(self) -> str:
        return re.sub(r"//([^:@/]*):[^@/]*@", r"//\1:***@", self.settings.url)

    def _connect(self) -> Any:
        try:
            # a message whose content header pika cannot decode comes with its cause (see _take)
            return tolerate_undecodable_amqp_headers(pika.BlockingConnection(self._parameters()))
        except pika.exceptions.AMQPError as exc:
            raise CouplerError(f"cannot connect to {self._shown()}: {type(exc).__name__} {exc}",
                               where=f"{self.where}.url") from None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        s = self.settings
        if self.direction in ("inbound", "both") and s.queue:
            if self.context is None:
                raise CouplerError(f"amqp adapter {self.name!r} consumes but runs without a bus context")
            connection = self._connect()  # fails the start when the broker or the queue is not there
            try:
                self._check_queue(connection)
            finally:
                connection.close()
            self._consumer = threading.Thread(target=self._consume_forever, name=f"amqp-{self.name}", daemon=True)
            self._consumer.start()
        if self.direction in ("outbound", "both") and (s.routing_key is not None or s.exchange):
            self._open_out()

    def _check_queue(self, connection: Any) -> None:
        s = self.settings
        channel = connection.channel()
        try:
            channel.queue_declare(s.queue, durable=True, passive=not s.declare)
        except pika.exceptions.ChannelClosedByBroker as exc:
            raise CouplerError(f"queue {s.queue!r} cannot be used: {exc.reply_text}", where=f"{self.where}.queue",
                               hint="create it, or set declare = true") from None

    def stop(self) -> None:
        self._stop.set()
        if self._consumer is not None:
            self._consumer.join(15)
            self._consumer = None
        self._close_out()

    # -- inbound --------------------------------------------------------------------------------

    def _consume_forever(self) -> None:
        wait = 1.0
        while not self._stop.is_set():
            try:
                connection = self._connect()
                try:
                    self._consume(connection)
                    wait = 1.0
                finally:
                    if connection.is_open:
                        try:
                            connection.close()
                        except pika.exceptions.AMQPError:
                            pass
            except (CouplerError, pika.exceptions.AMQPError, OSError) as exc:
                self.last_error = str(exc)
                self.log.warning("%s: consuming %s failed, again in %.0f s: %s", self.name, self.settings.queue, wait, exc)
                self._stop.wait(wait)
                wait = min(wait * 2, 30.0)

    def _consume(self, connection: Any) -> None:
        s = self.settings
        assert s.queue is not None
        channel = connection.channel()
        channel.basic_qos(prefetch_count=s.prefetch)
        for method, props, body in channel.consume(s.queue, inactivity_timeout=0.5):
            if self._stop.is_set():
                break
            if self.context is not None:
                self.context.heartbeat()
            if method is None:
                continue
            self.counts["received"] += 1
            if self._take(body, props, method):
                channel.basic_ack(method.delivery_tag)
                self.counts["acked"] += 1
            else:  # the bus did not take it: back to the queue, read again later
                channel.basic_nack(method.delivery_tag, requeue=True)
                self.counts["requeued"] += 1
                self._stop.wait(1.0)
        try:
            channel.cancel()
        except pika.exceptions.AMQPError:
            pass

    def _take(self, body: bytes, props: Any, method: Any) -> bool:
        """Publish one broker message; True when it may be acknowledged (durable on the bus, or
        in the Invalid Message Channel), False when it must go back to the queue."""
        assert self.context is not None and self.settings.queue is not None
        cause = undecodable_amqp_header(props)
        if cause is not None:  # pika could not decode its content header: the consumer goes on
            return self._invalid(body, f"message {_delivery(method, props)} from queue {self.settings.queue} "
                                       f"cannot be read: {cause} (correct it in the sending application)")
        try:
            if self.settings.payload == "envelope":
                envelope = Envelope.from_bytes(body)
            else:
                envelope = to_envelope(body, props, method, self.format, self.settings.queue)
        except Exception as exc:  # a message this adapter cannot read: contained to it
            cause = exc.message if isinstance(exc, CouplerError) else describe_exception(exc)
            return self._invalid(body, f"message from queue {self.settings.queue} cannot be read: {cause}")
        try:
            self.context.publish(envelope.replace(origin=self.name) if self.settings.payload == "body" else envelope,
                                 self.channel)
        except InvalidMessage:
            self.counts["invalid"] += 1
            return True  # in the Invalid Message Channel already
        except Exception as exc:  # noqa: BLE001 - the store failing: the message goes back to the queue
            self.last_error = describe_exception(exc)
            self.log.error("%s: the bus did not take message %s: %s", self.name, envelope.message_id, self.last_error)
            return False
        self.counts["published"] += 1
        return True

    def _invalid(self, body: bytes, reason: str) -> bool:
        assert self.context is not None
        try:
            self.context.invalid(body, reason)
        except Exception as exc:  # noqa: BLE001 - cannot record it: leave it in the queue
            self.log.error("%s: cannot record an invalid message (%s): %s", self.name, reason, exc)
            return False
        self.counts["invalid"] += 1
        return True

    # -- outbound -------------------------------------------------------------------------------

    def _open_out(self) -> BlockingChannel:
        if self._out_channel is None or not self._out_channel.is_open:
            self._close_out()
            self._out = self._connect()
            channel = self._out.channel()
            channel.confirm_delivery()
            self._out_channel = channel
        return self._out_channel

    def _close_out(self) -> None:
        out, self._out, self._out_channel = self._out, None, None
        if out is not None and out.is_open:
            try:
                out.close()
            except pika.exceptions.AMQPError:
                pass

    def deliver(self, envelope: Envelope) -> None:
        s = self.settings
        if s.routing_key is None and not s.exchange:
            raise CommandFault(f"amqp adapter {self.name!r} publishes nowhere (no exchange or routing_key)",
                               code="unsupported")
        if s.payload == "envelope":
            body = envelope.to_bytes()
            props = pika.BasicProperties(message_id=envelope.message_id, content_type=ENVELOPE_CONTENT_TYPE,
                                         delivery_mode=2, type=envelope.format.ref, app_id="coupler")
        else:
            body, props = envelope.body, to_properties(envelope)
        try:
            channel = self._open_out()
            channel.basic_publish(s.exchange, s.routing_key or "", body, props, mandatory=True)
        except pika.exceptions.UnroutableError:
            raise CouplerError(f"the broker could not route message {envelope.message_id} to exchange "
                               f"{s.exchange!r} with key {s.routing_key!r}", where=f"{self.where}.routing_key",
                               hint="bind a queue, or correct exchange / routing_key") from None
        except pika.exceptions.NackError:
            raise CouplerError(f"the broker refused message {envelope.message_id} (nack)") from None
        except pika.exceptions.AMQPError as exc:
            self._close_out()
            raise CouplerError(f"publishing to {self._shown()} failed: {type(exc).__name__} {exc}") from None
        self.counts["published"] += 1

    def on_ping(self, command: Any) -> Reply:
        try:
            self._connect().close()
        except CouplerError as exc:
            raise CommandFault(exc.message, code="failed") from None
        return Reply(details={"status": "ok", "payload": command.payload, "broker": self._shown()})

    def health(self) -> dict[str, Any]:
        health = super().health()
        health["amqp"] = dict(self.counts)
        if self._consumer is not None and not self._consumer.is_alive():
            health["status"] = "down"
            health["problems"].append("the consumer thread ended")
        if self.last_error:
            health["last_error"] = self.last_error
        return health

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        s = self.settings
        info.update(broker=self._shown(), queue=s.queue, exchange=s.exchange, routing_key=s.routing_key,
                    payload=s.payload, counts=dict(self.counts), at=datetime.now(UTC).isoformat())
        return info
