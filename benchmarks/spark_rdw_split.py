"""One large variable-length (RDW) file read in parallel through the sparse index.

    .venv/bin/python benchmarks/spark_rdw_split.py [--gb 2.0] [--split-mb 64] [--master local[2]]

Generates a file of RDW records (random lengths from 100 to 2006 bytes), reads it with the
Spark ``copybook`` source (``record_format=V``; the file is split through the sparse index
into at least 8 partitions) and with the sequential per-record decoder
(``decoder.decode_files``), and checks that both give the same record count and the same
content checksum (an order-independent sum of CRC-32s of every decoded row). This is the
acceptance check for splitting variable-length files; the test suite runs the same
comparison on small files with small forced splits (``tests/spark/test_splits.py``).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

COPYBOOK = """\
       01  DOC.
           05  DOC-ID      PIC 9(9).
           05  AMOUNT      PIC S9(9)V99 COMP-3.
           05  KIND        PIC X(1).
           05  BODY        PIC X(1990).
"""
HEAD = 9 + 6 + 1
MB = 1e6


def write_rdw_file(path: Path, size: int, seed: int = 1) -> int:
    rng = random.Random(seed)
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789"
    body = "".join(rng.choice(letters) for _ in range(8192)).encode("cp037")
    written = records = 0
    with open(path, "wb") as fh:
        while written < size:
            parts = []
            for _ in range(10_000):
                n = rng.randint(100, HEAD + 1990)
                at = rng.randint(0, len(body) - n)
                amount = f"{rng.randint(0, 10**11 - 1):011d}{'CD'[records & 1]}"
                payload = f"{records % 10**9:09d}".encode("cp037") + bytes.fromhex(amount) + b"\xc1" + body[at : at + n - HEAD]
                parts.append(b"\x00\x00" + len(payload).to_bytes(2, "little") + payload)
                records += 1
            chunk = b"".join(parts)
            fh.write(chunk)
            written += len(chunk)
    return records


def checksum(rows: Iterable[dict[str, Any]]) -> tuple[int, int]:
    n = total = 0
    for row in rows:
        total += zlib.crc32(repr(tuple(row.values())).encode())
        n += 1
    return n, total % (1 << 64)


def sequential(copybook: Path, data: Path, schema: Any) -> tuple[int, int]:
    from coupler.translators.copybook import decoder, layout, parser
    from coupler.translators.copybook.options import CopybookOptions
    from coupler.translators.spark.codec import records_to_batch

    lay = layout.build_layout(parser.parse_file(copybook))
    recs = decoder.decode_files(lay, [data], CopybookOptions.from_mapping({"record_format": "V"}))

    def rows() -> Iterator[dict[str, Any]]:
        chunk: list[dict[str, Any]] = []
        for rec in recs:
            assert isinstance(rec, dict), rec
            chunk.append(rec)
            if len(chunk) == 50_000:
                yield from records_to_batch(chunk, schema).to_pylist()
                chunk = []
        yield from records_to_batch(chunk, schema).to_pylist()

    return checksum(rows())


def partition_checksum(rows: Iterator[Any]) -> Iterator[tuple[int, int]]:
    yield checksum(row.asDict(recursive=True) for row in rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=2.0)
    ap.add_argument("--split-mb", type=float, default=64)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--workdir")
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="coupler-rdw-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        copybook = work / "doc.cpy"
        copybook.write_text(COPYBOOK)
        data = work / "docs.rdw"
        t0 = time.perf_counter()
        records = write_rdw_file(data, int(args.gb * 1e9))
        size = data.stat().st_size
        print(f"generated {size / MB:.0f} MB, {records} RDW records in {time.perf_counter() - t0:.1f}s", file=sys.stderr)

        from coupler.bus.batch.jobs import spark_session
        from coupler.translators.spark.codec import CopybookCodec

        spark = spark_session(args.master, app_name="bench-rdw-split")
        t0 = time.perf_counter()
        df = (spark.read.format("copybook").option("copybook", str(copybook)).option("record_format", "V")
              .option("input_split_size_mb", str(args.split_mb)).load(str(data)))
        partitions = df.rdd.getNumPartitions()
        parts = df.drop("_corrupt_record").rdd.mapPartitions(partition_checksum).collect()
        spark_time = time.perf_counter() - t0
        spark.stop()
        spark_n = sum(n for n, _ in parts)
        spark_sum = sum(s for _, s in parts) % (1 << 64)
        print(f"spark: {partitions} partitions, {spark_n} records, checksum {spark_sum:016x}, {spark_time:.1f}s",
              file=sys.stderr)

        schema = CopybookCodec(str(copybook), {"record_format": "V"}).arrow_schema
        schema = schema.remove(schema.get_field_index("_corrupt_record"))
        t0 = time.perf_counter()
        seq_n, seq_sum = sequential(copybook, data, schema)
        seq_time = time.perf_counter() - t0
        print(f"sequential: {seq_n} records, checksum {seq_sum:016x}, {seq_time:.1f}s", file=sys.stderr)

        ok = partitions >= 8 and spark_n == seq_n == records and spark_sum == seq_sum
        print(f"\n| file | partitions | records | checksum equal | Spark {args.master} | sequential decoder |")
        print("|---|---|---|---|---|---|")
        print(f"| {size / MB:.0f} MB RDW | {partitions} | {spark_n} | {'yes' if spark_sum == seq_sum else 'NO'} | "
              f"{spark_time:.0f} s ({size / MB / spark_time:.1f} MB/s) | {seq_time:.0f} s ({size / MB / seq_time:.1f} MB/s) |")
        return 0 if ok else 1
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
