"""Layouts against the compiler: 98 public real-world copybooks (AWS CardDemo, IBM CICS
GenApp, IBM CICS Banking Sample Application; see data/compiler_corpus/SOURCES.md) laid out
by GnuCOBOL with IBM binary sizes, and the compiler-directing statements of a copybook
(EJECT, SKIPn, TITLE, PROCESS, REPLACE, debugging lines) read as GnuCOBOL reads them.

For every copybook a COBOL program is generated and compiled at test time (``cobc`` is a
real dependency: the test fails when it is missing), all of them as subprograms of one
source compiled once for the module (see :func:`cobc_oracle.compiler_layouts`); each prints every named item's address
minus its record's address and its LENGTH OF, which must equal the start and size that
``coupler copybook layout --json`` reports. The compiler here is 64-bit, so USAGE POINTER
takes 8 bytes: the layout is asked for the same (``--option pointer_size=8``; IBM's 31-bit
4 bytes stay the default).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from coupler.bus.cli.main import main

sys.path.insert(0, str(Path(__file__).parent))
from cobc_oracle import compiler_layout, compiler_layouts, coupler_layout  # noqa: E402

CORPUS = Path(__file__).parent / "data" / "compiler_corpus"
COPYBOOKS = sorted(p for p in CORPUS.iterdir() if p.suffix.lower() == ".cpy")

# one worker under pytest-xdist runs the module's tests: the corpus is compiled once
pytestmark = [pytest.mark.timeout(600), pytest.mark.xdist_group("compiler_corpus")]


@pytest.fixture(scope="module")
def corpus_oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, tuple[int, int]] | Exception]:
    """The compiler's ``{path: (offset, length)}`` of every corpus copybook, or the error that
    laying it out raised (that copybook's test raises it again)."""
    from coupler.translators.copybook.layout import build_layout
    from coupler.translators.copybook.parser import parse_file

    out: dict[str, dict[str, tuple[int, int]] | Exception] = {}
    cases = []
    for copybook in COPYBOOKS:
        try:
            cases.append((copybook, build_layout(parse_file(copybook), pointer_size=8)))
        except Exception as exc:  # noqa: BLE001 - raised again by the copybook's own test
            out[copybook.name] = exc
    for (copybook, _), theirs in zip(cases, compiler_layouts(cases, tmp_path_factory.mktemp("oracle")), strict=True):
        out[copybook.name] = theirs
    return out


def test_the_corpus_is_large_enough() -> None:
    assert len(COPYBOOKS) >= 95


@pytest.mark.parametrize("copybook", COPYBOOKS, ids=[p.name for p in COPYBOOKS])
def test_offsets_and_lengths_match_the_compiler(copybook: Path, corpus_oracle, capsys) -> None:
    theirs = corpus_oracle[copybook.name]
    if isinstance(theirs, Exception):
        raise theirs
    assert main(["copybook", "layout", str(copybook), "--json", "--option", "pointer_size=8"]) == 0
    rows = json.loads(capsys.readouterr().out)
    ours = coupler_layout(rows)
    assert set(theirs) == set(ours)
    wrong = {path: (ours[path], theirs[path]) for path in ours if ours[path] != theirs[path]}
    assert not wrong, f"(coupler, cobc) differ: {wrong}"


DIRECTIVES = Path(__file__).parent / "data" / "directives" / "DIRECTIV.cpy"


@pytest.mark.parametrize("debugging", [False, True], ids=["debugging-lines-off", "debugging-lines-on"])
def test_compiler_directing_statements_are_read_as_the_compiler_reads_them(debugging: bool, tmp_path: Path) -> None:
    """EJECT, SKIP1/2/3, TITLE, PROCESS, *CBL (column 7), REPLACE ... BY / REPLACE OFF and
    debugging lines (``D`` in column 7, also with the level number in column 8): the layout
    is GnuCOBOL's, with debugging lines left out and, like ``cobc -fdebugging-line``
    (WITH DEBUGGING MODE), read."""
    from coupler.translators.copybook.layout import build_layout
    from coupler.translators.copybook.parser import parse_file

    layout = build_layout(parse_file(DIRECTIVES, debug_lines=debugging))
    ours = coupler_layout(layout.rows())
    theirs = compiler_layout(DIRECTIVES, layout, tmp_path, ("-fdebugging-line",) if debugging else ())
    assert ours == theirs
    debug_items = {"ACCT_REC.ACCT_DEBUG_TRACE", "ACCT_REC.ACCT_DEBUG_FLAG"}
    assert (debug_items <= set(ours)) is debugging
    # REPLACE changed the record it precedes (HIST-REC, X(24)); after REPLACE OFF the word is a name again
    assert ours["HIST_REC.HIST_NOTE"] == (8, 24) and "TRAILER_REC.LEN_OF_NOTE" in ours
