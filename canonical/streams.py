"""Reading files whose contents claim their own lengths.

A length field read from a damaged file (an Avro string or block size of 2^60 bytes) is
passed by readers such as fastavro straight to ``read(n)``, which allocates ``n`` bytes
before it reads: a ``MemoryError``, or gigabytes taken for a file of a few kilobytes.
:class:`CappedReads` hands such a reader the same file with every read capped at the bytes
the file has left, so the claim ends in a short read, which the reader reports as a
truncated file (``EOFError``).
"""

from __future__ import annotations

import os
from typing import IO, Any, cast


class CappedReads:
    """``f`` (a binary file open for reading), with ``read(n)`` asking for no more than the
    bytes between the position and the end of the file as it was when wrapped."""

    def __init__(self, f: IO[bytes]):
        self._f = f
        self._size = os.fstat(f.fileno()).st_size

    def read(self, n: int | None = -1) -> bytes:
        if n is None or n < 0:
            return self._f.read()
        return self._f.read(min(n, max(0, self._size - self._f.tell())))

    def __getattr__(self, name: str) -> Any:  # seek, tell, name... of the file itself
        return getattr(self._f, name)


def capped_reads(f: IO[bytes]) -> IO[bytes]:
    """``f`` wrapped in :class:`CappedReads`, typed as the file it stands for (every other
    attribute is the file's own)."""
    return cast(IO[bytes], CappedReads(f))


__all__ = ["CappedReads", "capped_reads"]
