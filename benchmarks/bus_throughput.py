"""Bus throughput and latency on each transport side by side: embedded SQLite, AMQP, RabbitMQ, PostgreSQL.

Workload: durable send + receive + acknowledge of 1 KiB bodies, one producer process and one
consumer process.

* throughput: the producer sends COUNT messages in batches of 1 or 100 (one durable commit /
  one confirmed publish window per batch), the consumer receives up to the batch size at a
  time and acknowledges each batch at once; msg/s = COUNT / (first send -> last ack).
* latency: the producer offers 1,000 msg/s, one message per send; the consumer acknowledges
  what it received; latency = time from before the send to after the acknowledgement.

Stacks, interleaved in the same run so that all see the same machine load:

* ``sqlite FULL`` / ``sqlite NORMAL`` -- the embedded transport (``SqliteTransport``) with
  its defaults: under FULL every send is fsync'd before it returns (group commit) and an
  acknowledgement reaches the disk with the next fsync (``sync_acks = false``, RabbitMQ's
  guarantee too); ``sqlite FULL sync_acks`` fsyncs every acknowledgement as well;
* ``amqp`` -- Coupler's broker transport (``AmqpTransport``: quorum queue, persistent
  messages, publisher confirms per batch, manual acks, journal and counters in PostgreSQL);
  run when RabbitMQ and PostgreSQL (``COUPLER_BENCH_AMQP_URL``, ``COUPLER_BENCH_POSTGRES``;
  127.0.0.1:5672 and 127.0.0.1:5432 by default) are reachable;
* ``rabbitmq`` -- pika alone (127.0.0.1:5672, guest/guest), no Coupler: durable queue,
  persistent messages (delivery_mode=2), publisher confirms (a window of the batch size,
  confirmed before the next window), manual acks (``multiple`` per batch); the ceiling of
  what the broker gives one producer and one consumer here;
* ``raw sqlite3`` -- the same workload with plain ``sqlite3`` calls on one table holding the
  bodies (insert, ``UPDATE ... RETURNING`` lease, delete): no envelopes, no journal, no
  counters, but the single-table layout of the store's schema version 1.

Every run reports the 1-minute load average when it started and the CPU time (not wall
time) the producer and the consumer spent per message: on a shared machine the wall-clock
rate depends on what else runs, the CPU cost does much less. Before the runs the script
measures what one fsync'd commit costs on the disk of the temporary directory.

* ``postgres`` -- Coupler's PostgreSQL transport (``PostgresTransport``: a table per channel,
  ``FOR UPDATE SKIP LOCKED`` leases, ``LISTEN/NOTIFY`` wake-ups, journal rows in the same
  transactions, ``synchronous_commit`` on);
* ``raw psycopg`` -- the same workload on one PostgreSQL table with plain psycopg, no Coupler:
  insert per batch, a ``SKIP LOCKED`` lease (``UPDATE ... WHERE id = ANY(ARRAY(SELECT ...
  FOR UPDATE SKIP LOCKED)) RETURNING``) and a delete per received batch, polling every 0.2 ms
  when empty; no envelopes, no journal, no counters. The lease finds its rows by ``= ANY``
  rather than ``IN (subquery)``: a generic plan PostgreSQL caches for a prepared statement
  made while the table is nearly empty joins ``IN (subquery)`` by a sequential scan of the
  whole table, which would slow the baseline down as the queue grows.

* ``rabbitmq quorum`` -- the same pika baseline on a quorum queue (the queue type of the
  AMQP transport's channels, which counts deliveries exactly): what the queue type costs.

Usage: .venv/bin/python benchmarks/bus_throughput.py [--quick | --scale X] [--only STACKS] [--json FILE]

``--only amqp,rabbitmq,quorum`` runs just the broker rows (the acceptance of the AMQP
transport: its msg/s over raw RabbitMQ's with batches of 100 and of 1, and 1,000 msg/s
offered); the ratios are printed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import platform
import shutil
import struct
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

BODY_SIZE = 1024


def _body(seq: int) -> bytes:
    head = struct.pack("<dq", time.monotonic(), seq)
    return head + b"x" * (BODY_SIZE - len(head))


def _stamp(body: bytes) -> float:
    return struct.unpack_from("<d", body)[0]


# -- Coupler's transports: embedded SQLite and AMQP (RabbitMQ + PostgreSQL) ---------------

AMQP_URL = os.environ.get("COUPLER_BENCH_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")
PG_DSN = os.environ.get("COUPLER_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


class _ServerCpu:
    """The CPU time PostgreSQL's backends spend for this process's connections: every
    connection the process opens after :meth:`__init__` is named by ``PGAPPNAME``, and the
    backends' ``/proc/<pid>/stat`` is read (when the server runs on this machine and its
    processes can be read; else :meth:`spent` is None)."""

    def __init__(self) -> None:
        self.name = f"coupler-bench-{uuid.uuid4().hex[:12]}"
        os.environ["PGAPPNAME"] = self.name
        self.start: dict[int, float] | None = {}

    def _read(self) -> dict[int, float] | None:
        import psycopg

        try:
            with psycopg.connect(PG_DSN, autocommit=True, application_name="coupler-bench-monitor") as db:
                pids = [r[0] for r in db.execute(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (self.name,))]
            tick = os.sysconf("SC_CLK_TCK")
            out = {}
            for pid in pids:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                out[pid] = (int(fields[11]) + int(fields[12])) / tick
            return out
        except (OSError, ValueError, IndexError, psycopg.Error):
            return None

    def begin(self) -> None:
        self.start = self._read()

    def spent(self) -> float | None:
        end = self._read()
        if end is None or self.start is None:
            return None
        return sum(v - self.start.get(pid, 0.0) for pid, v in end.items())


def _use_code_of(spec: tuple[Any, ...]) -> None:
    """In a fresh process, before ``coupler`` is imported: the code the spec runs (its last
    item: an older commit's worktree, for ``--baseline-ref``; None: the current code)."""
    if spec[-1]:
        import baseline

        baseline.use_code(Path(spec[-1]))


def _open_transport(spec: tuple[Any, ...]) -> Any:
    """``("sqlite", data_dir, synchronous, sync_acks, code)``, ``("amqp", names, code)`` or
    ``("postgres", schema, code)``, opened."""
    if spec[0] == "sqlite":
        from coupler.bus.transport.sqlite.transport import SqliteTransport

        return SqliteTransport(spec[1], synchronous=spec[2], sync_acks=spec[3]).open()
    if spec[0] == "postgres":
        from coupler.bus.transport.postgres.transport import PostgresTransport

        return PostgresTransport(PG_DSN, schema=spec[1]).open()
    from coupler.bus.transport.amqp.transport import AmqpTransport

    return AmqpTransport(AMQP_URL, postgres=PG_DSN, **spec[1]).open()


def _producer(spec: tuple[Any, ...], count: int, batch: int, rate: float | None, out: Any, go: Any) -> None:
    _use_code_of(spec)
    from coupler.canonical import Envelope

    server = _ServerCpu() if spec[0] == "postgres" else None
    t = _open_transport(spec)
    if server:
        server.begin()
    go.wait()
    start = time.monotonic()
    cpu = time.process_time()
    for i in range(0, count, batch):
        if rate:
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        t.send("bench", [Envelope(format="bench.Item@1", body=_body(i + j)) for j in range(min(batch, count - i))])
    cpu = time.process_time() - cpu
    if server:
        out.put(("server", server.spent()))
    out.put(("producer", cpu))
    t.close()


def _consumer(spec: tuple[Any, ...], count: int, batch: int, out: Any, go: Any) -> None:
    _use_code_of(spec)
    server = _ServerCpu() if spec[0] == "postgres" else None
    t = _open_transport(spec)
    if server:
        server.begin()
    latencies = []
    got = 0
    go.wait()
    start = time.monotonic()
    cpu = time.process_time()
    while got < count:
        ds = t.receive_wait("bench", "consumer", max=batch, wait=5)
        if not ds:
            continue
        t.ack(ds)
        done = time.monotonic()
        latencies.extend(done - _stamp(d.envelope.body) for d in ds)
        got += len(ds)
    report = (start, time.monotonic(), latencies, time.process_time() - cpu)
    if server:
        out.put(("server", server.spent()))
    out.put(("consumer", report))
    t.close()


def _run_transport(spec: tuple[Any, ...], count: int, batch: int, rate: float | None) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    consumer_batch = 100 if rate else batch
    procs = [
        ctx.Process(target=_consumer, args=(spec, count, consumer_batch, out, go)),
        ctx.Process(target=_producer, args=(spec, count, batch, rate, out, go)),
    ]
    return _run(procs, go, out, count)


def run_sqlite(
    sync: str, count: int, batch: int, rate: float | None = None, sync_acks: bool = False,
    code: Path | None = None,
) -> dict[str, Any]:
    """The embedded transport (``SqliteTransport``) with ``synchronous=sync``; ``code``: an
    older commit's worktree to run instead of the current code."""
    data_dir = tempfile.mkdtemp(prefix="coupler-bench-")
    try:
        spec = ("sqlite", data_dir, sync, sync_acks, str(code) if code else None)
        _setup_in_process(spec)
        return _run_transport(spec, count, batch, rate)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def _setup(spec: tuple[Any, ...], destroy: bool) -> None:
    """Declare the benchmark's channel (or destroy the site's broker objects and tables), in
    a process of its own running the spec's code."""
    _use_code_of(spec)
    t = _open_transport(spec)
    if spec[-1]:  # the old code runs, not the installed one
        import coupler.bus.transport.base as module

        assert Path(module.__file__).resolve().is_relative_to(Path(spec[-1]).resolve()), module.__file__
    if destroy:
        t.destroy()
    else:
        t.declare("bench")
        t.close()


def run_amqp(count: int, batch: int, rate: float | None = None, code: Path | None = None) -> dict[str, Any]:
    """Coupler's broker transport (``AmqpTransport``: quorum queue, persistent messages,
    publisher confirms per batch, manual acks, journal and counters in PostgreSQL); ``code``:
    an older commit's worktree to run instead of the current code."""
    tag = uuid.uuid4().hex[:8]
    spec = ("amqp", {"prefix": f"bench.{tag}.", "postgres_schema": f"bench_{tag}"}, str(code) if code else None)
    _setup_in_process(spec)
    try:
        return _run_transport(spec, count, batch, rate)
    finally:
        _setup_in_process(spec, destroy=True)


def _setup_in_process(spec: tuple[Any, ...], destroy: bool = False) -> None:
    """:func:`_setup` in a fresh process (the spec's code may be another commit's)."""
    p = mp.get_context("spawn").Process(target=_setup, args=(spec, destroy))
    p.start()
    p.join(120)
    if p.exitcode != 0:
        raise RuntimeError(f"setting up {spec[0]} failed ({p.exitcode})")


def run_postgres(count: int, batch: int, rate: float | None = None) -> dict[str, Any]:
    """Coupler's PostgreSQL transport (``PostgresTransport``: a table per channel, SKIP LOCKED
    leases, LISTEN/NOTIFY, journal in the same transactions), in a schema of its own."""
    spec = ("postgres", f"bench_pg_{uuid.uuid4().hex[:8]}", None)
    _setup_in_process(spec)
    try:
        return _run_transport(spec, count, batch, rate)
    finally:
        _setup_in_process(spec, destroy=True)


# -- raw psycopg: a SKIP LOCKED queue, the floor of the postgres transport ------------------


def _rawpg_producer(table: str, count: int, batch: int, out: Any, go: Any) -> None:
    import psycopg

    server = _ServerCpu()
    db = psycopg.connect(PG_DSN, autocommit=True)
    server.begin()
    go.wait()
    cpu = time.process_time()
    for i in range(0, count, batch):
        n = min(batch, count - i)
        with db.transaction():
            db.execute(f"INSERT INTO {table} (visible_at, body) SELECT %s, unnest(%s::bytea[])",
                       (time.time(), [_body(i + j) for j in range(n)]))
    cpu = time.process_time() - cpu
    out.put(("server", server.spent()))
    out.put(("producer", cpu))
    db.close()


def _rawpg_consumer(table: str, count: int, batch: int, out: Any, go: Any) -> None:
    import psycopg

    server = _ServerCpu()
    db = psycopg.connect(PG_DSN, autocommit=True)
    server.begin()
    latencies: list[float] = []
    got = 0
    go.wait()
    start = time.monotonic()
    cpu = time.process_time()
    while got < count:
        now = time.time()
        with db.transaction():  # the lease
            rows = db.execute(
                f"UPDATE {table} SET visible_at = %s WHERE id = ANY(ARRAY(SELECT id FROM {table} WHERE visible_at <= %s "
                "ORDER BY visible_at, id LIMIT %s FOR UPDATE SKIP LOCKED)) RETURNING id, body",
                (now + 30, now, batch),
            ).fetchall()
        if not rows:
            time.sleep(0.0002)
            continue
        with db.transaction():  # the acknowledgement
            db.execute(f"DELETE FROM {table} WHERE id = ANY(%s)", ([r[0] for r in rows],))
        done = time.monotonic()
        latencies.extend(done - _stamp(r[1]) for r in rows)
        got += len(rows)
    report = (start, time.monotonic(), latencies, time.process_time() - cpu)
    out.put(("server", server.spent()))
    out.put(("consumer", report))
    db.close()


def run_rawpg(count: int, batch: int) -> dict[str, Any]:
    """The same workload on one psycopg table, no Coupler: insert per batch, a SKIP LOCKED
    lease (``UPDATE ... RETURNING``) and a delete per received batch, no envelopes, no journal."""
    import psycopg

    table = f"bench_raw_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_DSN, autocommit=True) as db:
        db.execute(f"CREATE TABLE {table} (id BIGSERIAL PRIMARY KEY, visible_at DOUBLE PRECISION NOT NULL, "
                   "body BYTEA NOT NULL)")
        db.execute(f"CREATE INDEX ON {table} (visible_at, id)")
    ctx = mp.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_rawpg_consumer, args=(table, count, batch, out, go)),
        ctx.Process(target=_rawpg_producer, args=(table, count, batch, out, go)),
    ]
    try:
        return _run(procs, go, out, count)
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as db:
            db.execute(f"DROP TABLE IF EXISTS {table}")


# -- a plain route run by the daemon (no steps): the cost of the route worker ----------------

ROUTE_SITE = """
[site]
data_dir = "data"

[[routes]]
name = "plain"
from = "in"
[[routes.rules]]
to = ["out"]
"""


def _route_run(code: str | None, directory: str, count: int, out: Any) -> None:
    """In a fresh process: ``count`` messages stored on ``in``, then a daemon (of ``code``, an
    older commit's worktree, or the current code) started with one plain route ``in -> out``;
    msg/s from the start until ``out`` holds them all."""
    if code:
        import baseline

        baseline.use_code(Path(code))
    from coupler.bus.config.loader import load_site
    from coupler.bus.plugins.manager import plugin_manager
    from coupler.bus.runtime.daemon import Daemon
    from coupler.bus.transport.sqlite.transport import SqliteTransport
    from coupler.canonical import Envelope

    site_file = Path(directory) / "site.toml"
    site_file.write_text(ROUTE_SITE)
    site = load_site(site_file)
    with SqliteTransport(site.data_dir) as t:
        for i in range(0, count, 500):
            t.send("in", [Envelope(format="bench.Item@1", body=_body(i + j)) for j in range(min(500, count - i))])
    d = Daemon(site, pm=plugin_manager(entry_points=False))
    load = os.getloadavg()[0]
    d.start()
    try:
        assert d.transport is not None

        def routed() -> int:
            assert d.transport is not None
            stats = d.transport.stats("out")
            return stats[0].depth if stats else 0

        while (first := routed()) < count // 50:  # the steady state: start-up is not measured
            time.sleep(0.005)
        start, cpu = time.monotonic(), time.process_time()
        while routed() < count:
            time.sleep(0.01)
        seconds, cpu = time.monotonic() - start, time.process_time() - cpu
    finally:
        d.shutdown()
    n = count - first
    out.put({"count": n, "msg_per_s": round(n / seconds), "p50_ms": 0.0, "p99_ms": 0.0,
             "producer_cpu_us": 0.0, "consumer_cpu_us": round(cpu / n * 1e6, 1), "load": load})


def run_route(count: int, code: Path | None = None) -> dict[str, Any]:
    """A plain route (one rule, no steps) of a daemon on SQLite FULL, in its own process."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    with tempfile.TemporaryDirectory(prefix="coupler-route-") as directory:
        p = ctx.Process(target=_route_run, args=(str(code) if code else None, directory, count, out))
        p.start()
        result = out.get(timeout=1800)
        p.join(60)
    return dict(result)


def postgres_available() -> bool:
    try:
        import psycopg

        psycopg.connect(PG_DSN, connect_timeout=3).close()
    except Exception:  # noqa: BLE001 - any failure means no AMQP transport run
        return False
    return True


# -- raw sqlite3: the floor of the embedded store ------------------------------------------


def _raw_connect(path: str, sync: str) -> Any:
    import sqlite3

    db = sqlite3.connect(path, timeout=0, isolation_level=None)
    db.execute(f"PRAGMA synchronous={sync}")
    return db


def _raw_locked(db: Any, sql: str) -> None:
    """Run ``sql`` (BEGIN IMMEDIATE) again while another process holds the write lock."""
    import sqlite3

    while True:
        try:
            db.execute(sql)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            time.sleep(0.0001)


def _raw_producer(path: str, sync: str, count: int, batch: int, out: Any, go: Any) -> None:
    db = _raw_connect(path, sync)
    go.wait()
    cpu = time.process_time()
    for i in range(0, count, batch):
        rows = [(time.time(), _body(i + j)) for j in range(min(batch, count - i))]
        _raw_locked(db, "BEGIN IMMEDIATE")
        db.executemany("INSERT INTO q (visible_at, body) VALUES (?, ?)", rows)
        db.execute("COMMIT")
    out.put(("producer", time.process_time() - cpu))


def _raw_consumer(path: str, sync: str, count: int, batch: int, out: Any, go: Any) -> None:
    db = _raw_connect(path, sync)
    latencies: list[float] = []
    got = 0
    go.wait()
    start = time.monotonic()
    cpu = time.process_time()
    while got < count:
        now = time.time()
        if db.execute("SELECT 1 FROM q WHERE visible_at <= ? LIMIT 1", (now,)).fetchone() is None:
            time.sleep(0.0002)
            continue
        db.execute("PRAGMA synchronous=NORMAL")  # the lease needs no fsync (as in the store)
        _raw_locked(db, "BEGIN IMMEDIATE")
        rows = db.execute(
            "UPDATE q SET visible_at = ? WHERE id IN "
            "(SELECT id FROM q WHERE visible_at <= ? ORDER BY visible_at, id LIMIT ?) RETURNING id, body",
            (now + 30, now, batch),
        ).fetchall()
        db.execute("COMMIT")
        db.execute(f"PRAGMA synchronous={sync}")
        _raw_locked(db, "BEGIN IMMEDIATE")
        db.executemany("DELETE FROM q WHERE id = ?", [(r[0],) for r in rows])
        db.execute("COMMIT")
        done = time.monotonic()
        latencies.extend(done - _stamp(r[1]) for r in rows)
        got += len(rows)
    out.put(("consumer", (start, time.monotonic(), latencies, time.process_time() - cpu)))


def run_raw(sync: str, count: int, batch: int) -> dict[str, Any]:
    data_dir = tempfile.mkdtemp(prefix="coupler-bench-raw-")
    try:
        path = os.path.join(data_dir, "raw.db")
        db = _raw_connect(path, sync)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE q (id INTEGER PRIMARY KEY, visible_at REAL NOT NULL, body BLOB NOT NULL)")
        db.execute("CREATE INDEX q_ready ON q (visible_at)")
        db.close()
        ctx = mp.get_context("spawn")
        go, out = ctx.Event(), ctx.Queue()
        procs = [
            ctx.Process(target=_raw_consumer, args=(path, sync, count, batch, out, go)),
            ctx.Process(target=_raw_producer, args=(path, sync, count, batch, out, go)),
        ]
        return _run(procs, go, out, count)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def commit_cost(n: int = 300) -> dict[str, Any]:
    """What one fsync'd commit costs here: ``os.fsync`` of 4 KiB, a SQLite WAL commit (FULL)."""
    import sqlite3

    data_dir = tempfile.mkdtemp(prefix="coupler-bench-fsync-")
    try:
        load = os.getloadavg()[0]
        fd = os.open(os.path.join(data_dir, "f"), os.O_WRONLY | os.O_CREAT)
        w, c = time.perf_counter(), time.process_time()
        for i in range(n):
            os.pwrite(fd, b"x" * 4096, (i % 16) * 4096)
            os.fsync(fd)
        fsync = ((time.perf_counter() - w) / n, (time.process_time() - c) / n)
        os.close(fd)
        db = sqlite3.connect(os.path.join(data_dir, "c.db"), isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB)")
        w, c = time.perf_counter(), time.process_time()
        for _ in range(n):
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO t (b) VALUES (?)", (b"y" * 1024,))
            db.execute("COMMIT")
        commit = ((time.perf_counter() - w) / n, (time.process_time() - c) / n)
        db.close()
        return {
            "fsync_us": round(fsync[0] * 1e6), "fsync_cpu_us": round(fsync[1] * 1e6),
            "commit_full_us": round(commit[0] * 1e6), "commit_full_cpu_us": round(commit[1] * 1e6),
            "load": round(load, 2),
        }
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


# -- RabbitMQ -----------------------------------------------------------------------------

_RMQ_QUEUE = "coupler-bench"
#: the same baseline on a quorum queue (what the AMQP transport declares for its channels)
_RMQ_QUORUM = "coupler-bench-quorum"


def _rmq_params() -> Any:
    import pika

    return pika.ConnectionParameters("127.0.0.1", 5672, credentials=pika.PlainCredentials("guest", "guest"))


def _rmq_producer(queue: str, count: int, batch: int, rate: float | None, out: Any, go: Any) -> None:
    """Publishes windows of ``batch`` persistent messages, each window confirmed before the next."""
    import pika

    props = pika.BasicProperties(delivery_mode=2)
    state = {"sent": 0, "confirmed": 0, "start": 0.0, "cpu": 0.0}

    def publish_window(channel: Any) -> None:
        i = state["sent"]
        if i >= count:
            out.put(("producer", time.process_time() - state["cpu"]))
            channel.connection.close()
            return
        if rate:
            delay = state["start"] + i / rate - time.monotonic()
            if delay > 0:
                channel.connection.ioloop.call_later(delay, lambda: publish_window(channel))
                return
        n = min(batch, count - i)
        for j in range(n):
            channel.basic_publish("", queue, _body(i + j), props)
        state["sent"] += n

    def on_confirm(frame: Any, channel: Any) -> None:
        tag = frame.method.delivery_tag
        if frame.method.NAME != "Basic.Ack":
            raise RuntimeError(f"broker refused message {tag}")
        state["confirmed"] = tag if frame.method.multiple else max(state["confirmed"], tag)
        if state["confirmed"] >= state["sent"]:
            publish_window(channel)

    def on_channel(channel: Any) -> None:
        channel.confirm_delivery(lambda frame: on_confirm(frame, channel))
        go.wait()
        state["start"] = time.monotonic()
        state["cpu"] = time.process_time()
        publish_window(channel)

    conn = pika.SelectConnection(
        _rmq_params(),
        on_open_callback=lambda c: c.channel(on_open_callback=on_channel),
        on_close_callback=lambda c, reason: c.ioloop.stop(),
    )
    conn.ioloop.start()


def _rmq_consumer(queue: str, count: int, batch: int, out: Any, go: Any) -> None:
    import pika

    conn = pika.BlockingConnection(_rmq_params())
    ch = conn.channel()
    ch.basic_qos(prefetch_count=max(batch, 1) * 2)
    latencies = []
    got = 0
    go.wait()
    start = time.monotonic()
    cpu = time.process_time()
    pending = 0
    last_tag = 0
    stamps: list[float] = []
    for method, _props, body in ch.consume(queue, auto_ack=False, inactivity_timeout=0.005):
        if method is None:  # nothing more right now: acknowledge what we hold
            if pending:
                ch.basic_ack(last_tag, multiple=True)
                done = time.monotonic()
                latencies.extend(done - s for s in stamps)
                pending, stamps = 0, []
            continue
        if pending == 0:
            stamps = []
        last_tag = method.delivery_tag
        stamps.append(_stamp(body))
        pending += 1
        got += 1
        if pending >= batch or got >= count:
            ch.basic_ack(last_tag, multiple=True)
            done = time.monotonic()
            latencies.extend(done - s for s in stamps)
            pending = 0
        if got >= count:
            break
    out.put(("consumer", (start, time.monotonic(), latencies, time.process_time() - cpu)))
    ch.cancel()
    conn.close()


def rabbitmq_available() -> bool:
    try:
        import pika

        pika.BlockingConnection(_rmq_params()).close()
    except Exception:  # noqa: BLE001 - any failure means no baseline
        return False
    return True


def run_rabbitmq(count: int, batch: int, rate: float | None = None, *, quorum: bool = False) -> dict[str, Any]:
    """pika alone: a classic durable queue (the baseline), or a quorum queue (``quorum``:
    the queue type of the AMQP transport's channels, what exact attempt counts cost).
    The queue is this run's own (the broker may be shared) and is deleted afterwards."""
    import pika

    queue = f"{_RMQ_QUORUM if quorum else _RMQ_QUEUE}.{uuid.uuid4().hex[:8]}"
    conn = pika.BlockingConnection(_rmq_params())
    conn.channel().queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum"} if quorum else None)
    conn.close()
    ctx = mp.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_rmq_consumer, args=(queue, count, 100 if rate else batch, out, go)),
        ctx.Process(target=_rmq_producer, args=(queue, count, batch, rate, out, go)),
    ]
    try:
        return _run(procs, go, out, count)
    finally:
        conn = pika.BlockingConnection(_rmq_params())
        conn.channel().queue_delete(queue)
        conn.close()


# -- driver -------------------------------------------------------------------------------


def _run(procs: list[Any], go: Any, out: Any, count: int) -> dict[str, Any]:
    for p in procs:
        p.start()
    time.sleep(1.0)  # both connected and waiting
    load = os.getloadavg()[0]
    go.set()
    t0 = time.monotonic()
    reports: dict[str, Any] = {}
    server: float | None = 0.0
    while "producer" not in reports or "consumer" not in reports:
        kind, value = out.get(timeout=600)
        if kind == "server":  # PostgreSQL's CPU for a side's connections (None: not readable)
            server = None if value is None or server is None else server + value
        else:
            reports[kind] = value
    for p in procs:
        p.join(60)
        if p.exitcode != 0:
            raise RuntimeError(f"{p.name} exited with {p.exitcode}")
    start, end, latencies, consumer_cpu = reports["consumer"]
    latencies.sort()
    elapsed = end - min(start, t0)
    return {
        "count": count,
        "seconds": round(elapsed, 3),
        "msg_per_s": round(count / elapsed),
        "p50_ms": round(latencies[len(latencies) // 2] * 1000, 3),
        "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 3),
        "producer_cpu_us": round(reports["producer"] / count * 1e6, 1),
        "consumer_cpu_us": round(consumer_cpu / count * 1e6, 1),
        "server_cpu_us": None if server is None or server == 0.0 else round(server / count * 1e6, 1),
        "load": round(load, 2),
    }


STACKS = ("raw", "sqlite", "amqp", "rabbitmq", "quorum", "postgres", "rawpg", "route")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer messages (a smoke run: --scale 0.1)")
    parser.add_argument("--scale", type=float, default=None, help="message counts times this (default 1)")
    parser.add_argument(
        "--only", default=",".join(STACKS),
        help="comma-separated stacks to run: raw (raw sqlite3), sqlite (the embedded transport), amqp "
        "(the broker transport), rabbitmq (pika on a classic durable queue), quorum (pika on a quorum "
        "queue), postgres (the PostgreSQL transport), rawpg (psycopg on a SKIP LOCKED table), route (a "
        "daemon's plain route on SQLite, no steps); e.g. --only amqp,rabbitmq,quorum for the acceptance rows "
        "of the broker transport, --only postgres,rawpg for the PostgreSQL transport's",
    )
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N",
        help="run the raw psycopg and postgres rows N times each, alternately (raw, postgres, raw, ...): the "
        "ratio is the median of the N pairs (on a shared machine one pair can fall into a burst of load)",
    )
    parser.add_argument(
        "--baseline-ref", metavar="REF",
        help="also run the sqlite FULL, amqp and route rows with the code of git commit REF (a temporary worktree), "
        "each right before the current code's row: before and after in the same run",
    )
    args = parser.parse_args(argv)
    only = {x.strip() for x in args.only.split(",") if x.strip()}
    if only - set(STACKS):
        parser.error(f"--only: unknown stack(s) {', '.join(sorted(only - set(STACKS)))}; known: {', '.join(STACKS)}")
    scale = args.scale if args.scale is not None else (0.1 if args.quick else 1.0)
    # batches of 1: 20,000 messages (about 7 s), so that the run measures the steady state,
    # not the first second, in which the WAL file is still growing (appends make every fsync
    # a journal commit of the file system too)
    n100, n1, nlat = int(50_000 * scale), int(20_000 * scale), int(5_000 * scale)
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "runs": {},
    }
    runs = results["runs"]
    have_rmq = bool(only & {"amqp", "rabbitmq", "quorum"}) and rabbitmq_available()
    if only & {"amqp", "rabbitmq", "quorum"} and not have_rmq:
        print("RabbitMQ on 127.0.0.1:5672 not reachable: no baseline", file=sys.stderr)
    have_amqp = have_rmq and "amqp" in only and postgres_available()
    if have_rmq and "amqp" in only and not have_amqp:
        print(f"PostgreSQL ({PG_DSN}) not reachable: no amqp transport runs", file=sys.stderr)
    with_sqlite = bool(only & {"raw", "sqlite"})
    if with_sqlite:
        cost = results["commit_cost"] = commit_cost()
        print(
            f"one fsync'd commit here: os.fsync {cost['fsync_us']} us (cpu {cost['fsync_cpu_us']} us), "
            f"SQLite WAL FULL commit {cost['commit_full_us']} us (cpu {cost['commit_full_cpu_us']} us), "
            f"load {cost['load']}",
            flush=True,
        )
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cpus)")
    print(
        f"{'run':32} {'msgs':>7} {'msg/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'prod us':>8} {'cons us':>8} {'srv us':>8} {'load':>6}",
        flush=True,
    )

    def record(name: str, r: dict[str, Any]) -> None:
        runs[name] = r
        print(
            f"{name:32} {r['count']:7} {r['msg_per_s']:8} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f} "
            f"{r['producer_cpu_us']:8.1f} {r['consumer_cpu_us']:8.1f} "
            f"{'' if r.get('server_cpu_us') is None else format(r['server_cpu_us'], '.1f'):>8} {r['load']:6.2f}",
            flush=True,
        )

    old_code: Path | None = None
    old_name = ""
    stack = contextlib.ExitStack()
    have_pg = bool(only & {"postgres", "rawpg"}) and postgres_available()
    if only & {"postgres", "rawpg"} and not have_pg:
        print(f"PostgreSQL ({PG_DSN}) not reachable: no postgres runs", file=sys.stderr)
    if args.baseline_ref and (have_amqp or "sqlite" in only or "route" in only):
        import baseline

        old_name = baseline.describe(args.baseline_ref)
        old_code = stack.enter_context(baseline.checkout(old_name))
        print(f"sqlite/amqp/route {old_name}: the code of commit {old_name} (git worktree {old_code}); "
              f"sqlite/amqp/route: the working copy ({baseline.head()})")
    # interleaved so that all sides see the same machine load
    for batch, n in ((100, n100), (1, n1)):
        if "raw" in only:
            record(f"raw sqlite3 FULL batch {batch}", run_raw("FULL", n, batch))
        if "sqlite" in only and old_code is not None:
            record(f"sqlite {old_name} FULL batch {batch}", run_sqlite("FULL", n, batch, code=old_code))
        if "sqlite" in only:
            for sync in ("FULL", "NORMAL"):
                record(f"sqlite {sync} batch {batch}", run_sqlite(sync, n, batch))
            record(f"sqlite FULL sync_acks batch {batch}", run_sqlite("FULL", n, batch, sync_acks=True))
        if have_amqp and old_code is not None:
            record(f"amqp {old_name} batch {batch}", run_amqp(n, batch, code=old_code))
        if have_amqp:
            record(f"amqp batch {batch}", run_amqp(n, batch))
        if have_rmq and "rabbitmq" in only:
            record(f"rabbitmq batch {batch}", run_rabbitmq(n, batch))
        if have_rmq and "quorum" in only:
            record(f"rabbitmq quorum batch {batch}", run_rabbitmq(n, batch, quorum=True))
        for k in range(1, args.repeat + 1):  # alternately: both sides see the same load
            tail = f" #{k}" if args.repeat > 1 else ""
            if have_pg and "rawpg" in only:
                record(f"raw psycopg batch {batch}{tail}", run_rawpg(n, batch))
            if have_pg and "postgres" in only:
                record(f"postgres batch {batch}{tail}", run_postgres(n, batch))
    if "route" in only:
        for _ in range(2):  # interleaved twice: before, after, before, after
            if old_code is not None:
                record(f"route {old_name} #{_ + 1}", run_route(n1, code=old_code))
            record(f"route #{_ + 1}", run_route(n1))
    if "sqlite" in only:
        for sync in ("FULL", "NORMAL"):
            record(f"sqlite {sync} latency @1000/s", run_sqlite(sync, nlat, 1, rate=1000))
    if have_amqp and old_code is not None:
        record(f"amqp {old_name} latency @1000/s", run_amqp(nlat, 1, rate=1000, code=old_code))
    if have_amqp:
        record("amqp latency @1000/s", run_amqp(nlat, 1, rate=1000))
    if have_rmq and "rabbitmq" in only:
        record("rabbitmq latency @1000/s", run_rabbitmq(nlat, 1, rate=1000))
    if have_rmq and "quorum" in only:
        record("rabbitmq quorum latency @1000/s", run_rabbitmq(nlat, 1, rate=1000, quorum=True))
    if with_sqlite:
        after = results["commit_cost_after"] = commit_cost()
        print(
            f"after the runs: os.fsync {after['fsync_us']} us, SQLite WAL FULL commit "
            f"{after['commit_full_us']} us, load {after['load']}"
        )
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    ratios = results["ratios"] = {}

    def ratio(name: str, num: str, den: str, key: str = "msg_per_s") -> None:
        if num in runs and den in runs:
            r = ratios[name] = round(runs[num][key] / runs[den][key], 3)
            print(f"{name}: {r:.2f}x")

    for b in ("batch 100", "batch 1"):
        ratio(f"sqlite FULL / raw sqlite3, {b}", f"sqlite FULL {b}", f"raw sqlite3 FULL {b}")
        ratio(f"sqlite FULL sync_acks / raw sqlite3, {b}", f"sqlite FULL sync_acks {b}", f"raw sqlite3 FULL {b}")
        ratio(f"sqlite FULL / rabbitmq, {b}", f"sqlite FULL {b}", f"rabbitmq {b}")
        ratio(f"sqlite FULL / amqp, {b}", f"sqlite FULL {b}", f"amqp {b}")
        ratio(f"amqp / rabbitmq, {b} (acceptance: >= 0.8)", f"amqp {b}", f"rabbitmq {b}")
        ratio(f"amqp / rabbitmq quorum, {b}", f"amqp {b}", f"rabbitmq quorum {b}")
        ratio(f"rabbitmq quorum / rabbitmq, {b}", f"rabbitmq quorum {b}", f"rabbitmq {b}")
        ratio(f"postgres / raw psycopg, {b} (acceptance: >= 0.8)", f"postgres {b}", f"raw psycopg {b}")
        pairs = [(runs[f"postgres {b} #{k}"], runs[f"raw psycopg {b} #{k}"]) for k in range(1, args.repeat + 1)
                 if f"postgres {b} #{k}" in runs and f"raw psycopg {b} #{k}" in runs] if args.repeat > 1 else []
        if pairs:
            each = sorted(round(mine["msg_per_s"] / theirs["msg_per_s"], 3) for mine, theirs in pairs)
            r = ratios[f"postgres / raw psycopg, {b}, median of {len(each)} pairs"] = each[len(each) // 2]
            print(f"postgres / raw psycopg, {b}, median of {len(each)} pairs (acceptance: >= 0.8): {r:.2f}x "
                  f"(pairs: {', '.join(f'{x:.2f}' for x in each)})")
        for mine_name, theirs_name in [(f"postgres {b}{t}", f"raw psycopg {b}{t}")
                                       for t in ([""] if args.repeat == 1 else [f" #{k}" for k in range(1, args.repeat + 1)])]:
            mine, theirs = runs.get(mine_name), runs.get(theirs_name)
            if mine and theirs and mine.get("server_cpu_us") and theirs.get("server_cpu_us"):
                total = {name: x["producer_cpu_us"] + x["consumer_cpu_us"] + x["server_cpu_us"]
                         for name, x in (("mine", mine), ("theirs", theirs))}
                r = ratios[f"cpu raw psycopg / postgres, {mine_name.removeprefix('postgres ')}"] = round(
                    total["theirs"] / total["mine"], 3)
                print(f"CPU per message (client + server), raw psycopg / postgres, "
                      f"{mine_name.removeprefix('postgres ')}: {r:.2f}x ({total['theirs']:.0f} / {total['mine']:.0f} us)")
    if old_name:
        for b in ("batch 100", "batch 1", "latency @1000/s"):
            ratio(f"amqp / amqp {old_name}, {b}", f"amqp {b}", f"amqp {old_name} {b}")
        for b in ("batch 100", "batch 1"):
            ratio(f"sqlite FULL / sqlite {old_name} FULL, {b}", f"sqlite FULL {b}", f"sqlite {old_name} FULL {b}")
        for i in (1, 2):
            ratio(f"route / route {old_name}, run {i} (acceptance: >= 0.9)", f"route #{i}", f"route {old_name} #{i}")
    for b in ("batch 100", "batch 1"):  # CPU time per message, producer + consumer
        for den in ("rabbitmq", "rabbitmq quorum"):
            if f"amqp {b}" in runs and f"{den} {b}" in runs:
                mine = runs[f"amqp {b}"]["producer_cpu_us"] + runs[f"amqp {b}"]["consumer_cpu_us"]
                theirs = runs[f"{den} {b}"]["producer_cpu_us"] + runs[f"{den} {b}"]["consumer_cpu_us"]
                r = ratios[f"cpu {den} / amqp, {b}"] = round(theirs / mine, 3)
                print(f"CPU per message, {den} / amqp, {b}: {r:.2f}x ({theirs:.0f} / {mine:.0f} us)")
    lat = runs.get("amqp latency @1000/s")
    if lat is not None:
        ok = lat["msg_per_s"] >= 0.98 * 1000 and lat["p99_ms"] < 20
        print(f"amqp @1000/s offered: {lat['msg_per_s']} msg/s achieved, p99 {lat['p99_ms']:.2f} ms "
              f"(acceptance: 1,000 msg/s sustained with p99 < 20 ms: {'met' if ok else 'NOT met'})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    stack.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
