"""Property tests over whole records and copybooks.

* ``decode(encode(r)) == r`` for hypothesis-generated copybooks (every usage and picture
  form, SIGN, SYNCHRONIZED, JUSTIFIED, P scaling, OCCURS, OCCURS DEPENDING ON with fixed and
  variable-size arrays, REDEFINES) and records that fit them, through
  :class:`RecordEncoder` and :class:`RecordDecoder`; the JSON lines are compared too, so a
  decimal keeps its scale and a COMP-1 its float32 digits.
* Random bytes never crash the decoder, through every record format; random and mutated
  copybook text never crashes the parser, the layout builder or the schema builder: only
  :class:`CouplerError` subclasses, with time bounded (hypothesis deadlines, pytest-timeout).
"""

from __future__ import annotations

import io
import string
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Context, Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from coupler.canonical.errors import CouplerError
from coupler.translators.copybook.avro import avro_schema
from coupler.translators.copybook.decoder import (
    BadRecord,
    DecodeStats,
    Float32,
    RecordDecoder,
    decode_files,
    to_json,
)
from coupler.translators.copybook.encoder import RecordEncoder
from coupler.translators.copybook.framing import iter_records
from coupler.translators.copybook.layout import build_layout
from coupler.translators.copybook.parser import parse_copybook
from coupler.translators.copybook.picture import DecodeContext

pytestmark = pytest.mark.timeout(120)

_EXACT = Context(prec=200)
_TEXT_CHARS = [c for c in DecodeContext().text_codec.table if c > " " and c not in "\x7f\x85\xa0"]
EDITED = ["Z(6).99-", "ZZZ9", "**,**9.99", "$$,$$9.99CR", "9(5)DB", "++++9", "----9.99",
          "+9(6)V99", "9(6).99-", "Z(6)VZZ-", "-9(8)", "ZZ9B990", "***.**"]  # fmt: skip


@dataclass
class Spec:
    """A generated elementary item: its clauses and a strategy for its values."""

    clauses: str
    values: st.SearchStrategy[Any]
    counter: bool = False


@dataclass
class Gen:
    """A generated copybook: its lines and the strategy of a record that fits it."""

    lines: list[str] = field(default_factory=list)
    record: dict[str, st.SearchStrategy[Any]] = field(default_factory=dict)
    redefines: dict[str, list[str]] = field(default_factory=dict)  # branch -> its siblings
    counters: dict[str, str] = field(default_factory=dict)  # array -> counter


def _decimal(n: int, scale: int) -> int | Decimal:
    if scale > 0:
        return Decimal(n).scaleb(-scale, _EXACT)
    return n * 10 ** (-scale)


def _text(size: int, alphabet: list[str] = _TEXT_CHARS) -> st.SearchStrategy[str]:
    # no leading/trailing blanks: the default trimming policy removes them
    return st.text(alphabet=st.sampled_from([*alphabet, " "]), max_size=size).map(lambda s: s.strip(" "))


@st.composite
def numbers(draw) -> Spec:
    usage = draw(st.sampled_from(["DISPLAY", "COMP", "BINARY", "COMP-4", "COMP-5", "COMP-3",
                                  "PACKED-DECIMAL", "COMP-6"]))
    digits = draw(st.integers(1, 18 if usage == "COMP-5" else 30))
    signed = usage != "COMP-6" and draw(st.booleans())
    form = draw(st.sampled_from(["int", "V", "leadP", "trailP", "point"]))
    if form == "point" and usage != "DISPLAY":
        form = "V"
    frac = draw(st.integers(1, digits)) if form in ("V", "point") else 0
    p = draw(st.integers(1, 3))
    whole = digits - frac
    if form == "V":
        pic = ("9" * whole if whole else "") + "V" + "9" * frac
    elif form == "point":
        pic = "9" * max(whole, 1) + "." + "9" * frac
        digits = max(whole, 1) + frac
    elif form == "leadP":
        pic = "P" * p + "9" * digits
    elif form == "trailP":
        pic = "9" * digits + "P" * p
    else:
        pic = "9" * digits
    scale = {"int": 0, "V": frac, "point": frac, "leadP": p + digits, "trailP": -p}[form]
    clauses = f"PIC {'S' if signed else ''}{pic}"
    if usage != "DISPLAY":
        clauses += f" USAGE {usage}"
    if usage == "DISPLAY" and signed and draw(st.booleans()):
        clauses += " SIGN " + draw(st.sampled_from(["LEADING", "TRAILING", "LEADING SEPARATE",
                                                    "TRAILING SEPARATE CHARACTER"]))
    if usage in ("COMP", "BINARY", "COMP-5") and draw(st.booleans()):
        clauses += " SYNC"
    if usage == "COMP-5":
        size = 2 if digits <= 4 else 4 if digits <= 9 else 8
        lo, hi = (-(1 << (8 * size - 1)), (1 << (8 * size - 1)) - 1) if signed else (0, (1 << (8 * size)) - 1)
    else:
        limit = 10**digits - 1
        lo, hi = (-limit if signed else 0), limit
    return Spec(clauses, st.integers(lo, hi).map(lambda n: _decimal(n, scale)))


@st.composite
def texts(draw) -> Spec:
    kind = draw(st.sampled_from(["X", "A", "XJ", "N", "G"]))
    size = draw(st.integers(1, 12))
    if kind == "X":
        return Spec(f"PIC X({size})", _text(size))
    if kind == "XJ":
        return Spec(f"PIC X({size}) JUSTIFIED RIGHT", _text(size))
    if kind == "A":
        return Spec(f"PIC A({size})", _text(size, list(string.ascii_uppercase)))
    if kind == "N":
        return Spec(f"PIC N({size}) USAGE NATIONAL", _text(size, [*string.ascii_letters, "ä", "€", "日"]))
    return Spec(f"PIC G({size}) USAGE DISPLAY-1", st.binary(min_size=2 * size, max_size=2 * size))


@st.composite
def others(draw) -> Spec:
    kind = draw(st.sampled_from(["edited", "COMP-1", "COMP-2"]))
    if kind == "edited":
        from coupler.translators.copybook.picture import field_type

        pic = draw(st.sampled_from(EDITED))
        ft = field_type(pic)
        limit = 10**ft.digits - 1
        lo = -limit if ft.signed else 0
        return Spec(f"PIC {pic}", st.integers(lo, limit).map(lambda n: _decimal(n, ft.scale)))
    # dyadic fractions are exact in IBM hexadecimal and IEEE floats of either width
    values = st.builds(lambda n, k: n / 2**k, st.integers(-(2**20), 2**20), st.integers(0, 8))
    if kind == "COMP-1":
        return Spec("USAGE COMP-1", values.map(Float32))
    return Spec("USAGE COMP-2", values)


elementary = st.one_of(numbers(), texts(), others())


@st.composite
def copybooks(draw) -> Gen:
    gen = Gen(lines=["01  REC."])
    n = 0

    def name(prefix: str) -> str:
        nonlocal n
        n += 1
        return f"{prefix}-{n}"

    def emit(level: int, ident: str, clauses: str) -> None:
        # one entry, its clauses wrapped on lines of at most 50 columns (words never split)
        indent = "    " * (level // 5)
        line = f"{indent}{level:02d}  {ident}"
        for word in clauses.split():
            if len(line) + len(word) + 1 > 50:
                gen.lines.append(line)
                line = indent + "      "
            line += " " + word
        gen.lines.append(line + ".")

    def key(ident: str) -> str:
        return ident.replace("-", "_")

    for _ in range(draw(st.integers(1, 6))):
        shape = draw(st.sampled_from(["field", "field", "occurs", "odo", "redefines"]))
        if shape == "field":
            spec = draw(elementary)
            ident = name("F")
            emit(5, ident, spec.clauses)
            gen.record[key(ident)] = spec.values
        elif shape == "occurs":
            times = draw(st.integers(1, 3))
            group = name("G")
            emit(5, group, f"OCCURS {times} TIMES")
            members = {}
            for _ in range(draw(st.integers(1, 3))):
                spec = draw(elementary)
                ident = name("E")
                emit(10, ident, spec.clauses)
                members[key(ident)] = spec.values
            gen.record[key(group)] = st.lists(st.fixed_dictionaries(members), min_size=times, max_size=times)
        elif shape == "odo":
            counter = name("N")
            counter_pic = draw(st.sampled_from(["PIC 9(1)", "PIC S9(3) USAGE COMP-3", "PIC 9(4) USAGE COMP"]))
            emit(5, counter, counter_pic)
            high = draw(st.integers(1, 4))
            low = draw(st.integers(0, high))
            spec = draw(elementary)
            array = name("D")
            emit(5, array, f"OCCURS {low} TO {high} TIMES DEPENDING ON {counter}")
            item = name("I")
            emit(10, item, spec.clauses)
            gen.record[key(counter)] = st.just(None)  # set from the array length below
            gen.record[key(array)] = st.lists(st.fixed_dictionaries({key(item): spec.values}),
                                              min_size=low, max_size=high)
            gen.counters[key(array)] = key(counter)
        else:
            size = draw(st.integers(2, 10))
            base = name("B")
            emit(5, base, f"PIC X({size})")
            other = name("R")
            spec = draw(st.one_of(numbers(), texts()))
            emit(5, other, f"REDEFINES {base} {spec.clauses}")
            gen.record[key(base)] = _text(size)
            gen.record[key(other)] = spec.values
            gen.redefines[key(base)] = [key(other)]
            gen.redefines[key(other)] = [key(base)]
    return gen


def _text_of(gen: Gen) -> str:
    return "".join(f"{'':7}{line}\n" for line in gen.lines)


def _record(gen: Gen, draw) -> dict[str, Any]:
    keys = list(gen.record)
    chosen: dict[str, Any] = {}
    skipped: set[str] = set()
    for k in keys:
        if k in skipped:
            continue
        if k in gen.redefines:  # one branch of a REDEFINES pair carries the value
            pick = draw(st.sampled_from([k, *gen.redefines[k]]))
            skipped.update([k, *gen.redefines[k]])
            chosen[pick] = draw(gen.record[pick])
            continue
        chosen[k] = draw(gen.record[k])
    for array, counter in gen.counters.items():
        chosen[counter] = len(chosen[array])
    return {k: chosen[k] for k in keys if k in chosen}


OPTIONS = [
    {"improved_null_detection": "false"},
    {"improved_null_detection": "false", "variable_size_occurs": "true"},
    {"improved_null_detection": "false", "floating_point_format": "IEEE754", "ebcdic_code_page": "cp273"},
    {"improved_null_detection": "false", "record_format": "V", "variable_size_occurs": "true"},
]


@settings(max_examples=200, deadline=timedelta(seconds=2), suppress_health_check=[HealthCheck.too_slow])
@given(gen=copybooks(), options=st.sampled_from(OPTIONS), data=st.data())
def test_generated_records_round_trip(gen: Gen, options: dict[str, str], data: st.DataObject) -> None:
    text = _text_of(gen)
    layout = build_layout(parse_copybook(text))
    record = _record(gen, data.draw)
    if "cp273" in options.get("ebcdic_code_page", ""):
        ctx = DecodeContext(ebcdic_code_page="cp273")
        assume(all(ctx.text_codec.can_encode(ch) for ch in repr(record) if ch.isprintable()))
    encoder = RecordEncoder(layout, options)
    # the unused branch of a REDEFINES may not be valid data: lenient there, strict otherwise
    decoder = RecordDecoder(layout, options, policy="lenient" if gen.redefines else "strict")
    raw = encoder.encode(record)
    stats = DecodeStats()
    decoded = decoder.decode(raw, stats=stats)
    assert not isinstance(decoded, BadRecord), decoded.error
    unused = {s for k in record for s in gen.redefines.get(k, [])}
    assert {name.split(".")[-1] for name in stats.bad_field_names} <= unused
    assert decoded is not None
    present = {k: v for k, v in decoded.items() if k in record}
    assert present == record
    assert to_json(present) == to_json(_ordered_like(record, present))  # decimal scales, float digits
    # the other branch of a REDEFINES pair reads the same bytes: nothing else appears
    assert set(decoded) - set(record) <= unused
    # framed (with its RDW for record_format V) and cut again by the framing: the same bytes
    if encoder.options.record_format == "V" or len(raw) == layout.size:
        frames = list(iter_records(io.BytesIO(encoder.framed(record) * 2), encoder.options, record_size=layout.size))
        assert [f.payload for f in frames] == [raw, raw]
    # encoding what was decoded gives the same bytes: the whole decoded record, with the other
    # branch of each REDEFINES pair as the decoder read it; encode_branches names the branches
    # to write (those the record was made of), as a user re-encoding decoded records does
    chosen = [k for k in record if k in gen.redefines]
    again = RecordEncoder(layout, {**options, "encode_branches": ",".join(chosen)} if chosen else options)
    assert again.encode(decoded) == raw


def _ordered_like(value: Any, model: Any) -> Any:
    """``value`` with its dict keys in the order of ``model``'s (which holds the same keys)."""
    if isinstance(value, dict):
        return {k: _ordered_like(value[k], model[k]) for k in model}
    if isinstance(value, list):
        return [_ordered_like(v, m) for v, m in zip(value, model, strict=True)]
    return value


def _decode_all(text: str, data: bytes, options: dict[str, str], policy: str, tmp_path) -> None:
    """Parse, lay out, build the schema and decode ``data``; only Coupler errors may escape."""
    try:
        layout = build_layout(parse_copybook(text))
        avro_schema(layout, options)
        decoder = RecordDecoder(layout, options, policy=policy)
        result = decoder.decode(data)
        assert result is None or isinstance(result, (dict, BadRecord))
        path = tmp_path / "data.bin"
        path.write_bytes(data)
        for rec in decode_files(layout, [path], options, policy=policy):
            if isinstance(rec, BadRecord):
                assert rec.error.reason
            else:
                to_json(rec)
    except CouplerError as exc:
        assert str(exc)


FORMATS = [{}, {"record_format": "V"}, {"record_format": "VB", "is_rdw_big_endian": "true"},
           {"record_format": "FB"}, {"variable_size_occurs": "true"},
           {"encoding": "ascii", "record_format": "D"}, {"floating_point_format": "IEEE754"}]


@settings(max_examples=150, deadline=timedelta(seconds=2),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(gen=copybooks(), data=st.binary(max_size=300), options=st.sampled_from(FORMATS),
       policy=st.sampled_from(["lenient", "strict"]))
def test_random_bytes_never_crash_the_decoder(tmp_path, gen: Gen, data: bytes, options, policy) -> None:
    _decode_all(_text_of(gen), data, options, policy, tmp_path)


_WORDS = ["01", "05", "10", "66", "77", "88", "REC", "A-1", "B", "PIC", "PICTURE", "X(3)", "9(4)",
          "S9(3)V99", "COMP-3", "COMP", "COMP-1", "USAGE", "OCCURS", "TO", "TIMES", "DEPENDING", "ON",
          "REDEFINES", "RENAMES", "THRU", "VALUE", "'A'", "ZERO", "SIGN", "LEADING", "SEPARATE", "SYNC",
          "JUST", "RIGHT", "BLANK", "WHEN", "INDEXED", "BY", "KEY", "IS", "ASCENDING", "FILLER", "N(2)",
          "G(2)", "Z(3)9.99-", "P(2)9", "9(2)P", "99999999999999999999", "0", "3", ".", ",", "(", ")",
          "COPY"]  # fmt: skip


@settings(max_examples=300, deadline=timedelta(seconds=2),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=40), data=st.binary(max_size=120),
       options=st.sampled_from(FORMATS))
def test_random_copybook_text_never_crashes(tmp_path, words: list[str], data: bytes, options) -> None:
    # entries of COBOL-ish words: deep enough to reach the layout builder and the decoder
    lines, line = [], ""
    for w in words:
        if len(line) + len(w) + 1 > 60:
            lines.append(line)
            line = ""
        line += " " + w
    lines.append(line)
    text = "".join(f"{'':7}{x}\n" for x in lines)
    _decode_all(text, data, options, "strict", tmp_path)


@settings(max_examples=150, deadline=timedelta(seconds=2),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(gen=copybooks(), at=st.integers(0, 10_000), cut=st.integers(0, 12), insert=st.text(max_size=8),
       data=st.binary(max_size=120))
def test_mutated_generated_copybooks_never_crash(tmp_path, gen: Gen, at: int, cut: int, insert: str, data: bytes) -> None:
    text = _text_of(gen)
    at %= len(text) + 1
    _decode_all(text[:at] + insert + text[at + cut:], data, {}, "lenient", tmp_path)
