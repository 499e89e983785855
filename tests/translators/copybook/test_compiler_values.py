"""Values against the compiler: a COBOL program (compiled by GnuCOBOL at test time, IBM
binary sizes) WRITEs records of a copybook COPYed into it and DISPLAYs every value; both
decoders must read the DISPLAYed values from the written bytes, and the encoder must write
the same bytes from those values. ASCII as GnuCOBOL wrote it, and EBCDIC by converting each
DISPLAY field's bytes with cp037 (binary and packed bytes are the same in both).

Two programs: fixed-length records (zoned with trailing overpunch and separate signs,
COMP/COMP-4/BINARY, COMP-5, COMP-3, OCCURS, REDEFINES), and variable-length records (GnuCOBOL
frames them with a big-endian RDW) whose copybook ends in an OCCURS DEPENDING ON table, with
COMP-5 over its whole binary range, COMP-1/COMP-2, P scaling, 31-digit zoned and packed
numbers, a leading overpunched sign and a nested OCCURS.
"""

from __future__ import annotations

import subprocess
import sys
from decimal import Context, Decimal
from pathlib import Path

import pytest

from coupler.translators.copybook.arrow_json import json_lines
from coupler.translators.copybook.batch_files import batch_supported, decode_file_batches
from coupler.translators.copybook.decoder import BadRecord, decode_files, to_json
from coupler.translators.copybook.encoder import RecordEncoder
from coupler.translators.copybook.layout import build_layout
from coupler.translators.copybook.parser import parse_copybook

sys.path.insert(0, str(Path(__file__).parent))
from cobc_oracle import COBC_FLAGS, cobc  # noqa: E402

pytestmark = pytest.mark.timeout(300)

COPYBOOK = """\
       01 REC.
          05 R-ID        PIC 9(4).
          05 R-NAME      PIC X(8).
          05 R-ZONED     PIC S9(5)V99.
          05 R-LEAD      PIC S9(4) SIGN LEADING SEPARATE.
          05 R-TRAIL     PIC S9(3) SIGN TRAILING SEPARATE.
          05 R-BIN2      PIC S9(4) COMP.
          05 R-BIN4      PIC S9(9) BINARY.
          05 R-BIN8      PIC S9(15) COMP-4.
          05 R-UBIN      PIC 9(6) COMP.
          05 R-COMP5     PIC S9(4) COMP-5.
          05 R-PACKED    PIC S9(7)V99 COMP-3.
          05 R-UPACK     PIC 9(5) COMP-3.
          05 R-BIG       PIC S9(18).
          05 R-TABLE OCCURS 3.
             10 T-CODE   PIC X(2).
             10 T-AMT    PIC S9(3)V9 COMP-3.
          05 R-ALT.
             10 R-ALT-N  PIC 9(6).
          05 R-ALT-X REDEFINES R-ALT PIC X(6).
"""


def _writer_head(program_id: str, copybook: str) -> str:
    """The divisions of a program that writes the records of ``copybook`` (its FD) to records.dat."""
    return f"""\
       IDENTIFICATION DIVISION.
       PROGRAM-ID. {program_id}.
       ENVIRONMENT DIVISION.
       INPUT-OUTPUT SECTION.
       FILE-CONTROL.
           SELECT OUT-FILE ASSIGN TO 'records.dat'
               ORGANIZATION IS SEQUENTIAL.
       DATA DIVISION.
       FILE SECTION.
       FD OUT-FILE.
       COPY '{copybook}'.
"""


PROGRAM = _writer_head("WRITER", "rec.cpy") + """\
       WORKING-STORAGE SECTION.
       01 I          PIC S9(4) COMP-5.
       01 K          PIC S9(4) COMP-5.
       01 E-NUM      PIC -(18)9.9(4).
       01 W-INT      PIC S9(18) SIGN LEADING SEPARATE.
       01 LETTERS    PIC X(3) VALUE 'XYZ'.
       PROCEDURE DIVISION.
           OPEN OUTPUT OUT-FILE
           PERFORM VARYING I FROM 1 BY 1 UNTIL I > 25
               MOVE I TO R-ID
               MOVE 'NAME' TO R-NAME
               MOVE R-ID TO R-NAME(5:4)
               COMPUTE R-ZONED = (I - 13) * 1234.57
               COMPUTE R-LEAD = (I - 12) * 311
               COMPUTE R-TRAIL = (I - 14) * 37
               COMPUTE R-BIN2 = (I - 12) * 1111
               COMPUTE R-BIN4 = (I - 12) * 76543211
               COMPUTE R-BIN8 = (I - 12) * 12345678912345
               COMPUTE R-UBIN = I * 39999
               COMPUTE R-COMP5 = (I - 12) * 2500
               COMPUTE R-PACKED = (I - 12) * 765432.19
               COMPUTE R-UPACK = I * 3999
               COMPUTE R-BIG = (I - 12) * 76543210987654321
               PERFORM VARYING K FROM 1 BY 1 UNTIL K > 3
                   MOVE 'C' TO T-CODE(K)
                   MOVE LETTERS(K:1) TO T-CODE(K)(2:1)
                   COMPUTE T-AMT(K) = (I - 12) * K * 7.5
               END-PERFORM
               COMPUTE R-ALT-N = I * 1001
               WRITE REC
               DISPLAY 'R_ID=' R-ID
               DISPLAY 'R_NAME=' R-NAME
               MOVE R-ZONED TO E-NUM  DISPLAY 'R_ZONED=' E-NUM
               MOVE R-LEAD TO E-NUM   DISPLAY 'R_LEAD=' E-NUM
               MOVE R-TRAIL TO E-NUM  DISPLAY 'R_TRAIL=' E-NUM
               MOVE R-BIN2 TO E-NUM   DISPLAY 'R_BIN2=' E-NUM
               MOVE R-BIN4 TO E-NUM   DISPLAY 'R_BIN4=' E-NUM
               MOVE R-BIN8 TO E-NUM   DISPLAY 'R_BIN8=' E-NUM
               MOVE R-UBIN TO E-NUM   DISPLAY 'R_UBIN=' E-NUM
               MOVE R-COMP5 TO E-NUM  DISPLAY 'R_COMP5=' E-NUM
               MOVE R-PACKED TO E-NUM DISPLAY 'R_PACKED=' E-NUM
               MOVE R-UPACK TO E-NUM  DISPLAY 'R_UPACK=' E-NUM
               MOVE R-BIG TO E-NUM    DISPLAY 'R_BIG=' E-NUM
               PERFORM VARYING K FROM 1 BY 1 UNTIL K > 3
                   DISPLAY 'T_CODE=' T-CODE(K)
                   MOVE T-AMT(K) TO E-NUM DISPLAY 'T_AMT=' E-NUM
               END-PERFORM
               MOVE R-ALT-N TO E-NUM  DISPLAY 'R_ALT_N=' E-NUM
               DISPLAY 'R_ALT_X=' R-ALT-X
               DISPLAY '--'
           END-PERFORM
           CLOSE OUT-FILE
           STOP RUN.
"""

SCALES = {"R_ZONED": 2, "R_PACKED": 2, "T_AMT": 1}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[Path, list[dict]]:
    """The records file GnuCOBOL wrote and the values it DISPLAYed, one dict per record."""
    work = tmp_path_factory.mktemp("cobc")
    (work / "rec.cpy").write_text(COPYBOOK)
    (work / "writer.cbl").write_text(PROGRAM)
    done = subprocess.run([cobc(), "-x", *COBC_FLAGS, "-o", str(work / "writer"), str(work / "writer.cbl")],
                          capture_output=True, text=True, cwd=work, timeout=120)
    assert done.returncode == 0, done.stderr
    run = subprocess.run([str(work / "writer")], capture_output=True, text=True, cwd=work, timeout=60)
    assert run.returncode == 0, run.stderr
    records, current, table = [], {}, []
    for line in run.stdout.splitlines():
        if line == "--":
            current["R_TABLE"] = table
            records.append(current)
            current, table = {}, []
            continue
        key, value = line.split("=", 1)
        if key == "T_CODE":
            table.append({"T_CODE": value.strip()})
        elif key == "T_AMT":
            table[-1]["T_AMT"] = _number(value, SCALES[key])
        elif key in ("R_NAME", "R_ALT_X"):
            current[key] = value.strip()
        else:
            current[key] = _number(value, SCALES.get(key, 0))
    return work / "records.dat", records


def _number(text: str, scale: int) -> int | Decimal:
    d = Decimal(text.strip())
    return d.quantize(Decimal(1).scaleb(-scale)) if scale else int(d)


def _expected(values: dict) -> dict:
    """The decoded record of the DISPLAYed values (groups as the decoder nests them)."""
    out = {k: v for k, v in values.items() if k not in ("R_ALT_N", "R_ALT_X")}
    out["R_ALT"] = {"R_ALT_N": values["R_ALT_N"]}
    out["R_ALT_X"] = values["R_ALT_X"]
    return out


def _display_ranges(node, base: int = 0):
    """(offset, size) of every occurrence of every DISPLAY field under ``node``."""
    count = node.occurs.max if node.occurs else 1
    for k in range(count):
        at = base + k * node.size
        if getattr(node, "children", None) is not None and node.is_group:
            for child in node.children:
                if child.redefines is None:  # the redefined item's bytes are converted once
                    yield from _display_ranges(child, at + child.offset - node.offset)
        elif node.usage == "DISPLAY":
            ft = node.field_type
            sign = None
            if ft.signed and not ft.sign_separate:
                sign = 0 if ft.sign_position == "leading" else node.size - 1
            yield at, node.size, sign


def _to_ebcdic(layout, data: bytes) -> bytes:
    """The records with every DISPLAY field converted to cp037 (GnuCOBOL's ASCII negative
    overpunch 0x70-0x79 becomes D0-D9, a positive overpunched digit IBM's C0-C9); binary
    and packed bytes stay."""
    out = bytearray(data)
    ranges = [r for rec in layout.records for r in _display_ranges(rec, rec.offset)]
    for start in range(0, len(data), layout.size):
        for offset, size, sign in ranges:
            raw = bytes(out[start + offset:start + offset + size])
            conv = bytearray(raw.decode("latin-1").encode("cp037"))
            for j, b in enumerate(raw):
                if 0x70 <= b <= 0x79:
                    conv[j] = 0xD0 + (b - 0x70)
            if sign is not None and 0xF0 <= conv[sign] <= 0xF9:
                conv[sign] -= 0x30  # IBM's preferred positive sign: C0-C9
            out[start + offset:start + offset + size] = conv
    return bytes(out)


@pytest.mark.parametrize("encoding", ["ascii", "ebcdic"])
def test_both_decoders_and_the_encoder_agree_with_the_compiler(compiled, tmp_path, encoding) -> None:
    path, values = compiled
    layout = build_layout(parse_copybook(COPYBOOK))
    data = path.read_bytes()
    assert len(data) == 25 * layout.size == len(values) * layout.size  # the compiler's record size
    options = {"encoding": encoding, "improved_null_detection": "false"}
    if encoding == "ebcdic":
        data = _to_ebcdic(layout, data)
    expected = [_expected(v) for v in values]
    # GnuCOBOL stores COMP-5 in the machine's byte order (little-endian here); a mainframe
    # stores it big-endian, as the decoders read it
    comp5 = next(f for f in layout.fields() if f.identifier == "R_COMP5")
    swapped = bytearray(data)
    for start in range(0, len(data), layout.size):
        at = start + comp5.offset
        swapped[at:at + comp5.size] = data[at:at + comp5.size][::-1]
    data = bytes(swapped)
    path = tmp_path / f"records.{encoding}"
    path.write_bytes(data)

    per_record = [r for r in decode_files(layout, [path], options, policy="strict")]
    assert not [r for r in per_record if isinstance(r, BadRecord)]
    assert per_record == expected
    assert batch_supported(layout, options)
    vectorised = [line for fb in decode_file_batches(layout, [path], options, policy="strict")
                  for line in json_lines(fb.batch)]
    assert vectorised == [to_json(r) for r in expected]

    convention = {"ascii_sign_convention": "gnucobol"} if encoding == "ascii" else {}
    encoder = RecordEncoder(layout, {**options, **convention})
    size = layout.size
    for n, record in enumerate(expected):
        original = data[n * size:(n + 1) * size]
        assert encoder.encode(record) == original, f"record {n + 1}"


# -- variable-length records: ODO, nested OCCURS, COMP-5 range, floats, P, 31 digits ----------

VCOPYBOOK = """\
       01 VREC.
          05 V-ID        PIC 9(4).
          05 V-C5S       PIC S9(4) COMP-5.
          05 V-C5U       PIC 9(4) COMP-5.
          05 V-C5L       PIC S9(9) COMP-5.
          05 V-C5UL      PIC 9(9) COMP-5.
          05 V-C5Q       PIC S9(18) COMP-5.
          05 V-F1        COMP-1.
          05 V-F2        COMP-2.
          05 V-PP        PIC S9(3)PP.
          05 V-VP        PIC SVPP9(3).
          05 V-BIG       PIC S9(31).
          05 V-BIGP      PIC S9(29)V99 COMP-3.
          05 V-LEAD      PIC S9(4) SIGN LEADING.
          05 V-TRAIL     PIC S9(4) SIGN TRAILING.
          05 V-GRID OCCURS 2.
             10 V-ROW OCCURS 3.
                15 V-CELL PIC S9(3) COMP-3.
          05 V-N         PIC 9.
          05 V-ODO OCCURS 0 TO 3 DEPENDING ON V-N.
             10 V-CODE   PIC X(2).
             10 V-AMT    PIC S9(3)V9.
"""

VPROGRAM = _writer_head("VWRITER", "vrec.cpy") + """\
       WORKING-STORAGE SECTION.
       01 I          PIC S9(4) COMP-5.
       01 J          PIC S9(4) COMP-5.
       01 K          PIC S9(4) COMP-5.
       01 E-NUM      PIC -(32)9.9(8).
       01 LETTERS    PIC X(3) VALUE 'XYZ'.
       PROCEDURE DIVISION.
           OPEN OUTPUT OUT-FILE
           PERFORM VARYING I FROM 1 BY 1 UNTIL I > 25
               MOVE I TO V-ID
               EVALUATE I
                 WHEN 1
                   COMPUTE V-C5S = -32768
                   COMPUTE V-C5U = 65535
                   COMPUTE V-C5L = -2147483648
                   COMPUTE V-C5UL = 4294967295
                   COMPUTE V-C5Q = -9223372036854775808
                 WHEN 25
                   COMPUTE V-C5S = 32767
                   COMPUTE V-C5U = 0
                   COMPUTE V-C5L = 2147483647
                   COMPUTE V-C5UL = 0
                   COMPUTE V-C5Q = 9223372036854775807
                 WHEN OTHER
                   COMPUTE V-C5S = (I - 13) * 2730
                   COMPUTE V-C5U = I * 2621
                   COMPUTE V-C5L = (I - 13) * 178956970
                   COMPUTE V-C5UL = I * 171798691
                   COMPUTE V-C5Q = (I - 13) * 768614336404564650
               END-EVALUATE
               COMPUTE V-F1 = (I - 12) * 0.25
               COMPUTE V-F2 = (I - 12) * 1234.125
               COMPUTE V-PP = (I - 12) * 1100
               COMPUTE V-VP = (I - 12) * 0.00037
               COMPUTE V-BIG = (I - 12) * 123456789012345678901234567891
               COMPUTE V-BIGP = (I - 12) * 12345678901234567890123456.78
               COMPUTE V-LEAD = (I - 12) * 311
               COMPUTE V-TRAIL = (I - 13) * 313
               PERFORM VARYING J FROM 1 BY 1 UNTIL J > 2
                   PERFORM VARYING K FROM 1 BY 1 UNTIL K > 3
                       COMPUTE V-CELL(J, K) = (I - 12) * J * 10 + K
                   END-PERFORM
               END-PERFORM
               COMPUTE V-N = FUNCTION MOD(I, 4)
               PERFORM VARYING K FROM 1 BY 1 UNTIL K > V-N
                   MOVE 'C' TO V-CODE(K)
                   MOVE LETTERS(K:1) TO V-CODE(K)(2:1)
                   COMPUTE V-AMT(K) = (I - 12) * K * 2.5
               END-PERFORM
               WRITE VREC
               DISPLAY 'V_ID=' V-ID
               MOVE V-C5S TO E-NUM   DISPLAY 'V_C5S=' E-NUM
               MOVE V-C5U TO E-NUM   DISPLAY 'V_C5U=' E-NUM
               MOVE V-C5L TO E-NUM   DISPLAY 'V_C5L=' E-NUM
               MOVE V-C5UL TO E-NUM  DISPLAY 'V_C5UL=' E-NUM
               MOVE V-C5Q TO E-NUM   DISPLAY 'V_C5Q=' E-NUM
               MOVE V-F1 TO E-NUM    DISPLAY 'V_F1=' E-NUM
               MOVE V-F2 TO E-NUM    DISPLAY 'V_F2=' E-NUM
               MOVE V-PP TO E-NUM    DISPLAY 'V_PP=' E-NUM
               MOVE V-VP TO E-NUM    DISPLAY 'V_VP=' E-NUM
               MOVE V-BIG TO E-NUM   DISPLAY 'V_BIG=' E-NUM
               MOVE V-BIGP TO E-NUM  DISPLAY 'V_BIGP=' E-NUM
               MOVE V-LEAD TO E-NUM  DISPLAY 'V_LEAD=' E-NUM
               MOVE V-TRAIL TO E-NUM DISPLAY 'V_TRAIL=' E-NUM
               PERFORM VARYING J FROM 1 BY 1 UNTIL J > 2
                   PERFORM VARYING K FROM 1 BY 1 UNTIL K > 3
                       MOVE V-CELL(J, K) TO E-NUM
                       DISPLAY 'V_CELL=' E-NUM
                   END-PERFORM
               END-PERFORM
               DISPLAY 'V_N=' V-N
               PERFORM VARYING K FROM 1 BY 1 UNTIL K > V-N
                   DISPLAY 'V_CODE=' V-CODE(K)
                   MOVE V-AMT(K) TO E-NUM DISPLAY 'V_AMT=' E-NUM
               END-PERFORM
               DISPLAY '--'
           END-PERFORM
           CLOSE OUT-FILE
           STOP RUN.
"""

#: fields GnuCOBOL writes in the machine's byte order (little-endian here)
COMP5 = ("V_C5S", "V_C5U", "V_C5L", "V_C5UL", "V_C5Q")
VOPTIONS = {"record_format": "V", "is_rdw_big_endian": "true", "variable_size_occurs": "true",
            "floating_point_format": "IEEE754_little_endian", "improved_null_detection": "false"}


@pytest.fixture(scope="module")
def vcompiled(tmp_path_factory) -> tuple[bytes, list[dict]]:
    """The RDW-framed records GnuCOBOL wrote and the values it DISPLAYed, one dict per record."""
    work = tmp_path_factory.mktemp("cobcv")
    (work / "vrec.cpy").write_text(VCOPYBOOK)
    (work / "vwriter.cbl").write_text(VPROGRAM)
    done = subprocess.run([cobc(), "-x", *COBC_FLAGS, "-o", str(work / "vwriter"), str(work / "vwriter.cbl")],
                          capture_output=True, text=True, cwd=work, timeout=120)
    assert done.returncode == 0, done.stderr
    run = subprocess.run([str(work / "vwriter")], capture_output=True, text=True, cwd=work, timeout=60)
    assert run.returncode == 0, run.stderr
    records: list[dict] = []
    current: dict = {"V_GRID": [], "V_ODO": []}
    for line in run.stdout.splitlines():
        if line == "--":
            records.append(current)
            current = {"V_GRID": [], "V_ODO": []}
            continue
        key, value = line.split("=", 1)
        if key == "V_CELL":
            if not current["V_GRID"] or len(current["V_GRID"][-1]["V_ROW"]) == 3:
                current["V_GRID"].append({"V_ROW": []})
            current["V_GRID"][-1]["V_ROW"].append({"V_CELL": int(Decimal(value))})
        elif key == "V_CODE":
            current["V_ODO"].append({"V_CODE": value.strip()})
        elif key == "V_AMT":
            current["V_ODO"][-1]["V_AMT"] = _number(value, 1)
        elif key in ("V_F1", "V_F2"):
            current[key] = float(Decimal(value))
        else:
            d = Decimal(value.strip())
            current[key] = int(d) if d == d.to_integral_value() else d.normalize(Context(prec=60))
    return (work / "records.dat").read_bytes(), records


def _frames(data: bytes) -> list[tuple[int, bytes]]:
    """(offset of the payload, payload) of each RDW-framed record (big-endian length, payload only)."""
    out, at = [], 0
    while at < len(data):
        length = int.from_bytes(data[at:at + 2], "big")
        assert data[at + 2:at + 4] == b"\0\0"
        out.append((at + 4, data[at + 4:at + 4 + length]))
        at += 4 + length
    return out


def _vdisplay_ranges(layout, count: int):
    """(offset, size, sign byte) of every DISPLAY field of a record whose table has ``count`` rows."""
    def walk(node, at, rows):
        for k in range(rows):
            base = at + k * node.size
            if node.is_group:
                for child in node.children:
                    n = count if child.occurs and child.occurs.depending_on else (child.occurs.max if child.occurs else 1)
                    yield from walk(child, base + child.offset - node.offset, n)
            elif node.usage == "DISPLAY":
                ft = node.field_type
                sign = None
                if ft.signed and not ft.sign_separate:
                    sign = 0 if ft.sign_position == "leading" else node.size - 1
                yield base, node.size, sign
    (rec,) = layout.records
    yield from walk(rec, 0, 1)


def _vconvert(layout, data: bytes, encoding: str) -> bytes:
    """COMP-5 fields big-endian, as a mainframe stores them, and (EBCDIC) DISPLAY bytes in cp037."""
    fields = {f.identifier: f for f in layout.fields()}
    out = bytearray(data)
    for at, payload in _frames(data):
        for name in COMP5:
            f = fields[name]
            out[at + f.offset:at + f.offset + f.size] = payload[f.offset:f.offset + f.size][::-1]
        if encoding == "ebcdic":
            count = payload[fields["V_N"].offset] - 0x30
            for offset, size, sign in _vdisplay_ranges(layout, count):
                raw = payload[offset:offset + size]
                conv = bytearray(raw.decode("latin-1").encode("cp037"))
                for j, b in enumerate(raw):
                    if 0x70 <= b <= 0x79:
                        conv[j] = 0xD0 + (b - 0x70)
                if sign is not None and 0xF0 <= conv[sign] <= 0xF9:
                    conv[sign] -= 0x30
                out[at + offset:at + offset + size] = conv
    return bytes(out)


@pytest.mark.parametrize("encoding", ["ascii", "ebcdic"])
def test_variable_length_records_agree_with_the_compiler(vcompiled, tmp_path, encoding) -> None:
    data, expected = vcompiled
    layout = build_layout(parse_copybook(VCOPYBOOK))
    frames = _frames(data)
    assert len(frames) == len(expected) == 25
    assert {len(p) for _, p in frames} == {layout.size - 6 * k for k in range(4)}  # 0-3 table rows
    assert {len(r["V_ODO"]) for r in expected} == {0, 1, 2, 3}
    assert any(r["V_C5U"] == 65535 for r in expected) and any(r["V_C5Q"] == -2**63 for r in expected)
    options = {"encoding": encoding, **VOPTIONS}
    data = _vconvert(layout, data, encoding)
    path = tmp_path / f"records.{encoding}"
    path.write_bytes(data)

    # variable-length records (RDW): the per-record decoder (the vectorised one takes fixed-length
    # records only) and the encoder, RDW included
    per_record = list(decode_files(layout, [path], options, policy="strict"))
    assert not [r for r in per_record if isinstance(r, BadRecord)]
    assert per_record == expected
    assert not batch_supported(layout, options)
    convention = {"ascii_sign_convention": "gnucobol"} if encoding == "ascii" else {}
    encoder = RecordEncoder(layout, {**options, **convention})
    for n, (record, (at, payload)) in enumerate(zip(expected, _frames(data), strict=True)):
        assert encoder.framed(record) == data[at - 4:at + len(payload)], f"record {n + 1}"

    # the same records as fixed-length ones (each padded to the table's largest size): both decoders
    fixed_options = {**options, "record_format": "F", "variable_size_occurs": "false"}
    fixed = tmp_path / f"fixed.{encoding}"
    fixed.write_bytes(b"".join(payload.ljust(layout.size, b"\0") for _, payload in _frames(data)))
    per_record = list(decode_files(layout, [fixed], fixed_options, policy="strict"))
    assert per_record == expected
    assert batch_supported(layout, fixed_options)
    vectorised = [line for fb in decode_file_batches(layout, [fixed], fixed_options, policy="strict")
                  for line in json_lines(fb.batch)]
    assert vectorised == [to_json(r) for r in per_record]
    encoder = RecordEncoder(layout, {**fixed_options, **convention})
    for n, (record, (_at, payload)) in enumerate(zip(expected, _frames(data), strict=True)):
        assert encoder.encode(record)[:len(payload)] == payload, f"record {n + 1}"
