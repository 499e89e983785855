"""Fuzzing the copybook parser (lexer, parser, picture strings, layout, Avro schema) with the
repository's copybooks edited: lines dropped, repeated and cut, characters flipped, clauses
inserted that claim huge sizes (``PIC X(2147483648)``, ``OCCURS 999999999``, 400-digit
repeat counts), COPY and REPLACE statements, level numbers out of place. Parsing one and
building its layout, its Avro schema and a decoder (which then decodes random bytes) either
works or raises :class:`CouplerError` in one line: nothing else escapes (which ``coupler
copybook ...`` would show as an internal error). Each case is bounded in time (an interval
timer) and memory (tracemalloc's peak: nothing is allocated from a claimed size), by
``tests/fuzzing.py``. Bounded by
``COUPLER_FUZZ_SECONDS`` (3 s by default); the seed is printed and ``COUPLER_FUZZ_SEED=N``
replays a run."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from coupler.canonical.errors import CouplerError
from coupler.translators.copybook.avro import avro_schema
from coupler.translators.copybook.decoder import RecordDecoder, parse_options
from coupler.translators.copybook.layout import build_layout
from coupler.translators.copybook.parser import parse_copybook
from tests.fuzzing import BUDGET, MB, SEED, bounded

REPO = Path(__file__).resolve().parents[3]
FILES = sorted((Path(__file__).parent / "data").rglob("*.cpy")) + sorted((REPO / "examples").rglob("*.cpy"))
CLAUSES = ["PIC X(999999999)", "PIC 9(999999999)", "PIC S9(18)V9(18)", "PIC X(2147483648)", "OCCURS 999999999 TIMES",
           "OCCURS 1 TO 999999999 DEPENDING ON A", "OCCURS 0 TIMES", "PIC 9(10000)", "PIC X(0)", "PIC 9(40) COMP-3",
           "PIC 9(40) COMP", "REDEFINES X", "REDEFINES FILLER", "VALUE 'abc", "VALUE ALL 'X'", "PIC P(999)9",
           "PIC 9(5)P(99999)", "PIC ZZZ9.99CR", "COMP-1", "COMP-2", "POINTER", "INDEX", "SYNC", "SIGN LEADING SEPARATE",
           "66 R RENAMES A THRU B.", "88 C VALUE 1 THRU 999999999999999999999.", "COPY MISSING.",
           "REPLACE ==A== BY ==B==.", "PIC " + "9" * 500, "PIC X(" + "9" * 400 + ")", "OCCURS " + "9" * 400,
           "(", ")", ".", "'", '"', "\t", "*", "-", "01", "49", "77", "99"]


def _edit(rng: random.Random, text: str) -> str:
    lines = text.splitlines() or [""]
    for _ in range(rng.randrange(1, 5)):
        op = rng.randrange(6)
        at = rng.randrange(len(lines))
        if op == 0:
            del lines[at]
            lines = lines or [""]
        elif op == 1:
            lines.insert(at, lines[rng.randrange(len(lines))])
        elif op == 2:
            line = lines[at]
            p = rng.randrange(len(line) + 1)
            lines[at] = f"{line[:p]} {rng.choice(CLAUSES)} {line[p:]}"
        elif op == 3 and lines[at]:
            p = rng.randrange(len(lines[at]))
            lines[at] = lines[at][:p] + chr(rng.randrange(32, 127)) + lines[at][p + 1:]
        elif op == 4:
            level = rng.choice(["05", "10", "01", "02"])
            lines.insert(at, f"       {level} F{rng.randrange(99)} {rng.choice(CLAUSES)}.")
        else:
            lines[at] = lines[at][:rng.randrange(len(lines[at]) + 1)]
    return "\n".join(lines) + "\n"


def test_edited_copybooks_parse_or_say_what_is_wrong_in_one_line() -> None:
    print(f"COUPLER_FUZZ_SEED={SEED}")
    rng = random.Random(SEED)
    texts = [(f, f.read_text(encoding="utf-8", errors="replace")) for f in FILES]
    assert len(texts) > 50
    deadline, count, seen = time.monotonic() + BUDGET, 0, {"parsed": 0, "refused": 0}
    while time.monotonic() < deadline:
        source, original = rng.choice(texts)
        text = _edit(rng, original)
        count += 1
        label = f"copybook {count} from {source.name} (COUPLER_FUZZ_SEED={SEED})"
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200)))
        try:
            with bounded(label, memory=64 * MB, watchdog=True):
                try:
                    layout = build_layout(parse_copybook(text, file=source.name, copy_paths=[source.parent]))
                    avro_schema(layout, parse_options({}))
                    RecordDecoder(layout, parse_options({})).decode(data)
                    seen["parsed"] += 1
                except CouplerError as exc:
                    assert str(exc).strip() and "\n" not in str(exc), f"{label}: {exc!r}"
                    seen["refused"] += 1
        except Exception as exc:  # noqa: BLE001 - the finding, with the copybook that caused it
            pytest.fail(f"{label}: {type(exc).__name__}: {str(exc)[:200]}\n{text[:2000]}")
    print(f"{count} copybooks: {seen}")
    assert seen["parsed"] and seen["refused"], seen
