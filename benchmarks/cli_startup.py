"""Start-up of ``coupler copybook decode``: CPU and wall time of whole processes.

    .venv/bin/python benchmarks/cli_startup.py [--runs 7] [--baseline-ref REF] [--instructions]

Runs, each in a new process pinned to one core, ``coupler copybook decode --help`` and a
decode of a 10-record file to Parquet (the fixed cost every decode pays), ``--runs`` times
each, alternating with the code of ``--baseline-ref`` when given (the same run, so the
machine's load touches both alike), and prints the medians of CPU time (user + system of the
child, ``wait4``) and wall time. The child writes its bytecode (``PYTHONDONTWRITEBYTECODE``
unset) after a warm-up run, as an installed package runs. The target (issue 32) is < 0.3 s.
For where the time goes: ``python -X importtime -m coupler.bus.cli copybook decode ...``.
``--instructions`` also counts the instructions of one process of each command and code under
valgrind's callgrind: unlike CPU time, the other jobs of a shared machine do not change them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import datagen  # noqa: E402
from machine import memory_note  # noqa: E402

# both codes import baseline.py (subprocess, tempfile, ...), so that its imports weigh alike
RUNNER = """\
import os, runpy, sys
sys.path.insert(0, os.environ["BENCH_DIR"])
import baseline
if os.environ.get("BENCH_CODE"):
    baseline.use_code(baseline.Path(os.environ["BENCH_CODE"]))
sys.argv = ["coupler", *sys.argv[1:]]
runpy.run_module("coupler.bus.cli", run_name="__main__")
"""


def _env(code: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["BENCH_DIR"] = str(Path(__file__).resolve().parent)
    if code is not None:
        env["BENCH_CODE"] = str(code)
    return env


def run(args: list[str], code: Path | None) -> tuple[float, float]:
    """(CPU s, wall s) of one ``coupler`` process on one core."""
    env = _env(code)
    core = min(os.sched_getaffinity(0))
    wall = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, *args], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, preexec_fn=lambda: os.sched_setaffinity(0, {core}))
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - wall
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"coupler {' '.join(args)} failed: {proc.stderr.read().decode()[-400:]}")  # type: ignore[union-attr]
    return usage.ru_utime + usage.ru_stime, wall


def instructions(args: list[str], code: Path | None) -> int:
    """Instructions of one ``coupler`` process, counted by valgrind's callgrind."""
    env = _env(code)
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c",
                           RUNNER, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode or not found:
        raise RuntimeError(f"valgrind coupler {' '.join(args)} failed: {done.stderr[-400:]}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline-ref", help="also run this commit's code, alternating (e.g. HEAD~3)")
    parser.add_argument("--instructions", action="store_true",
                        help="also count the instructions of one process of each (valgrind's callgrind)")
    args = parser.parse_args()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        copybook = datagen.write_copybook(work / "txn.cpy")
        data = datagen.write_fixed_file(work / "tiny.dat", 10)
        commands = {
            "copybook decode --help": ["copybook", "decode", "--help"],
            "copybook decode, 10 records -> Parquet": ["copybook", "decode", str(copybook), str(data), "--to",
                                                       "parquet", "--output", str(work / "out.parquet")],
        }
        codes: dict[str, Path | None] = {"this code": None}
        if args.baseline_ref:
            import baseline

            old = stack.enter_context(baseline.checkout_built(args.baseline_ref))
            codes[f"commit {baseline.describe(args.baseline_ref)}"] = old
        results: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for code in codes.values():
            for argv in commands.values():
                run(argv, code)  # warm-up: bytecode written, files in the page cache
        for _ in range(args.runs):
            for label, code in codes.items():
                for name, argv in commands.items():
                    results.setdefault((label, name), []).append(run(argv, code))
        counts = {(label, name): instructions(argv, code) for label, code in codes.items()
                  for name, argv in commands.items()} if args.instructions else {}
    print(f"\nstart-up, {args.runs} runs each, medians, one core; load average {load[0]:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after; {memory_note()}\n")
    print("| code | command | CPU s | wall s |" + (" instructions (M) |" if counts else ""))
    print("|---|---|---:|---:|" + ("---:|" if counts else ""))
    for (label, name), runs in results.items():
        cpu = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        count = f" {counts[(label, name)] / 1e6:.1f} |" if counts else ""
        print(f"| {label} | `{name}` | {cpu:.3f} | {wall:.3f} |{count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
