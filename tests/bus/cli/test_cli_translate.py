"""``coupler translate`` run as a user runs it: copybook, XML, Avro and JSON lines through
the canonical model with mappings."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import fastavro
import pytest

from tests.terminal import coupler_on_a_terminal

DATA = Path(__file__).resolve().parents[2] / "translators" / "mapping" / "data"
CPY = f"copybook:{DATA / 'account.cpy'}"
XML = f"xml:{DATA / 'accounts.xsd'}@accounts/account"
MAPS = ["--map", str(DATA / "account-copybook.toml"), "--map", str(DATA / "account-xml.toml")]
COMMON = ["-o", "encoding=ascii", "--schemas", str(DATA / "schemas")]

#: three 92-byte ACCOUNT-REC records of account.cpy (ASCII display numbers, COMP-3 balance:
#: John Smith, Cher, Ada Lovelace)
RECORDS = [(DATA / "accounts.dat").read_bytes()[i:i + 92] for i in range(0, 276, 92)]


def coupler(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coupler.bus.cli.main", *args], capture_output=True, text=True,
                          timeout=60, cwd=cwd)


@pytest.fixture()
def data_file(tmp_path: Path) -> Path:
    assert all(len(r) == 92 for r in RECORDS)
    path = tmp_path / "accounts.dat"
    path.write_bytes(b"".join(RECORDS))
    return path


def test_copybook_to_xml_to_copybook_is_byte_for_byte(tmp_path: Path, data_file: Path) -> None:
    xml = tmp_path / "accounts.xml"
    out = coupler("translate", "--from", CPY, "--to", XML, *MAPS, *COMMON, str(data_file), "--output", str(xml), "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert (summary["read"], summary["written"], summary["errors"]) == (3, 3, 0)
    assert summary["stages"] == ["map account-copybook.toml legacy -> canonical", "map account-xml.toml canonical -> legacy"]
    assert "3 records read, 3 written, 0 rejected, 0 bad fields" in out.stderr
    text = xml.read_text()
    assert '<account' in text and 'id="000042"' in text and "<state>Inactive</state>" in text
    assert "<openedOn>1815-12-10</openedOn>" in text and "<balance>-1234.50</balance>" in text
    # the namespaces are declared once, on the root: not again on each of the three records
    assert text.count("xmlns:xsi=") == 1 and text.split("\n")[1].startswith("<accounts ")
    assert text.count("<account ") == 3 and all("xmlns" not in line for line in text.split("\n")[2:])

    back = tmp_path / "back.dat"
    out = coupler("translate", "--from", XML, "--to", CPY, *MAPS, *COMMON, str(xml), "--output", str(back))
    assert out.returncode == 0, out.stderr
    assert back.read_bytes() == data_file.read_bytes()


def test_copybook_to_avro_of_a_newer_version_and_back(tmp_path: Path, data_file: Path) -> None:
    avro = tmp_path / "accounts.avro"
    out = coupler("translate", "--from", CPY, "--to", "avro:demo.Account@2", "--map", str(DATA / "account-copybook.toml"),
                  *COMMON, str(data_file), "--output", str(avro), "--json")
    assert out.returncode == 0, out.stderr
    assert "convert demo.Account@1 -> demo.Account@2" in json.loads(out.stdout)["stages"]
    with open(avro, "rb") as f:
        reader = fastavro.reader(f)
        assert reader.metadata["coupler.format"] == "demo.Account@2"
        records = list(reader)
    assert [r["account_id"] for r in records] == ["000042", "000107", "999999"]
    assert records[2]["name"] == "Ada Lovelace" and records[2]["status"] == "CLOSED"
    assert str(records[2]["balance"]) == "99999999.99" and records[0]["note"] == ""

    back = tmp_path / "back.dat"
    out = coupler("translate", "--from", "avro:demo.Account@2", "--to", CPY, "--map", str(DATA / "account-copybook.toml"),
                  *COMMON, str(avro), "--output", str(back))
    assert out.returncode == 0, out.stderr
    assert back.read_bytes() == data_file.read_bytes()


#: damaged Avro container headers on which fastavro raises neither ValueError nor EOFError
DAMAGED_AVRO = [
    # random bytes (test_cli_fuzz.py's binary input of COUPLER_FUZZ_SEED=9401): KeyError 'avro.schema'
    b"\xff\xfe\x00\x80" + __import__("random").Random(9401).randbytes(4096),
    b'Obj\x01\x04\x14avro.codec\x08null\x16avro.schema\x1a{"ayp": "int"}\x00' + bytes(16),  # KeyError 'type'
    b'Obj\x01\x02\x16avro.schema\x24{"type": "record", "name": "R"}\x00' + bytes(16),  # SchemaParseException
    b"Obj\x01\x8a\xdb",  # IndexError
]


def _zigzag(n: int) -> bytes:
    """An Avro long (zigzag varint) of ``n`` >= 0."""
    n, out = n << 1, bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes([*out, n])


def _header_then_a_block_of(size: int) -> bytes:
    """A valid container header (``demo.Account@2``'s writer schema needs none: any record
    schema) followed by a block that claims ``size`` bytes."""
    out = io.BytesIO()
    fastavro.writer(out, {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}, [])
    return out.getvalue() + _zigzag(1) + _zigzag(size) + bytes(64)


# lengths claimed far beyond the file: read as asked, each was one allocation of that size
# (MemoryError, an internal error); found by test_cli_fuzz.py with COUPLER_FUZZ_SEED=2379033618
DAMAGED_AVRO += [
    b"\xff\xfe\x00\x80" + __import__("random").Random(2379033618).randbytes(4096),
    b"Obj\x01" + _zigzag(1) + _zigzag(2**60) + b"avro.schema",  # a metadata key of 2^60 bytes
    _header_then_a_block_of(2**60),  # a data block of 2^60 bytes
]


@pytest.mark.parametrize("data", DAMAGED_AVRO,
                         ids=["random", "no-type", "no-fields", "cut", "random-huge", "huge-key", "huge-block"])
def test_a_damaged_avro_container_is_refused_in_one_line(tmp_path: Path, data: bytes) -> None:
    """Found by test_cli_fuzz.py (``COUPLER_FUZZ_SEED=9401``): ``--from avro:...`` on random
    bytes answered "internal error: KeyError: 'avro.schema'"."""
    from coupler.bus.cli.inputs import avro_records
    from coupler.canonical.errors import UsageError

    path = tmp_path / "damaged.avro"
    path.write_bytes(data)
    out = coupler("translate", "--from", "avro:demo.Account@2", "--to", "jsonl", "--schemas", str(DATA / "schemas"), str(path),
                  "--output", str(tmp_path / "out.jsonl"))
    assert out.returncode != 0
    assert out.stderr.startswith(f"coupler: error: {path}: cannot read it as demo.Account@2: "), out.stderr
    assert out.stderr.count("\n") == 1 and "internal error" not in out.stderr
    with pytest.raises(UsageError, match="not a readable Avro container file") as err:  # xml encode's reader
        list(avro_records(path))
    assert "\n" not in str(err.value)


def test_json_lines_both_ways(tmp_path: Path, data_file: Path) -> None:
    jsonl = tmp_path / "accounts.jsonl"
    out = coupler("translate", "--from", CPY, "--to", "jsonl", "--map", str(DATA / "account-copybook.toml"),
                  *COMMON, str(data_file), "--output", str(jsonl))
    assert out.returncode == 0, out.stderr
    first = json.loads(jsonl.read_text().splitlines()[0])
    assert first["opened"] == "2024-01-31" and first["branch"] == {"code": "B01", "city": "Leeds"}
    assert '"balance":-1234.50' in jsonl.read_text()  # exact decimal, scale kept

    back = tmp_path / "back.dat"
    out = coupler("translate", "--from", "jsonl", "--to", CPY, "--map", str(DATA / "account-copybook.toml"),
                  *COMMON, str(jsonl), "--output", str(back))
    assert out.returncode == 0, out.stderr
    assert back.read_bytes() == data_file.read_bytes()


def test_bad_records_are_counted_reported_and_skipped(tmp_path: Path, data_file: Path) -> None:
    bad = bytearray(data_file.read_bytes())
    bad[92 + 28] = ord("X")  # STATUS-CODE of record 2: not in the lookup table
    data_file.write_bytes(bytes(bad))
    xml = tmp_path / "out.xml"
    out = coupler("translate", "--from", CPY, "--to", XML, *MAPS, *COMMON, str(data_file), "--output", str(xml))
    assert out.returncode == 0, out.stderr  # lenient: reported and skipped, as in every decode path
    assert "record 2 at byte 92:" in out.stderr and "'X' is not in lookup table 'status'" in out.stderr
    assert "account-copybook.toml:" in out.stderr
    assert "3 records read, 2 written, 1 rejected, 0 bad fields" in out.stderr
    assert xml.read_text().count("<account ") == 2

    errors = tmp_path / "errors.jsonl"
    out = coupler("translate", "--from", CPY, "--to", XML, *MAPS, *COMMON, str(data_file), "--output", str(xml),
                  "--errors", str(errors))
    assert out.returncode == 0
    assert [(e["record"], e["offset"]) for e in map(json.loads, errors.read_text().splitlines())] == [(2, 92)]

    out = coupler("translate", "--from", CPY, "--to", XML, *MAPS, *COMMON, str(data_file), "--output", str(xml), "--strict")
    assert out.returncode == 1 and out.stderr.count("\n") == 1
    assert out.stderr.startswith("coupler: error: ") and "record 2 at byte 92:" in out.stderr


def test_max_errors_stops_translating_with_exit_status_1(tmp_path: Path, data_file: Path) -> None:
    """--max-errors as `copybook decode` has it: more than N errors stop the run (0: Cobrix's
    FAILFAST), the last line names the record (from 1) and its byte offset."""
    bad = bytearray(data_file.read_bytes())
    bad[28] = bad[92 + 28] = ord("X")  # STATUS-CODE of records 1 and 2: not in the lookup table
    data_file.write_bytes(bytes(bad))
    xml = tmp_path / "out.xml"
    run = ["translate", "--from", CPY, "--to", XML, *MAPS, *COMMON, str(data_file), "--output", str(xml)]

    out = coupler(*run, "--max-errors", "0")
    assert out.returncode == 1
    last = out.stderr.splitlines()[-1]
    assert last == f"coupler: error: stopped after more than 0 errors (--max-errors), the last at {data_file}: record 1 at byte 0"
    assert "1 records read, 0 written, 1 rejected" in out.stderr

    out = coupler(*run, "--max-errors", "1")
    assert out.returncode == 1
    assert out.stderr.splitlines()[-1].endswith(f"the last at {data_file}: record 2 at byte 92")

    out = coupler(*run, "--max-errors", "2")  # not exceeded: every record is read, the failed ones reported
    assert out.returncode == 0 and "(--max-errors)" not in out.stderr
    assert "3 records read, 1 written, 2 rejected" in out.stderr

    out = coupler(*run, "--max-errors", "-1")
    assert out.returncode == 2 and out.stderr == "coupler: error: --max-errors needs a number >= 0\n"


def test_max_errors_counts_bad_fields_of_copybook_input(tmp_path: Path, data_file: Path) -> None:
    """A field that cannot be decoded is null in lenient mode, and counts against --max-errors
    as it does in `copybook decode`."""
    bad = bytearray(data_file.read_bytes())
    bad[92 + 37 : 92 + 43] = b"\xff" * 6  # the COMP-3 balance of record 2: not packed decimal
    data_file.write_bytes(bytes(bad))
    jsonl = tmp_path / "out.jsonl"
    run = ["translate", "--from", CPY, "--to", "jsonl", *COMMON, str(data_file), "--output", str(jsonl)]

    out = coupler(*run)
    assert out.returncode == 0, out.stderr  # lenient: the field is null, the record translated
    assert "bad field:" in out.stderr and "record 2 at byte 129" in out.stderr
    assert len(jsonl.read_text().splitlines()) == 3

    out = coupler(*run, "--max-errors", "0")
    assert out.returncode == 1
    assert out.stderr.splitlines()[-1].startswith(
        f"coupler: error: stopped after more than 0 errors (--max-errors), the last at {data_file}: record 2 at byte 129")


def test_mapping_errors_and_usage_errors_are_one_line(tmp_path: Path, data_file: Path) -> None:
    broken = tmp_path / "broken.toml"
    text = (DATA / "account-copybook.toml").read_text().replace('"BRANCH-CITY"', '"BRANCH-TOWN"')
    text = text.replace('"copybook:account.cpy"', f'"copybook:{DATA / "account.cpy"}"')
    broken.write_text(text)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "BRANCH-TOWN" in t)
    out = coupler("translate", "--from", CPY, "--to", "jsonl", "--map", str(broken), *COMMON, str(data_file),
                  "--output", str(tmp_path / "o"))
    assert out.returncode == 1 and out.stderr.count("\n") == 1
    assert f"{broken}:{line}: legacy field 'BRANCH-TOWN'" in out.stderr

    out = coupler("translate", "--from", "cobol:x.cpy", "--to", "jsonl", str(data_file), "--output", str(tmp_path / "o"))
    assert out.returncode == 1 and "unknown format 'cobol:x.cpy'" in out.stderr

    out = coupler("translate", "--from", "jsonl", "--to", "jsonl", str(tmp_path / "missing"), "--output", str(tmp_path / "o"))
    assert out.returncode == 2 and "does not exist" in out.stderr


def test_progress_bar_on_a_terminal(tmp_path: Path, data_file: Path) -> None:
    data_file.write_bytes(b"".join(RECORDS) * 100)
    run = coupler_on_a_terminal(["translate", "--from", CPY, "--to", "jsonl", "--map", str(DATA / "account-copybook.toml"),
                                 *COMMON, str(data_file), "--output", str(tmp_path / "o.jsonl")])
    assert run.returncode == 0
    shown = run.shown
    assert "100.0% 300 records" in shown and "[" + "#" * 30 + "]" in shown
    assert "300 records read, 300 written, 0 rejected, 0 bad fields" in shown


# --- one rule for every decode path (issue 16) ---------------------------------------------
# The same input gives the same exit status in `copybook decode` and `translate` (and in
# `batch translate`: tests/spark/test_batch_translate.py): lenient, a rejected record is
# reported and skipped and the exit status is 0 (Cobrix's PERMISSIVE); 1 under --strict, or
# when more than --max-errors N errors were found (0: Cobrix's FAILFAST).

#: a truncated last record; a fixed-length file read as variable-length (a framing error)
BAD_INPUTS = {
    "truncated": (b"".join(RECORDS) + b"0001", []),
    "fixed-read-as-V": (b"".join(RECORDS), ["-o", "record_format=V"]),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
@pytest.mark.parametrize(("mode", "status"), [([], 0), (["--strict"], 1), (["--max-errors", "0"], 1),
                                              (["--max-errors", "5"], 0)])
def test_the_same_input_gives_the_same_exit_status_in_decode_and_translate(
    tmp_path: Path, case: str, mode: list[str], status: int,
) -> None:
    raw, options = BAD_INPUTS[case]
    data = tmp_path / "accounts.dat"
    data.write_bytes(raw)
    decode = coupler("copybook", "decode", str(DATA / "account.cpy"), str(data), "-o", "encoding=ascii", *options,
                     "--output", str(tmp_path / "d.jsonl"), *mode)
    translate = coupler("translate", "--from", CPY, "--to", "jsonl", *COMMON, *options, str(data),
                        "--output", str(tmp_path / "t.jsonl"), *mode)
    assert (decode.returncode, translate.returncode) == (status, status), (decode.stderr, translate.stderr)
    assert "Traceback" not in decode.stderr + translate.stderr
    if not mode:  # lenient: both summaries count the rejected record alike
        assert " 1 rejected, 0 bad fields" in decode.stderr and " 1 rejected, 0 bad fields" in translate.stderr


def test_summaries_count_bad_fields_as_copybook_decode_does(tmp_path: Path, data_file: Path) -> None:
    """Lenient bad fields are null and counted in the summary of both commands (and in
    translate's --json summary), not reported as 0 errors."""
    bad = bytearray(data_file.read_bytes())
    bad[92 + 37 : 92 + 43] = b"\xff" * 6  # the COMP-3 balance of record 2: not packed decimal
    bad[184 + 37 : 184 + 43] = b"\xff" * 6  # and of record 3
    data_file.write_bytes(bytes(bad))
    decode = coupler("copybook", "decode", str(DATA / "account.cpy"), str(data_file), "-o", "encoding=ascii",
                     "--output", str(tmp_path / "d.jsonl"))
    translate = coupler("translate", "--from", CPY, "--to", "jsonl", *COMMON, str(data_file),
                        "--output", str(tmp_path / "t.jsonl"), "--json")
    assert (decode.returncode, translate.returncode) == (0, 0), (decode.stderr, translate.stderr)
    assert "3 records, 0 rejected, 2 bad fields" in decode.stderr
    assert "3 records read, 3 written, 0 rejected, 2 bad fields" in translate.stderr
    summary = json.loads(translate.stdout)
    assert (summary["read"], summary["written"], summary["errors"], summary["bad_fields"]) == (3, 3, 0, 2)


def test_an_avro_file_of_another_schema_is_named_in_a_short_line(tmp_path: Path) -> None:
    """fastavro's schema mismatch prints both schemas whole (2.5 kB for acme.Customer): the
    line names the file's record and fields instead."""
    other = tmp_path / "orders.avro"
    schema = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"}, {"name": "item", "type": "string"}]}
    with other.open("wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), [{"id": 1, "item": "bolt"}])
    out = coupler("translate", "--from", "avro:acme.Customer@1", "--to", "jsonl", str(other), "--output", str(tmp_path / "o"))
    assert out.returncode == 1
    assert out.stderr == (f"coupler: error: {other}: cannot read it as acme.Customer@1: the file's records are Order"
                          " (fields id, item) (name the schema it was written with: --from avro:NAME@V)\n")
