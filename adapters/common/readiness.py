"""Is a file complete? The readiness strategies of the polling file adapters.

A legacy writer signals that a file is whole in one of three ways, and the inbound pipeline
(:mod:`.inbound`) asks the strategy the adapter's options choose (:func:`readiness_for`):

* :class:`StableSize` -- its size and mtime have not changed for ``stable_seconds`` (the writer
  says nothing; the default);
* :class:`DoneMarker` -- a marker file ``NAME`` + ``suffix`` exists beside it (the writer
  creates the marker last); the marker is removed with the file;
* :class:`RenamedIntoPlace` -- the writer writes under a name the selection ignores (a hidden
  or ``.tmp`` name) and renames it when done: a file is ready when first seen
  (``stable_seconds = 0``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from .fs import FileInfo


class Readiness(Protocol):
    """A readiness strategy: :meth:`ready` for each candidate of a poll (``present``: every
    path listed by it), then :meth:`prune`; :meth:`next_check_in` says when to look again;
    :meth:`companions` are the files to remove or move away with a taken file."""

    def ready(self, info: FileInfo, present: set[str]) -> bool: ...

    def prune(self, present: set[str]) -> None: ...

    def next_check_in(self) -> float | None: ...

    def companions(self, path: str) -> list[str]: ...


@dataclass
class StableSize:
    """A file is ready when its size and mtime have not changed for ``stable_seconds``.

    The first observation of a file starts its clock; any change restarts it.
    """

    stable_seconds: float = 2.0
    clock: Callable[[], float] = time.monotonic
    _seen: dict[str, tuple[int, int, float]] = field(default_factory=dict)

    def ready(self, info: FileInfo, present: set[str] | None = None) -> bool:
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

    def companions(self, path: str) -> list[str]:
        return []


#: the name this strategy had (kept for code that imports it)
StabilityCheck = StableSize


@dataclass
class DoneMarker:
    """A file is ready when the marker ``NAME`` + ``suffix`` exists beside it."""

    suffix: str

    def ready(self, info: FileInfo, present: set[str]) -> bool:
        return info.path + self.suffix in present

    def prune(self, present: set[str]) -> None:
        pass

    def next_check_in(self) -> float | None:
        return None  # a marker appears when it appears: the poll interval looks again

    def companions(self, path: str) -> list[str]:
        return [path + self.suffix]


@dataclass
class RenamedIntoPlace:
    """The writer renames a complete file into a name the selection takes: ready when seen."""

    def ready(self, info: FileInfo, present: set[str]) -> bool:
        return True

    def prune(self, present: set[str]) -> None:
        pass

    def next_check_in(self) -> float | None:
        return None

    def companions(self, path: str) -> list[str]:
        return []


def readiness_for(stable_seconds: float, done_suffix: str | None) -> Readiness:
    """The strategy of an adapter's options: a done marker when ``done_suffix`` is set, files
    renamed into place when ``stable_seconds`` is 0, else a stable size."""
    if done_suffix:
        return DoneMarker(done_suffix)
    if stable_seconds <= 0:
        return RenamedIntoPlace()
    return StableSize(stable_seconds)
