"""Start-up of ``coupler daemon`` for a small file drop site: CPU and wall time to ready.

    .venv/bin/python benchmarks/daemon_startup.py [--runs 7] [--baseline-ref REF] [--instructions]

The site: a filedrop inbound adapter, a route, a filedrop outbound adapter (SQLite store).
Two measures, each in a new process pinned to one core, ``--runs`` times, alternating with the
code of ``--baseline-ref`` when given (the same run, so the machine's load touches both alike):

- ``daemon --check``: the whole process (starts the adapters paused, stops them, exits): CPU
  time (user + system of the child, ``wait4``) and wall time;
- ``daemon`` to ready: from the spawn until the control endpoint answers ``status`` with the
  child's pid (what a test or an operator's restart waits for): wall time, and the child's CPU
  time at that moment (``/proc/PID/stat``); then SIGTERM.

Medians are printed. ``--instructions`` also counts the instructions of one ``daemon --check``
of each code under valgrind's callgrind (the other jobs of a shared machine do not change them).
For where the time goes: ``python -X importtime -m coupler.bus.cli.main daemon --site S --check``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_startup import RUNNER, _env, instructions, run  # noqa: E402
from machine import memory_note  # noqa: E402

SITE = """\
[site]
name = "bench-start"

[[adapters]]
name = "in"
type = "filedrop"
direction = "inbound"
channel = "orders"
format = "bench.Order@1;application/json"
[adapters.options]
directory = "{root}/in"

[[routes]]
name = "orders"
from = "orders"
to = ["orders-out"]

[[adapters]]
name = "out"
type = "filedrop"
direction = "outbound"
channel = "orders-out"
[adapters.options]
directory = "{root}/out"
"""


def write_site(root: Path) -> Path:
    for sub in ("in", "out"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    site = root / "site.toml"
    site.write_text(SITE.format(root=root))
    return site


def _cpu_of(pid: int) -> float:
    """User + system CPU seconds of a running process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def to_ready(site: Path, code: Path | None) -> tuple[float, float]:
    """(CPU s, wall s) of ``coupler daemon --site SITE`` until its control endpoint answers."""
    from coupler.bus.config.loader import load_site
    from coupler.bus.runtime.control import ControlClient, ControlError

    client = ControlClient(load_site(site).control_socket)
    core = min(os.sched_getaffinity(0))
    wall = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, "daemon", "--site", str(site)], env=_env(code),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: os.sched_setaffinity(0, {core}))
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(ControlError):
                if client.call("status")["pid"] == proc.pid:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"daemon did not start: {proc.stderr.read().decode()[-400:]}")  # type: ignore[union-attr]
            time.sleep(0.005)
        elapsed = time.perf_counter() - wall
        cpu = _cpu_of(proc.pid)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    return cpu, elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline-ref", help="also run this commit's code, alternating (e.g. HEAD~1)")
    parser.add_argument("--instructions", action="store_true",
                        help="also count the instructions of one `daemon --check` of each (valgrind's callgrind)")
    args = parser.parse_args()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="daemon_startup_") as tmp, contextlib.ExitStack() as stack:
        site = write_site(Path(tmp))
        check = ["daemon", "--site", str(site), "--check"]
        codes: dict[str, Path | None] = {"this code": None}
        if args.baseline_ref:
            import baseline

            old = stack.enter_context(baseline.checkout_built(args.baseline_ref))
            codes[f"commit {baseline.describe(args.baseline_ref)}"] = old
        for code in codes.values():
            run(check, code)  # warm-up: bytecode written, files in the page cache
        results: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.runs):
            for label, code in codes.items():
                results.setdefault((label, "daemon --check"), []).append(run(check, code))
                results.setdefault((label, "daemon, to ready"), []).append(to_ready(site, code))
        counts = {label: instructions(check, code) for label, code in codes.items()} if args.instructions else {}
    print(f"\ndaemon start-up of a filedrop -> route -> filedrop site, {args.runs} runs each, medians, one core; "
          f"load average {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after; {memory_note()}\n")
    print("| code | what | CPU s | wall s |")
    print("|---|---|---:|---:|")
    for (label, name), runs in results.items():
        cpu = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        print(f"| {label} | `{name}` | {cpu:.3f} | {wall:.3f} |")
    for label, count in counts.items():
        print(f"\n{label}: `daemon --check` {count / 1e6:.1f} M instructions (callgrind)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
