"""``occurs_mappings``: a DEPENDING ON field's values (text, as Cobrix reads them) mapped to
element counts, per OCCURS item, as in Cobrix's test25."""

from __future__ import annotations

from pathlib import Path

import pytest

from coupler.bus.cli.main import main
from coupler.translators.copybook.decoder import (
    BadRecord,
    DecodeStats,
    RecordDecoder,
    decode_files,
    to_json,
)
from coupler.translators.copybook.encoder import RecordEncoder
from coupler.translators.copybook.errors import CopybookLayoutError
from coupler.translators.copybook.layout import build_layout
from coupler.translators.copybook.options import OptionsError
from coupler.translators.copybook.parser import parse_copybook

COPYBOOK = """\
       01  RECORD.
           05  ID                PIC 9(1).
           05  DATA.
               10  FIELD         PIC X.
               10  DETAIL1       OCCURS 0 TO 2 TIMES DEPENDING ON FIELD.
                   15  VAL1      PIC X.
               10  DETAIL2       OCCURS 0 TO 2 TIMES DEPENDING ON FIELD.
                   15  VAL2      PIC X.
"""
MAPPINGS = '{"DETAIL1": {"A": 0, "B": 1}, "DETAIL2": {"A": 1, "B": 2}}'
BASE = {"encoding": "ascii", "occurs_mappings": MAPPINGS, "schema_retention_policy": "keep_original"}
EXPECTED = [  # Cobrix's output for the same records (test25)
    '{"RECORD":{"ID":1,"DATA":{"FIELD":"A","DETAIL1":[],"DETAIL2":[{"VAL2":"X"}]}}}',
    '{"RECORD":{"ID":2,"DATA":{"FIELD":"B","DETAIL1":[{"VAL1":"X"}],"DETAIL2":[{"VAL2":"Y"},{"VAL2":"Z"}]}}}',
]


@pytest.fixture
def layout():
    return build_layout(parse_copybook(COPYBOOK))


def decode(layout, path: Path, options: dict) -> list[str]:
    out = []
    for rec in decode_files(layout, [path], options):
        assert not isinstance(rec, BadRecord), rec.error
        out.append(to_json(rec))
    return out


def test_variable_size_records_take_their_counts_from_the_mapping(layout, tmp_path: Path) -> None:
    data = tmp_path / "data.dat"
    data.write_bytes(b"1AX2BXYZ")  # records of 3 and 5 bytes, cut by the mapped counts
    assert decode(layout, data, {**BASE, "variable_size_occurs": "true"}) == EXPECTED


def test_fixed_size_records_use_the_mapping_for_the_array_lengths(layout, tmp_path: Path) -> None:
    data = tmp_path / "data.dat"
    data.write_bytes(b"1A  X 2BX YZ")  # every array takes its 2 slots
    assert layout.size == 6
    assert decode(layout, data, BASE) == EXPECTED
    # and through the CLI (the per-record decoder serves text counters)
    copybook = tmp_path / "rec.cpy"
    copybook.write_text(COPYBOOK)
    opts = [x for k, v in BASE.items() for x in ("-o", f"{k}={v}")]
    out = tmp_path / "out.jsonl"
    assert main(["copybook", "decode", str(copybook), str(data), *opts, "--output", str(out)]) == 0
    assert out.read_text().splitlines() == EXPECTED


def test_a_key_may_name_the_counter_field(layout, tmp_path: Path) -> None:
    data = tmp_path / "data.dat"
    data.write_bytes(b"1A  X 2BX YZ")
    rows = decode(layout, data, {**BASE, "occurs_mappings": '{"FIELD": {"A": 1, "B": 2}}'})
    # FIELD = A sizes both arrays to 1 (the blank slot of DETAIL1 is an empty string)
    assert rows[0] == '{"RECORD":{"ID":1,"DATA":{"FIELD":"A","DETAIL1":[{"VAL1":""}],"DETAIL2":[{"VAL2":"X"}]}}}'


def test_an_unmapped_value_is_a_bad_field(layout) -> None:
    strict = RecordDecoder(layout, {**BASE, "variable_size_occurs": "false"}, policy="strict")
    bad = strict.decode(b"3C    ", record_id=4)
    assert isinstance(bad, BadRecord)
    assert bad.error.field == "RECORD.DATA.DETAIL1"
    assert "'C' is not in occurs_mappings for DETAIL1" in bad.error.reason
    stats = DecodeStats()
    lenient = RecordDecoder(layout, BASE).decode(b"3C    ", stats=stats)
    assert lenient == {"RECORD": {"ID": 3, "DATA": {"FIELD": "C", "DETAIL1": [], "DETAIL2": []}}}
    assert stats.bad_field_names == {"RECORD.DATA.DETAIL1": 1, "RECORD.DATA.DETAIL2": 1}


def test_records_encode_back_to_the_same_bytes(layout) -> None:
    options = {**BASE, "variable_size_occurs": "true"}
    decoder, encoder = RecordDecoder(layout, options), RecordEncoder(layout, options)
    for raw in (b"1AX", b"2BXYZ"):
        assert encoder.encode(decoder.decode(raw)) == raw


def test_bad_mappings_are_errors(layout) -> None:
    with pytest.raises(CopybookLayoutError, match="not numeric"):
        RecordDecoder(layout, {"encoding": "ascii"})  # a text counter needs a mapping
    with pytest.raises(OptionsError, match="not an element count"):
        RecordDecoder(layout, {**BASE, "occurs_mappings": '{"DETAIL1": {"A": 0, "B": 1.5}}'})
    with pytest.raises(OptionsError, match="not an element count"):
        RecordDecoder(layout, {**BASE, "occurs_mappings": '{"DETAIL1": {"A": "Z"}}'})
    with pytest.raises(CopybookLayoutError, match="no OCCURS DEPENDING ON item") as err:
        RecordDecoder(layout, {**BASE, "occurs_mappings": '{"DETAIL9": {"A": 0}}'})
    assert "DETAIL1" in (err.value.hint or "")
