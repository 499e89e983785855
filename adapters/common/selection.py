"""Which files an inbound adapter looks at: globs, hidden files, done markers, order, limit."""

from __future__ import annotations

import fnmatch
import heapq
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from .fs import FileInfo

#: the orders files are taken in (option ``order``)
Order = Literal["name", "mtime"]


@dataclass
class Selection:
    """``include`` / ``exclude`` are globs over the relative path *and* the base name."""

    include: list[str] = field(default_factory=lambda: ["*"])
    exclude: list[str] = field(default_factory=list)
    #: suffix of done markers (``.done``) or None; markers themselves are never taken
    done_suffix: str | None = None
    #: the reason file suffix written beside failed files
    reason_suffix: str = ".reason"

    def matches(self, path: str) -> bool:
        name = posixpath.basename(path)
        if any(part.startswith(".") for part in path.split("/")):
            return False  # hidden files and directories, and our own temporary .part files
        if self.done_suffix and name.endswith(self.done_suffix):
            return False
        if not any(_glob(path, name, g) for g in self.include):
            return False
        return not any(_glob(path, name, g) for g in self.exclude)


def _glob(path: str, name: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(path, pattern)


def order_files(files: Iterable[FileInfo], order: str, limit: int | None) -> list[FileInfo]:
    """The first ``limit`` files by name or by modification time (then name).

    Keeps at most ``limit`` entries in memory, so a large directory is walked, not held.
    """
    key = (lambda f: f.path) if order == "name" else (lambda f: (f.mtime_ns, f.path))
    if limit is None:
        return sorted(files, key=key)
    return heapq.nsmallest(limit, files, key=key)
