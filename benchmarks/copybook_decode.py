"""Copybook decoding throughput: Coupler's vectorised and per-record decoders, cobolio and
Cobrix (through ztract's bundled engine), on one generated file, in one run, on one core.

    .venv/bin/python benchmarks/copybook_decode.py [--records 1000000] [--sample 50000]

The file has ``--records`` fixed-length EBCDIC records of 207 bytes (PIC X, zoned
S9(7)V99, COMP-3 S9(9)V99, COMP S9(9), an OCCURS 5 group; see ``datagen.py``). Slow
decoders run on the first ``--sample`` records. Peers are optional: install them with
``pip install '.[bench]'`` (``make bench`` does); a missing peer is reported, not fatal.
Results are printed as a Markdown table for ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import datagen  # noqa: E402

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


def coupler_vectorised(layout, path: Path) -> tuple[int, float]:
    before, peak, rows = rss_mb(), 0.0, 0
    for decoded in BatchDecoder(layout).iter_file(path):
        rows += decoded.batch.num_rows
        peak = max(peak, rss_mb() - before)
    return rows, peak


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


def ztract_jar() -> Path | None:
    try:
        from ztract.engine.download_engine import get_jar_path
    except ImportError:
        return None
    jar = Path(get_jar_path())
    return jar if jar.exists() and shutil.which("java") else None


def cobrix_decode(jar: Path, copybook: Path, path: Path) -> tuple[int, dict]:
    cmd = ["java", "-Xmx1g", "-jar", str(jar), "--mode", "decode", "--copybook", str(copybook),
           "--input", str(path), "--recfm", "F", "--lrecl", str(datagen.RECORD_SIZE),
           "--codepage", "cp037", "--encoding", "ebcdic"]
    first, rows = None, 0
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        for line in proc.stdout:
            if line.strip():
                rows += 1
                if first is None:
                    first = json.loads(line)
    return rows, first


def whole_process(copybook: Path, data: Path, workdir: Path) -> tuple[float, int]:
    """``coupler copybook decode --to parquet`` as a user runs it, pinned to one core:
    (peak RSS in MB, records written)."""
    import resource

    import pyarrow.parquet as pq

    out = workdir / "whole.parquet"
    cmd = [sys.executable, "-m", "coupler.bus.cli", "copybook", "decode", str(copybook), str(data),
           "--to", "parquet", "--output", str(out)]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", str(min(os.sched_getaffinity(0))), *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    subprocess.run(cmd, check=True, capture_output=True)
    rss = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) / 1024
    return rss, pq.ParquetFile(out).metadata.num_rows


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--sample", type=int, default=50_000)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "coupler-bench")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as the target says

    args.dir.mkdir(parents=True, exist_ok=True)
    copybook = datagen.write_copybook(args.dir / "txn.cpy")
    full = datagen.write_fixed_file(args.dir / f"txn-{args.records}.dat", args.records)
    sample = args.dir / f"txn-{args.records}-first-{args.sample}.dat"
    with open(full, "rb") as src:  # the first records of the same file, so peers see the same bytes
        sample.write_bytes(src.read(args.sample * datagen.RECORD_SIZE))
    layout = build_layout(parse_copybook(datagen.COPYBOOK))
    reference = next(iter(decode_files(layout, [sample])))
    results: list[tuple[str, str, int, float, float, str]] = []

    def add(name: str, file: Path, rows: int, wall: float, cpu: float, note: str = "") -> None:
        results.append((name, file.name, rows, file.stat().st_size / MB / wall, file.stat().st_size / MB / cpu, note))
        print(f"  {name}: {rows} records, {file.stat().st_size / MB / wall:.1f} MB/s", file=sys.stderr)

    (rows, growth), wall, cpu = timed(lambda: coupler_vectorised(layout, full))
    add("Coupler vectorised (NumPy → Arrow)", full, rows, wall, cpu, f"RSS growth {growth:.0f} MB")
    for label, cpy, data in (("207-byte record", copybook, full), ("mostly PIC X", *text_file(args.dir, args.records))):
        (rss, out_rows), wall, _ = timed(lambda cpy=cpy, data=data: whole_process(cpy, data, args.dir))
        add(f"Coupler whole process `copybook decode --to parquet` ({label})", data, out_rows, wall, wall,
            f"peak RSS {rss:.0f} MB; start-up, framing and Parquet writing included")
    rows, wall, cpu = timed(lambda: coupler_per_record(layout, sample))
    add("Coupler per-record (Python dicts)", sample, rows, wall, cpu)

    try:
        (rows, first), wall, cpu = timed(lambda: cobolio_decode(sample))
        agrees = Decimal(first["AMOUNT"]) == reference["AMOUNT"]
        add("cobolio 0.1.5 (per record, strings)", sample, rows, wall, cpu, f"AMOUNT agrees: {agrees}")
    except ImportError:
        print("  cobolio not installed: pip install '.[bench]'", file=sys.stderr)

    jar = ztract_jar()
    if jar:
        (rows, first), wall, _ = timed(lambda: cobrix_decode(jar, copybook, full))
        empty = args.dir / "empty.dat"
        empty.write_bytes(b"")
        _, startup, _ = timed(lambda: cobrix_decode(jar, copybook, empty))
        # the JVM's CPU time is not this process's: both columns show wall-clock time
        add("Cobrix via ztract (JVM, JSON out)", full, rows, wall, wall,
            f"JVM start-up {startup:.1f} s included; AMOUNT agrees: "
            f"{first is not None and Decimal(str(first.get('AMOUNT'))) == reference['AMOUNT']}")
    else:
        print("  ztract (Cobrix) not installed or no java: pip install '.[bench]'", file=sys.stderr)

    base = {r[0]: r[3] for r in results}
    vec = base["Coupler vectorised (NumPy → Arrow)"]
    print(f"\ncopybook decode, {args.records} × {datagen.RECORD_SIZE} B records, one core "
          f"({os.cpu_count()} on the machine)\n")
    print("| decoder | file | records | MB/s (wall) | MB/s (CPU) | vectorised is × faster | note |")
    print("|---|---|---:|---:|---:|---:|---|")
    for name, file, rows, wall_rate, cpu_rate, note in results:
        print(f"| {name} | {file} | {rows} | {wall_rate:.1f} | {cpu_rate:.1f} | {vec / wall_rate:.1f} | {note} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
