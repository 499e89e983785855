"""Where the copybook decoder's time goes: per field kind and per stage, in process.

    .venv/bin/python benchmarks/copybook_profile.py [--records 400000]

For the 207-byte benchmark record (``datagen.py``) and the mostly-PIC X record of
``copybook_decode.py``, decodes the file in batches as ``copybook decode`` does and
reports the CPU time of each field kind (text by code page, zoned, packed, binary), of
assembling the Arrow batch (lists, structs) and of Parquet encoding, for each kernel the
process has (the NumPy kernels, and the compiled one when it is built), and where the
Parquet encoding goes (top-level columns against the OCCURS group, compression, statistics).
One core (pinned).

``--writers`` compares only Parquet writers on the same decoded batches: the CLI's (pyarrow)
against polars and DuckDB where they are installed (``pip install polars duckdb``; not
dependencies of Coupler), each on one thread, snappy, 65,536-row groups.

``--text-paths`` compares only the compiled kernel's text paths on this CPU (portable C, AVX2,
AVX-512 VBMI), by text field size.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import datagen  # noqa: E402
import numpy as np  # noqa: E402

from coupler.translators.copybook import kernels  # noqa: E402
from coupler.translators.copybook.arrow_parquet import ParquetBatchWriter  # noqa: E402
from coupler.translators.copybook.batch import DEFAULT_BATCH_RECORDS, BatchDecoder, read_fully  # noqa: E402
from coupler.translators.copybook.layout import Field, build_layout  # noqa: E402
from coupler.translators.copybook.parser import parse_copybook  # noqa: E402
from coupler.translators.copybook.picture import DecodeContext  # noqa: E402

MB = 1e6


def kind_of(ft) -> str:
    if ft.kind == "string":
        return "text (PIC X, EBCDIC cp037)"
    if ft.usage == "COMP-3":
        return "packed decimal (COMP-3)"
    if ft.usage in ("COMP", "COMP-5"):
        return "binary (COMP)"
    return "zoned decimal (DISPLAY)"


def per_kind(layout, data: bytes, record_size: int) -> dict[str, tuple[float, int]]:
    """CPU seconds and bytes per field kind, NumPy column kernels, batch by batch."""
    dec = BatchDecoder(layout)
    ctx = DecodeContext.from_options(dec.options)
    rows_all = np.frombuffer(data, dtype=np.uint8).reshape(-1, record_size)
    leaves = []
    for node in layout.walk():
        if isinstance(node, Field):
            # an OCCURS element's instances: the item's stride
            count, stride = 1, 0
            for anc in _occurs_ancestors(layout, node):
                count, stride = anc.occurs.max, anc.size
            from coupler.translators.copybook.avro import field_avro_type

            typ = kernels.arrow_type(node.field_type, field_avro_type(node))
            leaves.append((node, count, stride, typ))
    spent: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for first in range(0, len(rows_all), DEFAULT_BATCH_RECORDS):
        rows = rows_all[first:first + DEFAULT_BATCH_RECORDS]
        for node, count, stride, typ in leaves:
            if count > 1:
                base = node.offset
                blocks = [rows[:, base + k * stride: base + k * stride + node.size] for k in range(count)]
                block = np.stack(blocks, axis=1).reshape(-1, node.size)
            else:
                block = rows[:, node.offset: node.offset + node.size]
            t = time.process_time()
            kernels.decode_column(node.field_type, block, ctx, typ)
            spent[kind_of(node.field_type)][0] += time.process_time() - t
            spent[kind_of(node.field_type)][1] += block.size
    return {k: (v[0], v[1]) for k, v in spent.items()}


def per_kind_compiled(layout, data: bytes, record_size: int) -> dict[str, tuple[float, int]]:
    """CPU seconds and bytes per field kind, the fused kernel given one kind's columns at a time."""
    from coupler.translators.copybook.kernels import FusedKernel

    dec = BatchDecoder(layout, compiled=True)
    assert dec.fused is not None
    rows_all = np.frombuffer(data, dtype=np.uint8).reshape(-1, record_size)
    out = {}
    for name in sorted({kind_of(c.ft) for c in dec.fused.columns}):
        cols = [c for c in dec.fused.columns if kind_of(c.ft) == name]
        kernel = FusedKernel(cols, dec.ctx)
        t = time.process_time()
        for first in range(0, len(rows_all), DEFAULT_BATCH_RECORDS):
            kernel.run(rows_all[first:first + DEFAULT_BATCH_RECORDS])
        out[name] = (time.process_time() - t, sum(c.ft.size * len(c.offsets) for c in cols) * len(rows_all))
    return out


def _occurs_ancestors(layout, target):
    from coupler.translators.copybook.batch import _ancestors

    return [a for a in _ancestors(layout, target) if a.occurs]


def stages(layout, path: Path, compiled: bool) -> dict[str, float]:
    """CPU seconds of each stage as ``copybook decode --to parquet`` runs them: batches decoded
    and written one after the other (the CLI's writer and settings), the time of each call
    summed, the better of two passes (the first pays the allocator's first use of memory)."""
    dec = BatchDecoder(layout, compiled=compiled)
    best = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(2):
            spent = {"read": 0.0, "decode": 0.0, "parquet": 0.0}
            with ParquetBatchWriter(Path(tmp) / "out.parquet", dec.schema) as writer, open(path, "rb") as f:
                buffer = bytearray(DEFAULT_BATCH_RECORDS * dec.record_size)
                first = 0
                while True:
                    t = time.process_time()
                    n = read_fully(f, memoryview(buffer)) // dec.record_size
                    spent["read"] += time.process_time() - t
                    if not n:
                        break
                    t = time.process_time()
                    batch = dec.decode(memoryview(buffer)[: n * dec.record_size], first_record=first).batch
                    spent["decode"] += time.process_time() - t
                    t = time.process_time()
                    writer.write_batch(batch)
                    spent["parquet"] += time.process_time() - t
                    first += n
                t = time.process_time()
            spent["parquet"] += time.process_time() - t  # the last row group, written at close
            best = spent if not best or sum(spent.values()) < sum(best.values()) else best
    return {f"read the file ({DEFAULT_BATCH_RECORDS:,}-record chunks)": best["read"],
            "decode to Arrow batches": best["decode"],
            "Parquet encoding (the CLI's ParquetBatchWriter: snappy, no dictionary, statistics outside lists)":
                best["parquet"]}


def parquet_parts(layout, path: Path) -> list[tuple[str, dict[str, float], float]]:
    """Where Parquet encoding goes: the CLI's writer (``ParquetBatchWriter``: snappy, no
    dictionary, statistics outside lists) on the decoded batches held in memory, given the
    whole table, its top-level columns only and each OCCURS group (list) column only, each
    also without compression and without statistics: (columns, {variant: CPU s}, output MB),
    the best of three passes each, the variants taking turns."""
    import pyarrow as pa

    dec = BatchDecoder(layout)
    batches = [d.batch for d in dec.iter_file(path)]
    schema = batches[0].schema
    lists = [f.name for f in schema if pa.types.is_list(f.type) or pa.types.is_large_list(f.type)]
    parts = [("the whole record", [f.name for f in schema])]
    parts.append(("top-level columns only (not in OCCURS)", [f.name for f in schema if f.name not in lists]))
    parts += [(f"OCCURS group {name} only (a list of structs)", [name]) for name in lists]
    variants = {"snappy, statistics outside lists (the CLI's)": {},
                "no compression": {"compression": "none"}, "no statistics": {"statistics": False}}
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "out.parquet"
        for label, names in parts:
            chosen = [b.select(names) for b in batches]
            spent: dict[str, float] = {}
            size = 0.0
            for _ in range(3):  # the variants taking turns (a shared machine's noise spread over all)
                for variant, kwargs in variants.items():
                    t = time.process_time()
                    with ParquetBatchWriter(target, chosen[0].schema, **kwargs) as writer:
                        for b in chosen:
                            writer.write_batch(b)
                    spent[variant] = min(spent.get(variant, float("inf")), time.process_time() - t)
                    if not kwargs:
                        size = target.stat().st_size / MB
            out.append((label, spent, size))
    return out


def other_writers(layout, path: Path) -> list[tuple[str, float, float]]:
    """The CLI's Parquet writer against the other standard writers on the same decoded batches
    (snappy, 65,536-row groups, one thread each): (writer, CPU s, output MB), the best of three,
    the writers taking turns. polars is timed twice: from its own frame (made beforehand) and
    with the Arrow → polars conversion included (what a CLI would pay)."""
    import pyarrow as pa

    dec = BatchDecoder(layout)
    batches = [d.batch for d in dec.iter_file(path)]
    table = pa.Table.from_batches(batches)
    writers: dict[str, object] = {}

    def ours(target: Path) -> None:
        with ParquetBatchWriter(target, batches[0].schema) as writer:
            for b in batches:
                writer.write_batch(b)

    writers["pyarrow (the CLI's ParquetBatchWriter)"] = ours
    try:
        os.environ.setdefault("POLARS_MAX_THREADS", "1")
        import polars as pl

        frame = pl.from_arrow(table)
        writers[f"polars {pl.__version__}, from its frame"] = lambda target: frame.write_parquet(
            target, compression="snappy", statistics=False, row_group_size=65_536)
        writers[f"polars {pl.__version__}, Arrow table converted first"] = lambda target: pl.from_arrow(
            table).write_parquet(target, compression="snappy", statistics=False, row_group_size=65_536)
    except ImportError:
        print("polars not installed (pip install polars): not compared")
    try:
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads = 1")
        con.register("batches", table)
        writers[f"DuckDB {duckdb.__version__}"] = lambda target: con.execute(
            f"COPY batches TO '{target}' (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE 65536)")
    except ImportError:
        print("duckdb not installed (pip install duckdb): not compared")
    spent: dict[str, float] = {}
    sizes: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "out.parquet"
        for _ in range(3):
            for name, write in writers.items():
                t = time.process_time()
                write(target)  # type: ignore[operator]
                spent[name] = min(spent.get(name, float("inf")), time.process_time() - t)
                sizes[name] = target.stat().st_size / MB
    return [(name, spent[name], sizes[name]) for name in writers]


def text_paths_by_size(records: int) -> None:
    """The compiled kernel's text paths this CPU has (portable, avx2, avx512) on records of one
    text field size each (about 200 bytes of PIC X(n) fields, names padded with spaces), taking
    turns in this process, the best of three each (CPU)."""
    import random

    from coupler.translators.copybook import _fused  # type: ignore[attr-defined]

    words = ["SMITH", "ANN", "JONES GARCIA", "Y", "N", "", "BR0001", "TX0000001234"]
    paths = _fused.text_paths()
    before = _fused.text_path()
    print("| field | fields a record | " + " | ".join(f"{p} MB/s" for p in paths) + f" | {paths[-1]} / portable |")
    print("|---|---:|" + "---:|" * (len(paths) + 1))
    for size in (1, 8, 12, 16, 24, 32, 40, 64, 80, 200):
        rng = random.Random(size)
        fields = max(1, 200 // size)
        copybook = "       01 R.\n" + "".join(f"          05 F{i} PIC X({size}).\n" for i in range(fields))
        dec = BatchDecoder(build_layout(parse_copybook(copybook)), compiled=True)
        values = [(rng.choice(words) + " " + rng.choice(words))[:size].ljust(size).encode("cp037") for _ in range(997)]
        data = memoryview(b"".join(values[(r * 7 + i) % 997] for r in range(records) for i in range(fields)))
        best: dict[str, float] = {}
        for _ in range(3):
            for path in paths:
                _fused.use_text_path(path)
                t = time.process_time()
                for start in range(0, records, DEFAULT_BATCH_RECORDS):
                    dec.decode(data[start * dec.record_size: min(records, start + DEFAULT_BATCH_RECORDS) * dec.record_size],
                               first_record=start)
                best[path] = min(best.get(path, 1e9), time.process_time() - t)
        mb = records * dec.record_size / MB
        print(f"| PIC X({size}) | {fields} | " + " | ".join(f"{mb / best[p]:.0f}" for p in paths)
              + f" | {best['portable'] / best[paths[-1]]:.2f}× |")
    _fused.use_text_path(before)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=400_000)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "coupler-bench")
    parser.add_argument("--text-paths", action="store_true",
                        help="only the compiled kernel's text paths side by side, by field size")
    parser.add_argument("--writers", action="store_true",
                        help="only Parquet writers side by side on the same batches (pyarrow, polars, DuckDB)")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    if args.text_paths:
        if not kernels.FUSED_BUILT:
            print("the compiled kernel is not built: nothing to compare")
            return 1
        print(f"load average {os.getloadavg()[0]:.2f}; {args.records:,} records of each field size, one core\n")
        text_paths_by_size(args.records)
        return 0
    args.dir.mkdir(parents=True, exist_ok=True)
    path = datagen.write_fixed_file(args.dir / f"txn-{args.records}.dat", args.records)
    layout = build_layout(parse_copybook(datagen.COPYBOOK))
    size = path.stat().st_size
    if args.writers:
        print(f"load average {os.getloadavg()[0]:.2f}; {args.records:,} records, {size / MB:.0f} MB, one core\n")
        print("| Parquet writer | CPU s | MB/s of the file | × the CLI's | output MB |")
        print("|---|---:|---:|---:|---:|")
        rows = other_writers(layout, path)
        for name, cpu, out_mb in rows:
            print(f"| {name} | {cpu:.3f} | {size / MB / cpu:.0f} | {rows[0][1] / cpu:.2f} | {out_mb:.1f} |")
        return 0
    print(f"load average {os.getloadavg()[0]:.2f}; {args.records:,} records, {size / MB:.0f} MB, one core\n")
    print("| field kind | kernel | bytes of the file | CPU s | MB/s of its own bytes | share of kernel time |")
    print("|---|---|---:|---:|---:|---:|")
    variants = [False]
    if kernels.FUSED_BUILT:
        variants.append(True)
    for compiled in variants:
        measure = per_kind_compiled if compiled else per_kind
        kinds = measure(layout, path.read_bytes(), datagen.RECORD_SIZE)
        total = sum(v[0] for v in kinds.values())
        for name, (cpu, nbytes) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
            print(f"| {name} | {'compiled (C), one kind at a time' if compiled else 'NumPy column kernels'} | "
                  f"{nbytes / MB:.0f} MB | {cpu:.3f} | {nbytes / MB / cpu:.0f} | {cpu / total:.0%} |")
    print()
    print("| stage | kernel | CPU s | MB/s of the file |")
    print("|---|---|---:|---:|")
    for compiled in variants:
        for name, cpu in stages(layout, path, compiled).items():
            print(f"| {name} | {'compiled (C)' if compiled else 'NumPy'} | {cpu:.3f} | {size / MB / cpu:.0f} |")
    print()
    parts = parquet_parts(layout, path)
    settings = list(parts[0][1])
    print("| Parquet encoding of | " + " | ".join(f"{v}: CPU s (MB/s of the file)" for v in settings) + " | output MB |")
    print("|---|" + "---:|" * (len(settings) + 1))
    for label, spent, out_mb in parts:
        print(f"| {label} | " + " | ".join(f"{spent[v]:.3f} ({size / MB / spent[v]:.0f})" for v in settings)
              + f" | {out_mb:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
