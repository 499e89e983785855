"""Layouts against the compiler: 66 public real-world copybooks (AWS CardDemo, IBM CICS
GenApp; see data/compiler_corpus/SOURCES.md) laid out by GnuCOBOL with IBM binary sizes.

For every copybook a COBOL program is generated and compiled at test time (``cobc`` is a
real dependency: the test fails when it is missing); it prints every named item's address
minus its record's address and its LENGTH OF, which must equal the start and size that
``coupler copybook layout --json`` reports.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from coupler.bus.cli.main import main

sys.path.insert(0, str(Path(__file__).parent))
from cobc_oracle import compiler_layout, coupler_layout  # noqa: E402

CORPUS = Path(__file__).parent / "data" / "compiler_corpus"
COPYBOOKS = sorted(p for p in CORPUS.iterdir() if p.suffix.lower() == ".cpy")

pytestmark = pytest.mark.timeout(600)


def test_the_corpus_is_large_enough() -> None:
    assert len(COPYBOOKS) >= 40


@pytest.mark.parametrize("copybook", COPYBOOKS, ids=[p.name for p in COPYBOOKS])
def test_offsets_and_lengths_match_the_compiler(copybook: Path, tmp_path: Path, capsys) -> None:
    from coupler.translators.copybook.layout import build_layout
    from coupler.translators.copybook.parser import parse_file

    assert main(["copybook", "layout", str(copybook), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    ours = coupler_layout(rows)
    theirs = compiler_layout(copybook, build_layout(parse_file(copybook)), tmp_path)
    assert set(theirs) == set(ours)
    wrong = {path: (ours[path], theirs[path]) for path in ours if ours[path] != theirs[path]}
    assert not wrong, f"(coupler, cobc) differ: {wrong}"
