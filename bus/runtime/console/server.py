"""The HTTP endpoint of a daemon (aiohttp on a thread of its own).

* ``/healthz`` — 200 while the daemon runs and every adapter is up, else 503 (no token);
* ``/metrics`` — Prometheus text format (no token);
* ``/api/...`` — the Control Bus operations as JSON (token);
* every other page — the operator console (token).

The token is kept in ``DATA_DIR/console.token`` (mode 0600, created on first start). A
client gives it as ``Authorization: Bearer TOKEN``, or once as ``?token=TOKEN`` (the URL
``coupler ctl console`` prints), which sets an HttpOnly, SameSite=Strict cookie and
redirects to the same page without it. Changes (pause, replay, purge) are POSTs with a JSON
body, which a page of another site cannot send without the browser asking first (CORS).
Plain HTTP is served on loopback addresses only, unless ``tls_cert``/``tls_key`` are set or
``allow_plain_remote = true``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import logging
import os
import secrets
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from coupler.bus.config.loader import ConfigError
from coupler.bus.model.httpserver import (
    BodyRefused,
    ConnectionLimit,
    bound_address,
    listen,
    read_body,
    refuse_declared,
)
from coupler.bus.runtime.console import api, pages
from coupler.bus.runtime.console.api import ApiInputError
from coupler.canonical.errors import CouplerError
from coupler.canonical.serverlog import OneLineServerLog, quiet_accept_errors
from coupler.canonical.textformats import json_loads

if TYPE_CHECKING:
    from coupler.bus.config.loader import SiteConfig
    from coupler.bus.config.models import HttpSection
    from coupler.bus.runtime.control import ControlService
    from coupler.bus.runtime.daemon import Daemon

log = logging.getLogger("coupler.console")

TOKEN_FILE = "console.token"
URL_FILE = "console.url"
COOKIE = "coupler_token"
#: seconds between two samples of the channel counters (the rate charts)
SAMPLE_SECONDS = 2.0
#: samples kept: ten minutes
SAMPLES = 300
STATIC = Path(__file__).parent / "static"


def read_token(site: SiteConfig, *, create: bool = False) -> str:
    """The console token of ``site`` (created with mode 0600 when ``create`` and missing)."""
    path = site.data_dir / TOKEN_FILE
    if create and not path.exists():
        site.data_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(32) + "\n")
    try:
        if create and path.stat().st_mode & 0o077:
            os.chmod(path, 0o600)  # never readable by others, whoever created it
        return path.read_text().strip()
    except OSError as exc:
        raise CouplerError(
            f"cannot read the console token: {exc.strerror}", where=str(path),
            hint="the daemon creates it on start when [http] listen is set",
        ) from exc


def console_url(site: SiteConfig) -> str:
    """The URL of the running daemon's console with its token (``coupler ctl console``)."""
    try:
        base = (site.data_dir / URL_FILE).read_text().strip()
    except OSError as exc:
        raise CouplerError(
            "the daemon serves no console", where=str(site.path),
            hint='set [http] listen = "127.0.0.1:8780" in site.toml and restart the daemon',
        ) from exc
    return f"{base}/?token={read_token(site)}"


def parse_listen(http: HttpSection, site_file: Path) -> tuple[str, int]:
    """``[http] listen`` as (host, port), checked: plain HTTP only on loopback unless allowed."""
    text = str(http.listen or "").strip()
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ConfigError([f"http.listen: {text!r} is not HOST:PORT (e.g. 127.0.0.1:8780)"], where=str(site_file))
    tls = bool(http.tls_cert or http.tls_key)
    if tls and not (http.tls_cert and http.tls_key):
        raise ConfigError(["http: tls_cert and tls_key go together"], where=str(site_file))
    if not tls and not http.allow_plain_remote and not _loopback(host):
        raise CouplerError(
            f"refusing to serve the console as plain HTTP on non-loopback address {host}",
            where=f"{site_file}: http.listen",
            hint="set tls_cert and tls_key, listen on 127.0.0.1, or set allow_plain_remote = true behind a TLS proxy",
        )
    return host, int(port_text)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class RateHistory:
    """Per-channel samples of the sent and acknowledged counters; rates per second."""

    def __init__(self) -> None:
        self.samples: deque[tuple[float, dict[str, tuple[int, int]]]] = deque(maxlen=SAMPLES)

    def add(self, stats: list[dict[str, Any]], now: float | None = None) -> None:
        self.samples.append((now or time.time(), {s["channel"]: (s["sent"], s["acked"]) for s in stats}))

    def rates(self, channel: str) -> list[tuple[float, float, float]]:
        """``(time, in per s, out per s)`` between consecutive samples."""
        out = []
        items = list(self.samples)
        for (t0, a), (t1, b) in zip(items, items[1:], strict=False):
            if channel in b and t1 > t0:
                before = a.get(channel, (0, 0))  # a channel that appeared meanwhile started at 0
                out.append((t1, max(0, b[channel][0] - before[0]) / (t1 - t0), max(0, b[channel][1] - before[1]) / (t1 - t0)))
        return out


class ConsoleServer:
    """The HTTP endpoint of ``daemon``, serving ``[http] listen`` on a thread of its own."""

    def __init__(self, daemon: Daemon, service: ControlService):
        self.daemon = daemon
        self.service = service
        self.site = daemon.site
        self.host, self.port = parse_listen(self.site.http, self.site.path)
        self.token = read_token(self.site, create=True)
        self.rates = RateHistory()
        self.url: str | None = None
        self._loop = asyncio.new_event_loop()
        quiet_accept_errors(self._loop, log, "console")
        self._thread = threading.Thread(target=self._loop.run_forever, name="console", daemon=True)
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        self.connections: ConnectionLimit | None = None
        self._sampler: asyncio.Task[None] | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()
        try:
            self.url = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(30)
        except BaseException:
            self.close()
            raise
        (self.site.data_dir / URL_FILE).write_text(self.url + "\n")
        log.info("console at %s (token in %s)", self.url, self.site.data_dir / TOKEN_FILE, extra={"url": self.url})

    def _ssl(self) -> ssl.SSLContext | None:
        http = self.site.http
        if not http.tls_cert or not http.tls_key:
            return None
        base = self.site.path.parent
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            ctx.load_cert_chain(base / http.tls_cert, base / http.tls_key)
        except (OSError, ssl.SSLError) as exc:
            raise CouplerError(f"cannot load the TLS certificate or key: {exc}", where=f"{self.site.path}: http.tls_cert") from exc
        return ctx

    async def _start(self) -> str:
        app = web.Application(middlewares=[self._auth], client_max_size=self.site.http.max_body_bytes)
        self._routes(app)
        self._runner = web.AppRunner(app, access_log=None, keepalive_timeout=self.site.http.keepalive_timeout,
                                     logger=OneLineServerLog(log, "console"))
        await self._runner.setup()
        ctx = self._ssl()
        try:
            self._listener, self.connections = await listen(self._runner, self.host, self.port, ssl_context=ctx,
                                          max_connections=self.site.http.max_connections, logger=log,
                                          where="console", option="http.max_connections")
        except OSError as exc:
            raise CouplerError(f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}", where=f"{self.site.path}: http.listen") from exc
        host, port = bound_address(self._listener)
        self._sampler = asyncio.get_running_loop().create_task(self._sample())
        shown = f"[{host}]" if ":" in host else host
        return f"{'https' if ctx else 'http'}://{shown}:{port}"

    def close(self) -> None:
        async def stop() -> None:
            if self._sampler is not None:
                self._sampler.cancel()
            if self._listener is not None:
                self._listener.close()
            if self.connections is not None:
                self.connections.close()  # those still in their TLS handshake
            if self._runner is not None:
                await self._runner.cleanup()

        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(stop(), self._loop).result(15)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        with contextlib.suppress(FileNotFoundError):
            (self.site.data_dir / URL_FILE).unlink()

    async def _sample(self) -> None:
        while True:
            try:
                self.rates.add(await self._call("channels"))
            except Exception as exc:  # the store busy or gone: the next sample tries again
                log.debug("console: cannot sample channel statistics: %s", exc)
            await asyncio.sleep(SAMPLE_SECONDS)

    async def _call(self, op: str, **args: Any) -> Any:
        """A Control Bus operation, run off the event loop (the store blocks)."""
        return await asyncio.get_running_loop().run_in_executor(None, lambda: self.service.call(op, **args))

    async def _run(self, fn: Callable[[], Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, fn)

    # -- authentication ----------------------------------------------------------------------

    def _authorised(self, request: web.Request) -> bool:
        given = ""
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            given = auth[7:].strip()
        else:
            given = request.cookies.get(COOKIE, "")
        return bool(given) and hmac.compare_digest(given.encode(), self.token.encode())

    @web.middleware
    async def _auth(self, request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
        if request.path in ("/healthz", "/metrics") or request.path.startswith("/static/"):
            return await handler(request)
        query_token = request.query.get("token")
        if query_token is not None and request.method == "GET":
            if not hmac.compare_digest(query_token.encode(), self.token.encode()):
                return self._denied(request)
            rest = request.rel_url.with_query({k: v for k, v in request.query.items() if k != "token"})
            redirect = web.HTTPSeeOther(str(rest))
            redirect.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict", secure=request.secure, path="/")
            raise redirect
        if not self._authorised(request):
            return self._denied(request)
        if request.method == "POST" and request.content_type != "application/json":
            return web.json_response({"error": "POST a JSON body (Content-Type: application/json)"}, status=415)
        try:
            refuse_declared(request, self.site.http.max_body_bytes, "http.max_body_bytes")
            return await handler(request)
        except BodyRefused as exc:
            if exc.kind == "lost":  # the client went away (or reset) in the middle of its body
                log.info("console: %s %s from %s dropped: %s", request.method, request.path, request.remote, exc.reason)
            refused = web.json_response({"error": exc.reason}, status=exc.status)
            refused.force_close()  # the rest of the body is not read: the connection cannot be kept
            return refused
        except ApiInputError as exc:
            if request.path.startswith("/api/"):
                return web.json_response({"error": str(exc), "problems": exc.problems}, status=400)
            return web.Response(text=pages.error_page(self.site.name, str(exc)), content_type="text/html", status=400)
        except CouplerError as exc:
            if request.path.startswith("/api/"):
                return web.json_response({"error": str(exc)}, status=_status(exc))
            return web.Response(text=pages.error_page(self.site.name, str(exc)), content_type="text/html", status=_status(exc))
        except web.HTTPException as exc:  # no such route or method: JSON on the API too
            if exc.status >= 400 and request.path.startswith("/api/"):
                return web.json_response({"error": f"{exc.status} {exc.reason}: {request.method} {request.path}"},
                                         status=exc.status)
            raise
        except Exception as exc:  # a bug: logged with its traceback, answered in one line
            log.exception("console: %s %s failed", request.method, request.path)
            text = f"internal error ({type(exc).__name__}); the daemon's log has the details"
            if request.path.startswith("/api/"):
                return web.json_response({"error": text}, status=500)
            return web.Response(text=pages.error_page(self.site.name, text), content_type="text/html", status=500)

    def _denied(self, request: web.Request) -> web.Response:
        if request.path.startswith("/api/"):
            return web.json_response({"error": "a valid token is required (Authorization: Bearer TOKEN)"}, status=401)
        return web.Response(text=pages.login_page(self.site.name), content_type="text/html", status=401)

    async def _json(self, request: web.Request) -> dict[str, Any]:
        try:
            data = json_loads(await read_body(request, self.site.http.max_body_bytes, self.site.http.read_timeout,
                                              limit_name="http.max_body_bytes", timeout_name="http.read_timeout"))
        except ValueError as exc:
            raise CouplerError(f"the request body is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise CouplerError("the request body must be a JSON object")
        return data

    # -- routes ------------------------------------------------------------------------------

    def _routes(self, app: web.Application) -> None:
        r = app.router
        r.add_get("/healthz", self.healthz)
        r.add_get("/metrics", self.metrics)
        r.add_static("/static/", STATIC)
        for path, name in pages.PAGES:
            r.add_get(path, self._page(name))
        r.add_get("/dead-letters/{id:\\d+}", self.dead_letter_page)
        r.add_get("/api/status", self._api("status"))
        r.add_get("/api/adapters", self._api("adapters"))
        r.add_get("/api/channels", self.api_channels)
        r.add_get("/api/identities", self._api("identities"))
        r.add_get("/api/dead-letters", self.api_dlq_list)
        r.add_get("/api/dead-letters/{id:\\d+}", self.api_dlq_show)
        r.add_post("/api/dead-letters/{id:\\d+}/replay", self.api_dlq_replay)
        r.add_post("/api/dead-letters/purge", self.api_dlq_purge)
        r.add_post("/api/adapters/{name}/{action:pause|resume}", self.api_pause)
        r.add_get("/api/groups", self._api("groups"))
        r.add_post("/api/groups/{action:complete|discard}", self.api_group)
        r.add_get("/api/batch", self.api_batch)
        r.add_get("/api/routes/{route}/detour", self.api_detour)
        r.add_post("/api/routes/{route}/detour/{state:on|off}", self.api_detour)
        r.add_post("/api/routes/{route}/test", self.api_test_message)
        r.add_get("/api/trace", self.api_trace)
        r.add_get("/api/openapi.json", self.api_openapi)

    async def healthz(self, request: web.Request) -> web.Response:
        d = self.daemon
        rows = d.statistics.snapshot()
        failed = [row["name"] for row in rows if row["state"] in ("failed", "stopped")]
        degraded = {row["name"]: row["degraded"] for row in rows if row["state"] == "degraded"}
        ok = not d.stopping.is_set() and not failed and not degraded
        status = "ok" if ok else "degraded" if not failed and not d.stopping.is_set() else "failing"
        body = {"status": status, "site": self.site.name, "failed_adapters": failed,
                "degraded_adapters": degraded, "stopping": d.stopping.is_set()}
        if self.connections is not None:  # the console's own, as an adapter's health shows its server's
            body["connections"] = self.connections.health()
        return web.json_response(body, status=200 if ok else 503)

    async def metrics(self, request: web.Request) -> web.Response:
        from prometheus_client import CONTENT_TYPE_LATEST

        data = await self._run(self.daemon.observer.exposition)
        return web.Response(body=data, headers={"Content-Type": CONTENT_TYPE_LATEST})

    def _api(self, op: str) -> Callable[[web.Request], Any]:
        async def handler(request: web.Request) -> web.Response:
            return web.json_response(await self._call(op))

        return handler

    async def api_channels(self, request: web.Request) -> web.Response:
        channels = await self._call("channels")
        for c in channels:
            c["rates"] = self.rates.rates(c["channel"])
        return web.json_response(channels)

    async def api_dlq_list(self, request: web.Request) -> web.Response:
        return web.json_response(await self._dead_letters(request))

    async def _dead_letters(self, request: web.Request, *, strict: bool = True) -> list[dict[str, Any]]:
        q = api.parse(api.DeadLettersQuery, request.query, "query", strict=strict)
        rows: list[dict[str, Any]] = await self._call(
            "dlq.list", queue=api.none_if_empty(q.queue), kind=api.none_if_empty(q.kind), limit=q.limit)
        channel, text = q.channel or "", (q.q or "").lower()
        return [
            r for r in rows
            if (not channel or r["channel"] == channel)
            and (not text or any(text in str(r.get(k) or "").lower() for k in ("reason", "error", "message_id", "component", "format")))
        ]

    async def api_dlq_show(self, request: web.Request) -> web.Response:
        return web.json_response(await self._call("dlq.show", id=api.dead_letter_id(request.match_info["id"])))

    async def api_dlq_replay(self, request: web.Request) -> web.Response:
        dl_id = api.dead_letter_id(request.match_info["id"])
        data = api.parse(api.ReplayBody, await self._json(request), "body")
        result = await self._call("dlq.replay", id=dl_id, channel=api.none_if_empty(data.channel), body=data.body)
        return web.json_response(result)

    async def api_dlq_purge(self, request: web.Request) -> web.Response:
        data = api.parse(api.PurgeBody, await self._json(request), "body")
        return web.json_response(await self._call("dlq.purge", queue=api.none_if_empty(data.queue),
                                                  kind=api.none_if_empty(data.kind)))

    async def api_pause(self, request: web.Request) -> web.Response:
        op = request.match_info["action"]
        return web.json_response(await self._call(op, adapter=request.match_info["name"]))

    async def api_group(self, request: web.Request) -> web.Response:
        """Complete an aggregation group now, or discard it (the Open groups page's buttons)."""
        data = api.parse(api.GroupBody, await self._json(request), "body")
        return web.json_response(await self._call(f"group.{request.match_info['action']}", route=data.route,
                                                  step=data.step, key=data.key))

    async def api_detour(self, request: web.Request) -> web.Response:
        """A route's Detour switches (``coupler ctl detour``): shown, or switched on/off (POST)."""
        state = request.match_info.get("state")
        route = api.route_name(request.match_info["route"])
        q = api.parse(api.DetourQuery, request.query, "query")
        return web.json_response(await self._call("detour", route=route, step=api.none_if_empty(q.step),
                                                  on=None if state is None else state == "on"))

    async def api_test_message(self, request: web.Request) -> web.Response:
        """A Test Message through a route (``coupler ctl test``): what each step did."""
        from coupler.bus.runtime.control import encode_envelope
        from coupler.canonical import Envelope

        route = api.route_name(request.match_info["route"])
        data = api.parse(api.TestMessageBody, await self._json(request), "body")
        try:
            message = Envelope(format=data.format, body=data.body.encode(), origin="console-test",
                               properties=dict(data.properties))
        except CouplerError as exc:  # a format indicator that is not one
            raise api.ApiInputError(f"body.format: {exc}", [f"format: {exc}"]) from None
        return web.json_response(await self._call("test", route=route, envelope=encode_envelope(message)))

    async def api_batch(self, request: web.Request) -> web.Response:
        return web.json_response((await self._call("status"))["batch"])

    async def api_trace(self, request: web.Request) -> web.Response:
        if not request.query.get("q", "").strip():
            raise api.ApiInputError("give a message id, trace id, correlation id or business key as ?q=",
                                    ["q: required"])
        query = api.parse(api.TraceQuery, request.query, "query").q.strip()
        return web.json_response(await self._call("trace", query=query))

    async def api_openapi(self, request: web.Request) -> web.Response:
        return web.json_response(api.openapi())

    # -- pages -------------------------------------------------------------------------------

    def _page(self, name: str) -> Callable[[web.Request], Any]:
        async def handler(request: web.Request) -> web.Response:
            status = await self._call("status")
            data: dict[str, Any] = {"status": status, "query": dict(request.query), "store": store_text(self.site)}
            if name == "adapters":
                data["adapters"] = await self._call("adapters")
            elif name in ("channels", "overview", "site"):
                data["rates"] = {c["channel"]: self.rates.rates(c["channel"]) for c in status["channels"]}
                if name == "site":
                    from coupler.bus.runtime.console.picture import render_svg, site_graph

                    data["picture"] = render_svg(site_graph(self.site, status, data["rates"]))
            elif name == "dead_letters":
                data["dead_letters"] = await self._dead_letters(request, strict=False)
            elif name == "identities":
                data["identities"] = await self._call("identities")
            elif name == "groups":
                data["groups"] = await self._call("groups")
            elif name == "trace" and request.query.get("q", "").strip():
                data["trace"] = await self._call("trace", query=request.query["q"].strip())
            html = pages.render(name, self.site.name, data)
            return web.Response(text=html, content_type="text/html", headers={"Cache-Control": "no-store"})

        return handler

    async def dead_letter_page(self, request: web.Request) -> web.Response:
        status = await self._call("status")
        dl = await self._call("dlq.show", id=api.dead_letter_id(request.match_info["id"]))
        html = pages.render("dead_letter", self.site.name, {"status": status, "dead_letter": dl, "query": {}})
        return web.Response(text=html, content_type="text/html", headers={"Cache-Control": "no-store"})


def store_text(site: SiteConfig) -> str:
    """What the overview says of the site's store, in words (not a Python repr)."""
    store = site.store
    if store.type == "sqlite":
        return (f"embedded SQLite store {site.data_dir / store.path} (synchronous {store.synchronous}, "
                f"lease {store.lease_seconds:g} s)")
    if store.type == "amqp":
        return "RabbitMQ, with its state in PostgreSQL (several daemons may share it)"
    return f"{store.type} transport"


def _status(exc: CouplerError) -> int:
    from coupler.bus.runtime.steps.groups import GroupError
    from coupler.bus.transport.base import UnknownDeadLetterError

    if isinstance(exc, UnknownDeadLetterError | GroupError) or exc.message.startswith(("no adapter named", "no route named")):
        return 404
    return 400


__all__ = ["ConsoleServer", "console_url", "parse_listen", "read_token"]
