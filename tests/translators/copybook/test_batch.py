"""The vectorised batch decoder gives exactly what the per-field codecs give.

Every kernel is checked against :meth:`FieldType.decode` on random bytes (mostly bad data)
and on valid encodings of random values: same values, same nulls, same rows reported bad.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coupler.translators.copybook.avro import field_avro_type
from coupler.translators.copybook.batch import BatchDecoder
from coupler.translators.copybook.kernels import arrow_type, decode_column
from coupler.translators.copybook.layout import Field, build_layout
from coupler.translators.copybook.parser import parse_copybook
from coupler.translators.copybook.picture import DecodeContext, FieldDecodeError, field_type

REPO = Path(__file__).resolve().parents[3]

FIELDS = [
    ("X(12)", "DISPLAY", {}),
    ("A(5)", "DISPLAY", {}),
    ("9(5)", "DISPLAY", {}),
    ("S9(7)V99", "DISPLAY", {}),
    ("S9(4)", "DISPLAY", {"sign_position": "leading"}),
    ("S9(18)", "DISPLAY", {}),
    ("9(9)V9(2)", "COMP-3", {}),
    ("S9(9)V99", "COMP-3", {}),
    ("S9(4)", "COMP-3", {}),
    ("S9(17)", "COMP-3", {}),
    ("S9(4)", "COMP", {}),
    ("9(8)", "COMP", {}),
    ("S9(9)", "COMP", {}),
    ("S9(9)V99", "COMP", {}),
    ("S9(18)", "COMP", {}),
    ("9(4)", "COMP-5", {}),
    ("S9(9)", "COMP-5", {}),
]
CONTEXTS = [
    DecodeContext(),
    DecodeContext(string_trimming_policy="none", improved_null_detection=False),
    DecodeContext(string_trimming_policy="left", ebcdic_code_page="cp1141"),
    DecodeContext(string_trimming_policy="right", ebcdic_code_page="common"),
]


class _Avro:  # the minimal node field_avro_type needs
    def __init__(self, ft):
        self.field_type = ft


def expected(ft, rows: list[bytes], ctx) -> tuple[list, set[int]]:
    values, bad = [], set()
    for i, raw in enumerate(rows):
        try:
            values.append(ft.decode(raw, ctx))
        except FieldDecodeError:
            values.append(None)
            bad.add(i)
    return values, bad


def check(ft, rows: list[bytes], ctx) -> None:
    typ = arrow_type(ft, field_avro_type(_Avro(ft)))
    block = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(len(rows), ft.size)
    arr, bad = decode_column(ft, block, ctx, typ)
    want, want_bad = expected(ft, rows, ctx)
    assert arr.type == typ
    assert arr.to_pylist() == want
    assert set(bad) == want_bad


@pytest.mark.parametrize("grouped", [False, True], ids=["row-by-row", "grouped"])
@pytest.mark.parametrize("ctx", CONTEXTS, ids=["default", "none-nonull", "left-cp1141", "right-common"])
@pytest.mark.parametrize("pic, usage, extra", FIELDS, ids=[f"{p}-{u}-{len(e)}" for p, u, e in FIELDS])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_kernel_equals_codec(pic: str, usage: str, extra: dict, ctx: DecodeContext, grouped: bool,
                             data: st.DataObject) -> None:
    """``grouped``: the values the kernel leaves to the codec decoded once each distinct value
    (kernels.GROUP_AT, from 64 such rows), not row by row."""
    from coupler.translators.copybook import kernels

    with pytest.MonkeyPatch.context() as mp:
        if grouped:
            mp.setattr(kernels, "GROUP_AT", 1)
        _kernel_equals_codec(pic, usage, extra, ctx, data)


def _kernel_equals_codec(pic: str, usage: str, extra: dict, ctx: DecodeContext, data: st.DataObject) -> None:
    ft = field_type(pic, usage, **extra)
    if ft.kind in ("integer", "decimal"):
        limit = ft.max_abs_unscaled - 1
        unscaled = data.draw(st.lists(st.integers(-limit if ft.signed else 0, limit), min_size=1, max_size=20))
        from decimal import Decimal
        valid = [ft.encode(Decimal(n).scaleb(-ft.scale) if ft.scale else n, ctx) for n in unscaled]
    else:
        text = data.draw(st.lists(st.text(alphabet="ABC xyz019-", max_size=ft.size), min_size=1, max_size=20))
        valid = [ft.encode(t, ctx) for t in text]
    noise = data.draw(st.lists(st.binary(min_size=ft.size, max_size=ft.size), max_size=20))
    special = [bytes(ft.size), b"\x40" * ft.size, b"\xff" * ft.size, b"\x9a" + bytes(ft.size - 1)]
    check(ft, valid + noise + special + noise + special, ctx)  # bad values again: decoded once, reported on each row


COPYBOOK_WITH_ODO = """\
       01  REC.
           05  NAME           PIC X(10).
           05  N-ITEMS        PIC 9(1).
           05  ITEM OCCURS 0 TO 4 DEPENDING ON N-ITEMS.
               10  CODE       PIC X(3).
               10  QTY        PIC S9(3) COMP-3.
           05  TOTAL          PIC S9(7)V99.
"""


def per_record(layout, data: bytes, ctx) -> list[dict]:
    """Records decoded field by field with the codecs: the oracle for the batch decoder."""
    size = layout.size
    out = []
    for start in range(0, len(data), size):
        raw = data[start : start + size]
        fields = {f.identifier: f for f in layout.fields()}

        def val(name, off=0, raw=raw, fields=fields):
            f = fields[name]
            try:
                return f.field_type.decode(raw[f.offset + off : f.offset + off + f.size], ctx)
            except FieldDecodeError:
                return None

        n = val("N_ITEMS") or 0
        item = fields["CODE"].size + fields["QTY"].size
        out.append({
            "NAME": val("NAME"), "N_ITEMS": val("N_ITEMS"),
            "ITEM": [{"CODE": val("CODE", k * item), "QTY": val("QTY", k * item)} for k in range(min(n, 4))],
            "TOTAL": val("TOTAL"),
        })
    return out


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.text("ABCDE ", max_size=10), st.integers(0, 6),
                          st.lists(st.tuples(st.text("XYZ", max_size=3), st.integers(-999, 999)), min_size=4, max_size=4),
                          st.integers(-10**9 + 1, 10**9 - 1)), min_size=1, max_size=12))
def test_record_batch_equals_per_field_decoding(records) -> None:
    layout = build_layout(parse_copybook(COPYBOOK_WITH_ODO))
    ctx = DecodeContext()
    fields = {f.identifier: f for f in layout.fields()}
    data = bytearray()
    for name, n, items, total in records:
        rec = bytearray(layout.size)
        for ident, value in (("NAME", name), ("N_ITEMS", n)):
            f = fields[ident]
            rec[f.offset : f.offset + f.size] = f.field_type.encode(value, ctx)
        for k, (code, qty) in enumerate(items):
            for ident, value in (("CODE", code), ("QTY", qty)):
                f = fields[ident]
                off = f.offset + k * (fields["CODE"].size + fields["QTY"].size)
                rec[off : off + f.size] = f.field_type.encode(value, ctx)
        f = fields["TOTAL"]
        from decimal import Decimal
        rec[f.offset : f.offset + f.size] = f.field_type.encode(Decimal(total).scaleb(-2), ctx)
        data += rec
    decoded = BatchDecoder(layout).decode(bytes(data))
    assert decoded.batch.to_pylist() == per_record(layout, bytes(data), ctx)


def test_bad_fields_are_reported_with_place(tmp_path: Path) -> None:
    layout = build_layout(parse_copybook(COPYBOOK_WITH_ODO))
    rec = bytearray(BatchDecoder(layout).decode(b"").batch.num_rows or layout.size)
    rec[:] = b"\x40" * layout.size
    total = next(f for f in layout.fields() if f.identifier == "TOTAL")
    rec[total.offset : total.offset + total.size] = b"\xc1" * total.size  # letters in a number
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(rec) * 3 + bytes(rec[:5]))
    batches = list(BatchDecoder(layout).iter_file(path, batch_records=2))
    bad = [b for d in batches for b in d.bad]
    assert [b.record for b in bad if b.path.endswith("TOTAL")] == [0, 1, 2]
    assert all(b.offset == total.offset and b.raw == b"\xc1" * total.size for b in bad if b.path.endswith("TOTAL"))
    assert bad[-1].path == "<record>" and "truncated record" in bad[-1].reason and bad[-1].record == 3
    assert sum(d.batch.num_rows for d in batches) == 3


def test_benchmark_layout_decodes_the_generated_values() -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    import datagen

    layout = build_layout(parse_copybook(datagen.COPYBOOK))
    assert layout.size == datagen.RECORD_SIZE
    records = datagen.make_records(500, seed=7)
    batch = BatchDecoder(layout, {"generate_record_id": "true"}).decode(records, first_record=10).batch
    rows = batch.to_pylist()
    assert [r["Record_Id"] for r in rows[:3]] == [10, 11, 12]
    assert rows[0]["TXN_ID"] == "TX0000000000" and len(rows[0]["LINE_ITEM"]) == 5
    # the same values as the codecs give field by field
    ctx = DecodeContext()
    fields = [f for f in layout.fields() if isinstance(f, Field)]
    amount = next(f for f in fields if f.identifier == "AMOUNT")
    for row, raw in zip(rows, records, strict=True):
        assert row["AMOUNT"] == amount.field_type.decode(raw[amount.offset : amount.offset + amount.size].tobytes(), ctx)


def test_unsupported_layouts_say_why() -> None:
    layout = build_layout(parse_copybook(COPYBOOK_WITH_ODO))
    assert not BatchDecoder.supports(layout, {"variable_size_occurs": "true"})
    with pytest.raises(ValueError, match="variable_size_occurs"):
        BatchDecoder(layout, {"variable_size_occurs": "true"})
    assert not BatchDecoder.supports(layout, {"record_format": "V"})
    assert pa.types.is_list(BatchDecoder(layout).schema.field("ITEM").type)


def test_depending_on_counts_as_the_per_record_decoder() -> None:
    """Bad bytes in slots beyond the count are not the record's; a count out of range is bad
    and is not raised to the minimum."""
    from coupler.translators.copybook.decoder import RecordDecoder

    layout = build_layout(parse_copybook(COPYBOOK_WITH_ODO.replace("0 TO 4", "1 TO 4")))
    fields = {f.identifier: f for f in layout.fields()}
    ctx = DecodeContext()
    record = bytearray(b"\x40" * layout.size)
    for ident, value in (("NAME", "ANN"), ("N_ITEMS", 1), ("CODE", "XYZ"), ("QTY", 5), ("TOTAL", 0)):
        f = fields[ident]
        record[f.offset : f.offset + f.size] = f.field_type.encode(value, ctx)
    item = fields["CODE"].size + fields["QTY"].size
    qty2 = fields["QTY"].offset + item  # QTY of the second slot: garbage, but beyond the count
    record[qty2 : qty2 + fields["QTY"].size] = b"\xff\xff"
    zero = bytearray(record)
    n = fields["N_ITEMS"]
    zero[n.offset : n.offset + n.size] = n.field_type.encode(0, ctx)

    decoded = BatchDecoder(layout).decode(bytes(record) + bytes(zero))
    per_record = RecordDecoder(layout)
    assert decoded.batch.to_pylist() == [per_record.decode(bytes(record)), per_record.decode(bytes(zero))]
    assert [(b.record, b.path.rsplit(".", 1)[-1]) for b in decoded.bad] == [(1, "ITEM")]
    assert "outside 1..4" in decoded.bad[0].reason


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "numpy"])
def test_elements_beyond_the_depending_on_count_are_never_decoded(compiled: bool, monkeypatch) -> None:
    """A fixed-length record keeps the room of every element; the slots beyond the count hold
    whatever the program left there (spaces, low values). They are not the record's: their
    bytes never reach a field's codec (which made a file of such records 50x slower: one
    exception per unused slot and field)."""
    from coupler.translators.copybook import kernels
    from coupler.translators.copybook.picture import FieldType

    if compiled and not kernels.FUSED_BUILT:
        pytest.skip("the compiled kernel is not built")
    layout = build_layout(parse_copybook(COPYBOOK_WITH_ODO))
    fields = {f.identifier: f for f in layout.fields()}
    ctx = DecodeContext()
    record = bytearray(b"\x40" * layout.size)  # every unused slot: EBCDIC spaces, a bad COMP-3
    for ident, value in (("NAME", "ANN"), ("N_ITEMS", 1), ("CODE", "XYZ"), ("QTY", 5), ("TOTAL", 0)):
        f = fields[ident]
        record[f.offset : f.offset + f.size] = f.field_type.encode(value, ctx)
    given: list[bytes] = []
    decode = FieldType.decode

    def counted(self, raw, ctx):  # type: ignore[no-untyped-def]
        given.append(bytes(raw))
        return decode(self, raw, ctx)

    monkeypatch.setattr(FieldType, "decode", counted)
    decoded = BatchDecoder(layout, compiled=compiled).decode(bytes(record) * 1000)
    assert decoded.bad == []
    assert decoded.batch.column("ITEM").to_pylist() == [[{"CODE": "XYZ", "QTY": 5}]] * 1000
    assert b"\x40\x40" not in given  # the unused slots' QTY


def test_parquet_writer_gathers_small_batches_into_row_groups(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from coupler.translators.copybook.arrow_parquet import ParquetBatchWriter

    sys.path.insert(0, str(REPO / "benchmarks"))
    import datagen

    decoder = BatchDecoder(build_layout(parse_copybook(datagen.COPYBOOK)))
    batches = [decoder.decode(datagen.make_records(1000, seed=k)).batch for k in range(9)]
    path = tmp_path / "out.parquet"
    with ParquetBatchWriter(path, decoder.schema, row_group_rows=4000) as writer:
        for batch in batches:
            writer.write_batch(batch)
    meta = pq.ParquetFile(path).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [4000, 4000, 1000]
    assert pq.read_table(path).to_pylist() == [row for b in batches for row in b.to_pylist()]


def test_bad_elements_of_an_occurs_are_reported_with_subscripts() -> None:
    """The kernel names the element (1-based COBOL subscripts), as the per-record decoder."""
    text = """\
       01 REC.
          05 DET.
             10 CELL PIC S9(3) OCCURS 2.
          05 T OCCURS 2.
             10 U OCCURS 2.
                15 V PIC 9.
"""
    layout = build_layout(parse_copybook(text))
    decoded = BatchDecoder(layout, {"encoding": "ascii"}).decode(b"aaa1231x34" + b"123bbb1234")
    assert [(b.record, b.path, b.offset) for b in decoded.bad] == [
        (0, "REC.DET.CELL[1]", 0), (0, "REC.T[1].U[2].V", 7), (1, "REC.DET.CELL[2]", 3)]
