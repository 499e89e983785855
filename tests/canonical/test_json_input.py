"""JSON from outside read elsewhere than the mapping translator, with the inputs the mapping
fuzz test found (tests/translators/mapping/test_records_fuzz.py): nested 50 000 deep, or a
number whose exponent no decimal holds. Each reader refuses them in one line as bad JSON
(``canonical.streams.json_loads``); before, RecursionError or decimal.InvalidOperation
escaped (h92: the same reading as the fuzz finding, at every reader of outside JSON)."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest

from coupler.adapters.database.records import body_records
from coupler.canonical import FormatIndicator
from coupler.canonical.errors import CouplerError
from coupler.translators.copybook.encoder import encode_json_lines
from coupler.translators.copybook.layout import build_layout
from coupler.translators.copybook.parser import parse_copybook
from coupler.translators.xml.jsonio import read_jsonl

BAD = {"nested": '{"A":' + "[" * 50_000 + "]" * 50_000 + "}",
       "exponent": '{"A": -9999E99999999999999999999999999999999999}'}
LAYOUT = build_layout(parse_copybook("       01 R.\n          05 A PIC 9(5).\n"))
READERS: dict[str, Callable[[str], Any]] = {
    "xml encode's JSON lines": lambda text: list(read_jsonl(io.StringIO(text + "\n"), name="in.jsonl")),
    "copybook encode's JSON lines": lambda text: list(encode_json_lines(LAYOUT, [text])),
    "database adapter's JSON body": lambda text: body_records(text.encode(), FormatIndicator("acme.Row", 1, "application/json"), None),
}


#: (reader, input); the database adapter reads numbers as floats (the exponent is -inf there)
CASES = [(r, b) for r in READERS for b in BAD if (r, b) != ("database adapter's JSON body", "exponent")]


@pytest.mark.parametrize("reader,bad", CASES, ids=[f"{r}-{b}" for r, b in CASES])
def test_json_nested_deeply_or_with_a_huge_exponent_is_bad_json(reader: str, bad: str) -> None:
    with pytest.raises(CouplerError, match="not JSON") as caught:
        READERS[reader](BAD[bad])
    assert "\n" not in str(caught.value)
