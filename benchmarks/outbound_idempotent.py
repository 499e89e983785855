"""An outbound adapter's delivery with and without an Idempotent Receiver: store statements,
round trips and msg/s per message, on each store, the current code beside an older commit's.

Workload: COUNT messages (1 KiB bodies, each with its own ``properties.order_no``) stored on a
queue, then one worker of an outbound adapter delivers them one at a time, as the daemon's
does: ``receive_wait(max=1)`` through :meth:`ConsumerPatterns.receiver`, then the daemon's own
delivery handler (:meth:`Handlers.delivery_handler`: claim, deliver, record and acknowledge,
end the claim) to a legacy system that accepts at once. Each store runs it twice: a plain
consumer, and one with ``idempotent_key = "properties.order_no"`` (two keys a message: its
id and the order number). With ``--baseline-ref REF`` every case runs on REF's code too, in
the same run, alternating, so both see the same machine load.

Stores: ``sqlite`` (the embedded transport, FULL), ``postgres`` (the PostgreSQL-only
transport), ``amqp`` (RabbitMQ + PostgreSQL; only PostgreSQL's statements are counted).

Two passes a case, each in a fresh process:

* counts (``--count-statements`` messages): PostgreSQL's connections go through a small proxy
  in the process that reads the client's side of the protocol: a statement is a simple
  ``Query`` or an extended-protocol ``Execute`` (``BEGIN`` and ``COMMIT`` included), a round
  trip a ``Query`` or a ``Sync`` (what the client waits for; a pipeline is one). SQLite's are
  counted by ``sqlite3``'s trace callback on the transport's connections (statements; SQLite
  has no round trips: "rt" is the number of write transactions' ``COMMIT``s there).
  Counts do not depend on the machine's load.
* time (``--count`` messages), without the proxy: msg/s and the worker's CPU per message
  (the process's CPU time: the transport's background threads included).

Usage: .venv/bin/python benchmarks/outbound_idempotent.py [--baseline-ref REF] [--only sqlite,postgres,amqp]
       [--count 2000] [--count-statements 300] [--json FILE]

PostgreSQL: ``COUPLER_BENCH_POSTGRES`` (default postgresql://postgres@127.0.0.1:5432/test), RabbitMQ:
``COUPLER_BENCH_AMQP_URL`` (default amqp://guest:guest@127.0.0.1:5672/%2F); names made here
start with ``bench``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import platform
import socket
import struct
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

AMQP_URL = os.environ.get("COUPLER_BENCH_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")
PG_DSN = os.environ.get("COUPLER_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
QUEUE = "bench.outbound"
CONSUMER = "bench-legacy"
KEY = "properties.order_no"
STACKS = ("sqlite", "postgres", "amqp")


# -- counting PostgreSQL's statements: a proxy reading the client's messages ------------------


class PgCounter:
    """A TCP proxy in front of PostgreSQL that counts, over every connection made through it,
    the statements (``Query``, ``Execute``) and round trips (``Query``, ``Sync``) clients send."""

    def __init__(self, host: str, port: int):
        self.target = (host, port)
        self.statements = self.round_trips = 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True, name="pg-counter").start()

    def counts(self) -> tuple[int, int]:
        with self.lock:
            return self.statements, self.round_trips

    def _accept(self) -> None:
        while True:
            client, _ = self.listener.accept()
            server = socket.create_connection(self.target)
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._upstream, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def _upstream(self, src: socket.socket, dst: socket.socket) -> None:
        buf = b""
        started = False  # the startup message (and an SSL/GSS request before it) have no type byte
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
                buf += data
                while True:
                    if not started:
                        if len(buf) < 8:
                            break
                        (length,) = struct.unpack_from("!i", buf)
                        if len(buf) < length:
                            break
                        started = struct.unpack_from("!i", buf, 4)[0] == 196608  # protocol 3.0
                        buf = buf[length:]
                        continue
                    if len(buf) < 5:
                        break
                    kind = buf[:1]
                    (length,) = struct.unpack_from("!i", buf, 1)
                    if len(buf) < 1 + length:
                        break
                    buf = buf[1 + length:]
                    if kind in (b"Q", b"E", b"S"):
                        with self.lock:
                            self.statements += kind in (b"Q", b"E")
                            self.round_trips += kind in (b"Q", b"S")
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def _through(dsn: str, port: int) -> str:
    """``dsn`` (a URL) pointed at the counting proxy, without TLS (so the proxy can read it)."""
    parts = urlsplit(dsn)
    user = parts.netloc.rpartition("@")[0]
    netloc = f"{user}@127.0.0.1:{port}" if user else f"127.0.0.1:{port}"
    query = "&".join(q for q in (parts.query, "sslmode=disable&gssencmode=disable") if q)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


# -- one case, in a fresh process -----------------------------------------------------------


def _case(code: str | None, stack: str, keyed: bool, count: int, counting: bool, out: Any) -> None:
    if code:
        import baseline

        baseline.use_code(Path(code))
    from types import SimpleNamespace

    from coupler.bus.runtime.consumers import ConsumerPatterns
    from coupler.bus.runtime.handlers import Handlers
    from coupler.canonical import Envelope

    counter: PgCounter | None = None
    dsn = PG_DSN
    if counting and stack != "sqlite":
        parts = urlsplit(PG_DSN)
        counter = PgCounter(parts.hostname or "127.0.0.1", parts.port or 5432)
        dsn = _through(PG_DSN, counter.port)
    sqlite_counts = [0, 0]  # statements, COMMITs
    tag = uuid.uuid4().hex[:8]
    tmp = tempfile.TemporaryDirectory(prefix="coupler-bench-outbound-")
    if stack == "sqlite":
        import sqlite3

        from coupler.bus.transport.sqlite.transport import SqliteTransport

        def trace(sql: str) -> None:
            sqlite_counts[0] += 1
            sqlite_counts[1] += sql.lstrip().upper().startswith("COMMIT")

        class Traced(SqliteTransport):
            def _conn(self) -> sqlite3.Connection:  # every connection of the transport, traced
                conn = super()._conn()
                if counting:
                    conn.set_trace_callback(trace)
                return conn

        t: Any = Traced(Path(tmp.name)).open()
    elif stack == "postgres":
        from coupler.bus.transport.postgres.transport import PostgresTransport

        t = PostgresTransport(dsn, schema=f"bench_ob_{tag}").open()
    else:
        from coupler.bus.transport.amqp.transport import AmqpTransport

        t = AmqpTransport(AMQP_URL, postgres=dsn, prefix=f"bench.ob.{tag}.", postgres_schema=f"bench_ob_{tag}").open()
    if code:  # the old code runs, not the installed one
        import coupler.bus.transport.base as module

        assert Path(module.__file__).resolve().is_relative_to(Path(code).resolve()), module.__file__
    try:
        t.declare(QUEUE)
        body = b"x" * 1024
        for i in range(0, count, 500):
            t.send(QUEUE, [Envelope(format="bench.Order@1", body=body, properties={"order_no": f"O-{i + j}"})
                           for j in range(min(500, count - i))])

        class Legacy:
            delivered = 0

            def deliver(self, env: Any) -> str:
                Legacy.delivered += 1
                return "legacy"

        patterns = ConsumerPatterns.declared(t, f"adapter:{CONSUMER}", QUEUE, channel=None,
                                             idempotent_key=KEY if keyed else None, throttle=None,
                                             where="adapters[0]")
        patterns.claims = True  # as the daemon's outbound workers do (code before it: an unused attribute)
        daemon = SimpleNamespace(transport=t, statistics=SimpleNamespace(count=lambda *a: None))
        ra = SimpleNamespace(name=CONSUMER, adapter=Legacy(), translation=None, outbound_envelope=lambda env: env)
        handle = Handlers(daemon).delivery_handler(ra, patterns)  # type: ignore[arg-type]
        receive = patterns.receiver(t, lambda wait: t.receive_wait(QUEUE, f"adapter:{CONSUMER}", max=1, wait=wait))
        load = os.getloadavg()[0]
        time.sleep(0.3)  # what opening and sending left to the background threads
        before = counter.counts() if counter else tuple(sqlite_counts)
        start, cpu = time.monotonic(), time.process_time()
        done = 0
        while done < count:
            for d in receive(5.0):
                handle(d)
                done += 1
        seconds, cpu = time.monotonic() - start, time.process_time() - cpu
        after = counter.counts() if counter else tuple(sqlite_counts)
        assert Legacy.delivered == count, (Legacy.delivered, count)
        result: dict[str, Any] = {"load": round(load, 2)}
        if counting:
            result["statements"] = round((after[0] - before[0]) / count, 2)
            result["round_trips"] = round((after[1] - before[1]) / count, 2)
        else:
            result["msg_per_s"] = round(count / seconds)
            result["cpu_us"] = round(cpu / count * 1e6)
        out.put(result)
    finally:
        t.close()
        if stack != "sqlite":  # the schema (and the broker's queues) made for the run
            t.destroy()
        tmp.cleanup()


def in_child(target: Any, args: tuple[Any, ...], label: str) -> dict[str, Any]:
    """``target(*args, queue)`` in a fresh (spawned) process: the dict it puts on the queue."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    p = ctx.Process(target=target, args=(*args, out))
    p.start()
    try:
        result = out.get(timeout=1800)
    finally:
        p.join(120)
    if p.exitcode != 0:
        raise RuntimeError(f"{label} exited with {p.exitcode}")
    return dict(result)


def run_case(code: str | None, stack: str, keyed: bool, count: int, counting: bool) -> dict[str, Any]:
    return in_child(_case, (code, stack, keyed, count, counting), f"{stack} ({'keyed' if keyed else 'plain'})")


def reachable(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline-ref", metavar="REF", help="also run this commit's code, alternating")
    parser.add_argument("--only", default=",".join(STACKS), help=f"stores to run (of {', '.join(STACKS)})")
    parser.add_argument("--count", type=int, default=2000, help="messages of a timed run")
    parser.add_argument("--count-statements", type=int, default=300, help="messages of a counted run")
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args(argv)
    stacks = [s for s in args.only.split(",") if s]
    if ("postgres" in stacks or "amqp" in stacks) and not reachable(urlsplit(PG_DSN).port or 5432):
        print("PostgreSQL not reachable: postgres and amqp skipped", file=sys.stderr)
        stacks = [s for s in stacks if s == "sqlite"]
    if "amqp" in stacks and not reachable(urlsplit(AMQP_URL).port or 5672):
        print("RabbitMQ not reachable: amqp skipped", file=sys.stderr)
        stacks.remove("amqp")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import baseline
    import machine

    print(f"{platform.node()}: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {machine.memory_note()}")
    results: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack_:
        codes: dict[str, str | None] = {}
        if args.baseline_ref:
            old = baseline.describe(args.baseline_ref)
            codes[old] = str(stack_.enter_context(baseline.checkout(old)))
        codes[baseline.head()] = None
        header = f"{'store':9} {'consumer':9} {'code':18} {'stmt/msg':>9} {'rt/msg':>7} {'msg/s':>7} {'cpu us/msg':>10} {'load':>5}"
        print(header)
        for store in stacks:
            for keyed in (False, True):
                for name, code in codes.items():
                    counted = run_case(code, store, keyed, args.count_statements, counting=True)
                    timed = run_case(code, store, keyed, args.count, counting=False)
                    row = {"store": store, "consumer": "idempotent" if keyed else "plain", "code": name,
                           **{k: counted[k] for k in ("statements", "round_trips")},
                           **{k: timed[k] for k in ("msg_per_s", "cpu_us")}, "load": timed["load"]}
                    results.append(row)
                    print(f"{store:9} {row['consumer']:9} {name:18} {row['statements']:9} {row['round_trips']:7} "
                          f"{row['msg_per_s']:7} {row['cpu_us']:10} {row['load']:5}", flush=True)
        if len(codes) == 2:
            old, new = list(codes)
            print(f"\nratios, {new} over {old}:")
            for store in stacks:
                for consumer in ("plain", "idempotent"):
                    a, b = (next(r for r in results if r["store"] == store and r["consumer"] == consumer
                                 and r["code"] == c) for c in (old, new))
                    ratio = {k: round(b[k] / a[k], 2) if a[k] else None
                             for k in ("statements", "round_trips", "msg_per_s", "cpu_us")}
                    print(f"  {store:9} {consumer:10} statements x{ratio['statements']}, round trips "
                          f"x{ratio['round_trips']}, msg/s x{ratio['msg_per_s']}, cpu/msg x{ratio['cpu_us']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
