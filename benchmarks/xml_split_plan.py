"""Benchmark: what planning the splits of a large XML file costs the driver, old code beside new.

Generates ``--mb`` megabytes (default 200) of ``orders/order`` records (``xml_translate.py``'s
generator) in three shapes: ``plain`` (no comment, CDATA section or processing instruction:
the check of each boundary candidate searches back to the previous boundary, the most it
reads), ``comments`` (a comment at the end of every record) and ``cdata`` (a CDATA section in every
record's description: the nearest opener is close to every candidate). Each shape is planned
by the current code and by the code of ``--baseline-ref`` (a git worktree) alternately,
``--pairs`` times (default 5), each run in a fresh process (the page cache warm: the file is
read once before), with the default split size (16 MB) on ``--slots`` (2) slots. Reports
the CPU time of ``plan_xml_splits`` per run, the medians, the ratio new/old and the number
of splits, with the load average.

    .venv/bin/python benchmarks/xml_split_plan.py --baseline-ref HEAD~1 [--mb 200] [--pairs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import baseline
from machine import memory_note
from xml_translate import HEAD, TAIL, order

ROOT = Path(__file__).resolve().parent.parent


def generate(path: Path, megabytes: float, shape: str) -> None:
    target = int(megabytes * 1024 * 1024)
    written, n = 0, 0
    with path.open("w", encoding="utf-8") as out:
        out.write(HEAD)
        while written < target:
            records = [order(n + i) for i in range(1000)]
            if shape == "comments":
                records = [r.replace("</order>", f"<!-- record {n + i} checked --></order>", 1)
                           for i, r in enumerate(records)]
            elif shape == "cdata":
                records = [r.replace("<description>", "<description><![CDATA[", 1).replace(
                    "</description>", "]]></description>", 1) for r in records]
            chunk = "".join(records)
            out.write(chunk)
            written += len(chunk)
            n += 1000
        out.write(TAIL)


def worker(code: str, xml: str, slots: int) -> None:
    """One timed plan in this process (``code``: a worktree, or empty for the current code)."""
    if code:
        baseline.use_code(Path(code))
    import time

    from coupler.translators.spark.xml_splits import plan_xml_splits

    started = time.process_time()  # CPU: less sensitive than wall time to other jobs on the machine
    splits = plan_xml_splits([xml], "order", slots=slots)
    elapsed = time.process_time() - started
    print(json.dumps({"seconds": elapsed, "splits": len(splits)}))


def run(code: str, xml: Path, slots: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--worker", code, str(xml), "--slots", str(slots)],
                         check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _ms(runs: list[dict[str, float]]) -> str:
    return ", ".join(f"{r['seconds'] * 1000:.0f}" for r in runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=200)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--baseline-ref", default="HEAD~1")
    parser.add_argument("--shapes", default="plain,comments,cdata")
    parser.add_argument("--worker", nargs=2, metavar=("CODE", "XML"))
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.slots)
        return 0
    print(f"load average {os.getloadavg()[0]:.2f}; {memory_note()}")
    print(f"current: {baseline.head()}, baseline: {baseline.describe(args.baseline_ref)}; {args.mb} MB, "
          f"{args.slots} slots, the default split size")
    with tempfile.TemporaryDirectory(prefix="h126_split_plan_") as tmp, baseline.checkout(args.baseline_ref) as old:
        for shape in args.shapes.split(","):
            xml = Path(tmp) / f"orders-{shape}.xml"
            generate(xml, args.mb, shape)
            with xml.open("rb") as fh:  # the page cache warm for both
                while fh.read(1 << 24):
                    pass
            news, olds = [], []
            for _ in range(args.pairs):
                olds.append(run(str(old), xml, args.slots))
                news.append(run("", xml, args.slots))
            new_s = statistics.median(r["seconds"] for r in news)
            old_s = statistics.median(r["seconds"] for r in olds)
            print(f"{shape:9s} {xml.stat().st_size / 1e6:.0f} MB: new {new_s * 1000:.1f} ms ({news[0]['splits']} splits),"
                  f" old {old_s * 1000:.1f} ms ({olds[0]['splits']} splits), new/old {new_s / old_s:.2f}"
                  f"  [new {_ms(news)}; old {_ms(olds)}]")
            xml.unlink()
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
