"""Group commit for the embedded store: one fsync of the WAL covers every commit made before
it started, whichever process made them.

Two counters shared by all processes of a store live in a 16-byte file beside it
(``coupler.db-sync``, memory-mapped): ``committed``, the number of durable commits made so far
(bumped inside the write lock, just after ``COMMIT``), and ``synced``, the highest count known
to be on disk. After releasing the write lock a committer takes the sync lock (an exclusive
``flock`` of the same file): if ``synced`` already covers its commit, an fsync another process
ran while it waited did its work, and it returns at once; otherwise it reads ``committed``,
fsyncs the WAL and publishes that count as ``synced``. Commits made while an fsync runs queue
on the sync lock and are covered together by the next one: the commits of a producer and a
consumer share fsyncs instead of taking turns at the disk.

A process killed at any point leaves the counters consistent: ``synced`` only grows after an
fsync returned, and a commit whose process died before counting it was never reported done.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
from collections.abc import Callable
from pathlib import Path

_COUNTER = struct.Struct("<Q")
_COMMITTED, _SYNCED = 0, 8
_SIZE = 16


class GroupCommit:
    """The shared counters of one store (``path``: the ``-sync`` file)."""

    def __init__(self, path: Path):
        self.path = path
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(fd).st_size < _SIZE:
                os.ftruncate(fd, _SIZE)  # only ever grows it: zeros for a new store
            self._map = mmap.mmap(fd, _SIZE)
        finally:
            os.close(fd)

    def close(self) -> None:
        self._map.close()

    def lock_descriptor(self) -> int:
        """A descriptor for the sync lock: one per thread (a flock belongs to an open file)."""
        return os.open(self.path, os.O_RDWR)

    def _get(self, offset: int) -> int:
        # an aligned 8-byte load is atomic on the platforms SQLite's WAL runs on; reading
        # twice guards ``committed``, which a writer may bump meanwhile, against a torn value
        while True:
            first = _COUNTER.unpack_from(self._map, offset)[0]
            if _COUNTER.unpack_from(self._map, offset)[0] == first:
                return first

    def committed(self) -> int:
        """Count one more durable commit; call inside the write lock, after ``COMMIT``."""
        seq = self._get(_COMMITTED) + 1
        _COUNTER.pack_into(self._map, _COMMITTED, seq)
        return seq

    def make_durable(self, seq: int, lock_fd: int, fsync: Callable[[], None]) -> bool:
        """Return once commit ``seq`` is on disk; True when this call ran the fsync."""
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        try:
            if self._get(_SYNCED) >= seq:
                return False
            target = self._get(_COMMITTED)  # every commit counted so far is in the WAL
            fsync()
            if target > self._get(_SYNCED):
                _COUNTER.pack_into(self._map, _SYNCED, target)
            return True
        finally:
            fcntl.flock(lock_fd, fcntl.LOCK_UN)
