"""bus/model/httpserver.py's connection limit on a TLS server, which starts TLS on each
connection itself (``loop.start_tls``): a request arriving with the end of the handshake is
answered, a silent connection stops counting when its handshake times out, and ``close`` aborts
the handshakes under way. (The http adapter's tests/adapters/http/test_attacks.py runs it with
failed handshakes and silent clients over ``max_connections``.)"""

from __future__ import annotations

import logging
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from coupler.bus.model import httpserver
from coupler.bus.model.loop import LoopThread
from tests.adapters.hostile import closed_after
from tests.adapters.pki import make_pki
from tests.bus.site_helpers import wait_for

Served = tuple[tuple[str, int], httpserver.ConnectionLimit, ssl.SSLContext, LoopThread]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    pki = make_pki(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*pki["server"])
    loop = LoopThread("h-test-httpserver").start()

    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="hello")

    async def start() -> tuple[web.AppRunner, object, httpserver.ConnectionLimit]:
        app = web.Application()
        app.router.add_get("/", hello)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        server, limit = await httpserver.listen(runner, "127.0.0.1", 0, ssl_context=context, max_connections=5,
                                                logger=logging.getLogger("test"), where="test")
        return runner, server, limit

    runner, server, limit = loop.run(start(), timeout=30)
    try:
        yield httpserver.bound_address(server), limit, ssl.create_default_context(cafile=pki["ca"]), loop  # type: ignore[arg-type]
    finally:
        async def stop() -> None:
            server.close()  # type: ignore[attr-defined]
            limit.close()
            await runner.cleanup()

        loop.run(stop(), timeout=30)
        loop.stop()


def test_a_request_sent_with_the_end_of_the_handshake_is_answered(served: Served) -> None:
    """The request written at once after the client's handshake mostly reaches the server with
    its last message, before start_tls has returned the TLS transport: it is kept for aiohttp."""
    address, limit, client, _ = served
    for i in range(50):
        with socket.create_connection(address, timeout=10) as raw, \
                client.wrap_socket(raw, server_hostname=address[0]) as tls:
            tls.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = b""
            while chunk := tls.recv(4096):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"hello"), (i, answer[:200])
    wait_for(lambda: limit.open == 0, "the connections to stop counting", timeout=10)
    assert limit.refused == 0


def test_a_silent_connection_stops_counting_when_its_handshake_times_out(served: Served,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    address, limit, _, _ = served
    monkeypatch.setattr(httpserver, "TLS_HANDSHAKE_SECONDS", 1.0)
    connecting = time.monotonic()  # before the accept, from which the handshake's time-out counts
    with socket.create_connection(address, timeout=10) as silent:
        wait_for(lambda: limit.open == 1, "the silent connection to count", timeout=10)
        _, answer = closed_after(silent, 15)
        elapsed = time.monotonic() - connecting  # not from closed_after's call: the test may stall before it
        assert answer == b"" and elapsed >= 0.9, (elapsed, answer)
        wait_for(lambda: limit.open == 0, "the timed-out handshake to stop counting", timeout=5)


def test_close_aborts_the_handshakes_under_way(served: Served) -> None:
    address, limit, _, loop = served
    with socket.create_connection(address, timeout=10) as silent:
        wait_for(lambda: limit.open == 1, "the silent connection to count", timeout=10)

        async def close() -> None:
            limit.close()

        loop.run(close(), timeout=10)
        closed_after(silent, 5)
        wait_for(lambda: limit.open == 0, "the aborted handshake to stop counting", timeout=5)
