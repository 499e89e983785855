"""Fuzzing copybook record framing from the data's own lengths: ``record_length_field`` (a
length read from a field of each record: display, binary, packed, signed, decimal, with
``rdw_adjustment``) and RDW/BDW descriptors (``V``, ``VB``, ``FB``), with random files and
well-formed files mutated (bytes flipped, cut, repeated, lengths claiming up to 10**18).

Through ``decode_files`` (what ``coupler copybook decode`` and the file adapters run), in both
policies: only a one-line ``CouplerError`` escapes, and a record the framing or the layout
refuses is a ``BadRecord`` naming its record number (from 1) and a byte offset inside the
file. Through ``iter_records`` with tiny read chunks: every record is the file's bytes at its
offset, offsets increase, and the frames never run past the file. Each case is bounded in
memory (tracemalloc's peak, against the file's size: nothing is allocated from a claimed
length) and in time (an interval timer ends a case that hangs). The random run lasts
``COUPLER_FUZZ_SECONDS`` (3 s by default) from a seed printed at the start;
``COUPLER_FUZZ_SEED=N`` replays it. The bounds are ``tests/fuzzing.py``'s.
"""

from __future__ import annotations

import contextlib
import io
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from coupler.canonical.errors import CouplerError
from coupler.translators.copybook.decoder import (
    BadRecord,
    RecordDecoder,
    decode_files,
    length_field_framing,
)
from coupler.translators.copybook.framing import CHUNK, FramedRecord, TruncatedRecord, iter_records
from coupler.translators.copybook.layout import build_layout
from coupler.translators.copybook.options import CopybookOptions
from coupler.translators.copybook.parser import parse_copybook
from tests import fuzzing
from tests.fuzzing import MB, SEED, cases


def _copybook(*fields: str) -> str:
    return "       01 REC.\n" + "".join(f"          05 {f}.\n" for f in fields)


#: name -> (copybook, options, encode(length) -> the length field's bytes, the bytes before it)
LENGTH_FIELDS: dict[str, tuple[str, dict[str, str], Callable[[int], bytes], int]] = {
    "display": (_copybook("LEN PIC 9(4)", "BODY PIC X(40)"),
                {"encoding": "ascii"}, lambda n: str(n % 10**4).zfill(4).encode(), 0),
    "display-signed-after-header": (_copybook("HDR PIC X(3)", "LEN PIC S9(5) SIGN LEADING SEPARATE", "BODY PIC X(30)"),
                                    {"encoding": "ascii", "rdw_adjustment": "3"},
                                    lambda n: b"+" + str((n - 3) % 10**5).zfill(5).encode(), 3),
    "binary": (_copybook("LEN PIC 9(9) COMP", "BODY PIC X(20)"), {}, lambda n: n.to_bytes(4, "big"), 0),
    "binary-signed-little": (_copybook("LEN PIC S9(4) COMP-5", "BODY PIC X(20)"),
                             {"is_rdw_big_endian": "false"}, lambda n: (n % 2**15).to_bytes(2, "little"), 0),
    "packed": (_copybook("LEN PIC S9(17) COMP-3", "BODY PIC X(20)"), {},
               lambda n: bytes.fromhex(str(n).zfill(17) + "C"), 0),
    "decimal": (_copybook("LEN PIC 9(3)V9", "BODY PIC X(20)"), {"encoding": "ascii"},
                lambda n: str(n % 1000).zfill(3).encode() + b"5", 0),
}
RDW_FORMATS: dict[str, dict[str, str]] = {
    "V": {"record_format": "V"},
    "V-big-inclusive": {"record_format": "V", "is_rdw_big_endian": "true", "is_rdw_part_of_record_length": "true"},
    "VB": {"record_format": "VB", "is_rdw_big_endian": "true"},
    "FB": {"record_format": "FB"},
}
RDW_COPYBOOK = _copybook("KIND PIC X", "BODY PIC X(30)")

#: options varied over every target: a header and a trailer skipped, records cut at both
#: ends, lengths adjusted (negative: a length of 0 or less)
VARIED: list[dict[str, str]] = [{}, {}, {"file_start_offset": "3"}, {"file_end_offset": "5"},
                                {"record_start_offset": "2", "record_end_offset": "1"}, {"rdw_adjustment": "-2"},
                                {"rdw_adjustment": "4"}]
HUGE = [0, 1, 2**15, 2**16 - 1, 2**31 - 1, 2**31, 2**32 - 1, 10**9, 10**17, 10**18, 10**19]


# -- well-formed files, then damaged ------------------------------------------------------------


def _length_field_file(rng: random.Random, name: str) -> bytes:
    _, options, encode, before = LENGTH_FIELDS[name]
    prefix = before + len(encode(0))
    out = bytearray()
    for _ in range(rng.randrange(0, 12)):
        length = rng.randrange(prefix, prefix + 45)
        body = bytes(rng.randrange(32, 127) for _ in range(length - prefix))
        out += bytes(rng.randrange(65, 91) for _ in range(before)) + encode(length) + body
    return bytes(out)


def _descriptor(n: int, big: bool) -> bytes:
    return n.to_bytes(2, "big") + b"\0\0" if big else b"\0\0" + n.to_bytes(2, "little")


def _rdw_file(rng: random.Random, name: str) -> bytes:
    options = RDW_FORMATS[name]
    big = options.get("is_rdw_big_endian") == "true"
    inclusive = options.get("is_rdw_part_of_record_length") == "true"
    records = [bytes(rng.randrange(64, 250) for _ in range(rng.randrange(1, 40))) for _ in range(rng.randrange(0, 10))]
    if options["record_format"] == "FB":  # blocks of whole 31-byte records
        out = bytearray()
        for _ in range(rng.randrange(0, 4)):
            count = rng.randrange(1, 4)
            out += _descriptor(4 + 31 * count, big) + bytes(rng.randrange(64, 250) for _ in range(31 * count))
        return bytes(out)
    rdws = [_descriptor(len(r) + (4 if inclusive else 0), big) + r for r in records]
    if options["record_format"] == "V":
        return b"".join(rdws)
    out = bytearray()
    while rdws:
        block, rdws = rdws[: rng.randrange(1, 4)], rdws[3:]
        body = b"".join(block)
        out += _descriptor(len(body) + 4, big) + body
    return bytes(out)


def _mutated(rng: random.Random, data: bytes, length_bytes: Callable[[int], bytes] | None) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        what = rng.randrange(7)
        at = rng.randrange(len(data) + 1)
        if what == 0 and data:  # a byte flipped
            data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif what == 1:  # cut short
            del data[at:]
        elif what == 2:  # a piece removed
            del data[at : at + rng.randrange(1, 9)]
        elif what == 3:  # a piece repeated
            data[at:at] = data[at : at + rng.randrange(1, 40)]
        elif what == 4:  # random bytes inserted
            data[at:at] = rng.randbytes(rng.randrange(1, 9))
        elif what == 5:  # a descriptor word claiming a huge or absurd length
            data[at:at] = rng.choice([b"\xff\xff\0\0", b"\0\0\xff\xff", b"\x80\0\0\0", b"\xff\xff\xff\xff", b"\0\0\0\0"])
        elif length_bytes is not None:  # a length field claiming up to 10**18 (its digits allowing)
            with contextlib.suppress(OverflowError, ValueError):
                data[at:at] = length_bytes(rng.choice(HUGE))
    return bytes(data)


# -- the checks of one case ----------------------------------------------------------------------


def bounded(case: str, size: int) -> contextlib.AbstractContextManager[None]:
    """The case ends within 5 s and allocates at most a few times the file's size (plus the
    reader's chunk): what a claimed length says is never allocated (:func:`tests.fuzzing.bounded`)."""
    return fuzzing.bounded(case, memory=8 * size + 2 * CHUNK + 4 * MB)


def _decode(layout: Any, options: dict[str, str], data: bytes, path: Path, policy: str, case: str) -> None:
    path.write_bytes(data)
    with bounded(case, len(data)):
        try:
            results = list(decode_files(layout, [path], options, policy=policy))
        except CouplerError as exc:
            assert "\n" not in str(exc), f"{case}: {exc!s}"
            return
    for rec in results:
        if isinstance(rec, BadRecord):
            error = rec.error
            assert error.reason and "\n" not in error.message, case
            assert error.record >= 1, f"{case}: {error.message}"
            assert 0 <= error.offset <= len(data), f"{case}: offset {error.offset} of a {len(data)}-byte file"
        else:
            assert isinstance(rec, dict), case


def _frames(options: CopybookOptions, data: bytes, case: str, **framing: Any) -> None:
    """``iter_records`` over ``data`` read in chunks of 1 to 16 bytes: each record is the file's
    bytes at its offset, in order, within the file."""
    last = -1
    chunk = 1 + len(data) % 16
    with bounded(case, len(data)):
        try:
            frames = list(iter_records(io.BytesIO(data), options, chunk_size=chunk, **framing))
        except CouplerError as exc:
            assert "\n" not in str(exc) and getattr(exc, "offset", 0) <= len(data), f"{case}: {exc!s}"
            return
    for i, f in enumerate(frames):
        assert isinstance(f, FramedRecord | TruncatedRecord), case
        assert f.number == i and f.offset > last, f"{case}: frame {i} at {f.offset} after {last}"
        assert data[f.offset : f.offset + len(f.payload)] == f.payload, f"{case}: frame {i} is not the file's bytes"
        # a truncated record ends the data, but for one shorter than its start and end offsets
        cut = options.record_start_offset + options.record_end_offset
        assert isinstance(f, FramedRecord) or i == len(frames) - 1 or len(f.payload) < cut, \
            f"{case}: a truncated record before the end"
        last = f.offset


# -- the run -------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _seed_with_every_report() -> None:
    print(f"COUPLER_FUZZ_SEED={SEED} (set it to replay the random run)")


def test_the_seed_of_the_random_run_is_logged(capsys: pytest.CaptureFixture[str]) -> None:
    with capsys.disabled():
        print(f"\n{__name__}: COUPLER_FUZZ_SEED={SEED} (set it to replay the random run)")


def test_length_field_and_descriptor_framing_survive_random_and_mutated_files(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    targets: list[tuple[str, Any, dict[str, str], Callable[[random.Random], bytes], Any]] = []
    for name, (text, extra, encode, _before) in LENGTH_FIELDS.items():
        layout = build_layout(parse_copybook(text))
        options = {"record_format": "F", "record_length_field": "LEN", **extra}
        framing = length_field_framing(layout, RecordDecoder(layout, options))
        targets.append((f"record_length_field {name}", layout, options,
                        lambda r, n=name: _length_field_file(r, n), (encode, framing)))
    rdw_layout = build_layout(parse_copybook(RDW_COPYBOOK))
    for name, options in RDW_FORMATS.items():
        targets.append((f"record_format {name}", rdw_layout, options, lambda r, n=name: _rdw_file(r, n), None))

    count = 0
    for count in cases(least=2 * len(targets)):
        label, layout, options, make, extra = targets[count % len(targets)]
        kind = rng.randrange(4)
        if kind == 0:
            data = rng.randbytes(rng.randrange(0, 200))
        else:
            data = _mutated(rng, make(rng), extra[0] if extra else None)
        options = {**options, **rng.choice(VARIED)}
        case = f"case {count} ({label}, {options}, {len(data)} bytes: {data[:48].hex()}...)"
        policy = rng.choice(["lenient", "strict"])
        _decode(layout, options, data, tmp_path / "fuzz.bin", policy, case)
        parsed = CopybookOptions.from_mapping(options)
        if extra:
            _frames(parsed, data, case, **extra[1])
        else:
            _frames(parsed, data, case, record_size=layout.size)
    print(f"{count + 1} cases in {fuzzing.BUDGET} s")


@pytest.mark.parametrize("claim", [2**31, 10**9, 10**17 - 1])
def test_a_huge_packed_length_in_the_middle_of_a_file_is_a_truncated_record(tmp_path: Path, claim: int) -> None:
    """A regression case of the run above, with its place: the second record's length field
    claims far more than the file holds; the first is decoded, the second reported."""
    text, options, encode, _ = LENGTH_FIELDS["packed"]
    layout = build_layout(parse_copybook(text))
    options = {"record_format": "F", "record_length_field": "LEN", **options}
    first = encode(29) + b"\xc1" * 20
    data = first + encode(claim) + b"\xc2" * 50
    path = tmp_path / "claims.bin"
    path.write_bytes(data)
    with bounded(f"claim {claim}", len(data)):
        got = list(decode_files(layout, [path], options, policy="lenient"))
    assert isinstance(got[0], dict) and isinstance(got[1], BadRecord)
    assert (got[1].error.record, got[1].error.offset) == (2, len(first))
    assert f"{claim} bytes expected, {len(data) - len(first)} found" in got[1].error.message
