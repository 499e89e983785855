"""Layout families: several copybook versions of one record, the version picked per record
(a record-version field) or per file (its name), every record tagged ``name@version``."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from coupler.canonical.registry import SchemaRegistry
from coupler.translators.copybook.decoder import BadRecord, DecodeStats
from coupler.translators.copybook.encoder import RecordEncoder
from coupler.translators.copybook.family import FamilyError, LayoutFamily, VersionedRecord

V1 = """\
       01  CUSTOMER.
           05  REC-VERSION     PIC X(2).
           05  CUST-ID         PIC 9(6).
           05  NAME            PIC X(20).
           05  BALANCE         PIC S9(7)V99 COMP-3.
"""
V2 = """\
       01  CUSTOMER.
           05  REC-VERSION     PIC X(2).
           05  CUST-ID         PIC 9(6).
           05  NAME            PIC X(20).
           05  EMAIL           PIC X(30).
           05  BALANCE         PIC S9(7)V99 COMP-3.
"""
R1 = {"REC_VERSION": "01", "CUST_ID": 42, "NAME": "ANN SMITH", "BALANCE": Decimal("-12.50")}
R2 = {"REC_VERSION": "02", "CUST_ID": 43, "NAME": "BOB JONES", "EMAIL": "BOB@EXAMPLE.COM",
      "BALANCE": Decimal("1000.00")}


@pytest.fixture
def family_dir(tmp_path: Path) -> Path:
    (tmp_path / "cust_v1.cpy").write_text(V1)
    (tmp_path / "cust_v2.cpy").write_text(V2)
    return tmp_path


def family(family_dir: Path, selector: dict, **options: str) -> LayoutFamily:
    return LayoutFamily.from_config(
        {"name": "acme.Customer", "versions": {"1": "cust_v1.cpy", "2": "cust_v2.cpy"},
         "selector": selector, "options": options},
        base_dir=family_dir,
    )


def encode(fam: LayoutFamily, version: int, record: dict, *, framed: bool = False) -> bytes:
    encoder = RecordEncoder(fam.layouts[version], fam.options)
    return encoder.framed(record) if framed else encoder.encode(record)


FIELD = {"field": "REC-VERSION", "values": {"01": 1, "02": 2}}


def test_a_version_field_selects_the_layout_in_a_variable_length_file(family_dir: Path) -> None:
    fam = family(family_dir, FIELD, record_format="V")
    data = family_dir / "mixed.dat"
    data.write_bytes(b"".join(encode(fam, v, r, framed=True) for v, r in [(1, R1), (2, R2), (1, R1)]))
    out = list(fam.decode_files([data]))
    assert all(isinstance(r, VersionedRecord) for r in out)
    assert [str(r.format) for r in out] == ["acme.Customer@1", "acme.Customer@2", "acme.Customer@1"]
    assert [r.record for r in out] == [R1, R2, R1]
    assert [r.number for r in out] == [0, 1, 2]
    assert out[1].offset == 4 + 33 + 4  # after the first RDW + record and the second RDW


def test_fixed_length_records_take_the_size_of_their_version(family_dir: Path) -> None:
    fam = family(family_dir, FIELD)
    assert {v: layout.size for v, layout in fam.layouts.items()} == {1: 33, 2: 63}
    data = family_dir / "mixed.dat"
    data.write_bytes(encode(fam, 2, R2) + encode(fam, 1, R1) + encode(fam, 2, R2))
    out = list(fam.decode_files([data]))
    assert [(r.version, r.offset) for r in out] == [(2, 0), (1, 63), (2, 96)]
    assert [r.record for r in out] == [R2, R1, R2]


def test_an_unknown_version_value_is_a_bad_record_and_decoding_goes_on(family_dir: Path) -> None:
    fam = family(family_dir, FIELD, record_format="V")
    data = family_dir / "mixed.dat"
    bad = encode(fam, 1, {**R1, "REC_VERSION": "07"}, framed=True)
    data.write_bytes(encode(fam, 1, R1, framed=True) + bad + encode(fam, 2, R2, framed=True))
    stats = DecodeStats()
    out = list(fam.decode_files([data], stats=stats))
    assert [type(r).__name__ for r in out] == ["VersionedRecord", "BadRecord", "VersionedRecord"]
    report = out[1].error.to_dict()
    assert report["record"] == 2 and report["field"] == "CUSTOMER.REC_VERSION"
    assert report["raw_hex"] == "F0F7" and "no version of acme.Customer" in report["reason"]
    assert report["offset"] == 4 + 33 + 4
    assert (stats.records, stats.errors) == (2, 1)
    # with a default the record is read with that version
    fam = family(family_dir, {**FIELD, "default": 1}, record_format="V")
    out = list(fam.decode_files([data]))
    assert [r.version for r in out] == [1, 1, 2] and out[1].record["REC_VERSION"] == "07"


def test_the_file_name_selects_the_layout(family_dir: Path) -> None:
    fam = family(family_dir, {"file_name": {"*_V1.DAT": 1, "*_V2.DAT": 2}})
    old, new = family_dir / "CUST_V1.DAT", family_dir / "CUST_V2.DAT"
    old.write_bytes(encode(fam, 1, R1) * 2)
    new.write_bytes(encode(fam, 2, R2))
    out = list(fam.decode_files([old, new]))
    assert [(r.file, r.format.ref, r.number) for r in out] == [
        (str(old), "acme.Customer@1", 0), (str(old), "acme.Customer@1", 1), (str(new), "acme.Customer@2", 0)]
    other = family_dir / "CUST.DAT"
    other.write_bytes(b"")
    with pytest.raises(FamilyError, match=r"no version of acme.Customer for the file name CUST.DAT") as err:
        list(fam.decode_files([other]))
    assert "*_V1.DAT" in str(err.value)


def test_the_bus_converts_records_between_versions(family_dir: Path) -> None:
    fam = family(family_dir, FIELD, record_format="V")
    registry = SchemaRegistry()
    assert [str(f) for f in fam.register(registry)] == ["acme.Customer@1", "acme.Customer@2"]
    assert registry.versions("acme.Customer") == [1, 2]
    fam.register(registry)  # the same schemas again: nothing changes
    data = family_dir / "mixed.dat"
    data.write_bytes(encode(fam, 1, R1, framed=True) + encode(fam, 2, R2, framed=True))
    old, new = fam.decode_files([data])
    # a consumer reading version 2 gets the v1 record with the new field empty ...
    assert registry.convert(old.record, old.format, "acme.Customer@2") == {**R1, "EMAIL": None}
    # ... and one reading version 1 gets the v2 record without it
    expected = {k: v for k, v in R2.items() if k != "EMAIL"}
    assert registry.convert(new.record, new.format, "acme.Customer@1") == expected


def test_a_family_loads_from_toml_and_json(family_dir: Path) -> None:
    (family_dir / "family.toml").write_text(
        'name = "acme.Customer"\n'
        'versions = { 1 = "cust_v1.cpy", 2 = "cust_v2.cpy" }\n'
        '[selector]\nfield = "REC-VERSION"\nvalues = { "01" = 1, "02" = 2 }\n'
        '[options]\nrecord_format = "V"\n'
    )
    fam = LayoutFamily.load(family_dir / "family.toml")
    assert fam.versions == [1, 2] and fam.options.record_format == "V"
    assert fam.schema(2)["name"] == "Customer" and fam.schema(2)["namespace"] == "acme"
    (family_dir / "family.json").write_text(json.dumps(
        {"name": "acme.Customer", "versions": {"1": "cust_v1.cpy"}, "selector": {"file_name": {"*": 1}}}))
    assert LayoutFamily.load(family_dir / "family.json").versions == [1]


@pytest.mark.parametrize("change, message, where", [
    ({"colour": "blue"}, "unknown key 'colour'", "colour"),
    ({"name": "acme Customer"}, "not a format name", "name"),
    ({"versions": {"1": "missing.cpy"}}, "does not exist", "versions.1"),
    ({"versions": {"x": "cust_v1.cpy"}}, "not a version number", "versions.x"),
    ({"selector": {"field": "REC-VERSION", "values": {"01": 3}}}, "names version 3", "selector"),
    ({"selector": {"field": "NO-SUCH", "values": {"01": 1}}}, "no field named 'NO-SUCH'", "versions.1"),
    ({"selector": {"field": "NAME", "values": {"A": 1}, "file_name": {"*": 1}}}, "not both", "selector"),
    ({"options": {"record_formt": "V"}}, "unknown option", "options"),
    ({"options": {"segment-children:1": "A => B"}}, "not supported in a layout family", "options"),
])
def test_declaration_errors_name_the_key(family_dir: Path, change: dict, message: str, where: str) -> None:
    config = {"name": "acme.Customer", "versions": {"1": "cust_v1.cpy", "2": "cust_v2.cpy"},
              "selector": FIELD, **change}
    with pytest.raises(FamilyError, match=message) as err:
        LayoutFamily.from_config(config, base_dir=family_dir, source="family.toml")
    assert err.value.where.startswith(f"family.toml: {where}")


@pytest.mark.parametrize(("name", "text", "nested"), [
    ("deep.toml", "x = " + "[" * 2000 + "]" * 2000 + "\n", "TOML nested too deeply"),
    ("deep.json", '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}", "JSON nested too deeply")])
def test_a_declaration_nested_too_deep_is_refused_in_one_line(tmp_path: Path, name: str, text: str, nested: str) -> None:
    """Neither tomllib nor json has a nesting limit of its own: a RecursionError before."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(FamilyError, match=nested) as err:
        LayoutFamily.load(path)
    assert err.value.where == str(path) and "\n" not in str(err.value)


def test_the_version_field_must_sit_at_the_same_place_in_every_version(family_dir: Path) -> None:
    (family_dir / "cust_v3.cpy").write_text(V2.replace("05  REC-VERSION     PIC X(2).\n", "") + (
        "           05  REC-VERSION     PIC X(2).\n"))
    config = {"name": "acme.Customer", "versions": {"1": "cust_v1.cpy", "3": "cust_v3.cpy"}, "selector": FIELD}
    with pytest.raises(FamilyError, match="bytes 1-2 in version 1 but 62-63 in version 3"):
        LayoutFamily.from_config({**config, "selector": {**FIELD, "values": {"01": 1, "03": 3}}},
                                 base_dir=family_dir)


def test_strict_policy_applies_per_version(family_dir: Path) -> None:
    fam = family(family_dir, FIELD, record_format="V")
    good = encode(fam, 2, R2, framed=True)
    corrupt = bytearray(good)
    corrupt[-1] = 0x99  # sign nibble 9: not a packed-decimal sign
    data = family_dir / "mixed.dat"
    data.write_bytes(good + bytes(corrupt))
    out = list(fam.decode_files([data], policy="strict"))
    assert isinstance(out[0], VersionedRecord) and isinstance(out[1], BadRecord)
    assert out[1].error.field == "CUSTOMER.BALANCE"
    lenient = list(fam.decode_files([data]))
    assert lenient[1].record.get("BALANCE") is None and lenient[1].version == 2


def test_cli_describes_and_decodes_a_family(family_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from coupler.bus.cli.main import main

    (family_dir / "family.toml").write_text(
        'name = "acme.Customer"\nversions = { 1 = "cust_v1.cpy", 2 = "cust_v2.cpy" }\n'
        '[selector]\nfield = "REC-VERSION"\nvalues = { "01" = 1, "02" = 2 }\n[options]\nrecord_format = "V"\n'
    )
    assert main(["copybook", "family", str(family_dir / "family.toml"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert [(v["format"], v["record_size"]) for v in info["versions"]] == [("acme.Customer@1", 33), ("acme.Customer@2", 63)]
    assert info["selector"]["field"] == "REC-VERSION"
    fam = LayoutFamily.load(family_dir / "family.toml")
    data = family_dir / "mixed.dat"
    data.write_bytes(encode(fam, 2, R2, framed=True) + encode(fam, 1, R1, framed=True))
    assert main(["copybook", "family", str(family_dir / "family.toml"), str(data)]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0] == ('{"format":"acme.Customer@2","record":{"REC_VERSION":"02","CUST_ID":43,'
                        '"NAME":"BOB JONES","EMAIL":"BOB@EXAMPLE.COM","BALANCE":1000.00}}')
    assert json.loads(lines[1])["format"] == "acme.Customer@1"
    assert "2 records (1 acme.Customer@1, 1 acme.Customer@2), 0 errors" in err
    assert main(["copybook", "family", str(family_dir / "nope.toml")]) == 1
