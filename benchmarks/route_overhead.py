"""What a route pipeline costs over the route handler it replaced, on the same store.

    .venv/bin/python benchmarks/route_overhead.py [--count 3000] [--profile]

``bus_throughput.py --only route --baseline-ref REF`` compares whole daemons of two commits,
transports included, which on a busy machine is noisy. This script isolates the route itself: in
one process and one thread, on one SQLite FULL store, it handles ``--count`` messages of 1 KiB
(receive, route, send, acknowledge in one transaction) alternately with the handler of commit
31a0e32 (``Route.destinations`` + ``tx.send`` + ack, written out here) and with
``Pipeline.handle`` of a plain route (one rule, no steps), three times each, and prints the CPU
time per message of each run. ``--profile`` adds a cProfile of one pipeline run: where the time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=3000, help="messages per run (default 3000)")
    parser.add_argument("--profile", action="store_true", help="profile one pipeline run (cumulative time)")
    args = parser.parse_args(argv)

    from coupler.bus.config.models import RouteConfig
    from coupler.bus.runtime.router import Route
    from coupler.bus.runtime.steps.base import Switches
    from coupler.bus.runtime.steps.pipeline import build_pipeline
    from coupler.bus.transport.sqlite.transport import SqliteTransport
    from coupler.canonical import Envelope

    config = RouteConfig.model_validate({"name": "plain", "from": "in", "rules": [{"to": ["out"]}]})
    route = Route.from_config(config)

    def settle(tx: Any, d: Any) -> None:
        tx.ack(d)

    def before(t: Any, d: Any) -> None:  # the route handler of 31a0e32 (bus/runtime/daemon.py)
        destinations = route.destinations(d.envelope)
        with t.transaction() as tx:
            for channel in destinations:
                tx.send(channel, d.envelope, component="route:plain")
            settle(tx, d)

    def run(kind: str) -> float:
        with tempfile.TemporaryDirectory(prefix="coupler-route-") as tmp:
            t = SqliteTransport(Path(tmp)).open()
            pipeline = build_pipeline(config, route, {}, site_dir=Path(tmp), registry=lambda: None,
                                      transport=t, switches=Switches())
            for i in range(0, args.count, 500):
                t.send("in", [Envelope(format="bench.Item@1", body=b"x" * 1024) for _ in range(min(500, args.count - i))])
            cpu = time.process_time()
            for _ in range(args.count):
                [d] = t.receive("in", "bench", max=1)
                if kind == "before":
                    before(t, d)
                else:
                    pipeline.handle(t, d, settle)
            cpu = time.process_time() - cpu
            t.close()
            return cpu / args.count * 1e6

    results: dict[str, list[float]] = {"before": [], "pipeline": []}
    for kind in ("before", "pipeline") * 3:
        results[kind].append(run(kind))
        print(f"{kind:9} {results[kind][-1]:7.1f} CPU us/msg", flush=True)
    b, p = sorted(results["before"])[1], sorted(results["pipeline"])[1]
    print(f"medians: before {b:.1f}, pipeline {p:.1f} CPU us/msg: pipeline / before {p / b:.2f}x")
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(run, "pipeline")
        pstats.Stats(profile).sort_stats("cumulative").print_stats(20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
