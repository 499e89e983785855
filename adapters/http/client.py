"""The http adapter's client side: a document of the bus becomes a call to a partner's REST API.

Each call sends the document's body with its content type, the ``Idempotency-Key`` header
(the message id: a call made again after a crash or a retry is the same call to a partner
that honours it) and ``traceparent`` (a child of the message's trace). 5xx answers, 408,
429 (after its ``Retry-After``) and connection errors are retried with exponential backoff;
then the bus redelivers later. Any other 4xx refuses the message at once: it goes to the dead
letters with the status and the start of the response (fault ``unsupported``, which the
daemon dead-letters without retrying). OAuth2
client-credentials tokens are fetched before the first call and again before they expire
(or when a call is answered 401).

A partner's answer is read within bounds: the whole call (connection, request, the answer's
head and body however slowly they come) takes at most ``timeout`` seconds; a 2xx body the
bus needs (a ``request`` command's reply) at most ``max_response_bytes`` after decoding
(``gzip`` and ``deflate`` are asked for and inflated no further than that; another
``Content-Encoding`` is refused); a refusal's body is read for its first bytes only, shown on
one line; a one-way delivery does not read the body of a 2xx at all.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

import httpx

from coupler.adapters.common.secrets import secret_file, secret_from_env
from coupler.bus.api import CommandFault, LoopThread
from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError
from coupler.canonical.textformats import json_loads
from coupler.canonical.tracecontext import TRACEPARENT, TraceContext

from .options import HttpOptions, OAuth2Options

_FIELD = re.compile(r"\{([a-z_]+)(?:\.([^{}]+))?\}")
RETRIED = (408, 425, 429)
#: what is asked for and inflated (within the limit); any other Content-Encoding is refused
ACCEPT_ENCODING = "gzip, deflate"
#: the bytes of a refusal's body read for the error (and of it, the characters shown)
EXCERPT_BYTES, EXCERPT_CHARS = 4096, 500
#: a token endpoint's answer is read up to this (a JWT is a few kilobytes)
TOKEN_BYTES = 64 * 1024
_RETRY_AFTER = re.compile(r"[0-9]{1,9}")


class CallError(CouplerError):
    """A call that failed after its retries (the bus redelivers the message later)."""


class AnswerRefused(CouplerError):
    """An answer whose body is larger than allowed or cannot be decoded."""


def one_line(text: str, chars: int = EXCERPT_CHARS) -> str:
    """``text`` with every run of white space (line breaks included) one space, cut at ``chars``."""
    return " ".join(text[: chars * 4].split())[:chars]


class _Inflater:
    """A ``gzip`` or ``deflate`` body inflated a chunk at a time, never past the room left."""

    def __init__(self, encoding: str):
        self.gzip = encoding in ("gzip", "x-gzip")
        self.d = zlib.decompressobj(31 if self.gzip else 15)
        self.started = False

    def __call__(self, data: bytes, room: int) -> bytes:
        if not self.started and not self.gzip:  # deflate: zlib-wrapped, or raw as some servers send it
            self.started = True
            try:
                return self.d.decompress(data, room)
            except zlib.error:
                self.d = zlib.decompressobj(-15)
        self.started = True
        return self.d.decompress(data, room)


async def read_bounded(answer: httpx.Response, limit: int, *, strict: bool, what: str) -> bytes:
    """The body of ``answer`` (a stream), decoded, at most ``limit`` bytes. ``strict``: a
    larger one (claimed or sent) or one that cannot be decoded raises :class:`AnswerRefused`;
    else it is cut at ``limit``."""
    encodings = [e.strip().lower() for e in answer.headers.get("Content-Encoding", "").split(",") if e.strip()]
    encodings = [e for e in encodings if e != "identity"]
    if len(encodings) > 1 or (encodings and encodings[0] not in ("gzip", "x-gzip", "deflate")):
        raise AnswerRefused(f"{what} has Content-Encoding {one_line(', '.join(encodings), 80)}, which was not "
                            f"asked for (Accept-Encoding: {ACCEPT_ENCODING})")
    inflate: Callable[[bytes, int], bytes] | None = _Inflater(encodings[0]) if encodings else None
    declared = answer.headers.get("Content-Length", "").strip()
    if strict and inflate is None and declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise AnswerRefused(f"{what} claims {declared} bytes, more than max_response_bytes = {limit}")
    body = bytearray()
    raw_seen = False
    async for raw in answer.aiter_raw():
        raw_seen = raw_seen or bool(raw)
        if inflate is not None:
            try:
                raw = inflate(raw, limit - len(body) + 1)
            except zlib.error as exc:
                raise AnswerRefused(f"{what}: its {encodings[0]} body cannot be inflated: {exc}") from None
        body += raw
        if len(body) > limit:
            if strict:
                raise AnswerRefused(f"{what} is larger than max_response_bytes = {limit}")
            return bytes(body[:limit])
    if strict and isinstance(inflate, _Inflater) and raw_seen and not inflate.d.eof:
        raise AnswerRefused(f"{what}: its {encodings[0]} body ends before its compressed stream does")
    return bytes(body)


#: query parameters whose values are redacted where a URL is shown (trace, errors, logs)
_SECRET_PARAM = re.compile(r"key|token|secret|pass|pwd|auth|sig|credential|session", re.IGNORECASE)


def shown_url(url: str) -> str:
    """``url`` as the trace, errors and logs show it: without the user and password of its
    authority, the values of query parameters that look like secrets (``api_key``,
    ``access_token``, ``sig``...) replaced by ``***``, without its fragment."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:  # not a URL one can take apart: nothing of it is shown
        return "(a URL that cannot be parsed)"
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port is not None else "")
    query = "&".join(
        f"{quote(name, safe='')}=***" if _SECRET_PARAM.search(name) else f"{quote(name, safe='')}={quote(value, safe='')}"
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def render(template: str, envelope: Envelope, *, quote_values: bool) -> str:
    """``template`` with ``{message_id}``, ``{correlation_id}``, ``{prop.NAME}``, ``{field.NAME}``."""
    record: Any = None

    def value(m: re.Match[str]) -> str:
        nonlocal record
        kind, name = m.group(1), m.group(2)
        if kind == "message_id" and name is None:
            v: Any = envelope.message_id
        elif kind == "correlation_id" and name is None:
            v = envelope.correlation_id or ""
        elif kind == "prop" and name:
            if name not in envelope.properties:
                raise CommandFault(f"message {envelope.message_id} has no property {name!r} for {template!r}",
                                   code="invalid")
            v = envelope.properties[name]
        elif kind == "field" and name:
            if record is None:
                try:
                    record = json_loads(envelope.body)
                except (ValueError, UnicodeDecodeError):
                    raise CommandFault(f"{template!r} takes a field of the body, which is not JSON",
                                       code="invalid") from None
            if not isinstance(record, dict) or name not in record:
                raise CommandFault(f"message {envelope.message_id} has no field {name!r} for {template!r}",
                                   code="invalid")
            v = record[name]
        else:
            return m.group(0)
        text = str(v)
        return quote(text, safe="") if quote_values else text.replace("\r", " ").replace("\n", " ")

    return _FIELD.sub(value, template)


class OAuth2Token:
    """Client-credentials tokens: fetched when needed, refreshed 30 s before they expire."""

    def __init__(self, opts: OAuth2Options, caller: Caller, where: str):
        self.o = opts
        self.caller = caller
        self.where = where
        self._token: str | None = None
        self._expires = 0.0
        self._lock = threading.Lock()
        self.fetched = 0

    def _secret(self) -> str:
        if self.o.client_secret_env is not None:
            return secret_from_env(self.o.client_secret_env, f"{self.where}.client_secret_env")
        assert self.o.client_secret_file is not None
        return secret_file(self.o.client_secret_file, f"{self.where}.client_secret_file")

    def get(self, *, renew: bool = False) -> str:
        with self._lock:
            if renew or self._token is None or time.monotonic() > self._expires - 30:
                data = {"grant_type": "client_credentials"}
                if self.o.scope:
                    data["scope"] = self.o.scope
                url = shown_url(self.o.token_url)
                try:
                    answer, body = self.caller.exchange("POST", self.o.token_url, limit=TOKEN_BYTES, strict=True,
                                                        what=f"the answer of the token endpoint {url}", data=data,
                                                        auth=(self.o.client_id, self._secret()))
                except (httpx.HTTPError, AnswerRefused) as exc:
                    raise CallError(f"the token endpoint {url} cannot be used: {one_line(str(exc), 300)}",
                                    where=f"{self.where}.token_url") from None
                if answer.status_code != 200:
                    raise CallError(f"the token endpoint {url} answered {answer.status_code}",
                                    where=f"{self.where}.token_url", hint="check client_id and the secret")
                try:
                    grant = json_loads(body)
                except (ValueError, UnicodeDecodeError, RecursionError):
                    grant = None
                token = grant.get("access_token") if isinstance(grant, dict) else None
                if not isinstance(token, str) or not token:
                    raise CallError(f"the token endpoint {url} answered no access_token", where=f"{self.where}.token_url")
                expires_in = grant.get("expires_in", 3600) if isinstance(grant, dict) else None
                if isinstance(expires_in, bool) or not isinstance(expires_in, int | float) or expires_in != expires_in:
                    raise CallError(f"the token endpoint {url} answered an expires_in that is not a number "
                                    f"({one_line(repr(expires_in), 40)})", where=f"{self.where}.token_url")
                self._token = token
                self._expires = time.monotonic() + min(float(expires_in), 10.0 * 365 * 86400)
                self.fetched += 1
            return self._token


class Caller:
    """Calls the partner's API for one adapter (thread-safe; one connection pool)."""

    def __init__(self, opts: HttpOptions, name: str, logger: logging.Logger, stopping: threading.Event):
        self.o = opts
        self.name = name
        self.log = logger
        self.stopping = stopping
        self.where = f"adapters[{name}].options"
        verify: Any = opts.tls.client_context() if opts.tls is not None else True
        # calls run on a loop of their own: a whole call is bounded by asyncio's timeout (httpx's
        # timeouts are per read: an answer trickled a byte at a time would never end)
        self.client = httpx.AsyncClient(timeout=opts.timeout, verify=verify, follow_redirects=False,
                                        headers={"Accept-Encoding": ACCEPT_ENCODING})
        self.loop = LoopThread(f"http-{name}-client").start()
        self.token: OAuth2Token | None = (OAuth2Token(opts.oauth2, self, f"{self.where}.oauth2")
                                          if opts.oauth2 is not None else None)
        self.auth: Any = None
        if opts.auth == "basic":
            if opts.username is None or opts.password_env is None:
                raise CouplerError('auth = "basic" needs username and password_env', where=f"{self.where}.auth")
            self.auth = (opts.username, secret_from_env(opts.password_env, f"{self.where}.password_env"))
        elif opts.auth == "bearer":
            tokens = (secret_from_env(opts.tokens_env, f"{self.where}.tokens_env") if opts.tokens_env else
                      secret_file(opts.tokens_file or "", f"{self.where}.tokens_file"))
            self.bearer = tokens.split(",")[0].strip()
        self.calls = 0
        self.retried = 0
        self.refused = 0

    def close(self) -> None:
        try:
            self.loop.run(self.client.aclose(), timeout=15)
        finally:
            self.loop.stop()

    def exchange(self, method: str, url: str, *, limit: int | None, strict: bool, what: str,
                 **request: Any) -> tuple[httpx.Response, bytes]:
        """One HTTP exchange within ``timeout`` seconds in all: the answer and its body (see
        :func:`read_bounded`; ``limit`` None: the body of a 2xx is not read). Raises
        ``httpx.TransportError`` (``httpx.ReadTimeout`` at the timeout) or :class:`AnswerRefused`."""
        return self.loop.run(self._exchange(method, url, limit, strict, what, request))

    async def _exchange(self, method: str, url: str, limit: int | None, strict: bool, what: str,
                        request: dict[str, Any]) -> tuple[httpx.Response, bytes]:
        try:
            async with asyncio.timeout(self.o.timeout):
                async with self.client.stream(method, url, **request) as answer:
                    if answer.is_success:
                        body = b"" if limit is None else await read_bounded(answer, limit, strict=strict, what=what)
                    else:  # a refusal or a failure: its first bytes, for the error
                        try:
                            body = await read_bounded(answer, EXCERPT_BYTES, strict=False, what=what)
                        except AnswerRefused as exc:
                            body = f"({exc.message})".encode()
        except TimeoutError:
            raise httpx.ReadTimeout(f"no whole answer within timeout = {self.o.timeout:g} s") from None
        return answer, body

    def headers(self, envelope: Envelope) -> dict[str, str]:
        headers = {k: render(v, envelope, quote_values=False) for k, v in self.o.headers.items()}
        headers["Idempotency-Key"] = envelope.message_id
        parent = TraceContext.parse(envelope.properties.get(TRACEPARENT))
        headers[TRACEPARENT] = (parent.child() if parent else TraceContext.new()).header
        ct = envelope.format.content_type
        if ct == "avro/binary":
            raise CommandFault(f"message {envelope.message_id} is Avro; a REST call sends JSON or XML",
                               code="invalid", hint="give the adapter a mapping to the partner's JSON, or a "
                                                    "format with content type application/json")
        headers["Content-Type"] = ct
        if self.o.auth == "bearer":
            headers["Authorization"] = f"Bearer {self.bearer}"
        return headers

    def call(self, envelope: Envelope, *, body: bool = True) -> tuple[httpx.Response, bytes]:
        """The partner's 2xx answer to ``envelope`` and its body (retried as the module says;
        ``body`` False: the body is not read)."""
        url = render(self.o.url or "", envelope, quote_values=True)
        shown = shown_url(url)  # what errors and logs say: no credentials
        headers = self.headers(envelope)
        attempt, renewed = 0, False
        while True:
            if self.token is not None:
                headers["Authorization"] = f"Bearer {self.token.get()}"
            self.calls += 1
            wait: float | None = None
            try:
                answer, content = self.exchange(self.o.method, url, limit=self.o.max_response_bytes if body else None,
                                                strict=True, what=f"the answer of {self.o.method} {shown}",
                                                content=envelope.body, headers=headers, auth=self.auth)
            except AnswerRefused as exc:  # a 2xx: the partner did it, its answer cannot be used
                raise CommandFault(exc.message, code="failed",
                                   hint="raise max_response_bytes if the answer is right") from None
            except (httpx.HTTPError, httpx.InvalidURL) as exc:  # InvalidURL: a redirect's Location, too
                problem = f"{self.o.method} {shown}: {type(exc).__name__}: {one_line(str(exc), 300)}"
            else:
                if answer.is_success:
                    return answer, content
                if answer.status_code == 401 and self.token is not None and not renewed:
                    self.token.get(renew=True)  # expired early or revoked: one fresh token
                    renewed = True
                    continue
                excerpt = one_line(content.decode(answer.encoding or "utf-8", "replace"))
                if 400 <= answer.status_code < 500 and answer.status_code not in RETRIED:
                    self.refused += 1  # the partner will not take it however often it comes:
                    # straight to the dead letters (fault `unsupported`), with its answer
                    raise CommandFault(f"{self.o.method} {shown} answered {answer.status_code} "
                                       f"{one_line(answer.reason_phrase, 80)}: {excerpt}", code="unsupported",
                                       hint="fix the message or the partner's side, then replay it "
                                            "(coupler ctl dlq)")
                problem = (f"{self.o.method} {shown} answered {answer.status_code} "
                           f"{one_line(answer.reason_phrase, 80)}: {excerpt}")
                retry_after = answer.headers.get("Retry-After", "").strip()
                if _RETRY_AFTER.fullmatch(retry_after):  # seconds (an HTTP date: the backoff)
                    wait = min(float(retry_after), self.o.max_backoff)
            if attempt >= self.o.retries:
                raise CallError(f"{problem} (after {attempt + 1} attempts; the bus tries again later)")
            wait = wait if wait is not None else min(self.o.backoff * 2 ** attempt, self.o.max_backoff)
            self.log.info("%s: %s; retrying in %.1f s", self.name, problem, wait)
            attempt += 1
            self.retried += 1
            if self.stopping.wait(wait):
                raise CallError(f"{problem} (stopping)")
