"""``coupler copybook``: layout, schema, decode and encode through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import fastavro
import pytest

from coupler.bus.cli.main import main

CORPUS = Path(__file__).parent / "data" / "cobrix"
T21 = CORPUS / "15_test21_ascii_nested_odo"
T1 = CORPUS / "01_test1_fixed_comp3_odo"
T21_OPTS = ["-o", "record_format=F", "-o", "encoding=ascii", "-o", "variable_size_occurs=true",
            "-o", "schema_retention_policy=keep_original"]
#: records a chunk in the --jobs and --parts tests (the CLI's is 16,384): many chunks from a
#: small file, so the threads interleave chunks without decoding megabytes
CHUNK = 1_000


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> int:
    """The CLI decodes its files in chunks of ``CHUNK`` records (it imports
    ``decode_file_batches`` when it decodes, so it takes this one)."""
    import functools

    from coupler.translators.copybook import batch_files

    monkeypatch.setattr(batch_files, "decode_file_batches",
                        functools.partial(batch_files.decode_file_batches, batch_records=CHUNK))
    return CHUNK


def test_layout_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    case = CORPUS / "05_test6_type_variety"
    assert main(["copybook", "layout", str(case / "test6_copybook.cob")]) == 0
    assert capsys.readouterr().out == (case / "test6_expected" / "test6_layout.txt").read_text() + "\n"
    assert main(["copybook", "layout", "--json", str(T21 / "test21_copybook.cob")]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert set(rows[0]) == {"level", "name", "path", "start", "end", "length", "size", "occurs", "usage", "picture", "attributes"}
    assert [(r["name"], r["start"], r["end"], r["attributes"]) for r in rows][1:3] == [
        ("COUNT", 1, 1, "D"), ("GROUP", 2, 9, "[]")]


def test_schema_is_valid_avro(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["copybook", "schema", str(T1 / "test1_copybook.cob"), "-o", "generate_record_id=true"]) == 0
    schema = json.loads(capsys.readouterr().out)
    fastavro.parse_schema(schema)
    assert [f["name"] for f in schema["fields"]][:4] == ["File_Id", "Record_Id", "Record_Byte_Length", "ID"]


def test_decode_jsonl_matches_the_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["copybook", "decode", str(T21 / "test21_copybook.cob"), str(T21 / "test21_data" / "data.dat"), *T21_OPTS])
    assert code == 0
    out, err = capsys.readouterr()
    assert out == (T21 / "test21_expected" / "test21.txt").read_text()
    assert "5 records, 0 rejected" in err


@pytest.mark.parametrize("mode", [[], ["--per-record"]])
def test_an_occurs_element_of_bad_fields_in_avro(tmp_path: Path, capsys, mode) -> None:
    """An OCCURS element whose every field is bad is null in the rows; the Avro schema's items
    are records: it is written as a record of nulls and the other elements are kept (the
    vectorised writer made the whole array null, the per-record one stopped with an internal error)."""
    cpy = tmp_path / "occ.cpy"
    cpy.write_text("       01  REC.\n           05  A  PIC 9(3).\n           05  B OCCURS 2 TIMES.\n"
                   "              10  C  PIC 9(3).\n")
    data = tmp_path / "occ.dat"
    data.write_bytes(b"123ABC456" + b"123456789")
    out = tmp_path / "occ.avro"
    assert main(["copybook", "decode", str(cpy), str(data), "-o", "encoding=ascii", "--to", "avro",
                 "--output", str(out), *mode]) == 0
    assert "2 records, 0 rejected, 1 bad fields" in capsys.readouterr().err
    with out.open("rb") as f:
        assert list(fastavro.reader(f)) == [{"A": 123, "B": [{"C": None}, {"C": 456}]},
                                            {"A": 123, "B": [{"C": 456}, {"C": 789}]}]


def test_a_number_wider_than_an_arrow_decimal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PIC 9(77): more digits than an Arrow decimal (76) holds. JSON lines come from the
    per-record decoder (the vectorised one builds Arrow columns); a Parquet output is refused
    in one line naming the field, not an internal error."""
    cpy = tmp_path / "wide.cpy"
    cpy.write_text("       01  REC.\n           05  ID    PIC 9(2).\n           05  BIG   PIC 9(77).\n")
    data = tmp_path / "wide.dat"
    data.write_bytes(b"07" + b"1" * 77)
    assert main(["copybook", "decode", str(cpy), str(data), "-o", "encoding=ascii"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"ID": 7, "BIG": int("1" * 77)}
    assert "per-record decoder" in err
    parquet = tmp_path / "wide.parquet"
    assert main(["copybook", "decode", str(cpy), str(data), "-o", "encoding=ascii", "--to", "parquet",
                 "--output", str(parquet)]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "coupler: error: BIG: 77 digits, more than the 76 a Parquet decimal holds (decode it --to jsonl or --to avro)")
    assert not parquet.exists()


def test_decode_to_avro_and_encode_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    avro_file = tmp_path / "out.avro"
    code = main(["copybook", "decode", str(T1 / "test1_copybook.cob"), str(T1 / "test1_data" / "example.bin"),
                 "-o", "ebcdic_code_page=common", "--to", "avro", "--output", str(avro_file)])
    assert code == 0
    with open(avro_file, "rb") as fh:
        records = list(fastavro.reader(fh))
    assert [r["ID"] for r in records] == list(range(1, 11))
    jsonl = tmp_path / "in.jsonl"
    main(["copybook", "decode", str(T21 / "test21_copybook.cob"), str(T21 / "test21_data" / "data.dat"), *T21_OPTS])
    jsonl.write_text(capsys.readouterr().out)
    data = tmp_path / "data.dat"
    assert main(["copybook", "encode", str(T21 / "test21_copybook.cob"), str(jsonl), "--output", str(data), *T21_OPTS]) == 0
    assert data.read_bytes() == (T21 / "test21_data" / "data.dat").read_bytes()


def test_encode_stopped_by_a_bad_line_leaves_no_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["copybook", "decode", str(T21 / "test21_copybook.cob"), str(T21 / "test21_data" / "data.dat"), *T21_OPTS])
    good = capsys.readouterr().out.splitlines()
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text("\n".join([*good[:3], "not json", *good[3:]]) + "\n")
    data = tmp_path / "data.dat"
    assert main(["copybook", "encode", str(T21 / "test21_copybook.cob"), str(jsonl), "--output", str(data), *T21_OPTS]) == 1
    assert "line 4 is not JSON" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]  # not a file of 3 records, no .part


def test_unknown_option_suggests_the_nearest_name(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["copybook", "schema", str(T1 / "test1_copybook.cob"), "-o", "ebcdic_code_pag=cp037"])
    assert code == 1
    assert "did you mean ebcdic_code_page" in capsys.readouterr().err


def test_truncated_last_record_goes_to_the_errors_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "short.bin"
    data.write_bytes((T1 / "test1_data" / "example.bin").read_bytes()[: 2202 * 2 + 100])
    errors = tmp_path / "errors.jsonl"
    code = main(["copybook", "decode", str(T1 / "test1_copybook.cob"), str(data), "-o", "ebcdic_code_page=common",
                 "--errors", str(errors)])
    assert code == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 2
    report = json.loads(errors.read_text())
    assert (report["record"], report["offset"]) == (3, 4404)  # the third record, numbered from 1
    assert "truncated" in report["reason"]
    assert "2 records, 1 rejected" in err
    # --strict: the rejected record makes the exit status 1
    assert main(["copybook", "decode", str(T1 / "test1_copybook.cob"), str(data), "-o", "ebcdic_code_page=common",
                 "--strict", "--errors", str(errors)]) == 1


BAD = """       01 REC.
          05 A PIC X(2).
          05 N PIC 9(3).
          05 P PIC S9(3) COMP-3.
"""


def _bad_file(tmp_path: Path) -> tuple[str, str]:
    cpy = tmp_path / "rec.cpy"
    cpy.write_text(BAD)
    data = tmp_path / "rec.dat"
    # record 1 good, record 2 a letter in N, record 3 a bad sign nibble in P, record 4 good
    data.write_bytes(b"AB123\x12\x3c" + b"CD1X3\x12\x3c" + b"EF456\x12\x34" + b"GH789\x99\x9d")
    return str(cpy), str(data)


@pytest.mark.parametrize("mode", [[], ["--per-record"]])
def test_errors_file_lists_each_bad_field_with_its_place(tmp_path: Path, capsys, mode) -> None:
    cpy, data = _bad_file(tmp_path)
    errors = tmp_path / "errors.jsonl"
    assert main(["copybook", "decode", cpy, data, "-o", "encoding=ascii", "--errors", str(errors), *mode]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 4 and "4 records, 0 rejected, 2 bad fields" in err
    reports = [json.loads(line) for line in errors.read_text().splitlines()]
    assert [(r["kind"], r["record"], r["offset"], r["field"], r["raw_hex"]) for r in reports] == [
        ("field", 2, 9, "REC.N", "315833"), ("field", 3, 19, "REC.P", "1234")]
    assert all(r["reason"] for r in reports)


@pytest.mark.parametrize("mode", [[], ["--per-record"]])
def test_exit_codes_strict_and_max_errors(tmp_path: Path, capsys, mode) -> None:
    cpy, data = _bad_file(tmp_path)
    assert main(["copybook", "decode", cpy, data, "-o", "encoding=ascii", "--strict", *mode]) == 1
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 2 and "record 2 at byte 9, field REC.N" in err
    assert err.splitlines()[-1] == f"coupler: error: 2 records rejected (--strict), the first at {data}: record 2 at byte 9, field REC.N"
    assert main(["copybook", "decode", cpy, data, "-o", "encoding=ascii", "--max-errors", "1", *mode]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (  # the second error, where it stopped
        f"coupler: error: stopped after more than 1 errors (--max-errors), the last at {data}: record 3 at byte 19,"
        " field REC.P")
    assert main(["copybook", "decode", cpy, data, "-o", "encoding=ascii", "--max-errors", "2", *mode]) == 0
    capsys.readouterr()
    # a fixed-length file read as variable-length: the framing error rejects, --strict fails
    assert main(["copybook", "decode", cpy, data, "-o", "encoding=ascii", "-o", "record_format=V", "--strict"]) == 1
    assert "record 1 at byte 0" in capsys.readouterr().err


def test_record_length_shorter_than_the_layout_is_refused(tmp_path: Path, capsys) -> None:
    cpy, data = _bad_file(tmp_path)
    assert main(["copybook", "decode", cpy, data, "-o", "encoding=ascii", "-o", "record_length=4"]) == 1
    err = capsys.readouterr().err
    assert "record_length 4" in err and "takes 7" in err and "Traceback" not in err


OCCURS_CPY = """       01 REC.
          05 HDR.
             10 YYYY PIC 9(4).
             10 DD PIC 99.
          05 DET REDEFINES HDR.
             10 CELL PIC S9(3) OCCURS 2.
          05 T OCCURS 2.
             10 U OCCURS 2.
                15 V PIC 9.
"""


@pytest.mark.parametrize("mode", [[], ["--per-record"]])
def test_bad_fields_in_an_occurs_name_their_subscripts(tmp_path: Path, capsys, mode) -> None:
    """Each bad element of an OCCURS has its own path, with 1-based COBOL subscripts as
    records are numbered from 1: REC.DET.CELL[1], REC.T[2].U[1].V, the same on both decoders."""
    cpy = tmp_path / "occ.cpy"
    cpy.write_text(OCCURS_CPY)
    data = tmp_path / "occ.dat"
    data.write_bytes(b"20240112x4" + b"2024aa1234")  # record 1: T(2).U(1).V bad; record 2: CELL(2) bad
    errors = tmp_path / "errors.jsonl"
    assert main(["copybook", "decode", str(cpy), str(data), "-o", "encoding=ascii", "--errors", str(errors), *mode]) == 0
    reports = [json.loads(line) for line in errors.read_text().splitlines()]
    assert [(r["record"], r["offset"], r["field"], r["raw_hex"]) for r in reports] == [
        (1, 8, "REC.T[2].U[1].V", "78"),
        (2, 10 + 4, "REC.HDR.DD", "6161"),
        (2, 10 + 3, "REC.DET.CELL[2]", "346161"),
    ]
    assert "2 records, 0 rejected, 3 bad fields" in capsys.readouterr().err
    # --strict: the rejected record names the element too
    assert main(["copybook", "decode", str(cpy), str(data), "-o", "encoding=ascii", "--strict", *mode]) == 1
    assert f"{data}: record 1 at byte 8, field REC.T[2].U[1].V" in capsys.readouterr().err


@pytest.mark.parametrize("to", ["jsonl", "parquet", "avro"])
def test_jobs_give_the_same_output_errors_and_order(tmp_path: Path, capsys, to: str, small_chunks: int) -> None:
    """``--jobs 2`` and ``--jobs 3`` decode chunks on two and three threads: the output file
    (for Parquet, one file written by one writer), the order of its records, the errors file
    and the counts are those of ``--jobs 1`` (bad fields scattered over many chunks, a
    rejected record under --strict, a truncated last record)."""
    import random
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import datagen

    copybook = datagen.write_copybook(tmp_path / "txn.cpy")
    clean = datagen.write_fixed_file(tmp_path / "clean.dat", 8_000)
    data = bytearray(clean.read_bytes())
    rng = random.Random(7)
    for _ in range(200):
        data[rng.randrange(len(data))] = rng.randrange(256)
    path = tmp_path / "bad.dat"
    path.write_bytes(bytes(data) + b"\xf1\xf2")
    outputs = {}
    for jobs in (1, 2, 3):
        out, errors = tmp_path / f"out{jobs}.{to}", tmp_path / f"errors{jobs}.jsonl"
        code = main(["copybook", "decode", str(copybook), str(path), "--to", to, "--output", str(out),
                     "--errors", str(errors), "--jobs", str(jobs), "-o", "record_length=207"])
        summary = capsys.readouterr().err.splitlines()[-1]
        assert code == 0
        if to == "parquet":
            import pyarrow.parquet as pq

            records = pq.read_table(out).to_pylist()
        elif to == "avro":
            with open(out, "rb") as fh:
                records = list(fastavro.reader(fh))  # (the file's sync marker is random)
        else:
            records = out.read_bytes()
        outputs[jobs] = (records, errors.read_text(), summary.split(" in ")[0])
    assert outputs[1] == outputs[2] == outputs[3]
    _, errors_text, counts = outputs[1]
    assert counts.startswith("8000 records, 1 rejected,")  # the truncated record
    assert errors_text.count('"kind": "field"') >= 50  # bad fields in many chunks, in file order
    records = [json.loads(line)["record"] for line in errors_text.splitlines()]
    assert records == sorted(records)
    assert {r // small_chunks for r in records} == set(range(9))  # each of the 8 chunks, and record 8000


def test_parts_hold_the_records_of_one_file_in_order(tmp_path: Path, capsys, small_chunks: int) -> None:
    """``--parts --jobs 3``: a directory of part files written by three threads; read in name
    order they are the one file of ``--jobs 1``, with the same errors file and counts (bad
    fields in every part, a truncated last record, two data files)."""
    import random
    import sys

    import pyarrow.parquet as pq

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import datagen

    copybook = datagen.write_copybook(tmp_path / "txn.cpy")
    data = bytearray(datagen.write_fixed_file(tmp_path / "clean.dat", 6_000).read_bytes())
    rng = random.Random(11)
    for _ in range(150):
        data[rng.randrange(len(data))] = rng.randrange(256)
    first, second = tmp_path / "a.dat", tmp_path / "b.dat"
    first.write_bytes(bytes(data[: 207 * 4_000]))  # a part holds several chunks
    second.write_bytes(bytes(data[207 * 4_000 :]) + b"\xf1\xf2")
    common = ["copybook", "decode", str(copybook), str(first), str(second), "--to", "parquet"]
    one, parts = tmp_path / "one.parquet", tmp_path / "parts"
    assert main([*common, "--output", str(one), "--errors", str(tmp_path / "e1"), "--jobs", "1"]) == 0
    summary_one = capsys.readouterr().err.splitlines()[-1].split(" in ")[0]
    assert main([*common, "--output", str(parts), "--errors", str(tmp_path / "e3"), "--jobs", "3", "--parts"]) == 0
    summary_parts = capsys.readouterr().err.splitlines()[-1].split(" in ")[0]
    names = sorted(p.name for p in parts.iterdir())
    assert len(names) >= 3 and names[0] == "part-00000.parquet"
    rows = [r for name in names for r in pq.read_table(parts / name).to_pylist()]
    assert rows == pq.read_table(one).to_pylist()
    assert (tmp_path / "e3").read_text() == (tmp_path / "e1").read_text()
    assert summary_parts == summary_one and summary_one.startswith("6000 records, 1 rejected,")
    # the directory must be new or empty; --parts is for Parquet
    assert main([*common, "--output", str(parts), "--parts"]) == 2
    assert "must be a new or empty directory" in capsys.readouterr().err
    assert main([*common[:-1], "jsonl", "--output", str(tmp_path / "x"), "--parts"]) == 2
    assert "--parts writes Parquet part files" in capsys.readouterr().err


def test_jobs_with_files_of_one_chunk_and_of_many(tmp_path: Path, capsys, small_chunks: int) -> None:
    """``--jobs 2`` over a file of one chunk (decoded on the command's thread), one of many
    (on the threads) and one of one chunk again: the output and the counts of ``--jobs 1``."""
    import sys

    import pyarrow.parquet as pq

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import datagen

    copybook = datagen.write_copybook(tmp_path / "txn.cpy")
    files = [str(datagen.write_fixed_file(tmp_path / f"{name}.dat", n))
             for name, n in (("one", 10), ("many", 3 * small_chunks + 7), ("again", small_chunks))]
    outputs = {}
    for jobs in (1, 2):
        out = tmp_path / f"out{jobs}.parquet"
        assert main(["copybook", "decode", str(copybook), *files, "--to", "parquet", "--output", str(out),
                     "--jobs", str(jobs)]) == 0
        outputs[jobs] = (pq.read_table(out).to_pylist(), capsys.readouterr().err.splitlines()[-1].split(" in ")[0])
    assert outputs[1] == outputs[2]
    assert outputs[1][1].startswith(f"{10 + 4 * small_chunks + 7} records, 0 rejected,")


def test_jobs_must_be_positive(tmp_path: Path, capsys) -> None:
    copybook = tmp_path / "c.cpy"
    copybook.write_text("       01 R.\n          05 A PIC X(2).\n")
    (tmp_path / "d.dat").write_bytes(b"\xc1\xc1")
    assert main(["copybook", "decode", str(copybook), str(tmp_path / "d.dat"), "--jobs", "0"]) == 2
    assert "--jobs" in capsys.readouterr().err
