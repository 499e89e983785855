"""The compiled (fused, C) kernel = the NumPy kernels = the per-record decoder.

Property: on every copybook of the compiler oracle corpus (66 public real-world copybooks,
see data/compiler_corpus/SOURCES.md) that the batch decoder serves, and on a copybook of
every field kind the compiled kernel knows (zoned with trailing and leading overpunched
signs, unsigned zoned, packed signed and unsigned up to 18 digits, binary COMP and COMP-5
of 2, 4 and 8 bytes, text of up to 64 bytes and longer, OCCURS nested in OCCURS; each through
the kernel's portable text path and its AVX-512 one where the CPU has it), generated records whose every field
instance holds a valid encoding of a random value or bad data (random bytes, all 0x00, all
spaces, all 0xFF, one digit broken, a bad sign nibble), under several code pages, trimming
policies and null detection: the compiled kernel's Arrow batch and bad fields equal the
NumPy kernels' exactly, and its JSON lines and bad fields (paths with OCCURS subscripts,
offsets) equal the per-record decoder's.
"""

from __future__ import annotations

import random
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coupler.translators.copybook import kernels
from coupler.translators.copybook.arrow_json import json_lines
from coupler.translators.copybook.batch import BatchDecoder
from coupler.translators.copybook.decoder import DecodeStats, RecordDecoder, to_json
from coupler.translators.copybook.layout import build_layout
from coupler.translators.copybook.parser import parse_copybook, parse_file
from coupler.translators.copybook.picture import DecodeContext
from tests.properties import examples

CORPUS = Path(__file__).parent / "data" / "compiler_corpus"
COPYBOOKS = sorted(p for p in CORPUS.iterdir() if p.suffix.lower() == ".cpy")

EVERY_KIND = """\
       01  REC.
           05  T-TEXT        PIC X(12).
           05  T-ALPHA       PIC A(5).
           05  T-CODE        PIC X(8).
           05  Z-UNSIGNED    PIC 9(5).
           05  Z-TRAIL       PIC S9(7)V99.
           05  Z-LEAD        PIC S9(4) SIGN LEADING.
           05  Z-BIG         PIC S9(18).
           05  Z-TEN         PIC S9(10).
           05  P-UNSIGNED    PIC 9(9)V9(2) COMP-3.
           05  P-SIGNED      PIC S9(9)V99 COMP-3.
           05  P-SMALL       PIC S9(1) COMP-3.
           05  P-BIG         PIC S9(17) COMP-3.
           05  P-EIGHTEEN    PIC S9(18) COMP-3.
           05  B-HALF        PIC S9(4) COMP.
           05  B-UNSIGNED    PIC 9(8) COMP.
           05  B-FULL        PIC S9(9) COMP.
           05  B-SCALED      PIC S9(9)V99 COMP.
           05  B-DOUBLE      PIC S9(18) COMP.
           05  B-NATIVE      PIC 9(4) COMP-5.
           05  B-NATIVE-S    PIC S9(9) COMP-5.
           05  OUTER OCCURS 3 TIMES.
               10  O-CODE    PIC X(3).
               10  INNER OCCURS 2 TIMES.
                   15  I-QTY     PIC S9(3) COMP-3.
                   15  I-AMT     PIC S9(5)V99.
               10  O-FLAG    PIC X.
           05  T-TAIL        PIC X(20).
           05  T-NAME        PIC X(40).
           05  T-SIXTY-FOUR  PIC X(64).
           05  T-LONG        PIC X(70).
"""

OPTIONS = [
    {},
    {"improved_null_detection": "false", "string_trimming_policy": "none"},
    {"ebcdic_code_page": "cp1141", "string_trimming_policy": "left"},
    {"ebcdic_code_page": "common", "string_trimming_policy": "right"},
    {"ebcdic_code_page": "cp037", "string_trimming_policy": "keep_all", "trunc": "std"},
]

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(not kernels.FUSED_BUILT, reason="the fused kernel is not built (no C compiler at install)"),
]


#: the characters of a random text value (some outside the code pages: those fields are encoded as plain "A")
TEXT = "ABC xyz019-ÄÖÜäöüß€é"
#: random bytes -> those characters (``str.translate``: a text field can hold thousands of characters)
TEXT_OF_BYTE = {b: TEXT[b % len(TEXT)] for b in range(256)}


def _value(ft, rng: random.Random):
    if ft.kind == "string":
        return rng.randbytes(rng.randint(0, ft.size)).decode("latin-1").translate(TEXT_OF_BYTE)
    limit = ft.max_abs_unscaled - 1
    n = rng.randint(-limit if ft.signed else 0, limit)
    return Decimal(n).scaleb(-ft.scale) if ft.scale > 0 else n


def _instance(ft, ctx: DecodeContext, rng: random.Random) -> bytes:
    """A valid encoding of a random value, or bad data."""
    mode = rng.choice(["valid", "valid", "valid", "noise", "zeros", "spaces", "ff", "broken", "sign"])
    size = ft.size
    if mode in ("valid", "broken", "sign"):
        try:
            raw = bytearray(ft.encode(_value(ft, rng), ctx))
        except Exception:  # a character the code page lacks: plain text
            raw = bytearray(ft.encode("A", ctx))
        at = rng.randrange(size)
        if mode == "broken":
            raw[at] = rng.choice([0x40, 0xFA, 0x0A, 0xC1, 0x7B, 0xAF])
        elif mode == "sign":
            raw[-1] = (raw[-1] & 0xF0) | rng.choice([0x0, 0x5, 0x9, 0xA, 0xB, 0xE, 0xF])
            raw[0] = (raw[0] & 0x0F) | (rng.choice([0xA, 0xB, 0xC, 0xD, 0xE, 0x3]) << 4)
        return bytes(raw)
    if mode == "noise":
        return rng.randbytes(size)
    return {"zeros": b"\0", "spaces": b"\x40", "ff": b"\xff"}[mode] * size


def _records(layout, decoder: BatchDecoder, rng: random.Random, count: int) -> bytes:
    assert decoder.fused is not None
    size = decoder.record_size
    out = bytearray(rng.randbytes(size * count))
    for r in range(count):
        for col in decoder.fused.columns:
            for offset in col.offsets:
                at = r * size + offset
                out[at : at + col.ft.size] = _instance(col.ft, decoder.ctx, rng)
    return bytes(out)


#: the kernel's text paths this CPU runs: portable C, AVX2, AVX-512 VBMI (the best is the default)
TEXT_PATHS = kernels._fused.text_paths() if kernels.FUSED_BUILT else ["portable"]


@pytest.fixture(params=TEXT_PATHS, scope="module")
def text_path(request):
    """Each text path of the kernel, against the same oracles."""
    before = kernels._fused.text_path()
    kernels._fused.use_text_path(request.param)
    yield request.param
    kernels._fused.use_text_path(before)


def _check(layout, options: dict, seed: int, count: int = 24) -> None:
    if not BatchDecoder.supports(layout, options):
        return
    compiled = BatchDecoder(layout, options, compiled=True)
    numpy = BatchDecoder(layout, options, compiled=False)
    if compiled.fused is None:
        return
    assert numpy.fused is None
    raw = _records(layout, compiled, random.Random(seed), count)
    got, want = compiled.decode(raw, first_record=7), numpy.decode(raw, first_record=7)
    assert got.batch.equals(want.batch)
    assert got.bad == want.bad
    # the per-record decoder: same JSON lines, same bad fields (paths with subscripts, offsets)
    size = compiled.record_size
    lines = json_lines(got.batch)
    bad_r: list[tuple[int, str | None, int]] = []
    decoder = RecordDecoder(layout, options)  # one per stream, as `coupler copybook decode` has
    for i in range(count):
        stats = DecodeStats(on_bad_field=lambda e: bad_r.append((e.record - 1, e.field, e.offset)))
        rec = decoder.decode(raw[i * size : (i + 1) * size], record_id=i,
                                                   offset=i * size, stats=stats)
        assert lines[i] == to_json(rec), f"record {i}"
    bad_b = [(b.record - 7, b.path, (b.record - 7) * size + b.offset) for b in got.bad]
    assert sorted(bad_b) == sorted(bad_r)


@pytest.mark.parametrize("options", OPTIONS, ids=["default", "no-null-none", "cp1141-left", "common-right", "keep-std"])
# 8 examples of 40 records for each code page / policy and text path: every field instance
# meets each kind of bad data about 35 times (15 with COUPLER_PROPERTY_FULL=1)
@settings(max_examples=examples(8, 15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32))
def test_every_field_kind(options: dict, seed: int, text_path: str) -> None:
    _check(build_layout(parse_copybook(EVERY_KIND)), options, seed, count=40)


@pytest.mark.parametrize("copybook", COPYBOOKS, ids=[p.name for p in COPYBOOKS])
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), options=st.sampled_from(OPTIONS))
def test_compiler_corpus(copybook: Path, seed: int, options: dict) -> None:
    _check(build_layout(parse_file(copybook)), options, seed)


def test_the_corpus_has_compiled_fields_of_every_kind() -> None:
    """The corpus exercises the compiled kernel: zoned, packed, binary and text columns."""
    kinds: set[int] = set()
    served = 0
    for copybook in COPYBOOKS:
        layout = build_layout(parse_file(copybook))
        if BatchDecoder.supports(layout, {}):
            served += 1
            decoder = BatchDecoder(layout, compiled=True)
            kinds |= {c.kind for c in decoder.fused.columns} if decoder.fused else set()
    assert served >= 30
    assert kinds == {1, 2, 3, 4}


def test_compiled_is_the_default_when_built() -> None:
    layout = build_layout(parse_copybook(EVERY_KIND))
    assert (BatchDecoder(layout).fused is not None) == kernels.COMPILED


def test_a_program_that_reaches_past_the_record_is_refused() -> None:
    """The kernel checks every field against the record size before reading (no stray reads)."""
    import numpy as np

    from coupler.translators.copybook import _fused

    layout = build_layout(parse_copybook("       01 R.\n          05 A PIC X(4).\n          05 B PIC S9(5) COMP-3.\n"))
    kernel = BatchDecoder(layout, compiled=True).fused
    assert kernel is not None
    prog, *_ = kernel._program(2)
    with pytest.raises(ValueError, match="does not fit a 5-byte record"):
        _fused.run(np.zeros((2, 5), np.uint8), 2, 5, prog, kernel.instances, kernel.tables,
                   bytearray(99), bytearray(99), bytearray(99), bytearray(99), np.zeros(9, np.int64))
    short = BatchDecoder(layout, {"record_length": "5"}, compiled=True)  # B is NumPy's then
    assert short.fused is not None and [c.ft.size for c in short.fused.columns] == [4]
