"""Values against the compiler: a COBOL program (compiled by GnuCOBOL at test time, IBM
binary sizes) WRITEs records of a copybook COPYed into it and DISPLAYs every value; both
decoders must read the DISPLAYed values from the written bytes, and the encoder must write
the same bytes from those values. ASCII as GnuCOBOL wrote it, and EBCDIC by converting each
DISPLAY field's bytes with cp037 (binary and packed bytes are the same in both).
"""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal
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

PROGRAM = """\
       IDENTIFICATION DIVISION.
       PROGRAM-ID. WRITER.
       ENVIRONMENT DIVISION.
       INPUT-OUTPUT SECTION.
       FILE-CONTROL.
           SELECT OUT-FILE ASSIGN TO 'records.dat'
               ORGANIZATION IS SEQUENTIAL.
       DATA DIVISION.
       FILE SECTION.
       FD OUT-FILE.
       COPY 'rec.cpy'.
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
