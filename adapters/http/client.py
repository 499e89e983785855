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
"""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

import httpx

from coupler.adapters.common.secrets import secret_file, secret_from_env
from coupler.bus.api import CommandFault
from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError
from coupler.canonical.textformats import json_loads
from coupler.canonical.tracecontext import TRACEPARENT, TraceContext

from .options import HttpOptions, OAuth2Options

_FIELD = re.compile(r"\{([a-z_]+)(?:\.([^{}]+))?\}")
RETRIED = (408, 425, 429)


class CallError(CouplerError):
    """A call that failed after its retries (the bus redelivers the message later)."""


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

    def __init__(self, opts: OAuth2Options, client: httpx.Client, where: str):
        self.o = opts
        self.client = client
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
                try:
                    answer = self.client.post(self.o.token_url, data=data, auth=(self.o.client_id, self._secret()))
                except httpx.HTTPError as exc:
                    raise CallError(f"the token endpoint {self.o.token_url} cannot be reached: {exc}",
                                    where=f"{self.where}.token_url") from None
                if answer.status_code != 200:
                    raise CallError(f"the token endpoint {self.o.token_url} answered {answer.status_code}",
                                    where=f"{self.where}.token_url", hint="check client_id and the secret")
                try:
                    grant = answer.json()
                    self._token = str(grant["access_token"])
                except (ValueError, KeyError, TypeError):
                    raise CallError(f"the token endpoint {self.o.token_url} answered no access_token",
                                    where=f"{self.where}.token_url") from None
                self._expires = time.monotonic() + float(grant.get("expires_in", 3600))
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
        self.client = httpx.Client(timeout=opts.timeout, verify=verify, follow_redirects=False)
        self.token: OAuth2Token | None = (OAuth2Token(opts.oauth2, self.client, f"{self.where}.oauth2")
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
        self.client.close()

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

    def _request(self, url: str, shown: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
        """One call; its answer read no further than ``max_response_bytes`` (httpx read a
        partner's answer of any size whole into memory), decoded from its Content-Encoding."""
        limit = self.o.max_response_bytes
        too_large = CommandFault(f"{self.o.method} {shown}: the answer is larger than {limit} bytes "
                                 "(max_response_bytes)", code="failed",
                                 hint="raise max_response_bytes if the partner answers that much")
        with self.client.stream(self.o.method, url, content=body, headers=headers, auth=self.auth) as streamed:
            declared = streamed.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > limit:
                raise too_large
            data = bytearray()
            try:
                for chunk in streamed.iter_bytes():
                    data += chunk
                    if len(data) > limit:
                        raise too_large
            except httpx.DecodingError as exc:  # an answer not in its Content-Encoding (not gzip, say)
                encoding = streamed.headers.get("Content-Encoding", "")[:40]
                raise CommandFault(f"{self.o.method} {shown}: the answer cannot be read as {encoding}: "
                                   f"{' '.join(str(exc).split())[:200]}", code="failed") from None
        # decoded already: the new response must not decode it again
        kept = [(k, v) for k, v in streamed.headers.multi_items()
                if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
        return httpx.Response(streamed.status_code, headers=kept, content=bytes(data), request=streamed.request)

    def call(self, envelope: Envelope) -> httpx.Response:
        """The partner's 2xx answer to ``envelope`` (retried as the module says)."""
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
                answer = self._request(url, shown, envelope.body, headers)
            except httpx.TransportError as exc:
                problem = f"{self.o.method} {shown}: {type(exc).__name__}: {exc}"
            else:
                if answer.is_success:
                    return answer
                if answer.status_code == 401 and self.token is not None and not renewed:
                    self.token.get(renew=True)  # expired early or revoked: one fresh token
                    renewed = True
                    continue
                excerpt = answer.text[:500]
                if 400 <= answer.status_code < 500 and answer.status_code not in RETRIED:
                    self.refused += 1  # the partner will not take it however often it comes:
                    # straight to the dead letters (fault `unsupported`), with its answer
                    raise CommandFault(f"{self.o.method} {shown} answered {answer.status_code} "
                                       f"{answer.reason_phrase}: {excerpt}", code="unsupported",
                                       hint="fix the message or the partner's side, then replay it "
                                            "(coupler ctl dlq)")
                problem = f"{self.o.method} {shown} answered {answer.status_code} {answer.reason_phrase}: {excerpt}"
                retry_after = answer.headers.get("Retry-After", "")
                if retry_after.isdigit():
                    wait = min(float(retry_after), self.o.max_backoff)
            if attempt >= self.o.retries:
                raise CallError(f"{problem} (after {attempt + 1} attempts; the bus tries again later)")
            wait = wait if wait is not None else min(self.o.backoff * 2 ** attempt, self.o.max_backoff)
            self.log.info("%s: %s; retrying in %.1f s", self.name, problem, wait)
            attempt += 1
            self.retried += 1
            if self.stopping.wait(wait):
                raise CallError(f"{problem} (stopping)")
