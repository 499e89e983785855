"""Both decoders give the same output on every input, and no input escapes as a crash.

* Property: for hypothesis-generated layouts (groups, REDEFINES of fields and of groups,
  OCCURS, OCCURS DEPENDING ON, top-level items without an 01) and generated record bytes
  (random, all-zero regions that make fields and groups null, valid digits), the
  vectorised decoder (:func:`decode_file_batches` printed by :func:`json_lines`) and the
  per-record decoder (:func:`decode_files` printed by :func:`to_json`) give the same JSON
  lines, the same rejected records and the same counts, in ASCII and EBCDIC, lenient and
  strict.
  In lenient mode the batch kernel's bad fields are the per-record decoder's: same
  records, paths (with OCCURS subscripts) and offsets.
* Fuzz (issue 17): generated copybooks with ODO (nested too) and REDEFINES and random
  record bytes through the parser, both decoders and the schema: only ``CouplerError``
  subclasses escape, and no case takes more than 2 s or 200 MB.
"""

from __future__ import annotations

import resource
import time
import tracemalloc
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coupler.canonical.errors import CouplerError
from coupler.translators.copybook.arrow_json import json_lines
from coupler.translators.copybook.avro import avro_schema
from coupler.translators.copybook.batch import BatchDecoder
from coupler.translators.copybook.batch_files import batch_supported, decode_file_batches
from coupler.translators.copybook.decoder import (
    BadRecord,
    DecodeStats,
    RecordDecoder,
    decode_files,
    to_json,
)
from coupler.translators.copybook.layout import build_layout
from coupler.translators.copybook.parser import parse_copybook

pytestmark = pytest.mark.timeout(300)

ELEMENTARY = [
    "PIC X(3)", "PIC X(1)", "PIC 9(4)", "PIC S9(3)", "PIC S9(5)V99", "PIC 9(2) COMP",
    "PIC S9(4) COMP", "PIC S9(9) COMP", "PIC 9(8) COMP", "PIC S9(5) COMP-3", "PIC 9(3) COMP-3",
    "PIC S9(4) COMP-5", "PIC A(2)", "PIC S9(3) SIGN LEADING SEPARATE", "COMP-2", "PIC 9(18)",
]  # fmt: skip
COUNTERS = ["PIC 9(1)", "PIC 9 COMP-3", "PIC 9(2) COMP"]


@st.composite
def layouts(draw, *, nested_odo: bool = False) -> str:
    """Copybook text: a record of groups and fields with REDEFINES, OCCURS and ODO."""
    n = 0

    def name(prefix: str) -> str:
        nonlocal n
        n += 1
        return f"{prefix}-{n}"

    lines: list[str] = []
    top = draw(st.sampled_from([1, 3, 5]))
    if top == 1:
        lines.append("01  REC.")
        level = 5
    else:
        level = top

    def entry(lv: int, text: str) -> None:
        # fixed format: what stands past column 72 is not read (a deep REDEFINES with SIGN
        # LEADING SEPARATE lost its "TE", found by a run of 5,000 examples), so a long entry
        # goes on in area B of the next line
        indent = "    " * (lv // 5)
        line = indent + f"{lv:02d} "
        for word in f"{text}.".split():
            if len(line) + 1 + len(word) > 72 - 7:
                lines.append(line)
                line = indent + "    "
            line += " " + word
        lines.append(line)

    def group(lv: int, depth: int) -> None:
        siblings: list[str | None] = []  # None: an item that cannot be redefined (OCCURS)
        for _ in range(draw(st.integers(1, 4))):
            shape = draw(st.sampled_from(["field", "field", "group", "occurs", "odo", "redefines"]))
            if depth >= 2 and shape in ("group", "occurs"):
                shape = "field"
            if shape == "field":
                ident = name("F")
                entry(lv, f"{ident} {draw(st.sampled_from(ELEMENTARY))}")
                siblings.append(ident)
            elif shape == "group":
                ident = name("G")
                entry(lv, ident)
                group(lv + 5, depth + 1)
                siblings.append(ident)
            elif shape == "occurs":
                ident = name("O")
                times = draw(st.integers(1, 3))
                if draw(st.booleans()):
                    entry(lv, f"{ident} {draw(st.sampled_from(ELEMENTARY))} OCCURS {times}")
                else:
                    entry(lv, f"{ident} OCCURS {times}")
                    group(lv + 5, depth + 1)
                siblings.append(None)
            elif shape == "odo":
                if depth and not nested_odo:
                    continue
                counter = name("N")
                entry(lv, f"{counter} {draw(st.sampled_from(COUNTERS))}")
                ident = name("D")
                high = draw(st.integers(1, 4))
                entry(lv, f"{ident} OCCURS 0 TO {high} DEPENDING ON {counter}")
                if nested_odo and depth < 2 and draw(st.booleans()):
                    group(lv + 5, depth + 1)
                else:
                    entry(lv + 5, f"{name('I')} {draw(st.sampled_from(ELEMENTARY))}")
                siblings.append(None)
            elif siblings and siblings[-1] is not None:
                target = siblings[-1]
                ident = name("R")
                if draw(st.booleans()):
                    entry(lv, f"{ident} REDEFINES {target} {draw(st.sampled_from(ELEMENTARY))}")
                else:
                    entry(lv, f"{ident} REDEFINES {target}")
                    group(lv + 5, depth + 1)
                # what follows a redefinition block is a new item (not another REDEFINES)
                after = name("F")
                entry(lv, f"{after} PIC X(2)")
                siblings.append(after)
        if not siblings:  # a group needs at least one item
            entry(lv, f"{name('F')} PIC X(1)")

    group(level, 0)
    return "".join(f"{'':7}{line}\n" for line in lines)


@st.composite
def records(draw, size: int, count: int) -> bytes:
    """``count`` records of ``size`` bytes: runs of zeros, spaces, digits and random bytes."""
    out = bytearray()
    for _ in range(count):
        rec = bytearray()
        while len(rec) < size:
            kind = draw(st.sampled_from(["zero", "random", "digits", "space"]))
            run = draw(st.integers(1, max(size, 1)))
            if kind == "zero":
                rec += bytes(run)
            elif kind == "space":
                rec += draw(st.sampled_from([b" ", b"\x40"])) * run
            elif kind == "digits":
                rec += bytes(draw(st.lists(st.sampled_from(b"0123456789\xf0\xf1\xf2\xf9\xc1\xd2"),
                                           min_size=run, max_size=run)))
            else:
                rec += draw(st.binary(min_size=run, max_size=run))
        out += rec[:size]
    return bytes(out)


OPTIONS = [{}, {"encoding": "ascii"}, {"improved_null_detection": "false"},
           {"encoding": "ascii", "string_trimming_policy": "none"}]


@settings(max_examples=250, deadline=timedelta(seconds=5),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(text=layouts(), options=st.sampled_from(OPTIONS), policy=st.sampled_from(["lenient", "strict"]),
       data=st.data())
def test_vectorised_equals_per_record(tmp_path, text: str, options, policy: str, data) -> None:
    layout = build_layout(parse_copybook(text))
    if not batch_supported(layout, options):
        return
    raw = data.draw(records(layout.size, data.draw(st.integers(1, 6))))
    path = tmp_path / "data.bin"
    path.write_bytes(raw)

    stats_r = DecodeStats()
    want, want_bad = [], []
    for rec in decode_files(layout, [path], options, stats=stats_r, policy=policy):
        if isinstance(rec, BadRecord):
            want_bad.append((rec.error.record, rec.error.field))
        else:
            want.append(to_json(rec))
    stats_b = DecodeStats()
    got, got_bad = [], []
    for fb in decode_file_batches(layout, [path], options, stats=stats_b, policy=policy):
        got.extend(json_lines(fb.batch))
        got_bad.extend((b.error.record, b.error.field) for b in fb.bad)
    assert got == want, text
    assert got_bad == want_bad
    if policy == "lenient":  # the bad fields the batch kernel finds have the per-record paths (OCCURS subscripts too)
        fields_r: list[tuple[int, str | None, int]] = []
        for i in range(len(raw) // layout.size):
            scratch = DecodeStats(on_bad_field=lambda e: fields_r.append((e.record - 1, e.field, e.offset)))
            RecordDecoder(layout, options).decode(raw[i * layout.size:(i + 1) * layout.size], record_id=i,
                                                  offset=i * layout.size, stats=scratch)
        kernel = BatchDecoder(layout, options).decode(raw)
        fields_b = [(b.record, b.path, b.record * layout.size + b.offset) for b in kernel.bad]
        assert sorted(fields_b) == sorted(fields_r), text
    assert (stats_b.records, stats_b.errors, stats_b.bad_fields) == (stats_r.records, stats_r.errors,
                                                                    stats_r.bad_fields)


def test_redefined_group_null_in_one_record_only(tmp_path) -> None:
    """The issue's reproduction: HDR is all-null in one record and not in the other."""
    text = """\
       01 REC.
          05 HDR.
             10 YYYY PIC 9(4).
             10 DD PIC 99.
          05 DET REDEFINES HDR.
             10 CELL PIC S9(3) OCCURS 2.
"""
    layout = build_layout(parse_copybook(text))
    path = tmp_path / "d.bin"
    path.write_bytes(b"aaaaaa202401")
    lines = [line for fb in decode_file_batches(layout, [path], {"encoding": "ascii"}) for line in json_lines(fb.batch)]
    assert lines == ['{"DET":{"CELL":[null,null]}}', '{"HDR":{"YYYY":2024,"DD":1},"DET":{"CELL":[202,401]}}']


# --- fuzz: bounded time and memory --------------------------------------------------------

_MB = 1 << 20


def _bounded(fn) -> None:
    """Run ``fn``: only CouplerErrors escape; no more than 2 s of CPU and 200 MB (Python
    allocations). CPU time, not wall time: the bound is on the work a hostile input causes,
    which another process loading the machine does not change."""
    tracemalloc.start()
    started = time.process_time()
    try:
        fn()
    except CouplerError as exc:
        assert str(exc)
    finally:
        elapsed = time.process_time() - started
        _cur, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert elapsed < 2.0, f"{elapsed:.2f} s"
    assert peak < 200 * _MB, f"{peak / _MB:.0f} MB"


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(text=layouts(nested_odo=True), raw=st.binary(max_size=400), options=st.sampled_from(
    [*OPTIONS, {"variable_size_occurs": "true"}, {"record_format": "V"},
     {"encoding": "ascii", "variable_size_occurs": "true"}]), policy=st.sampled_from(["lenient", "strict"]))
def test_fuzz_parser_and_both_decoders(tmp_path, text: str, raw: bytes, options, policy: str) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(raw)

    def run() -> None:
        layout = build_layout(parse_copybook(text))
        avro_schema(layout, options)
        RecordDecoder(layout, options, policy=policy).decode(raw)
        for rec in decode_files(layout, [path], options, policy=policy):
            if not isinstance(rec, BadRecord):
                to_json(rec)
        if batch_supported(layout, options):
            for fb in decode_file_batches(layout, [path], options, policy=policy):
                json_lines(fb.batch)

    _bounded(run)


def test_odo_bombs_finish_fast_in_little_memory(tmp_path) -> None:
    """Counts read from the data are checked before anything is allocated (issue 17)."""
    flat = """\
       01 REC.
          05 N PIC 9(9).
          05 A OCCURS 0 TO 100000000 DEPENDING ON N.
             10 C PIC X.
"""
    nested = """\
       01 REC.
          05 N PIC 9(6).
          05 A OCCURS 0 TO 100000 DEPENDING ON N.
             10 M PIC 9(6).
             10 B OCCURS 0 TO 100000 DEPENDING ON M.
                15 C PIC X.
"""
    cases = [(flat, b"100000000XYZ", {"encoding": "ascii"}),
             (flat, b"100000000XYZ", {"encoding": "ascii", "variable_size_occurs": "true"}),
             (nested, b"100000100000AB", {"encoding": "ascii", "variable_size_occurs": "true"}),
             (nested, b"100000100000AB", {"encoding": "ascii", "record_format": "V"})]
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for text, raw, options in cases:
        layout = build_layout(parse_copybook(text))
        for policy in ("lenient", "strict"):
            results: list = []

            def run(layout=layout, raw=raw, options=options, policy=policy, results=results) -> None:
                results.append(RecordDecoder(layout, options, policy=policy).decode(raw))

            _bounded(run)
            (result,) = results
            if policy == "strict":
                assert isinstance(result, BadRecord)
                assert "needs" in result.error.reason or "outside" in result.error.reason
            else:
                assert isinstance(result, dict)
                assert len(result.get("A") or []) <= len(raw)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before < 200 * 1024
