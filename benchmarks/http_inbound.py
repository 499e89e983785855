"""HTTP inbound: requests/s of the http adapter's REST endpoint against a bare aiohttp handler
that does nothing but answer, side by side in one run.

Workload: COUNT POSTs of a 200-byte JSON order, CONCURRENCY at a time, from an aiohttp client
in a process of its own (keep-alive connections).

* ``bare aiohttp`` -- an aiohttp server whose handler reads the body and answers 202: the
  ceiling of the HTTP stack on this machine.
* ``adapter`` -- the http adapter (server mode, one one-way endpoint): the body validated
  against the format's Avro schema, published on the embedded SQLite store as the daemon
  opens it (``synchronous = FULL``: each request is durable before its 202; concurrent
  requests share a disk sync through the store's group commit), 202 with the message id.

The runs alternate so both see the same machine load; the best of each is reported with the
ratio and the 1-minute load average.

Usage: .venv/bin/python benchmarks/http_inbound.py [--count N] [--concurrency N] [--repeat N] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SCHEMA = {"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "orderNo", "type": "string"}, {"name": "customer", "type": "string"},
    {"name": "quantity", "type": "int"}, {"name": "note", "type": ["null", "string"], "default": None}]}
ORDER = {"orderNo": "N00001", "customer": "customer 1", "quantity": 3, "note": "x" * 120}


def load(url: str, count: int, concurrency: int, out: Any) -> None:
    """The client process: COUNT POSTs, CONCURRENCY at a time; puts (elapsed, statuses)."""
    import aiohttp

    async def run() -> tuple[float, dict[int, int]]:
        statuses: dict[int, int] = {}
        body = json.dumps(ORDER).encode()
        left = iter(range(count))
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
            async def worker() -> None:
                for _ in left:
                    async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as r:
                        await r.read()
                        statuses[r.status] = statuses.get(r.status, 0) + 1

            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return time.perf_counter() - started, statuses

    out.put(asyncio.run(run()))


def measure(url: str, count: int, concurrency: int) -> float:
    q: Any = mp.get_context("spawn").Queue()
    p = mp.get_context("spawn").Process(target=load, args=(url, count, concurrency, q))
    p.start()
    elapsed, statuses = q.get(timeout=600)
    p.join()
    assert statuses == {202: count}, statuses
    return count / elapsed


def bare_server() -> tuple[Any, str]:
    from aiohttp import web

    from coupler.adapters.socket.loop import LoopThread

    async def handle(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"message_id": "x"}, status=202)

    loop = LoopThread("bare").start()

    async def start() -> tuple[web.AppRunner, str]:
        app = web.Application()
        app.router.add_post("/orders", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return runner, f"http://127.0.0.1:{port}/orders"

    runner, url = loop.run(start())

    def stop() -> None:
        loop.run(runner.cleanup())
        loop.stop()

    return stop, url


def adapter_server(data: Path) -> tuple[Any, str]:
    from coupler.adapters.http import HttpAdapter
    from coupler.bus.runtime.context import BusContext, Statistics, build_adapter
    from coupler.bus.transport.sqlite.transport import SqliteTransport

    (data / "order.avsc").write_text(json.dumps(SCHEMA))
    transport = SqliteTransport(data / "store").open()  # the daemon's defaults: synchronous FULL
    stats = Statistics()
    stats.add("api", "http")
    (data / "api").mkdir()
    ctx = BusContext(name="api", config={}, data_dir=data / "api", transport=transport, statistics=stats,
                     channel="orders", site_dir=data)
    a = build_adapter(HttpAdapter, "api", {"mode": "server", "endpoints": {
        "orders": {"format": "bench.Order@1", "schema_file": "order.avsc"}}}, ctx, direction="inbound",
        channel="orders")
    a.start()

    def stop() -> None:
        a.stop()
        transport.close()

    assert isinstance(a, HttpAdapter)
    return stop, f"{a.url}/orders"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--count", type=int, default=3000)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    results: dict[str, list[float]] = {"bare aiohttp": [], "adapter": []}
    load_avg = os.getloadavg()[0]
    for _ in range(args.repeat):
        for name in results:
            with tempfile.TemporaryDirectory() as tmp:
                stop, url = bare_server() if name == "bare aiohttp" else adapter_server(Path(tmp))
                try:
                    rate = measure(url, args.count, args.concurrency)
                finally:
                    stop()
            results[name].append(rate)
            print(f"{name:14s} {rate:10,.0f} requests/s")
    best = {k: max(v) for k, v in results.items()}
    ratio = best["adapter"] / best["bare aiohttp"]
    print(f"\n{args.count:,} POSTs, {args.concurrency} at a time, load average {load_avg:.1f} at the start (2 cores)")
    print(f"bare aiohttp {best['bare aiohttp']:,.0f} req/s, adapter {best['adapter']:,.0f} req/s: "
          f"adapter / bare = {ratio:.2f}x")
    if args.json:
        args.json.write_text(json.dumps({"count": args.count, "concurrency": args.concurrency, "load": load_avg,
                                         "best": best, "ratio": ratio, "runs": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
