"""A small ``segment-children`` file (three parents with 3, 1 and 4 children, little-endian
RDWs) that the split tests of ``batch translate`` read: with two records a split, splits
would start at children unless they are planned to start at a root record."""

from __future__ import annotations

from pathlib import Path

COPYBOOK = (
    "       01 R.\n          05 T PIC X.\n          05 P.\n             10 PN PIC X(3).\n"
    "          05 C REDEFINES P.\n             10 CN PIC 9(3).\n"
)
RECORDS = [b"PAAA", b"C001", b"C002", b"C003", b"PBBB", b"C004", b"PCCC", b"C005", b"C006", b"C007", b"C008"]
#: (parent's PN, its children's CN) in file order
FAMILIES = [("AAA", [1, 2, 3]), ("BBB", [4]), ("CCC", [5, 6, 7, 8])]
OPTIONS = {"record_format": "V", "encoding": "ascii", "segment_field": "T",
           "redefine_segment_id_map:1": "P => P", "redefine_segment_id_map:2": "C => C",
           "segment_children:1": "P => C"}


def write_hierarchy(folder: Path) -> tuple[Path, Path]:
    """(copybook, data file) of the case in ``folder``."""
    cpy, data = folder / "h.cpy", folder / "h.dat"
    cpy.write_text(COPYBOOK)
    data.write_bytes(b"".join(bytes((0, 0, len(r) & 0xFF, len(r) >> 8)) + r for r in RECORDS))
    return cpy, data
