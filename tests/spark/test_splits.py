"""Splitting record files: fixed-length arithmetic and the sparse index of RDW/BDW files."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from coupler.translators.copybook import decoder, layout, parser
from coupler.translators.copybook.options import CopybookOptions
from coupler.translators.spark.splits import Framing, SplitError, plan_splits, sparse_index
from tests.spark.hierarchy_case import OPTIONS, RECORDS, write_hierarchy

COPYBOOK = """\
       01  REC.
           05  NUM     PIC 9(6).
           05  AMOUNT  PIC S9(7)V99 COMP-3.
           05  TEXT    PIC X(40).
"""


def _rdw(n: int, big_endian: bool) -> bytes:
    return bytes((n >> 8, n & 0xFF, 0, 0)) if big_endian else bytes((0, 0, n & 0xFF, n >> 8))


def _payload(i: int, rng: random.Random) -> bytes:
    """A record of the copybook, cut short at a random length (variable-length records)."""
    num = f"{i:06d}".encode("cp037")
    packed = bytes.fromhex(f"{i % 10**9:09d}C".rjust(10, "0"))[-5:]
    text = "".join(rng.choice("ABCDEFGHIJ ") for _ in range(40)).encode("cp037")
    return (num + packed + text)[: rng.randint(12, 51)]


def write_rdw_file(path: Path, records: int, *, big_endian: bool, seed: int = 7) -> list[int]:
    """RDW records; returns the offset of every record header."""
    rng = random.Random(seed)
    offsets = []
    with open(path, "wb") as fh:
        for i in range(records):
            offsets.append(fh.tell())
            data = _payload(i, rng)
            fh.write(_rdw(len(data), big_endian) + data)
    return offsets


def write_vb_file(path: Path, records: int, *, per_block: int = 5, seed: int = 7) -> list[int]:
    """Blocks (big-endian BDW) of big-endian RDW records; returns the offset of every block."""
    rng = random.Random(seed)
    blocks = []
    with open(path, "wb") as fh:
        for start in range(0, records, per_block):
            body = b"".join(
                _rdw(len(d), True) + d for d in (_payload(i, rng) for i in range(start, min(records, start + per_block)))
            )
            blocks.append(fh.tell())
            fh.write(bytes(((len(body) + 4) >> 8, (len(body) + 4) & 0xFF, 0, 0)) + body)
    return blocks


def test_sparse_index_entries_fall_on_record_headers(tmp_path: Path) -> None:
    path = tmp_path / "v.dat"
    offsets = write_rdw_file(path, 500, big_endian=False)
    index = list(sparse_index(str(path), Framing("rdw"), split_records=37))
    assert [off for off, _ in index] == [offsets[n] for _, n in index]
    assert [n for _, n in index] == list(range(0, 500, 37))
    by_bytes = list(sparse_index(str(path), Framing("rdw"), split_bytes=1000))
    assert all(off == offsets[n] for off, n in by_bytes)
    assert len(by_bytes) == pytest.approx(path.stat().st_size / 1000, abs=2)


def test_sparse_index_of_blocked_file_counts_records_of_whole_blocks(tmp_path: Path) -> None:
    path = tmp_path / "vb.dat"
    blocks = write_vb_file(path, 103, per_block=5)
    index = list(sparse_index(str(path), Framing("bdw", big_endian=True, bdw_big_endian=True), split_records=12))
    assert [off for off, _ in index] == [blocks[n // 5] for _, n in index]
    assert all(n % 5 == 0 for _, n in index)


def test_fixed_splits_are_whole_records_and_keep_the_trailing_part(tmp_path: Path) -> None:
    path = tmp_path / "f.dat"
    path.write_bytes(b"x" * (10 * 7 + 3))  # 7 records of 10 bytes and 3 bytes of a truncated one
    splits = plan_splits([str(path)], Framing("fixed", record_length=10, start=0), split_records=3)
    assert [(s.start, s.end, s.first_record) for s in splits] == [(0, 30, 0), (30, 60, 3), (60, 73, 6)]


def test_a_corrupt_rdw_names_its_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "bad.dat"
    offsets = write_rdw_file(path, 20, big_endian=True)
    data = bytearray(path.read_bytes())
    data[offsets[11] : offsets[11] + 4] = b"\x00\x00\x00\x00"
    path.write_bytes(bytes(data))
    with pytest.raises(SplitError) as info:
        list(sparse_index(str(path), Framing("rdw", big_endian=True), split_records=5))
    assert f"byte {offsets[11]}" in str(info.value)


def _sequential(cpy: Path, data: Path, options: dict[str, str]) -> list[dict[str, Any]]:
    lay = layout.build_layout(parser.parse_file(cpy))
    return [r for r in decoder.decode_files(lay, [data], CopybookOptions.from_mapping(options))]


@pytest.mark.parametrize(
    ("fmt", "options"),
    [
        ("rdw_le", {"record_format": "V"}),
        ("rdw_be", {"record_format": "V", "is_rdw_big_endian": "true"}),
        ("vb", {"record_format": "VB", "is_rdw_big_endian": "true"}),
    ],
)
def test_one_variable_length_file_read_in_parallel_equals_the_sequential_decoder(
    spark: Any, tmp_path: Path, fmt: str, options: dict[str, str]
) -> None:
    cpy = tmp_path / "rec.cpy"
    cpy.write_text(COPYBOOK)
    data = tmp_path / f"{fmt}.dat"
    if fmt == "vb":
        write_vb_file(data, 3000)
    else:
        write_rdw_file(data, 3000, big_endian=fmt == "rdw_be")
    opts = {**options, "generate_record_id": "true"}
    expected = _sequential(cpy, data, opts)
    df = (
        spark.read.format("copybook").option("copybook", str(cpy)).options(**opts)
        .option("input_split_size_mb", "0.02")  # ~20 KB splits: a 150 KB file in several partitions
        .load(str(data))
    )
    assert df.rdd.getNumPartitions() >= 6
    got = [r.asDict(recursive=True) for r in df.drop("_corrupt_record").collect()]
    assert len(got) == len(expected) == 3000
    assert got == expected


@pytest.mark.parametrize("kind", ["fixed (vectorised)", "rdw (per record)"])
def test_a_bad_record_in_a_later_split_has_its_number_in_the_file(tmp_path: Path, kind: str) -> None:
    """Each split is framed as a stream of its own: its bad record is still reported with its
    number and byte offset in the file, not in the split (the splits read in a task here, no
    Spark session needed)."""
    from coupler.translators.spark.codec import CopybookCodec

    cpy = tmp_path / "rec.cpy"
    cpy.write_text(COPYBOOK)
    data = tmp_path / "recs.dat"
    if kind.startswith("rdw"):
        offsets = [o + 4 for o in write_rdw_file(data, 400, big_endian=True)]  # the payloads'
        options = {"record_format": "V", "is_rdw_big_endian": "true"}
    else:
        lay = layout.build_layout(parser.parse_file(cpy))
        rng = random.Random(3)
        data.write_bytes(b"".join(_payload(i, rng)[: lay.size].ljust(lay.size, b"\x40") for i in range(400)))
        offsets = [i * lay.size for i in range(400)]
        options = {}
    raw = bytearray(data.read_bytes())
    raw[offsets[250] + 6 : offsets[250] + 11] = b"\x00\x00\xab\x0c\x00"  # AMOUNT: not a packed decimal
    data.write_bytes(bytes(raw))
    codec = CopybookCodec(str(cpy), {**options, "policy": "strict", "input_split_records": "60"})
    planned = codec.plan([str(data)])
    bad = [(split, json.loads(row["_corrupt_record"])) for split, framing in planned
           for batch in codec.read_split(split, framing) for row in batch.to_pylist() if row["_corrupt_record"]]
    assert len(planned) == 7 and len(bad) == 1
    split, report = bad[0]
    assert split.first_record == 240 and split.start > 0  # the fifth split's
    assert (report["record"], report["offset"], report["field"]) == (251, offsets[250] + 6, "REC.AMOUNT")


def test_a_corrupt_rdw_in_a_split_file_becomes_a_bad_record_after_the_good_ones(spark: Any, tmp_path: Path) -> None:
    cpy = tmp_path / "rec.cpy"
    cpy.write_text(COPYBOOK)
    data = tmp_path / "bad.dat"
    offsets = write_rdw_file(data, 400, big_endian=True)
    raw = bytearray(data.read_bytes())
    raw[offsets[250] : offsets[250] + 4] = b"\xff\xff\xff\xff"
    data.write_bytes(bytes(raw))
    df = (spark.read.format("copybook").option("copybook", str(cpy)).option("record_format", "V")
          .option("is_rdw_big_endian", "true").option("input_split_records", "60").load(str(data)))
    rows = df.collect()
    good = [r for r in rows if r["_corrupt_record"] is None]
    bad = [json.loads(r["_corrupt_record"]) for r in rows if r["_corrupt_record"] is not None]
    assert [int(r["NUM"]) for r in good] == list(range(250))
    assert len(bad) == 1 and bad[0]["offset"] == offsets[250] and "record descriptor word" in bad[0]["reason"]


@pytest.mark.parametrize("records, reclen, slots", [(4_830_917, 207, 2), (1_000_003, 100, 4), (10, 207, 2), (999, 2202, 3)])
def test_the_last_wave_of_splits_is_small(tmp_path: Path, records: int, reclen: int, slots: int) -> None:
    """Whole records per split, covering the file; full-size splits first, then smaller ones
    (what is left divided by the slots, down to a sixty-fourth; the remainder joins the last
    one), so that no core idles long while another runs a last big split."""
    data = tmp_path / "f.dat"
    with open(data, "wb") as fh:
        fh.truncate(records * reclen)  # sparse: only the size matters to the planner
    split_bytes = 64 << 20
    splits = plan_splits([str(data)], Framing("fixed", record_length=reclen), split_bytes=split_bytes, slots=slots)
    assert splits[0].start == 0 and splits[-1].end == records * reclen
    assert all(a.end == b.start for a, b in zip(splits, splits[1:], strict=False))
    assert all(s.length % reclen == 0 and s.first_record == s.start // reclen for s in splits[:-1])
    assert all(s.length <= split_bytes for s in splits)
    sizes = [s.length for s in splits]
    # never growing (to a record: sizes are whole records), but for the last, which holds the remainder
    assert all(a + reclen >= b for a, b in zip(sizes[:-1], sizes[1:-1], strict=False))
    if records * reclen > 4 * slots * split_bytes:
        assert sizes[0] >= split_bytes - reclen
        assert max(sizes[-slots:]) <= 2 * (split_bytes // 16) + reclen
        assert len(splits) < records * reclen / split_bytes + 4 * slots  # few tasks: each costs CPU besides its work
    else:  # a small job: several splits per slot even so
        assert len(splits) >= min(records, 2 * slots)
    one = plan_splits([str(data)], Framing("fixed", record_length=reclen), split_bytes=split_bytes, slots=1)
    assert all(s.length == one[0].length for s in one[:-1])  # one slot: equal splits


def test_the_last_splits_of_a_large_job_are_about_ten_milliseconds_of_a_cores_work(tmp_path: Path) -> None:
    """The last split is what one slot may still run while the other has nothing left: 1 GB
    of 207-byte records on two slots (the default 128 MB splits) ends in splits of 2-4 MB
    (~10-20 ms of a core's copybook decoding), not 12 MB; every byte in exactly one split."""
    data = tmp_path / "f.dat"
    records = 4_830_917
    with open(data, "wb") as fh:
        fh.truncate(records * 207)
    splits = plan_splits([str(data)], Framing("fixed", record_length=207), slots=2)
    assert splits[0].start == 0 and splits[-1].end == records * 207
    assert all(a.end == b.start for a, b in zip(splits, splits[1:], strict=False))
    assert max(s.length for s in splits[-2:]) <= 4 * 1024 * 1024
    assert len(splits) <= 14  # each split is a file of its own


def test_a_split_of_hierarchical_records_starts_at_a_root_record(tmp_path) -> None:
    """With ``starts_group`` a split grows past its record count to the next root record."""
    from coupler.translators.spark.splits import Framing, plan_splits

    kinds = b"RCCRCCCCCRRC"
    data = tmp_path / "h.dat"
    data.write_bytes(b"".join(b"\x00\x00\x02\x00" + bytes([k]) + b"x" for k in kinds))
    splits = plan_splits([str(data)], Framing("rdw"), split_records=2,
                         starts_group=lambda head: head == b"R", group_head=1)
    assert [s.first_record for s in splits] == [0, 3, 9]  # not 2, 5 or 11: children
    assert all(kinds[s.first_record:s.first_record + 1] == b"R" for s in splits)
    assert splits[-1].end == data.stat().st_size


def test_a_worker_freezes_what_it_holds_after_its_first_split(tmp_path: Path) -> None:
    """PySpark runs ``gc.collect()`` after every task of a reused worker; after its first split
    a worker's modules and caches are frozen (``gc.freeze``) so those collections skip them,
    once per process: later splits add nothing frozen (their garbage is still collected).
    Settling walks only the young generations (a full collection walks all the worker
    holds: tens of milliseconds of every worker's first task), and their cyclic garbage is
    collected, not frozen."""
    import subprocess
    import sys

    cpy = tmp_path / "rec.cpy"
    cpy.write_text(COPYBOOK)
    data = tmp_path / "rec.dat"
    data.write_bytes(b"".join(f"{i:06d}".encode("cp037") + b"\x00\x00\x00\x00\x0c" + b"\x40" * 40
                             for i in range(3000)))
    script = f"""
import gc, json, weakref
freezes = []
_freeze = gc.freeze
gc.freeze = lambda: (freezes.append(gc.get_count()), _freeze())[1]
collections = []
_collect = gc.collect
class Cycle: pass
from coupler.translators.spark.codec import CopybookCodec
from coupler.translators.spark.commit import OutputCommitter
from coupler.translators.spark.direct import _Claiming, _SplitTask
from coupler.translators.spark.splits import FileSplit, plan_splits
codec = CopybookCodec({str(cpy)!r}, {{}})
framing = codec.framing({str(data)!r})
committer = OutputCommitter({str(tmp_path / "out")!r}, "overwrite", "parquet")
committer.check_target()
splits = plan_splits([{str(data)!r}], framing, split_bytes=51 * 1000)
items = [(FileSplit(s.path, 0, s.start, s.end, s.first_record, s.index), framing) for s in splits]
slot = _Claiming(items, _SplitTask(codec, committer, "parquet", None, None), None)
frozen = [gc.get_freeze_count()]
cycle = Cycle(); cycle.me = cycle; young = weakref.ref(cycle); del cycle
gc.collect = lambda *generation: (collections.append(generation), _collect(*generation))[1]
for i in range(3):
    records = [m["records"] for m in slot(iter([i]))]
    frozen.append(gc.get_freeze_count())
gc.collect = _collect
print(json.dumps({{"frozen": frozen, "records": records, "freezes": len(freezes),
                  "collections": collections, "young_garbage_left": young() is not None}}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    before, first, *_later = result["frozen"]
    assert before == 0 and first > 1000  # the modules and caches of the worker
    assert result["freezes"] == 1  # once per process
    assert result["collections"] == [[1]]  # the young generations only, once
    assert not result["young_garbage_left"]  # collected, not frozen
    assert result["records"] == [1000]


@pytest.mark.parametrize("split_option", [{"input_split_records": "2"}, {"input_split_size_mb": str(20 / 1024 / 1024)}])
def test_batch_translate_splits_of_hierarchical_records_start_at_a_root_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split_option: dict[str, str]
) -> None:
    """The split job of ``batch translate`` (``direct.translate_splits``) plans the splits of a
    ``segment-children`` file as the ``copybook`` data source does: a split starts only at a
    root record, so every parent keeps its children (planned and decoded without a JVM)."""
    from types import SimpleNamespace

    from coupler.translators.spark import direct
    from coupler.translators.spark.codec import CopybookCodec

    cpy, data = write_hierarchy(tmp_path)
    options = {**OPTIONS, "generate_record_id": "true", **split_option}
    codec = CopybookCodec(str(cpy), options)
    expected = list(codec.decode_file_sequentially(str(data)))
    assert [len(r["P"]["C"]) for r in expected] == [3, 1, 4]

    planned: list[Any] = []
    monkeypatch.setattr(direct, "run_split_job", lambda spark, work, task, committer: planned.extend(work) or {})
    spark = SimpleNamespace(sparkContext=SimpleNamespace(defaultParallelism=2))
    direct.translate_splits(spark, codec, [str(data)], str(tmp_path / "out"))
    assert len(planned) > 1  # the file is read in several splits
    assert all(RECORDS[s.first_record][:1] == b"P" for s, _ in planned)  # none starts at a child
    got = [row for split, framing in planned for batch in codec.read_split(split, framing) for row in batch.to_pylist()]
    assert got == expected
