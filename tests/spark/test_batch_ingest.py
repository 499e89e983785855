"""``coupler batch ingest``: staged files -> Spark -> outputs, archive after success, event."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from coupler.bus.batch.ingest import EVENT_FORMAT, ingest
from coupler.bus.batch.jobs import LEAN_JVM_OPTIONS
from coupler.bus.config.loader import load_site
from coupler.bus.transport.factory import open_transport
from coupler.canonical.registry import SchemaRegistry

REPO = Path(__file__).resolve().parents[2]

COPYBOOK = """\
       01  CARD.
           05  CARD-ID     PIC 9(8).
           05  HOLDER      PIC X(30).
           05  BALANCE     PIC S9(9)V99 COMP-3.
           05  LIMIT       PIC S9(7) COMP.
           05  FILLER      PIC X(52).
"""
RECORD = 100


def card(i: int) -> bytes:
    holder = f"HOLDER {i % 997}".ljust(30).encode("cp037")
    balance = bytes.fromhex(f"{i % 10**11:011d}C")
    limit = (i % 10**7).to_bytes(4, "big", signed=True)
    data = f"{i:08d}".encode("cp037") + holder + balance + limit + b"\x40" * 52
    assert len(data) == RECORD
    return data


def write_cards(path: Path, first: int, count: int, *, tail: bytes = b"") -> None:
    with open(path, "wb") as fh:
        step = 10_000
        for start in range(first, first + count, step):
            fh.write(b"".join(card(i) for i in range(start, min(first + count, start + step))))
        fh.write(tail)


def make_site(root: Path) -> Path:
    (root / "card.cpy").write_text(COPYBOOK)
    (root / "staged").mkdir(parents=True)
    site = root / "site.toml"
    site.write_text(f"""
[site]
name = "cards"
data_dir = "{root / 'data'}"

[[channels]]
name = "batches"

[[adapters]]
name = "cards-in"
type = "filedrop"
direction = "inbound"
channel = "batches"
[adapters.options]
directory = "{root / 'drop'}"
payload = "copybook"
copybook = "{root / 'card.cpy'}"
batch_threshold_bytes = 1000
batch_dir = "{root / 'staged'}"
""")
    return site


def events(site: Path) -> list[dict[str, Any]]:
    transport = open_transport(load_site(site))
    try:
        envs = transport.peek("batches", max=100)
    finally:
        transport.close()
    registry = SchemaRegistry.default()
    return [registry.decode(e.body, EVENT_FORMAT) for e in envs if e.format.ref == EVENT_FORMAT]


def test_ingest_translates_archives_after_success_and_publishes_batch_completed(spark: Any, tmp_path: Path) -> None:
    site = make_site(tmp_path)
    write_cards(tmp_path / "staged" / "a.dat", 0, 1200)
    write_cards(tmp_path / "staged" / "b.dat", 5000, 800, tail=b"\xf1" * 37)  # a truncated last record
    (result,) = ingest(site, "cards-in", spark=spark, options={"input_split_records": "500", "generate_record_id": "true"})

    assert (result.records, result.errors) == (2000, 1)
    df = spark.read.parquet(result.output)
    assert df.count() == 2000
    assert df.filter("File_Id = 1 AND Record_Id = 799").first()["CARD_ID"] == 5799
    errors = [line for f in Path(result.errors_output).glob("*.jsonl") for line in f.read_text().splitlines()]
    assert len(errors) == 1 and "truncated" in errors[0] and '"record": 801' in errors[0]  # numbered from 1

    assert not list((tmp_path / "staged").glob("*.dat"))
    archived = sorted(p.name for p in (tmp_path / "staged" / "archive" / result.batch_id).iterdir())
    assert archived == ["a.dat", "b.dat"]
    (event,) = events(site)
    assert (event["records"], event["errors"], event["source"]) == (2000, 1, "cards-in")
    assert event["outputs"] == [result.output] and len(event["inputs"]) == 2

    assert ingest(site, "cards-in", spark=spark) == []  # nothing staged any more
    assert len(events(site)) == 1


def test_a_killed_ingest_leaves_inputs_staged_and_the_rerun_writes_everything_once(spark: Any, tmp_path: Path) -> None:
    site = make_site(tmp_path)
    staged = tmp_path / "staged" / "big.dat"
    # 10 MB in five 2 MB splits on two cores: the kill lands when the first task writes, with
    # three splits still to run (60 MB, then 20 MB in 4 MB splits, proved no more and made the
    # rerun six and two times as long); the killed job's JVM is lean (C1 only: it lives seconds)
    records = 100_000
    write_cards(staged, 0, records)
    proc = subprocess.Popen(
        [sys.executable, "-m", "coupler.bus.cli.main", "batch", "ingest", "--site", str(site), "--source", "cards-in",
         "--master", "local[2]", "-o", "input_split_size_mb=2", "-o", "generate_record_id=true",
         "--conf", f"spark.driver.defaultJavaOptions={LEAN_JVM_OPTIONS}"],
        env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )
    batch_root = tmp_path / "data" / "batch" / "cards-in"
    try:
        deadline = time.monotonic() + 120
        while not list(batch_root.glob("*/.data.staging/*/part-*")):  # tasks are writing
            assert proc.poll() is None, f"the job ended before it could be killed: {proc.stderr.read()!r}"
            assert time.monotonic() < deadline, "the job did not start"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        printed = proc.stderr.read().decode(errors="replace")  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    # Spark started and wrote, and its banner and log lines stayed off our standard error
    # (they show with --verbose only)
    assert not any(noise in printed for noise in ("log4j", "Setting default log level", "WARN ", "SparkContext")), printed
    assert staged.exists(), "the input was archived before the job succeeded"
    assert not (tmp_path / "staged" / "archive").exists()
    assert not list(batch_root.glob("*/data")) and not list(batch_root.glob("*/batch.json"))  # nothing published
    assert events(site) == []

    (result,) = ingest(site, "cards-in", spark=spark, options={"input_split_size_mb": "2", "generate_record_id": "true"})
    df = spark.read.parquet(result.output)
    assert df.count() == records == result.records
    assert df.select("Record_Id").distinct().count() == records
    assert df.agg({"CARD_ID": "sum"}).first()[0] == records * (records - 1) // 2
    assert not staged.exists() and (tmp_path / "staged" / "archive" / result.batch_id / "big.dat").exists()
    assert len(events(site)) == 1


def test_unknown_source_names_the_adapters(tmp_path: Path) -> None:
    from coupler.bus.batch.jobs import BatchError

    site = make_site(tmp_path)
    with pytest.raises(BatchError, match="cards-in"):
        ingest(site, "nope", spark=object())
