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

The runs alternate so both see the same machine load. Reported: requests/s (the best run of
each, and the median of the ratios of each round) and the server's CPU per request (this
process's ``time.process_time`` while the client runs: the server side only, the client is
another process), with the 1-minute load average at the start and the end.

Usage: .venv/bin/python benchmarks/http_inbound.py [--count N] [--concurrency N] [--repeat N] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import statistics
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


def measure(url: str, count: int, concurrency: int) -> tuple[float, float]:
    """requests/s, and this process's (the server's) CPU seconds per request."""
    q: Any = mp.get_context("spawn").Queue()
    p = mp.get_context("spawn").Process(target=load, args=(url, count, concurrency, q))
    p.start()
    cpu = time.process_time()
    elapsed, statuses = q.get(timeout=600)
    cpu = time.process_time() - cpu
    p.join()
    assert statuses == {202: count}, statuses
    return count / elapsed, cpu / count


def bare_server() -> tuple[Any, str]:
    from aiohttp import web

    from coupler.bus.api import LoopThread

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
    results: dict[str, list[tuple[float, float]]] = {"bare aiohttp": [], "adapter": []}
    load_avg = os.getloadavg()[0]
    for _ in range(args.repeat):
        for name in results:
            with tempfile.TemporaryDirectory() as tmp:
                stop, url = bare_server() if name == "bare aiohttp" else adapter_server(Path(tmp))
                try:
                    rate, cpu = measure(url, args.count, args.concurrency)
                finally:
                    stop()
            results[name].append((rate, cpu))
            print(f"{name:14s} {rate:10,.0f} requests/s   server CPU {cpu * 1e6:6.0f} us/request", flush=True)
    best = {k: max(r for r, _ in v) for k, v in results.items()}
    ratio = best["adapter"] / best["bare aiohttp"]
    rounds = statistics.median(a / b for (a, _), (b, _) in zip(results["adapter"], results["bare aiohttp"], strict=True))
    cpu = {k: statistics.median(c for _, c in v) for k, v in results.items()}
    print(f"\n{args.count:,} POSTs, {args.concurrency} at a time; load average {load_avg:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end (2 cores)")
    print(f"bare aiohttp {best['bare aiohttp']:,.0f} req/s, adapter {best['adapter']:,.0f} req/s: adapter / bare = "
          f"{ratio:.2f}x (best), {rounds:.2f}x (median of rounds); server CPU per request "
          f"{cpu['bare aiohttp'] * 1e6:.0f} / {cpu['adapter'] * 1e6:.0f} us ({cpu['bare aiohttp'] / cpu['adapter']:.2f}x)")
    if args.json:
        args.json.write_text(json.dumps({"count": args.count, "concurrency": args.concurrency, "load": load_avg,
                                         "best": best, "ratio": ratio, "ratio_rounds": rounds, "cpu": cpu,
                                         "runs": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
