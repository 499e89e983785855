"""Peak memory of the `split` step on a 1 GB body: its parts are streamed into the store.

    .venv/bin/python benchmarks/splitter_memory.py            # 1 GB of 64 KiB lines
    .venv/bin/python benchmarks/splitter_memory.py --size-mb 200 --line-kb 4

A body of ``--size-mb`` MiB of text lines is generated in memory; a route whose pipeline is one
``split`` step (``lines = true``) runs it inside one transaction of a real SQLite transport, as
the daemon does, every part stored on a channel. The peak resident set size (Linux ``VmHWM``,
reset before the run through ``/proc/self/clear_refs``) is compared with the RSS once the body
is in memory: the growth is what splitting costs. For scale the same run measures splitting
the way a naive splitter does (``body.split(b"\\n")``: every part in memory at once, a second
copy of the body) without storing the parts.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from pathlib import Path


def _status(key: str) -> int:
    """A ``VmRSS``/``VmHWM`` figure of this process, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {key} in /proc/self/status (Linux only)")


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS


def _body(size_mb: int, line_kb: int) -> bytes:
    line = (b"x" * (line_kb * 1024 - 1)) + b"\n"
    count = size_mb * 1024 // line_kb
    return line * count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=1024, help="body size in MiB (default 1024)")
    parser.add_argument("--line-kb", type=int, default=64, help="line length in KiB (default 64)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from coupler.bus.config.models import RouteConfig
    from coupler.bus.runtime.router import Route
    from coupler.bus.runtime.steps.base import StepContext, Switches
    from coupler.bus.runtime.steps.builtin import BUILTIN_STEPS
    from coupler.bus.runtime.steps.pipeline import build_pipeline
    from coupler.bus.transport.sqlite.transport import SqliteTransport
    from coupler.canonical import Envelope

    config = RouteConfig.model_validate(
        {"name": "split", "from": "in", "to": ["parts"], "steps": [{"type": "split", "lines": True}]})
    route = Route.from_config(config)
    with tempfile.TemporaryDirectory(prefix="coupler-split-") as tmp:
        transport = SqliteTransport(Path(tmp)).open()
        pipeline = build_pipeline(config, route, dict(BUILTIN_STEPS), site_dir=Path(tmp), registry=lambda: None,
                                  transport=transport, switches=Switches())
        message = Envelope(format="bench.Lines@1;text/plain", body=_body(args.size_mb, args.line_kb))
        gc.collect()
        with_body = _status("VmRSS")
        _reset_peak()
        started = time.perf_counter()
        with transport.transaction() as tx:
            pipeline.run(StepContext(tx, "split"), message)
        seconds = time.perf_counter() - started
        peak = _status("VmHWM")
        parts = transport.stats("parts")[0].depth
        transport.close()
    gc.collect()
    _reset_peak()
    before_naive = _status("VmRSS")
    naive_parts = len([p for p in message.body.split(b"\n") if p])
    naive_peak = _status("VmHWM")
    result = {
        "body_mb": args.size_mb, "line_kb": args.line_kb, "parts": parts, "seconds": round(seconds, 1),
        "rss_with_body_mb": round(with_body / 2**20), "peak_mb": round(peak / 2**20),
        "growth_mb": round((peak - with_body) / 2**20), "naive_parts": naive_parts,
        "naive_growth_mb": round((naive_peak - before_naive) / 2**20),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"split {args.size_mb} MiB into {parts} parts of {args.line_kb} KiB, stored in SQLite, in {seconds:.1f} s")
        print(f"RSS with the body in memory {result['rss_with_body_mb']} MiB; peak while splitting "
              f"{result['peak_mb']} MiB: growth {result['growth_mb']} MiB")
        print(f"naive body.split(): growth {result['naive_growth_mb']} MiB ({naive_parts} parts in memory at once)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
