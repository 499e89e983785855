"""Generated mainframe data for the benchmarks: a ~207-byte fixed-length EBCDIC record
with text, zoned decimal, packed decimal, binary and an OCCURS 5 group.

``write_fixed_file(path, records)`` writes it in chunks (vectorised with NumPy, so a
gigabyte takes seconds) and is deterministic for a given seed.
"""

from __future__ import annotations

import codecs
from pathlib import Path

import numpy as np

COPYBOOK = """\
       01  TXN-RECORD.
           05  TXN-ID              PIC X(12).
           05  CUSTOMER-NAME       PIC X(40).
           05  BRANCH-CODE         PIC X(6).
           05  AMOUNT              PIC S9(7)V99.
           05  BALANCE             PIC S9(9)V99 COMP-3.
           05  TXN-COUNT           PIC S9(9) COMP.
           05  LINE-ITEM OCCURS 5 TIMES.
               10  ITEM-CODE       PIC X(8).
               10  ITEM-QTY        PIC S9(5) COMP-3.
               10  ITEM-PRICE      PIC S9(7)V99 COMP-3.
               10  ITEM-FLAG       PIC X(1).
               10  ITEM-AMOUNT     PIC S9(7)V99.
"""
ITEM_SIZE = 8 + 3 + 5 + 1 + 9
RECORD_SIZE = 12 + 40 + 6 + 9 + 6 + 4 + 5 * ITEM_SIZE  # 207

_CP037 = np.frombuffer(bytes(range(256)).decode("latin-1").encode("cp037"), dtype=np.uint8)
_NAMES = ["SMITH", "JONES", "GARCIA", "MUELLER", "ROSSI", "DUPONT", "TANAKA", "OKAFOR", "SILVA", "NOVAK"]
_FIRST = ["ANN", "BOB", "CARLOS", "DIANA", "ERIK", "FATIMA", "GRETA", "HUGO", "IRENE", "JONAS"]


def _text(strings: list[str], width: int) -> np.ndarray:
    raw = np.frombuffer("".join(s.ljust(width)[:width] for s in strings).encode("latin-1"), dtype=np.uint8)
    return _CP037[raw].reshape(len(strings), width)


def _zoned(values: np.ndarray, digits: int) -> np.ndarray:
    """Signed zoned decimal, trailing overpunched sign (C positive, D negative)."""
    mag = np.abs(values)
    out = np.empty((len(values), digits), dtype=np.uint8)
    for i in range(digits - 1, -1, -1):
        out[:, i] = 0xF0 | (mag % 10)
        mag //= 10
    out[:, -1] = np.where(values < 0, 0xD0, 0xC0) | (out[:, -1] & 0x0F)
    return out


def _packed(values: np.ndarray, digits: int) -> np.ndarray:
    """Signed packed decimal of ``digits`` digits (odd), sign nibble C or D."""
    size = digits // 2 + 1
    mag = np.abs(values)
    nibbles = np.empty((len(values), size * 2), dtype=np.uint8)
    nibbles[:, -1] = np.where(values < 0, 0x0D, 0x0C)
    for i in range(size * 2 - 2, -1, -1):
        nibbles[:, i] = mag % 10
        mag //= 10
    return (nibbles[:, 0::2] << 4) | nibbles[:, 1::2]


def _binary(values: np.ndarray) -> np.ndarray:
    return values.astype(">i4").view(np.uint8).reshape(len(values), 4)


def make_records(count: int, seed: int = 0, start: int = 0) -> np.ndarray:
    """``count`` records as a (count, RECORD_SIZE) uint8 array."""
    rng = np.random.default_rng(seed + start)
    ids = [f"TX{start + i:010d}" for i in range(count)]
    people = rng.integers(0, 100, count)
    names = [f"{_FIRST[p % 10]} {_NAMES[p // 10]}" for p in people]
    branches = [f"BR{b:04d}" for b in rng.integers(0, 500, count)]
    parts = [
        _text(ids, 12),
        _text(names, 40),
        _text(branches, 6),
        _zoned(rng.integers(-99_999_999, 1_000_000_000, count), 9),
        _packed(rng.integers(-99_999_999_999, 100_000_000_000, count), 11),
        _binary(rng.integers(-999_999_999, 1_000_000_000, count)),
    ]
    for _ in range(5):
        codes = [f"SKU{c:05d}" for c in rng.integers(0, 50_000, count)]
        parts += [
            _text(codes, 8),
            _packed(rng.integers(0, 100_000, count), 5),
            _packed(rng.integers(0, 1_000_000_000, count), 9),
            _text(list(rng.choice(["Y", "N", " "], count)), 1),
            _zoned(rng.integers(-999_999_999, 1_000_000_000, count), 9),
        ]
    records = np.concatenate(parts, axis=1)
    assert records.shape == (count, RECORD_SIZE)
    return records


def write_fixed_file(path: str | Path, records: int, *, seed: int = 0, chunk: int = 100_000) -> Path:
    """Write ``records`` fixed-length records to ``path`` (reused when already complete)."""
    path = Path(path)
    if path.exists() and path.stat().st_size == records * RECORD_SIZE:
        return path
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("wb") as out:
        for start in range(0, records, chunk):
            out.write(make_records(min(chunk, records - start), seed, start).tobytes())
    tmp.replace(path)
    return path


def write_copybook(path: str | Path) -> Path:
    path = Path(path)
    path.write_text(COPYBOOK)
    return path


assert codecs.lookup("cp037")  # the generator's code page is the decoder's default
