"""Copybook decoding throughput: Coupler's vectorised and per-record decoders, the whole
command ``coupler copybook decode --to parquet``, cobolio and Cobrix (through ztract's
bundled engine), on one generated file, in one run, on one core.

    .venv/bin/python benchmarks/copybook_decode.py [--records 1000000] [--sample 50000] [--repeat 3]

Whole-process runs (a new process each, file in -> Parquet out, start-up included) are
measured with wall-clock and CPU time (the child's user + system time, from ``wait4``) and
peak RSS, on the 207-byte record, on a 207-byte record that is mostly PIC X, on an empty
file (the fixed start-up cost) and on a fifth of the file (peak RSS at two sizes); the best
of ``--repeat`` runs is shown (the machine may be shared), the runs taken round by round (every
kind once a round, so that the rows compared are measured side by side), each into an output
that does not exist yet. The child runs with bytecode
written (``PYTHONDONTWRITEBYTECODE`` unset) after a warm-up run, as an installed package runs.

The file has ``--records`` fixed-length EBCDIC records of 207 bytes (PIC X, zoned
S9(7)V99, COMP-3 S9(9)V99, COMP S9(9), an OCCURS 5 group; see ``datagen.py``). Slow
decoders run on the first ``--sample`` records. Peers are optional: install them with
``pip install '.[bench]'`` (``make bench`` does); a missing peer is reported, not fatal.
Results are printed as a Markdown table for ``docs/performance.md``.

``--one-vs-parts`` runs only ``--jobs 1`` into one output file and with ``--parts``,
alternating ``--repeat`` times each: the medians of their CPU times and the ratio.

``--parts-speedup [--baseline-ref REF]`` runs only ``--jobs 1`` into one file on one core and
``--jobs 2 --parts`` on two cores, pair after pair: the speed-up (wall) and what the second
thread costs (CPU), this code's pairs alternating with REF's.

``--jobs 2,4 --baseline-ref REF`` runs only the one-output-file ``--jobs N`` whole
processes, this code's and REF's alternating, and prints their wall, CPU and peak RSS.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import datagen  # noqa: E402
from machine import memory_note  # noqa: E402

from coupler.translators.copybook.batch import BatchDecoder  # noqa: E402
from coupler.translators.copybook.decoder import decode_files  # noqa: E402
from coupler.translators.copybook.layout import build_layout  # noqa: E402
from coupler.translators.copybook.parser import parse_copybook  # noqa: E402

MB = 1e6


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MB


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def coupler_vectorised(layout, path: Path, compiled: bool) -> tuple[int, float]:
    before, peak, rows = rss_mb(), 0.0, 0
    for decoded in BatchDecoder(layout, compiled=compiled).iter_file(path):
        rows += decoded.batch.num_rows
        peak = max(peak, rss_mb() - before)
    return rows, peak


#: the compiled kernel in process, in a child running this code or (BENCH_CODE) an older commit's
KERNEL_CHILD = """\
import os, sys
sys.path.insert(0, os.environ["BENCH_DIR"])
if os.environ.get("BENCH_CODE"):
    import baseline
    baseline.use_code(baseline.Path(os.environ["BENCH_CODE"]))
import copybook_decode as bench
layout = bench.build_layout(bench.parse_copybook(bench.datagen.COPYBOOK))
(rows, _), wall, cpu = bench.timed(lambda: bench.coupler_vectorised(layout, bench.Path(sys.argv[1]), True))
print(rows, wall, cpu)
"""


def kernels_side_by_side(data: Path, old: Path, name: str, add, rounds: int = 3) -> None:
    """The compiled kernel in process, this code's and ``old``'s (a built worktree), each in a
    child of its own on this core, alternating, ``rounds`` times each: the best and the
    median (CPU); a difference of a few percent needs many rounds to stand out of the noise."""
    here = str(Path(__file__).resolve().parent)
    runs: dict[str, list[tuple[int, float, float]]] = {}
    for _ in range(rounds):
        for label, code in (("this code", None), (f"commit {name}", old)):
            env = {**os.environ, "BENCH_DIR": here}
            if code is not None:
                env["BENCH_CODE"] = str(code)
            out = subprocess.run([sys.executable, "-c", KERNEL_CHILD, str(data)], env=env, check=True,
                                 capture_output=True, text=True).stdout.split()
            runs.setdefault(label, []).append((int(out[0]), float(out[1]), float(out[2])))
    size = data.stat().st_size / MB
    median = {label: statistics.median(r[2] for r in rs) for label, rs in runs.items()}
    for label, rs in runs.items():
        rows, wall, cpu = min(rs, key=lambda r: r[2])
        add(f"kernel: compiled, in process, {label} (a child each, alternating)", data, rows, wall, cpu,
            f"best of {rounds}; median {size / median[label]:.0f} MB/s CPU; this code / it (medians): "
            f"{median[label] / median['this code']:.3f}×")
        print(f"  kernel in a child, {label}: best {size / cpu:.0f}, median {size / median[label]:.0f} MB/s CPU",
              file=sys.stderr)


def text_path() -> str:
    """The compiled kernel's text path on this CPU (portable, avx2, avx512), or that it is not built."""
    from coupler.translators.copybook import kernels

    return kernels._fused.text_path() if kernels.FUSED_BUILT else "not built (NumPy kernels)"


def coupler_per_record(layout, path: Path) -> int:
    return sum(1 for _ in decode_files(layout, [path]))


def cobolio_decode(path: Path) -> tuple[int, dict]:
    import cobolio

    with contextlib.redirect_stdout(io.StringIO()):  # cobolio prints its parse tree
        lrecl, layout = cobolio.copybook_to_layout(datagen.COPYBOOK)
    first, rows = None, 0
    with open(path, "rb") as f:
        while record := f.read(datagen.RECORD_SIZE):
            out = cobolio.loads(record, layout, "cp037")
            first = first or out
            rows += 1
    return rows, first


def translate_cpu_seconds(path: Path) -> float:
    """CPU seconds of one ``bytes.translate`` pass over the file (the best of three)."""
    raw = path.read_bytes()
    table = bytes(range(256))[::-1]
    return min(timed(lambda: raw.translate(table))[2] for _ in range(3))


def ztract_jar() -> Path | None:
    try:
        from ztract.engine.download_engine import get_jar_path
    except ImportError:
        return None
    jar = Path(get_jar_path())
    return jar if jar.exists() and shutil.which("java") else None


def cobrix_decode(jar: Path, copybook: Path, path: Path) -> tuple[int, dict, float, float, float]:
    """Cobrix's whole process (a JVM, JSON lines out): records, the first, wall s, CPU s, peak RSS MB."""
    cmd = ["java", "-Xmx1g", "-jar", str(jar), "--mode", "decode", "--copybook", str(copybook),
           "--input", str(path), "--recfm", "F", "--lrecl", str(datagen.RECORD_SIZE),
           "--codepage", "cp037", "--encoding", "ebcdic"]
    found: dict[str, Any] = {"first": None, "rows": 0}

    def read(stdout) -> None:
        for line in stdout:
            if line.strip():
                found["rows"] += 1
                if found["first"] is None:
                    found["first"] = json.loads(line)

    wall, cpu, rss = run_child(cmd, on_stdout=read)
    return found["rows"], found["first"], wall, cpu, rss


#: runs ``coupler`` as ``python -m coupler.bus.cli`` does, and writes the process's own peak
#: RSS (``VmHWM``: this process image only; ``wait4``'s ``ru_maxrss`` of a child counts the
#: RSS of the parent it was forked from) to the file named by $BENCH_HWM at exit
CLI_WITH_PEAK_RSS = """\
import atexit, os, runpy, sys
if os.environ.get("BENCH_CODE"):  # --baseline-ref: the older commit's code
    sys.path.insert(0, os.environ["BENCH_DIR"])
    import baseline
    baseline.use_code(baseline.Path(os.environ["BENCH_CODE"]))
def _hwm():
    with open("/proc/self/status") as f, open(os.environ["BENCH_HWM"], "w") as out:
        out.write(next(line for line in f if line.startswith("VmHWM")).split()[1])
atexit.register(_hwm)
sys.argv = ["coupler", *sys.argv[1:]]
runpy.run_module("coupler.bus.cli", run_name="__main__")
"""


def _peak_rss_of(pid: int, peak: list[int], done: threading.Event) -> None:
    """Poll ``VmHWM`` of ``pid`` (kB) until it ends (for the JVM, which has no hook of ours)."""
    while not done.wait(0.05):
        try:
            with open(f"/proc/{pid}/status") as f:
                peak[0] = max(peak[0], int(next(line for line in f if line.startswith("VmHWM")).split()[1]))
        except (OSError, StopIteration, ValueError):
            return


ALL_CORES: set[int] = set()


def run_child(cmd: list[str], *, env: dict[str, str] | None = None,
              on_stdout=None, cores: int = 1) -> tuple[float, float, float]:
    """Run ``cmd`` to its end: (wall s, CPU s of the child: user + system, peak RSS MB)."""
    env = dict(os.environ if env is None else env)
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as hwm:
        env["BENCH_HWM"] = hwm.name
        wall = time.perf_counter()
        wide = sorted(ALL_CORES)[:cores] if cores > 1 else None
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE if on_stdout else subprocess.DEVNULL,
                                stderr=err, preexec_fn=(lambda: os.sched_setaffinity(0, wide)) if wide else None)
        peak, done = [0], threading.Event()
        poller = threading.Thread(target=_peak_rss_of, args=(proc.pid, peak, done), daemon=True)
        poller.start()
        if on_stdout:
            assert proc.stdout is not None
            on_stdout(proc.stdout)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - wall
        done.set()
        poller.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            err.seek(0)
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {err.read().decode(errors='replace')[-500:]}")
        reported = hwm.read().strip()
    return wall, usage.ru_utime + usage.ru_stime, max(peak[0], int(reported or 0)) / 1024


def whole_process(copybook: Path, data: Path, workdir: Path, repeat: int, *, jobs: int = 1,
                  kernel: str = "", code: Path | None = None, parts: bool = False) -> tuple[float, float, float, int]:
    """``coupler copybook decode --to parquet`` as a user runs it, in a new process on
    ``jobs`` cores (``--jobs`` as many): the best (wall s, CPU s, peak RSS MB) of ``repeat``
    runs, and the records written. ``kernel="numpy"`` runs the NumPy kernels instead of the
    compiled one; ``code`` runs an older commit's code (``--baseline-ref``); ``parts`` writes
    ordered part files (``--parts``: a writer per thread) into a directory."""
    import pyarrow.parquet as pq

    out = workdir / ("whole-parts" if parts else "whole.parquet")
    cmd = [sys.executable, "-c", CLI_WITH_PEAK_RSS, "copybook", "decode", str(copybook), str(data),
           "--to", "parquet", "--output", str(out)]
    if code is None or jobs != 1:  # (an older commit may predate --jobs)
        cmd += ["--jobs", str(jobs)]
    if parts:
        cmd += ["--parts"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["COUPLER_COPYBOOK_KERNEL"] = kernel
    if code is not None:
        env.update(BENCH_CODE=str(code), BENCH_DIR=str(Path(__file__).resolve().parent))
    runs = []
    for _ in range(repeat):
        # the previous run's output removed here, outside the measured process, for both kinds:
        # a child that opened an existing file would truncate it (its page cache freed) and, on
        # ext4, start writing the new file back at close (auto_da_alloc), which a run into a new
        # directory of parts does not pay (about 0.01 s of CPU for the 239 MB output,
        # measured apart; docs/performance.md, h125)
        if parts:
            shutil.rmtree(out, ignore_errors=True)
        else:
            out.unlink(missing_ok=True)
        runs.append(run_child(cmd, env=env, cores=jobs))
    files = sorted(out.iterdir()) if parts else [out]
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files) if data.stat().st_size else 0
    return min(r[0] for r in runs), min(r[1] for r in runs), max(r[2] for r in runs), rows


TEXT_COPYBOOK = """\
       01 T.
          05 T-ID PIC 9(7).
          05 T-NAME PIC X(40).
          05 T-ADDR PIC X(80).
          05 T-NOTE PIC X(80).
"""


def text_file(workdir: Path, records: int) -> tuple[Path, Path]:
    """A 207-byte record that is mostly PIC X (200 bytes of EBCDIC letters and spaces)."""
    import numpy as np

    cpy = workdir / "text.cpy"
    cpy.write_text(TEXT_COPYBOOK)
    path = workdir / f"text-{records}.dat"
    if not path.exists():
        rng = np.random.default_rng(1)
        letters = np.frombuffer("ABCDEFGHIJKLMNOPQRSTUVWXYZ     ".encode("cp037"), dtype=np.uint8)
        with open(path, "wb") as out:
            for start in range(0, records, 100_000):
                n = min(100_000, records - start)
                rows = letters[rng.integers(0, len(letters), size=(n, 207))]
                rows[:, :7] = 0xF0 + rng.integers(0, 10, size=(n, 7))
                out.write(rows.astype(np.uint8).tobytes())
    return cpy, path


def one_file_jobs(copybook: Path, data: Path, warm: Path, workdir: Path, repeat: int, jobs: list[int],
                  baseline_ref: str | None) -> None:
    """``--jobs``: only the one-output-file runs of ``copybook decode --jobs N --to parquet``
    (on min(N, cores) cores), of this code and of ``baseline_ref``'s, alternating run by
    run; the best wall and CPU time and the highest peak RSS of ``repeat`` runs each."""
    import baseline

    with contextlib.ExitStack() as stack:
        codes: dict[str, Path | None] = {"this code": None}
        if baseline_ref:
            old = stack.enter_context(baseline.checkout_built(baseline_ref))
            codes[f"commit {baseline.describe(baseline_ref)}"] = old
        for code in codes.values():
            whole_process(copybook, warm, workdir, 1, code=code)  # warm-up: bytecode written
        best: dict[tuple[int, str], tuple[float, float, float, int]] = {}
        for _ in range(repeat):
            for n in jobs:
                for name, code in codes.items():
                    wall, cpu, rss, rows = whole_process(copybook, data, workdir, 1, jobs=n, code=code)
                    print(f"  --jobs {n}, {name}: {wall:.2f} s wall, {cpu:.2f} s CPU, peak RSS {rss:.0f} MB",
                          file=sys.stderr)
                    w, c, r, _ = best.get((n, name), (wall, cpu, rss, rows))
                    best[n, name] = (min(w, wall), min(c, cpu), max(r, rss), rows)
    size = data.stat().st_size / MB
    print(f"\ncopybook decode --jobs N --to parquet, one output file: {data.name} ({size:.0f} MB), "
          f"best wall and CPU, highest peak RSS of {repeat} alternating runs each\n")
    print("| --jobs | code | wall s | CPU s | MB/s (wall) | peak RSS MB | records |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for (n, name), (wall, cpu, rss, rows) in best.items():
        print(f"| {n} | {name} | {wall:.2f} | {cpu:.2f} | {size / wall:.1f} | {rss:.0f} | {rows} |")
    if len(codes) > 1:
        print()
        other = list(codes)[1]
        for n in jobs:
            (w0, c0, r0, _), (w1, c1, r1, _) = best[n, "this code"], best[n, other]
            print(f"- --jobs {n}: this code's speed / {other}'s: {w1 / w0:.2f}× (wall), {c1 / c0:.2f}× (CPU), "
                  f"peak RSS {r0:.0f} against {r1:.0f} MB")


def on_disk(*paths: Path) -> None:
    """Write ``paths`` (data files just generated) to the disk now, not while whole processes
    are timed: the system writes dirty pages back 30 s after they were written, by default.
    ``fsync`` of these files only, not ``sync`` (other users' files on a shared machine)."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def one_vs_parts(copybook: Path, data: Path, warm: Path, workdir: Path, rounds: int) -> None:
    """``--one-vs-parts``: only the whole processes ``copybook decode --jobs 1 --to parquet``
    into one output file and ``--jobs 1 --parts`` into a directory of part files (here one:
    the same records through the same writer), on one core, alternating run by run, ``rounds``
    times each: every run's wall and CPU time, the best, the median and their ratio. A gap
    between the two rows of the main table, each the best of a few runs taken at another time,
    is either here again (side by side, many rounds) or it was the machine."""
    whole_process(copybook, warm, workdir, 1)  # warm-up: bytecode written, files in the page cache
    kinds = {"one output file": False, "--parts": True}
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
    load_before = os.getloadavg()
    for n in range(rounds):
        for name, parts in kinds.items():
            wall, cpu, rss, _ = whole_process(copybook, data, workdir, 1, parts=parts)
            runs[name].append((wall, cpu))
            print(f"  round {n + 1}, {name}: {wall:.2f} s wall, {cpu:.2f} s CPU, peak RSS {rss:.0f} MB, "
                  f"load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    load_after = os.getloadavg()
    size = data.stat().st_size / MB
    print(f"\ncopybook decode --jobs 1 --to parquet on one core, one output file against --parts: {data.name} "
          f"({size:.0f} MB), {rounds} alternating runs each, load average {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after\n")
    print("| output | CPU s best | CPU s median | CPU s worst | MB/s (CPU, median) | wall s median |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, rs in runs.items():
        cpus = [c for _, c in rs]
        print(f"| {name} | {min(cpus):.2f} | {statistics.median(cpus):.2f} | {max(cpus):.2f} | "
              f"{size / statistics.median(cpus):.1f} | {statistics.median(w for w, _ in rs):.2f} |")
    one, parts_ = ([c for _, c in runs[k]] for k in kinds)
    paired = sorted(a / b for a, b in zip(one, parts_, strict=True))
    print(f"\n- one output file / --parts, CPU time: medians {statistics.median(one) / statistics.median(parts_):.3f}×, "
          f"bests {min(one) / min(parts_):.3f}×; run by run (each pair side by side) {paired[0]:.2f}-{paired[-1]:.2f}×, "
          f"median {statistics.median(paired):.3f}×")


def parts_speedup(copybook: Path, data: Path, warm: Path, workdir: Path, rounds: int,
                  baseline_ref: str | None) -> None:
    """``--parts-speedup``: issue 32's "--jobs 2 at 1.8x or more of one core": ``copybook decode
    --jobs 1 --to parquet`` into one file on one core, then ``--jobs 2 --parts`` on two cores,
    pair after pair, ``rounds`` pairs, this code's pairs alternating with ``baseline_ref``'s:
    each pair's wall ratio (the speed-up) and CPU ratio (what the second thread costs on top),
    their medians, the CPU and peak RSS. On a machine busier than its cores the wall ratio says
    little (the two threads get no more CPU than one); the CPU ratio is what load moves least."""
    import baseline

    with contextlib.ExitStack() as stack:
        codes: dict[str, Path | None] = {"this code": None}
        if baseline_ref:
            codes[f"commit {baseline.describe(baseline_ref)}"] = stack.enter_context(baseline.checkout_built(baseline_ref))
        for code in codes.values():
            whole_process(copybook, warm, workdir, 1, code=code)  # warm-up: bytecode written
        pairs: dict[str, list[tuple[tuple[float, float, float, int], tuple[float, float, float, int]]]] = {
            k: [] for k in codes}
        load_before = os.getloadavg()
        for n in range(rounds):
            order = list(codes.items()) if n % 2 == 0 else list(reversed(codes.items()))
            for name, code in order:
                one = whole_process(copybook, data, workdir, 1, code=code)
                two = whole_process(copybook, data, workdir, 1, jobs=2, code=code, parts=True)
                pairs[name].append((one, two))
                print(f"  pair {n + 1}, {name}: --jobs 1 {one[0]:.2f} s wall {one[1]:.2f} s CPU; --jobs 2 --parts "
                      f"{two[0]:.2f} s wall {two[1]:.2f} s CPU, peak RSS {two[2]:.0f} MB; {one[0] / two[0]:.3f}x, "
                      f"load {os.getloadavg()[0]:.2f}", file=sys.stderr)
        load_after = os.getloadavg()
    size = data.stat().st_size / MB
    print(f"\ncopybook decode --to parquet, --jobs 1 on one core against --jobs 2 --parts on two: {data.name} "
          f"({size:.0f} MB), {rounds} pairs each, load average {load_before[0]:.2f} before, {load_after[0]:.2f} after\n")
    print("| code | --jobs 1 wall s | --jobs 1 CPU s | --jobs 2 --parts wall s | --jobs 2 --parts CPU s "
          "| speed-up (wall, median of pairs) | CPU --jobs 2 / --jobs 1 (median of pairs) | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, ps in pairs.items():
        med = statistics.median
        print(f"| {name} | {med(a[0] for a, _ in ps):.2f} | {med(a[1] for a, _ in ps):.2f} | "
              f"{med(b[0] for _, b in ps):.2f} | {med(b[1] for _, b in ps):.2f} | "
              f"{med(a[0] / b[0] for a, b in ps):.3f}x | {med(b[1] / a[1] for a, b in ps):.3f} | "
              f"{max(b[2] for _, b in ps):.0f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--sample", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3, help="whole-process runs of each kind (best shown)")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "coupler-bench")
    parser.add_argument("--baseline-ref", help="also run the whole process with this commit's code (e.g. HEAD~3)")
    parser.add_argument("--kernel-rounds", type=int, default=3,
                        help="with --baseline-ref: alternating runs of each commit's kernel (best and median shown)")
    parser.add_argument("--no-peers", action="store_true", help="skip the per-record decoder, cobolio and Cobrix")
    parser.add_argument("--one-vs-parts", action="store_true",
                        help="only `copybook decode --jobs 1` into one file and with --parts, alternating --repeat "
                        "times each on one core: CPU time of every run, medians and their ratio")
    parser.add_argument("--parts-speedup", action="store_true",
                        help="only --jobs 1 on one core against --jobs 2 --parts on two, pair after pair, "
                        "this code beside --baseline-ref's (wall and CPU ratios)")
    parser.add_argument("--jobs", help="N[,M...]: only the one-output-file runs of `copybook decode --jobs N`, "
                        "this code beside --baseline-ref's, alternating (wall, CPU, peak RSS)")
    args = parser.parse_args()
    if hasattr(os, "sched_getaffinity"):
        ALL_CORES.update(os.sched_getaffinity(0))
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as the target says
    load_before = os.getloadavg()

    args.dir.mkdir(parents=True, exist_ok=True)
    copybook = datagen.write_copybook(args.dir / "txn.cpy")
    full = datagen.write_fixed_file(args.dir / f"txn-{args.records}.dat", args.records)
    sample = args.dir / f"txn-{args.records}-first-{args.sample}.dat"
    fifth = args.dir / f"txn-{args.records}-first-{args.records // 5}.dat"
    with open(full, "rb") as src:  # the first records of the same file, so peers see the same bytes
        sample.write_bytes(src.read(args.sample * datagen.RECORD_SIZE))
        src.seek(0)
        fifth.write_bytes(src.read(args.records // 5 * datagen.RECORD_SIZE))
    empty = args.dir / "empty.dat"
    empty.write_bytes(b"")
    on_disk(full, sample, fifth)
    if args.one_vs_parts:
        one_vs_parts(copybook, full, sample, args.dir, args.repeat)
        return 0
    if args.parts_speedup:
        parts_speedup(copybook, full, sample, args.dir, args.repeat, args.baseline_ref)
        return 0
    if args.jobs:
        one_file_jobs(copybook, full, sample, args.dir, args.repeat, [int(n) for n in args.jobs.split(",")], args.baseline_ref)
        return 0
    layout = build_layout(parse_copybook(datagen.COPYBOOK))
    reference = next(iter(decode_files(layout, [sample])))
    results: list[tuple[str, Path, int, float, float, str]] = []

    def add(name: str, file: Path, rows: int, wall: float, cpu: float, note: str = "") -> None:
        size = file.stat().st_size / MB
        results.append((name, file, rows, size / wall, size / cpu if cpu else float("nan"), note))
        print(f"  {name}: {rows} records, {size / wall:.1f} MB/s wall, {size / cpu if cpu else 0:.1f} MB/s CPU",
              file=sys.stderr)

    kernel_rates = {}
    for compiled in (False, True, False, True):  # alternating, the best of two each
        (rows, growth), wall, cpu = timed(lambda compiled=compiled: coupler_vectorised(layout, full, compiled))
        best = kernel_rates.get(compiled)
        if best is None or wall < best[2]:
            kernel_rates[compiled] = (rows, growth, wall, cpu)
    for compiled, label in ((False, "NumPy kernels"), (True, "compiled fused kernel (C)")):
        rows, growth, wall, cpu = kernel_rates[compiled]
        add(f"kernel: Coupler vectorised, {label} → Arrow, in process", full, rows, wall, cpu,
            f"RSS growth {growth:.0f} MB; best of 2")
    kernel_cpu = full.stat().st_size / MB / kernel_rates[True][3]
    # what this core moves through a byte table right now (a busy machine's cores are slower):
    # one bytes.translate pass over the same file, the best of three
    translate = translate_cpu_seconds(full)
    add("reference: one bytes.translate pass over the file (a 256-byte table lookup per byte)", full,
        0, translate, translate, "the machine's state: what one core moves through a table now")
    translate_cpu = full.stat().st_size / MB / translate
    # what pyarrow's Parquet encoding of the decoded batches costs alone (the CLI's writer and
    # settings, batches streamed as the CLI does): with the kernel and the start-up, the least
    # a whole process on one core can take (printed as the bound below)
    from copybook_profile import stages

    writer_cpu = [v for k, v in stages(layout, full, True).items() if k.startswith("Parquet")][0]
    add("Parquet encoding alone, in process (the CLI's ParquetBatchWriter on the decoded batches)", full,
        rows, writer_cpu, writer_cpu, "snappy, no dictionary, statistics outside lists; the best of 2")

    text_cpy, text_data = text_file(args.dir, args.records)
    on_disk(text_data)
    whole_process(copybook, sample, args.dir, 1)  # warm-up: bytecode written, files in the page cache
    startup_wall, startup_cpu, startup_rss, _ = whole_process(copybook, empty, args.dir, args.repeat)
    whole: dict[str, tuple[float, float, float]] = {}
    runs: list[tuple[str, Path, Path, dict[str, Any]]] = [
        ("207-byte record", copybook, full, {}),
        ("207-byte record, NumPy kernels", copybook, full, {"kernel": "numpy"}),
        ("207-byte record, --jobs 2 on two cores", copybook, full, {"jobs": 2}),
        ("207-byte record, --jobs 2 --parts on two cores", copybook, full, {"jobs": 2, "parts": True}),
        ("207-byte record, --jobs 1 --parts", copybook, full, {"parts": True}),
        ("mostly PIC X", text_cpy, text_data, {}),
        ("mostly PIC X, --jobs 2 --parts on two cores", text_cpy, text_data, {"jobs": 2, "parts": True}),
        ("207-byte record, a fifth of the file", copybook, fifth, {}),
    ]
    if args.baseline_ref:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import baseline

        stack = contextlib.ExitStack()
        old = stack.enter_context(baseline.checkout_built(args.baseline_ref))
        runs.insert(1, (f"207-byte record, commit {baseline.describe(args.baseline_ref)} (baseline)",
                        copybook, full, {"code": old}))
        whole_process(copybook, sample, args.dir, 1, code=old)  # its bytecode written
        kernels_side_by_side(full, old, baseline.describe(args.baseline_ref), add, args.kernel_rounds)
    else:
        stack = contextlib.ExitStack()
    # round by round, every kind once a round (not each kind's runs in a row): a change in the
    # machine's load, or the system writing back what the runs before wrote, falls on every row
    # alike, and rows compared below (one output file against --parts) are measured side by side
    samples: dict[str, list[tuple[float, float, float]]] = {}
    written: dict[str, int] = {}
    with stack:
        for _ in range(args.repeat):
            for label, cpy, data, how in runs:
                wall, cpu, rss, written[label] = whole_process(cpy, data, args.dir, 1, **how)
                samples.setdefault(label, []).append((wall, cpu, rss))
        for label, _, data, _ in runs:
            wall, cpu, rss = (min(r[0] for r in samples[label]), min(r[1] for r in samples[label]),
                              max(r[2] for r in samples[label]))
            whole[label] = (data.stat().st_size / MB / wall, data.stat().st_size / MB / cpu, rss)
            add(f"whole process `copybook decode --to parquet` ({label})", data, written[label], wall, cpu,
                f"peak RSS {rss:.0f} MB; start-up, framing and Parquet writing included")
    jar = None if args.no_peers else ztract_jar()
    if not args.no_peers:
        rows, wall, cpu = timed(lambda: coupler_per_record(layout, sample))
        add("Coupler per-record (Python dicts)", sample, rows, wall, cpu)
    try:
        if args.no_peers:
            raise ImportError
        (rows, first), wall, cpu = timed(lambda: cobolio_decode(sample))
        agrees = Decimal(first["AMOUNT"]) == reference["AMOUNT"]
        add("cobolio 0.1.5 (per record, strings)", sample, rows, wall, cpu, f"AMOUNT agrees: {agrees}")
    except ImportError:
        print("  cobolio not installed (pip install '.[bench]') or --no-peers", file=sys.stderr)

    cobrix = None
    if jar:
        rows, first, wall, cpu, rss = cobrix_decode(jar, copybook, full)
        _, _, startup, _, _ = cobrix_decode(jar, copybook, empty)
        cobrix = (full.stat().st_size / MB / wall, full.stat().st_size / MB / cpu)
        add("Cobrix whole process via ztract (JVM, JSON lines out)", full, rows, wall, cpu,
            f"peak RSS {rss:.0f} MB; JVM start-up {startup:.1f} s included; AMOUNT agrees: "
            f"{first is not None and Decimal(str(first.get('AMOUNT'))) == reference['AMOUNT']}")
    else:
        print("  ztract (Cobrix) not installed or no java: pip install '.[bench]'", file=sys.stderr)

    load_after = os.getloadavg()
    print(f"\ncopybook decode: {args.records:,} × {datagen.RECORD_SIZE} B records "
          f"({full.stat().st_size / MB:.0f} MB), one core ({os.cpu_count()} on the machine), "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; whole-process runs: best of {args.repeat}, taken round by round (every kind once a round); "
          f"the compiled kernel's text path: {text_path()}; {memory_note()}\n")
    print("| run | file | records | MB/s (wall) | MB/s (CPU) | kernel is × faster (CPU) | note |")
    print("|---|---|---:|---:|---:|---:|---|")
    for name, file, rows, wall_rate, cpu_rate, note in results:
        size = f"{file.name} ({file.stat().st_size / MB:.0f} MB)"
        print(f"| {name} | {size} | {rows} | {wall_rate:.1f} | {cpu_rate:.1f} | {kernel_cpu / cpu_rate:.2f} | {note} |")
    main_wall, main_cpu, main_rss = whole["207-byte record"]
    jobs2_wall = whole["207-byte record, --jobs 2 on two cores"][0]
    parts2_wall = whole["207-byte record, --jobs 2 --parts on two cores"][0]
    parts1_wall, parts1_cpu, _ = whole["207-byte record, --jobs 1 --parts"]
    text_parts2_wall = whole["mostly PIC X, --jobs 2 --parts on two cores"][0]
    numpy_wall = whole["207-byte record, NumPy kernels"][0]
    text_wall, text_cpu, _ = whole["mostly PIC X"]
    fifth_rss = whole["207-byte record, a fifth of the file"][2]
    print()
    print(f"- whole process, 207-byte record: **{main_wall:.1f} MB/s wall, {main_cpu:.1f} MB/s CPU**; "
          f"mostly PIC X: **{text_wall:.1f} MB/s wall, {text_cpu:.1f} MB/s CPU** (target ≥ 250 MB/s on one core: "
          f"{'met' if min(main_wall, main_cpu) >= 250 else 'not met'} on this run)")
    print(f"- whole process / kernel (CPU time): {main_cpu / kernel_cpu:.2f}")
    print(f"- compiled / NumPy kernels: in process {kernel_rates[False][2] / kernel_rates[True][2]:.2f}× (wall), "
          f"whole process {main_wall / numpy_wall:.2f}× (wall)")
    print(f"- kernel (CPU) / one bytes.translate pass (CPU), same run: {kernel_cpu / translate_cpu:.2f} "
          f"(kernel {kernel_cpu:.0f} MB/s, translate {translate_cpu:.0f} MB/s; target kernel ≥ 1000 MB/s: "
          f"{'met' if kernel_cpu >= 1000 else 'not met'} on this run)")
    print(f"- --jobs 2 on two cores / one core (whole process, wall), one output file: {jobs2_wall / main_wall:.2f}×")
    one_cpu = [r[1] for r in samples["207-byte record"]]
    parts1_cpus = [r[1] for r in samples["207-byte record, --jobs 1 --parts"]]
    print(f"- one output file / --jobs 1 --parts on one core (the same records through the same writer), CPU time: "
          f"{statistics.median(one_cpu) / statistics.median(parts1_cpus):.3f}× (medians of {args.repeat} alternating "
          f"runs; one file {min(one_cpu):.2f}-{max(one_cpu):.2f} s, parts {min(parts1_cpus):.2f}-{max(parts1_cpus):.2f} s;"
          f" `--one-vs-parts` runs only these two, more rounds)")
    print(f"- **--jobs 2 --parts on two cores / --jobs 1 on one core (whole process, wall): "
          f"{parts2_wall / main_wall:.2f}×** (target ≥ 1.8×); / --jobs 1 --parts: {parts2_wall / parts1_wall:.2f}×; "
          f"mostly PIC X: {text_parts2_wall / text_wall:.2f}×")
    # Amdahl: the start-up (an empty file's whole process, one core) is serial; the rest is what
    # --jobs divides. Derived from the wall times above, not measured separately
    size_mb = full.stat().st_size / MB
    t1, t2 = size_mb / main_wall, size_mb / parts2_wall
    if t2 > startup_wall:
        print(f"- --jobs 2 --parts / one core, the work after start-up ({startup_wall:.2f} s wall, empty file): "
              f"{(t1 - startup_wall) / (t2 - startup_wall):.2f}× (derived: (T1 - S) / (T2 - S)); "
              f"the bound with that start-up and perfect scaling: {t1 / (startup_wall + (t1 - startup_wall) / 2):.2f}×")
    floor = startup_cpu + size_mb / kernel_cpu + writer_cpu
    print(f"- the bound on one core this run sets: start-up {startup_cpu:.2f} s + kernel {size_mb / kernel_cpu:.2f} s "
          f"+ Parquet encoding alone {writer_cpu:.2f} s (CPU) = {floor:.2f} s, **{size_mb / floor:.0f} MB/s** for the "
          f"whole process with nothing else (reading, writing the file, the Python between); measured "
          f"{main_cpu:.1f} MB/s CPU")
    for label, (rate, _, _) in whole.items():
        if "baseline" in label:
            print(f"- this code / {label}: {main_wall / rate:.2f}× (wall)")
    print(f"- start-up (empty file, whole process): {startup_wall:.2f} s wall, {startup_cpu:.2f} s CPU, "
          f"peak RSS {startup_rss:.0f} MB")
    print(f"- peak RSS: {fifth_rss:.0f} MB for {fifth.stat().st_size / MB:.0f} MB, {main_rss:.0f} MB for "
          f"{full.stat().st_size / MB:.0f} MB")
    if cobrix:
        print(f"- Cobrix whole process (JSON lines): {cobrix[0]:.1f} MB/s wall, {cobrix[1]:.1f} MB/s CPU "
              f"(JVM threads on the same core); Coupler's whole process is {main_wall / cobrix[0]:.1f}× (wall)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
