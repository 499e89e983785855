"""What psycopg's automatic prepared statements save the PostgreSQL transport's acknowledging
transaction: ``with transport.transaction() as tx: tx.send(out, small); tx.ack(d)`` with the
connection's ``prepare_threshold`` at psycopg's default (5: a statement is prepared at its
sixth execution) and at ``None`` (nothing prepared: what ``prepare=False`` on every statement
sent in a pipeline would cost), alternating blocks of ``--block`` messages in one process
(``--rounds`` of each, the order swapped every round).

Per message: wall time, this process's CPU time and the CPU time of the connection's server
backend (read from ``/proc/<pid>/stat``: PostgreSQL must run on this machine). The first 20
messages of a block are not timed (statements counted up to the threshold).

Usage: .venv/bin/python benchmarks/pg_prepared.py [--block 200] [--rounds 6] [--schema-prefix bench_prepared_]

PostgreSQL: ``COUPLER_BENCH_POSTGRES`` (default postgresql://postgres@127.0.0.1:5432/test); the
schema made here is dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid

from psycopg.conninfo import make_conninfo

PG_DSN = os.environ.get("COUPLER_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
WARM = 20


def _backend_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--block", type=int, default=200, help="messages of a block")
    parser.add_argument("--rounds", type=int, default=6, help="blocks of each setting")
    parser.add_argument("--schema-prefix", default="bench_prepared_", help="of the schema made here")
    args = parser.parse_args(argv)
    from coupler.bus.transport.postgres.transport import PostgresTransport
    from coupler.canonical import Envelope

    def message(body: bytes) -> Envelope:
        return Envelope(format="bench.Order@1", body=body)

    dsn = make_conninfo(PG_DSN, application_name="bench_prepared")
    t = PostgresTransport(dsn, schema=f"{args.schema_prefix}{uuid.uuid4().hex[:8]}").open()
    try:
        t.send("out", message(b"warm"))  # its table made
        conn = t._conn()
        pid = conn.info.backend_pid
        if not os.path.exists(f"/proc/{pid}/stat"):
            print("the server backend is not a process of this machine", file=sys.stderr)
            return 1
        rows: dict[str, list[tuple[float, float, float]]] = {"prepared": [], "unprepared": []}
        loads = []
        for i in range(args.rounds):
            for setting in list(rows)[::1 if i % 2 == 0 else -1]:
                conn.prepare_threshold = 5 if setting == "prepared" else None
                t.send("q", [message(b"x" * 1024) for _ in range(args.block)])
                ds = []
                while len(ds) < args.block:
                    ds += t.receive("q", "bench", max=100, lease_seconds=3600)
                loads.append(os.getloadavg()[0])
                for n, d in enumerate(ds):
                    if n == WARM:
                        wall, cpu, server = time.monotonic(), time.process_time(), _backend_cpu(pid)
                    with t.transaction() as tx:
                        tx.send("out", message(b"done"))
                        tx.ack(d)
                timed = len(ds) - WARM
                rows[setting].append(((time.monotonic() - wall) / timed * 1e6, (time.process_time() - cpu) / timed * 1e6,
                                      (_backend_cpu(pid) - server) / timed * 1e6))
        print(f"{os.cpu_count()} cores, load {min(loads):.2f}-{max(loads):.2f}; {args.rounds} blocks of "
              f"{args.block - WARM} timed messages each")
        print(f"{'setting':11} {'wall us/msg':>12} {'client cpu us/msg':>18} {'server cpu us/msg':>18}")
        medians = {}
        for setting, runs in rows.items():
            medians[setting] = [statistics.median(r[k] for r in runs) for k in range(3)]
            print(f"{setting:11} {medians[setting][0]:12.0f} {medians[setting][1]:18.0f} {medians[setting][2]:18.0f}")
        p, u = medians["prepared"], medians["unprepared"]
        print(f"unprepared/prepared: wall x{u[0] / p[0]:.2f}, client cpu x{u[1] / p[1]:.2f}, server cpu x{u[2] / p[2]:.2f}")
    finally:
        t.close()
        t.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
