"""The http Channel Adapter: REST endpoints (inbound, aiohttp) or calls to a partner's API
(outbound, httpx).

Server (``mode = "server"``): each endpoint is ``POST PATH`` taking JSON (or XML) bodies of
one format, validated against its schema. One-way, the body is published on the channel and
answered ``202 Accepted`` with its message id, only once the message is durable (requests
arriving together are stored in one commit, :mod:`.batching`); request-
reply, it becomes a ``request`` command for ``target`` and the reply's document is the
answer (``504`` when none comes in time). ``GET /openapi.json`` describes the endpoints.
Callers authenticate with a bearer token, HTTP basic or a client certificate (mutual TLS);
body size, body read time and the request rate per address are limited; an
``Idempotency-Key`` header makes a request sent again the same message (same id, published
once by this process, dropped by an Idempotent Receiver after a crash; a request-reply
endpoint answers it again with the answer it gave, without asking the bus). A caller's
``traceparent`` is continued on the bus.

Client (``mode = "client"``): see :mod:`.client`.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import logging
import threading
import time
import uuid
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, ClassVar

from coupler.adapters.common.lazy import lazy_module
from coupler.adapters.common.secrets import secret_file, secret_from_env
from coupler.bus.api import (
    Adapter,
    AdapterContext,
    BodyRefused,
    Command,
    CommandFault,
    ConnectionLimit,
    Document,
    InvalidMessage,
    LoopThread,
    Reply,
    bound_address,
    listen,
    read_body,
    refuse_declared,
    request_command,
    site_registry,
    site_schema_roots,
)
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError, describe_exception
from coupler.canonical.serverlog import OneLineServerLog
from coupler.canonical.tracecontext import TRACEPARENT, TraceContext

from .options import EndpointOptions, HttpOptions

if TYPE_CHECKING:
    from aiohttp import web

    from .batching import BatchPublisher
    from .client import Caller
    from .validation import BodyValidator
else:  # imported when an adapter starts: every coupler command loads the plugins
    web = lazy_module("aiohttp.web")

_NAMESPACE = uuid.UUID("3b0e1f0a-9c57-4d0e-8f4b-7a1d28e0c0de")
#: a bus fault code -> the HTTP status answered
FAULT_STATUS = {"invalid": 422, "unserved": 503, "unsupported": 501, "failed": 502, "paused": 503, "timeout": 504}


class RateLimiter:
    """A token bucket per client address (requests per second, a burst)."""

    def __init__(self, rate: float, burst: int):
        self.rate, self.burst = rate, burst
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, who: str) -> float:
        """0 when ``who`` may go on, else the seconds until it may."""
        now = time.monotonic()
        if len(self._buckets) > 10_000:  # forget the idle ones (they would be full again)
            self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < self.burst / self.rate}
        tokens, last = self._buckets.get(who, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        if tokens < 1:
            self._buckets[who] = (tokens, now)
            return (1 - tokens) / self.rate
        self._buckets[who] = (tokens - 1, now)
        return 0.0


class Endpoint:
    def __init__(self, name: str, opts: EndpointOptions, validator: BodyValidator, fmt: FormatIndicator):
        self.name = name
        self.o = opts
        self.path = opts.path or f"/{name}"
        self.validator = validator
        self.format = fmt


class HttpAdapter(Adapter):
    """Channel Adapter for HTTP/REST (site.toml ``type = "http"``)."""

    type_name: ClassVar[str] = "http"
    commands: ClassVar[tuple[str, ...]] = ("send", "request", "ping", "describe")
    directions: ClassVar[tuple[str, ...]] = ("inbound", "outbound")
    path_options: ClassVar[tuple[str, ...]] = ("tokens_file", "users_file", "schema_roots", "tls.cert", "tls.key",
                                               "tls.ca", "oauth2.client_secret_file")
    options_model = HttpOptions

    def __init__(self, name: str, options: dict[str, Any], context: AdapterContext | None = None):
        super().__init__(name, options, context)
        self.settings: HttpOptions = self.parse_options(name, self.options)
        if self.settings.tls is not None:
            self.settings.tls._adapter = name
        self.where = f"adapters[{name}].options"
        self.url: str | None = None
        self.endpoints: list[Endpoint] = []
        self._loop: LoopThread | None = None
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        self.connections: ConnectionLimit | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._publisher: BatchPublisher | None = None
        self._in_flight: asyncio.Semaphore | None = None
        self._limiter = RateLimiter(self.settings.rate_limit, self.settings.rate_burst) if self.settings.rate_limit else None
        self._tokens: list[bytes] = []
        self._users: dict[str, bytes] = {}
        self._seen: OrderedDict[str, str] = OrderedDict()  # Idempotency-Key -> message id (this process)
        #: request-reply: the answer given for an Idempotency-Key (expiry, (status, body, headers))
        self._answers: OrderedDict[str, tuple[float, tuple[int, bytes, dict[str, str]]]] = OrderedDict()
        self._seen_lock = threading.Lock()
        self._stopping = threading.Event()
        self.caller: Caller | None = None
        self.counts = {"accepted": 0, "answered": 0, "refused": 0, "unauthorized": 0, "limited": 0, "replayed": 0}

    @property
    def log(self) -> logging.Logger:
        return self.context.logger if self.context is not None else logging.getLogger(f"coupler.adapter.{self.name}")

    def supported_directions(self) -> tuple[str, ...]:
        return ("inbound",) if self.settings.mode == "server" else ("outbound",)

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        s = self.settings
        if s.mode == "client":
            from .client import Caller

            self.caller = Caller(s, self.name, self.log, self._stopping)
            self.url = s.url
            return
        from .validation import BodyValidator

        if self.context is None:
            raise CouplerError(f"http adapter {self.name!r} in server mode needs a bus context")
        for name, e in s.endpoints.items():
            where = f"{self.where}.endpoints.{name}"
            try:
                fmt = FormatIndicator.parse(e.format, "application/json")
            except CouplerError as exc:
                raise CouplerError(exc.message, where=f"{where}.format") from None
            schema_file = str(self.context.resolve_path(e.schema_file)) if e.schema_file else None
            xsd = str(self.context.resolve_path(e.xsd)) if e.xsd else None
            if e.exchange == "one-way" and not (e.channel or self.channel):
                raise CouplerError("a one-way endpoint needs a channel", where=f"{where}.channel",
                                   hint="set channel of the endpoint or of the adapter")
            validator = BodyValidator(fmt, list(e.content_types), schema_file, xsd, where, site_registry(self.context),
                                      schema_roots=[*site_schema_roots(self.context), *s.schema_roots])
            self.endpoints.append(Endpoint(name, e, validator, fmt))
        self._load_credentials()
        self._executor = ThreadPoolExecutor(s.max_in_flight, thread_name_prefix=f"http-{self.name}-bus")
        from .batching import BatchPublisher

        self._publisher = BatchPublisher(self.context, self._executor)
        self._loop = LoopThread(f"http-{self.name}").start()
        try:
            self.url = self._loop.run(self._start_server(), timeout=30)
        except BaseException:
            self.stop()
            raise
        self.log.info("http adapter %s serving %s (OpenAPI at %s/openapi.json)", self.name, self.url, self.url)

    def _load_credentials(self) -> None:
        s = self.settings
        if s.auth == "bearer":
            text = (secret_from_env(s.tokens_env, f"{self.where}.tokens_env") if s.tokens_env
                    else secret_file(s.tokens_file or "", f"{self.where}.tokens_file"))
            self._tokens = [t.strip().encode() for t in text.replace("\n", ",").split(",") if t.strip()]
            if not self._tokens:
                raise CouplerError("no bearer token given", where=f"{self.where}.tokens_env")
        elif s.auth == "basic":
            for line in secret_file(s.users_file or "", f"{self.where}.users_file").splitlines():
                user, sep, password = line.partition(":")
                if sep and user.strip():
                    self._users[user.strip()] = password.encode()

    def stop(self) -> None:
        self._stopping.set()
        if self.caller is not None:
            self.caller.close()
            self.caller = None
        loop, self._loop = self._loop, None
        if loop is None:
            return
        try:
            if self._listener is not None:
                self._listener.close()
            if self._runner is not None:
                loop.run(self._runner.cleanup(), timeout=15)
        finally:
            loop.stop()
            if self._executor is not None:
                self._executor.shutdown(wait=True, cancel_futures=True)

    async def _start_server(self) -> str:
        s = self.settings
        self._in_flight = asyncio.Semaphore(s.max_in_flight)
        app = web.Application(client_max_size=s.max_body_bytes)
        for e in self.endpoints:
            app.router.add_post(e.path, self._handler(e))
        app.router.add_get("/openapi.json", self._openapi)
        # keepalive_timeout also bounds a new connection's wait for its headers (aiohttp arms it on
        # connect, and AppRunner's own default is an hour)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True,
                                     keepalive_timeout=s.keepalive_timeout,
                                     logger=OneLineServerLog(self.log, f"adapters[{self.name}]"))
        await self._runner.setup()
        ssl_context = s.tls.server_context() if s.tls else None
        try:
            self._listener, self.connections = await listen(self._runner, s.host, s.port, ssl_context=ssl_context,
                                          max_connections=s.max_connections, logger=self.log,
                                          where=f"adapters[{self.name}]", backlog=512)
        except OSError as exc:
            raise CouplerError(f"cannot listen on {s.host}:{s.port}: {exc.strerror or exc}",
                               where=f"{self.where}.port") from None
        host, port = bound_address(self._listener)
        return f"{'https' if ssl_context else 'http'}://{host}:{port}"

    # -- server ---------------------------------------------------------------------------------

    async def _openapi(self, request: web.Request) -> web.Response:
        from .openapi import document

        endpoints = [{"name": e.name, "path": e.path, "format": e.format.ref, "avro": e.validator.avro,
                      "kinds": e.o.content_types, "exchange": e.o.exchange} for e in self.endpoints]
        return web.json_response(document(f"Coupler {self.name}", self.url or "", endpoints, self.settings.auth))

    def _authenticated(self, request: web.Request) -> bool:
        s = self.settings
        if s.auth == "none":
            return True
        header = request.headers.get("Authorization", "")
        scheme, _, credentials = header.partition(" ")
        if s.auth == "bearer":
            given = credentials.strip().encode()
            ok = scheme.lower() == "bearer" and any(hmac.compare_digest(given, t) for t in self._tokens)
        else:
            ok = False
            if scheme.lower() == "basic":
                try:
                    user, _, password = base64.b64decode(credentials, validate=True).decode().partition(":")
                except (ValueError, UnicodeDecodeError):
                    user, password = "", ""
                expected = self._users.get(user)
                ok = expected is not None and hmac.compare_digest(password.encode(), expected)
        return ok

    def _handler(self, endpoint: Endpoint) -> Any:
        async def handle(request: web.Request) -> web.StreamResponse:
            try:
                return await self._handle(request, endpoint)
            except (web.HTTPException, asyncio.CancelledError):
                raise
            except Exception as exc:  # contained to this request: kept for the operator, 500 to the caller
                cause = describe_exception(exc)
                self.log.error("%s: request to %s from %s failed: %s", self.name, endpoint.path, request.remote, cause)
                body = request._read_bytes or b""  # what was read of it (never read again here)
                self._invalid(body, f"request to {endpoint.path} from {request.remote} failed: {cause}")
                return _problem(500, "internal error; the request is kept for the operator")
        return handle

    async def _handle(self, request: web.Request, endpoint: Endpoint) -> web.StreamResponse:
        s = self.settings
        remote = request.remote or "?"
        if self._limiter is not None:
            wait = self._limiter.take(remote)
            if wait:
                self.counts["limited"] += 1
                return _problem(429, "too many requests", {"Retry-After": str(max(1, round(wait)))})
        if not self._authenticated(request):
            self.counts["unauthorized"] += 1
            self.log.warning("%s: request to %s from %s refused: missing or wrong %s credentials",
                             self.name, endpoint.path, remote, s.auth)  # never the credentials themselves
            scheme = "Bearer" if s.auth == "bearer" else "Basic"
            return _problem(401, "authentication required", {"WWW-Authenticate": f'{scheme} realm="coupler"'})
        try:
            refuse_declared(request, s.max_body_bytes, "max_body_bytes")
            kind = endpoint.validator.content_type(request.headers.get("Content-Type", ""))
            body = await read_body(request, s.max_body_bytes, s.read_timeout, limit_name="max_body_bytes",
                                   timeout_name="read_timeout")
        except CouplerError as exc:
            self.counts["refused"] += 1
            return _problem(getattr(exc, "status", 415), exc.message, close=True)
        except BodyRefused as exc:
            self.counts["refused"] += 1
            if exc.kind in ("lost", "encoding"):  # the client went away in the middle, or sent a bad body
                self.log.info("%s: request to %s from %s dropped: %s", self.name, endpoint.path, remote, exc.reason)
            return _problem(exc.status, exc.reason, close=True)
        from .validation import BodyError

        try:
            endpoint.validator.check(body, kind)
        except BodyError as exc:
            self.counts["refused"] += 1
            self.log.info("%s: request to %s from %s refused: %s", self.name, endpoint.path, remote, exc.message)
            return _problem(exc.status, exc.message)
        fmt = endpoint.format.with_content_type("application/json" if kind == "json" else "application/xml")
        key = request.headers.get("Idempotency-Key", "").strip()
        message_id = str(uuid.uuid5(_NAMESPACE, f"{self.name}|{endpoint.name}|{key}")) if key else str(uuid.uuid4())
        caller = TraceContext.parse(request.headers.get(TRACEPARENT))
        trace = caller.child() if caller is not None else TraceContext.for_key(message_id)
        props = {TRACEPARENT: trace.header, "http.path": endpoint.path, "http.remote": remote}
        if key:
            props["http.idempotency-key"] = key[:200]
        document = Document(fmt, body, props)
        assert self._in_flight is not None
        loop = asyncio.get_running_loop()
        async with self._in_flight:
            if endpoint.o.exchange == "one-way":
                if key and self._replayed(key, endpoint):
                    self.counts["replayed"] += 1
                    return web.json_response({"message_id": message_id, "replayed": True}, status=202,
                                             headers={TRACEPARENT: trace.header})
                assert self._publisher is not None and self.context is not None
                try:  # stored with the requests that arrived meanwhile, in one commit (.batching)
                    await self._publisher.publish(document.to_envelope(origin=self.name, message_id=message_id),
                                                  endpoint.o.channel or self.channel)
                except InvalidMessage as exc:
                    return _problem(422, exc.message)
                except CouplerError as exc:
                    self.log.error("%s: the bus did not take a request to %s: %s", self.name, endpoint.path, exc)
                    return _problem(503, "the bus cannot take the message now; send it again later",
                                    {"Retry-After": "5"})
                if key:
                    self._remember(key, endpoint, message_id)
                self.counts["accepted"] += 1
                # the JSON written out: a message id is a UUID (nothing to escape)
                return web.Response(body=b'{"message_id": "%s"}' % message_id.encode(), status=202,
                                    content_type="application/json", headers={TRACEPARENT: trace.header})
            if key and (kept := self._answered(key, endpoint)) is not None:
                self.counts["replayed"] += 1  # asked before: the same answer, the bus not asked again
                return web.Response(body=kept[1], status=kept[0], headers={**kept[2], "Idempotent-Replayed": "true"})
            try:
                answer = await loop.run_in_executor(self._executor, self._ask, document, endpoint)
            except CommandFault as fault:
                return _problem(FAULT_STATUS.get(fault.code, 502), fault.message)
            except CouplerError as exc:
                return _problem(502, f"the bus failed: {exc.message}")
        self.counts["answered"] += 1
        if not answer:
            response = web.Response(status=204, headers={TRACEPARENT: trace.header})
        else:
            reply = answer[0]
            response = web.Response(body=reply.body, status=200,
                                    headers={"Content-Type": _content_type(reply.format), TRACEPARENT: trace.header})
        if key:  # an answer (not a fault) is kept for the key, for idempotency_ttl
            self._keep_answer(key, endpoint, response)
        return response

    def _replayed(self, key: str, endpoint: Endpoint) -> bool:
        with self._seen_lock:
            return f"{endpoint.name}|{key}" in self._seen

    def _remember(self, key: str, endpoint: Endpoint, message_id: str) -> None:
        with self._seen_lock:
            self._seen[f"{endpoint.name}|{key}"] = message_id
            while len(self._seen) > 100_000:
                self._seen.popitem(last=False)

    def _answered(self, key: str, endpoint: Endpoint) -> tuple[int, bytes, dict[str, str]] | None:
        with self._seen_lock:
            kept = self._answers.get(f"{endpoint.name}|{key}")
        if kept is None or kept[0] < time.monotonic():
            return None
        return kept[1]

    def _keep_answer(self, key: str, endpoint: Endpoint, response: web.Response) -> None:
        body = response.body if isinstance(response.body, bytes) else b""
        headers = {k: v for k, v in response.headers.items() if k in ("Content-Type", TRACEPARENT)}
        with self._seen_lock:
            self._answers[f"{endpoint.name}|{key}"] = (time.monotonic() + self.settings.idempotency_ttl,
                                                       (response.status, body, headers))
            while len(self._answers) > 10_000:
                self._answers.popitem(last=False)

    def _ask(self, document: Document, endpoint: Endpoint) -> list[Document]:
        assert self.context is not None and endpoint.o.target is not None
        return request_command(self.context, document, target=endpoint.o.target,
                               operation=endpoint.o.operation or endpoint.name, timeout=endpoint.o.timeout,
                               command_channel=self.context.command_channel).documents

    def _invalid(self, payload: bytes, reason: str) -> None:
        if self.context is None:
            return
        try:
            self.context.invalid(payload, reason)
        except Exception as exc:  # noqa: BLE001 - the store failing must not take the adapter down
            self.log.error("cannot record an invalid request (%s): %s", reason, exc)

    # -- client ---------------------------------------------------------------------------------

    def _require_client(self) -> Caller:
        if self.caller is None:
            raise CommandFault(f"http adapter {self.name!r} is a server; it calls nobody", code="unsupported")
        return self.caller

    def deliver(self, envelope: Envelope) -> str:
        """Call the partner with ``envelope``; the URL called (without credentials or secret
        query values: :func:`shown_url`) is the trace's ``delivered`` hop."""
        from .client import shown_url

        answer, _ = self._require_client().call(envelope, body=False)
        return shown_url(str(answer.url))

    def on_send(self, command: Command) -> Reply:
        if command.document is None:
            raise CommandFault("send without a document", code="invalid")
        envelope = command.document.to_envelope(origin=command.envelope.origin)
        answer, _ = self._require_client().call(envelope.replace(message_id=command.envelope.message_id), body=False)
        return Reply(details={"status": "delivered", "http.status": str(answer.status_code)})

    def on_request(self, command: Command) -> Reply:
        if command.document is None:
            raise CommandFault("a request command needs a document", code="invalid")
        envelope = command.document.to_envelope(origin=command.envelope.origin)
        answer, body = self._require_client().call(envelope.replace(message_id=command.envelope.message_id))
        ct = answer.headers.get("Content-Type", "application/octet-stream").split(";")[0].strip()
        fmt = FormatIndicator(f"http.{self.name.replace('-', '_')}Response", 1, ct if "/" in ct else "application/octet-stream")
        return Reply(documents=[Document(fmt, body, {"http.status": str(answer.status_code)})],
                     details={"status": "answered", "http.status": str(answer.status_code)})

    def health(self) -> dict[str, Any]:
        health = super().health()
        health["http"] = dict(self.counts)
        if self.connections is not None:
            health["connections"] = self.connections.health()
        if self.caller is not None:
            health["http"].update(calls=self.caller.calls, retried=self.caller.retried, refused=self.caller.refused)
        return health

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info.update(mode=self.settings.mode, url=self.url,
                    endpoints={e.name: e.path for e in self.endpoints})
        return info


def _problem(status: int, detail: str, headers: dict[str, str] | None = None, *, close: bool = False) -> web.Response:
    """An RFC 9457 problem answer."""
    response = web.json_response({"status": status, "detail": detail}, status=status, headers=headers,
                                 content_type="application/problem+json")
    if close:  # the rest of the body is not read: the connection cannot be kept
        response.force_close()
    return response


def _content_type(fmt: FormatIndicator) -> str:
    return fmt.content_type if fmt.content_type != "avro/binary" else "application/octet-stream"



