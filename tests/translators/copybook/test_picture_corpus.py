"""Elementary items against the Cobrix corpus: test6 (every usage) and test19 (DISPLAY)."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import numpy as np

from coupler.translators.copybook.picture import (
    DecodeContext,
    FieldDecodeError,
    FieldType,
    field_type,
)

CORPUS = Path(__file__).parent / "data" / "cobrix"
T6 = CORPUS / "05_test6_type_variety"
T19 = CORPUS / "14_test19_display_numbers"



def _flat_fields(copybook: Path) -> list[tuple[str, FieldType]]:
    """(name, type) of every elementary item of a flat copybook (one level under 01)."""
    lines = [
        ln[6:72] for ln in copybook.read_text().splitlines() if len(ln) > 6 and ln[6] not in "*/"
    ]
    text = " ".join(lines) + " "
    out = []
    for name, rest in re.findall(
        r"\b(?:05|10)\s+([A-Z0-9-]+)\s+(.*?)\.\s+(?=(?:05|10)\s|$)", text, re.S
    ):
        rest = " ".join(rest.split())
        m = re.search(r"PIC\s+(\S+)", rest)
        usage = "DISPLAY"
        for u in ("COMP-0", "COMP-1", "COMP-2", "COMP-3", "COMP-4", "COMP-5", "COMP", "BINARY"):
            if re.search(r"\b" + u + r"(?![-\w])", rest):
                usage = u
                break
        position = "leading" if "LEADING" in rest else "trailing" if "TRAILING" in rest else None
        ft = field_type(
            m.group(1) if m else None,
            usage,
            sign_separate="SEPARATE" in rest,
            sign_position=position,
        )
        out.append((name.replace("-", "_"), ft))
    return out


def _layout_lengths(path: Path) -> dict[str, int]:
    lengths = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[0] in ("5", "05", "10"):
            lengths[parts[1]] = int(parts[-1])
    return lengths


def test_sizes_equal_cobrix_layout_for_every_test6_field():
    fields = _flat_fields(T6 / "test6_copybook.cob")
    lengths = _layout_lengths(T6 / "test6_expected" / "test6_layout.txt")
    assert len(fields) == len(lengths) == 195
    assert {name: ft.size for name, ft in fields} == lengths
    assert sum(ft.size for _, ft in fields) == 1493


def test_every_test6_value_decodes_as_cobrix_and_round_trips():
    fields = _flat_fields(T6 / "test6_copybook.cob")
    ctx = DecodeContext(ebcdic_code_page="common", floating_point_format="IEEE754")
    data = (T6 / "test6_data" / "INTEGR.TYPES.NOV28.DATA.dat").read_bytes()
    expected = {}
    for line in (T6 / "test6_expected" / "test6.txt").read_text().splitlines():
        row = json.loads(line, parse_float=Decimal)
        expected[row["ID"]] = row
    checked = 0
    for r in range(len(data) // 1493):
        record = data[r * 1493 : (r + 1) * 1493]
        offset = 0
        values = {}
        for name, ft in fields:
            raw = record[offset : offset + ft.size]
            offset += ft.size
            try:
                values[name] = (ft.decode(raw, ctx), raw)
            except FieldDecodeError:
                values[name] = (None, raw)
        want = expected[values["ID"][0]]
        for name, ft in fields:
            value, raw = values[name]
            target = want.get(name)
            if value is None and ft.is_numeric:
                value = 0  # the expected file was written after na.fill(0)
            if ft.kind == "float":
                if ft.size == 4:
                    assert np.float32(value) == np.float32(float(target)), name
                else:
                    assert value == float(target), name
                continue
            assert value == target, (name, raw.hex())
            if isinstance(value, Decimal):
                assert value.as_tuple().exponent == -ft.scale, name
            if target is not None and value == target and values[name][0] is not None:
                assert ft.decode(ft.encode(value, ctx), ctx) == value, name
            checked += 1
    assert checked > 19000


def test_test19_display_numbers_blank_and_malformed_like_cobrix():
    fields = _flat_fields(T19 / "test19_display_num.cob")
    ctx = DecodeContext(ebcdic_code_page="common", improved_null_detection=False)
    data = (T19 / "test19_display_num" / "data.dat").read_bytes()
    rows = [
        json.loads(x, parse_float=Decimal)
        for x in (T19 / "test19_display_num_expected" / "test19.txt").read_text().splitlines()
    ]
    for r, want in enumerate(rows):
        record = data[r * 80 : (r + 1) * 80]
        offset = 0
        for name, ft in fields:
            raw = record[offset : offset + ft.size]
            offset += ft.size
            if name == "FILLER":
                continue
            try:
                value = ft.decode(raw, ctx)
            except FieldDecodeError:
                value = None
            assert value == want.get(name), (r, name, raw.hex())
            if isinstance(value, Decimal):
                assert str(value) == str(want[name])
