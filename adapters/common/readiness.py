"""Is a file complete? Size and mtime stable for an interval, or a done marker beside it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .fs import FileInfo


@dataclass
class StabilityCheck:
    """A file is ready when its size and mtime have not changed for ``stable_seconds``.

    The first observation of a file starts its clock; any change restarts it. With
    ``stable_seconds`` 0 a file is ready when first seen (for writers that rename into place).
    """

    stable_seconds: float = 2.0
    clock: Callable[[], float] = time.monotonic
    _seen: dict[str, tuple[int, int, float]] = field(default_factory=dict)

    def ready(self, info: FileInfo) -> bool:
        now = self.clock()
        prev = self._seen.get(info.path)
        if prev is None or prev[0] != info.size or prev[1] != info.mtime_ns:
            self._seen[info.path] = (info.size, info.mtime_ns, now)
            return self.stable_seconds <= 0
        return now - prev[2] >= self.stable_seconds

    def prune(self, present: set[str]) -> None:
        """Forget files that disappeared (keeps the table as small as the directory)."""
        for path in [p for p in self._seen if p not in present]:
            del self._seen[path]

    def next_check_in(self) -> float | None:
        """Seconds until the earliest watched file may become ready (None: none watched)."""
        if not self._seen:
            return None
        now = self.clock()
        return max(0.0, min(since + self.stable_seconds - now for _, _, since in self._seen.values()))
