"""Bounded load and resource tests: many concurrent clients, an oversized frame."""

from __future__ import annotations

import asyncio
import socket
import tracemalloc

import pytest

from coupler.adapters.socket import SocketAdapter
from coupler.translators.framing import LengthPrefixed

# 500 clients open at once prove the concurrency (connection limits, max_in_flight 16 of
# 500 waiting); a few request-replies each prove every one is answered in order on its own
# connection (20 each took 96 s on two loaded cores and proved nothing more; 4 each, 31 s on
# a quiet machine: two show the order as well)
CLIENTS, REQUESTS = 500, 2


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_500_concurrent_clients_each_get_their_request_replies_in_order(bus, upper):
    server = SocketAdapter(
        "load-in",
        {
            "mode": "server", "host": "127.0.0.1", "port": 0, "framing": "length",
            "exchange": "request-reply", "target": "uppercase", "max_connections": CLIENTS + 10,
            "max_connections_per_peer": CLIENTS + 10,  # every client is 127.0.0.1
            "max_in_flight": 16,
        },
        bus.context("load-in"),
    )
    bus.add(server)
    framing = LengthPrefixed()
    host, port = server.address

    async def client(n: int) -> list[tuple[bytes, bytes]]:
        reader, writer = await asyncio.open_connection(host, port)
        decoder = framing.decoder()
        pairs = []
        try:
            for i in range(REQUESTS):
                request = f"client {n} request {i}".encode()
                writer.write(framing.encode(request))
                await writer.drain()
                frames: list[bytes] = []
                while not frames:
                    data = await reader.read(65536)
                    assert data, f"client {n}: connection closed at request {i}"
                    frames = decoder.feed(data)
                pairs.append((request, frames[0]))
        finally:
            writer.close()
        return pairs

    async def run() -> list[list[tuple[bytes, bytes]]]:
        return await asyncio.wait_for(asyncio.gather(*(client(n) for n in range(CLIENTS))), 240)  # a hang guard, not a speed check

    results = asyncio.run(run())
    answered = [pair for pairs in results for pair in pairs]
    assert len(answered) == CLIENTS * REQUESTS
    assert all(reply == request.upper() for request, reply in answered)


def test_oversized_frame_is_refused_without_memory_growth(bus):
    limit = 64 * 1024
    server = SocketAdapter(
        "big-in",
        {"mode": "server", "host": "127.0.0.1", "port": 0, "framing": "delimiter", "max_frame_bytes": limit},
        bus.context("big-in", "inbox"),
    )
    server.channel = "inbox"
    bus.add(server)
    chunk = b"x" * (256 * 1024)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        sent = 0
        with socket.create_connection(server.address, timeout=10) as s:
            with pytest.raises(OSError):  # reset by the server once the limit is passed
                for _ in range(400):  # up to 100 MiB without a delimiter
                    s.sendall(chunk)
                    sent += len(chunk)
                while s.recv(65536):
                    pass
                raise ConnectionResetError("closed")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sent < 100 * 1024 * 1024
    # the test's own chunk is the only large allocation; the server held at most ~2 frames
    assert peak - before < len(chunk) + 4 * limit + 512 * 1024
