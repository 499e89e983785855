"""A partner's REST API for the client tests: a real aiohttp server on its own loop thread that
records what it was sent and answers as scripted (statuses in order, then 201)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from aiohttp import web


class Partner:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.script: list[int] = []  # statuses to answer first, in order
        self.tokens_issued = 0
        self.token_ttl = 3600
        self.valid_tokens: set[str] = set()
        self.require_token = False
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.url = ""

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_post("/oauth/token", self._token)
        app.router.add_route("*", "/{tail:.*}", self._api)
        self.runner = web.AppRunner(app)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        self._ready.set()
        self.loop.run_forever()

    def start(self) -> Partner:
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        if request.headers.get("Authorization") != "Basic Y2xpZW50LTE6Y2xpZW50LXNlY3JldA==" \
                or form.get("grant_type") != "client_credentials":  # client-1:client-secret
            return web.json_response({"error": "invalid_client"}, status=401)
        self.tokens_issued += 1
        token = f"tok-{self.tokens_issued}"
        self.valid_tokens = {token}
        return web.json_response({"access_token": token, "token_type": "Bearer", "expires_in": self.token_ttl})

    async def _api(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.calls.append({"method": request.method, "path": request.path_qs, "headers": dict(request.headers),
                           "body": body})
        if self.require_token:
            auth = request.headers.get("Authorization", "")
            if auth.removeprefix("Bearer ") not in self.valid_tokens:
                return web.json_response({"error": "invalid_token"}, status=401)
        if self.script:
            status = self.script.pop(0)
            if status == 0:  # cut the connection without an answer
                assert request.transport is not None
                request.transport.close()
                return web.Response(status=500)
            return web.json_response({"error": f"scripted {status}", "received": json.loads(body or b"null")},
                                     status=status, headers={"Retry-After": "0"} if status == 429 else None)
        return web.json_response({"id": len(self.calls), "ok": True}, status=201)
