"""The files docs/batch.md's examples name: ``cards.cpy`` and EBCDIC card records with
big-endian RDWs in ``in/a.dat`` (two cards) and ``in/b.dat`` (one), read by its Python
examples, its ``coupler batch translate`` examples and its cluster example."""

from __future__ import annotations

from pathlib import Path

COPYBOOK = "       01  CARD.\n           05  CARD-NO     PIC X(16).\n           05  CARD-LIMIT  PIC 9(5).\n"
#: the files' records, (CARD_NO, CARD_LIMIT) in file order
CARDS = {"a.dat": [("4000123412341234", 1000), ("5500000000000004", 2000)], "b.dat": [("4111111111111111", 1000)]}


def write_cards(folder: Path) -> None:
    """``folder/cards.cpy``, ``folder/in/a.dat`` and ``folder/in/b.dat``."""
    (folder / "in").mkdir(parents=True, exist_ok=True)
    (folder / "cards.cpy").write_text(COPYBOOK)
    for name, cards in CARDS.items():
        records = [f"{number}{limit:05d}".encode("cp037") for number, limit in cards]
        (folder / "in" / name).write_bytes(b"".join(len(r).to_bytes(2, "big") + b"\0\0" + r for r in records))


def all_cards() -> list[tuple[str, int]]:
    """Every card of the files, sorted."""
    return sorted(card for cards in CARDS.values() for card in cards)
