"""The vectorised file path gives exactly what the per-record path gives: the same JSON
lines, the same rejected records (file, record, offset, field, hex, reason), the same
counters, and the same Avro / Parquet contents."""

from __future__ import annotations

import json
from pathlib import Path

import fastavro
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coupler.bus.cli.main import main
from coupler.translators.copybook.arrow_avro import AvroBatchWriter
from coupler.translators.copybook.arrow_json import json_lines
from coupler.translators.copybook.avro import avro_schema
from coupler.translators.copybook.batch_files import batch_supported, decode_file_batches
from coupler.translators.copybook.decoder import (
    BadRecord,
    DecodeStats,
    decode_files,
    to_json,
    write_avro,
)
from coupler.translators.copybook.layout import build_layout
from coupler.translators.copybook.parser import parse_copybook, parse_file
from tests.terminal import coupler_on_a_terminal
from tests.translators.copybook.test_corpus import CASES, CORPUS

FIXED_CASES = [c for c in CASES if c.id.startswith(("test1", "test3", "test6", "test9", "test19"))]


def avro_of_both_paths(layout, paths, options, tmp_path: Path) -> tuple[list, list]:
    """The records of the Avro files written by each path, as fastavro reads them back."""
    schema = avro_schema(layout, options)
    per_record = tmp_path / "per-record.avro"
    write_avro((r for r in decode_files(layout, paths, options) if not isinstance(r, BadRecord)), schema, per_record)
    vectorised = tmp_path / "vectorised.avro"
    with open(vectorised, "wb") as out:
        writer = AvroBatchWriter(out, schema)
        for fb in decode_file_batches(layout, paths, options, batch_records=7):
            writer.write_batch(fb.batch)
    read = []
    for path in (per_record, vectorised):
        with open(path, "rb") as fh:
            read.append(_nan_free(list(fastavro.reader(fh))))
    return read[0], read[1]


def _nan_free(value):
    """``value`` with NaN floats (random COMP-1/COMP-2 bytes) made comparable."""
    if isinstance(value, dict):
        return {k: _nan_free(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_free(v) for v in value]
    if isinstance(value, float) and value != value:
        return "NaN"
    return value


def both_paths(layout, paths, options, policy, *, batch_records=65_536):
    """(lines, bad reports, stats) of the per-record path and of the vectorised path."""
    s1, s2 = DecodeStats(), DecodeStats()
    lines1, bad1 = [], []
    for rec in decode_files(layout, paths, options, stats=s1, policy=policy):
        if isinstance(rec, BadRecord):
            bad1.append(rec.error.to_dict())
        else:
            lines1.append(to_json(rec))
    lines2, bad2 = [], []
    for fb in decode_file_batches(layout, paths, options, stats=s2, policy=policy, batch_records=batch_records):
        lines2 += json_lines(fb.batch)
        bad2 += [b.error.to_dict() for b in fb.bad]
    return (lines1, bad1, s1), (lines2, bad2, s2)


@pytest.mark.parametrize("policy", ["lenient", "strict"])
@pytest.mark.parametrize("case", FIXED_CASES, ids=[c.id for c in FIXED_CASES])
def test_fixed_length_corpus_cases_decode_the_same_on_both_paths(case, policy) -> None:
    layout = build_layout(parse_file(CORPUS / case.copybook))
    paths = [CORPUS / p for p in case.data]
    if not batch_supported(layout, case.options, paths):
        assert case.id.startswith("test3")  # segment_filter: the per-record decoder only
        return
    (lines1, bad1, s1), (lines2, bad2, s2) = both_paths(layout, paths, case.options, policy, batch_records=7)
    assert lines2 == lines1
    assert bad2 == bad1
    assert s2 == s1
    assert lines1 and s1.records == len(lines1)
    if case.id == "test19" and policy == "strict":
        assert [b["record"] for b in bad1] == [7]  # numbered from 1


@pytest.mark.parametrize("case", [c for c in FIXED_CASES if not c.id.startswith("test3")], ids=lambda c: c.id)
def test_avro_written_from_arrow_batches_reads_as_the_per_record_avro(case, tmp_path: Path) -> None:
    layout = build_layout(parse_file(CORPUS / case.copybook))
    per_record, vectorised = avro_of_both_paths(layout, [CORPUS / p for p in case.data], case.options, tmp_path)
    assert vectorised == per_record
    assert len(per_record) > 0


ODO_COPYBOOK = """\
       01  REC.
           05  NAME           PIC X(6).
           05  N-ITEMS        PIC 9(1).
           05  ITEM OCCURS 1 TO 3 DEPENDING ON N-ITEMS.
               10  CODE       PIC X(2).
               10  QTY        PIC S9(3) COMP-3.
               10  PRICE      PIC S9(3)V99.
           05  TOTAL          PIC S9(5)V99 COMP-3.
           05  RATE           COMP-2.
           05  RATIO          COMP-1.
           05  COUNT          PIC S9(4) COMP.
"""


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(min_size=0, max_size=400), policy=st.sampled_from(["lenient", "strict"]),
       options=st.sampled_from([{}, {"improved_null_detection": "false", "string_trimming_policy": "none"},
                                {"floating_point_format": "IEEE754", "generate_record_id": "true"}]))
def test_random_bytes_decode_the_same_on_both_paths(tmp_path_factory, data, policy, options) -> None:
    layout = build_layout(parse_copybook(ODO_COPYBOOK))
    path = tmp_path_factory.mktemp("d") / "data.bin"
    # mostly valid-looking bytes: EBCDIC digits and spaces, with random bytes mixed in
    path.write_bytes(bytes(b if b % 3 else 0xF1 + b % 3 for b in data))
    assert batch_supported(layout, options, [path])
    first, second = both_paths(layout, [path], options, policy, batch_records=3)
    assert second == first
    if policy == "lenient":
        per_record, vectorised = avro_of_both_paths(layout, [path], options, path.parent)
        assert vectorised == per_record


def test_cli_outputs_are_the_same_on_both_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = next(c for c in CASES if c.id == "test19")
    data = tmp_path / "data.bin"
    data.write_bytes((CORPUS / case.data[0]).read_bytes() + b"\xf1\xf2\xf3")  # a truncated last record
    opts = [x for k, v in case.options.items() for x in ("-o", f"{k}={v}")]
    copybook = str(CORPUS / case.copybook)
    results = {}
    for mode in ([], ["--per-record"]):
        key = "per-record" if mode else "vectorised"
        errors = tmp_path / f"errors-{key}.jsonl"
        # --strict: rejected records make the exit status 1
        assert main(["copybook", "decode", copybook, str(data), *opts, "--strict", "--errors", str(errors), *mode]) == 1
        out, err = capsys.readouterr()
        assert f"{key} decoder" in err and "6 records, 2 rejected" in err and "2 records rejected (--strict)" in err
        pq_file, avro_file = tmp_path / f"{key}.parquet", tmp_path / f"{key}.avro"
        assert main(["copybook", "decode", copybook, str(data), *opts, "--to", "parquet", "--output", str(pq_file), *mode]) == 0
        assert main(["copybook", "decode", copybook, str(data), *opts, "--to", "avro", "--output", str(avro_file), *mode]) == 0
        capsys.readouterr()
        with open(avro_file, "rb") as fh:
            avro_rows = list(fastavro.reader(fh))
        results[key] = (out, errors.read_text(), pq.read_table(pq_file).to_pylist(), pq.read_schema(pq_file), avro_rows)
    assert results["vectorised"] == results["per-record"]
    out, errors, parquet_rows, _schema, avro_rows = results["vectorised"]
    reports = [json.loads(line) for line in errors.splitlines()]
    assert [(r["record"], r["offset"]) for r in reports] == [(7, 480), (8, 560)]  # numbered from 1
    assert reports[0]["field"] and reports[0]["raw_hex"] and "truncated" in reports[1]["reason"]
    assert len(out.splitlines()) == 6 and len(parquet_rows) == len(avro_rows) == 7


def test_progress_bar_is_drawn_on_a_terminal(tmp_path: Path) -> None:
    import subprocess
    import sys

    copybook = tmp_path / "rec.cpy"
    copybook.write_text(ODO_COPYBOOK)
    layout = build_layout(parse_copybook(ODO_COPYBOOK))
    data = tmp_path / "data.bin"
    data.write_bytes(b"\xf1" * layout.size * 1000)
    cmd = ["copybook", "decode", str(copybook), str(data), "--output", str(tmp_path / "out.jsonl")]
    run = coupler_on_a_terminal(cmd)
    assert run.returncode == 0
    text = run.shown
    assert "[####" in text and "100.0%" in text and "1000 records" in text
    assert "\x1b[K" in text  # the bar is cleared before the summary
    # not a terminal: no bar
    plain = subprocess.run([sys.executable, "-m", "coupler.bus.cli.main", *cmd], capture_output=True, timeout=60,
                           check=False)
    assert b"[#" not in plain.stderr and b"1000 records" in plain.stderr
