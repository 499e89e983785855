"""The sizes of the splits a file of records is cut into for parallel readers (Spark's split
tasks, ``coupler xml decode --jobs``): full splits while there is plenty left, then smaller
ones so that the workers finish together."""

from __future__ import annotations

#: the smallest split of a job's last wave, as a fraction of the split size: 2 MB of 128 MB,
#: about 10 ms of a core's work on copybook records (a split's own cost, opening and closing
#: its file, is ~2.4 ms of CPU). The last split is what one slot may still run while the
#: other has nothing left: with 8 MB (a sixteenth, before) the slots of a 1 GB job on
#: ``local[2]`` ended 20-60 ms apart, up to 2.5 % of the job
TAIL_DIVISOR = 64


def tail_floor(total: int, split_bytes: int, slots: int, divisor: int = TAIL_DIVISOR) -> int:
    """The smallest split of a job of ``total`` bytes: ``split_bytes / divisor``, and no more
    than an eighth of a slot's share of a small job (22 MB on two slots: 1.4 MB)."""
    return max(1, min(split_bytes // divisor, total // (8 * max(slots, 1))))


def guided_split_bytes(left: int, split_bytes: int, slots: int, floor: int | None = None) -> int:
    """The size of the next split when ``left`` bytes remain to be split for ``slots`` task
    slots: ``split_bytes`` while there is plenty left, then what is left divided by the
    slots (guided self-scheduling), down to ``floor`` (by default ``split_bytes / 64``), so
    that the last splits end nearly together: whichever slot is free claims the next split,
    and the small last splits fill the gap a slot that ran a little slower leaves. 1 GB on
    two slots: 13 splits (6 x 134 MB, then 97, 49, 24, 12, 6, 3, 3 MB); with a quarter of
    what is left per slot, as before, more, and 25 with 64 MB splits (each split one file).
    One slot: always ``split_bytes``."""
    if slots <= 1:
        return split_bytes
    low = floor if floor is not None else max(1, split_bytes // TAIL_DIVISOR)
    size = min(split_bytes, max(low, -(-left // slots), 1))
    return left if 0 < left - size < low else size  # no last split smaller than the floor
