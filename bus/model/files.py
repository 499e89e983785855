"""The durable per-file seen-state of polling adapters: file keys, records, states and the
:class:`FileState` interface (implemented by each transport: SQLite file, PostgreSQL table)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from coupler.canonical.errors import CouplerError

#: states of a file in a :class:`FileState`
PROCESSING, PUBLISHED, DONE, FAILED, STAGED = "PROCESSING", "PUBLISHED", "DONE", "FAILED", "STAGED"
FINAL_STATES = (DONE, FAILED, STAGED)


def path_text(path: str) -> str:
    """A path as text a store, a message or a log can hold: the path itself when its name is
    UTF-8; else the bytes that are not (which Python gives as surrogate escapes, e.g. a
    Latin-1 name written by a legacy system) as ``\\xNN``."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def path_shown(path: str) -> str:
    """:func:`path_text` on one line, as a log line, an error or a ``.reason`` file shows a
    path: its control and other unprintable characters as escapes (a newline in a name as
    ``\\n``, a terminal escape as ``\\x1b``), so that no name forges a line or reaches a terminal."""
    text = path_text(path)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


@dataclass(frozen=True)
class FileKey:
    """A file as a polling adapter saw it: path (as :func:`path_text`), size, mtime and
    (optionally) its SHA-256."""

    path: str
    size: int
    mtime_ns: int
    checksum: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", path_text(self.path))

    def __str__(self) -> str:
        mtime = datetime.fromtimestamp(self.mtime_ns / 1e9, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        text = f"{path_shown(self.path)} ({self.size} bytes, modified {mtime})"
        return text + (f" sha256 {self.checksum[:12]}" if self.checksum else "")


@dataclass(frozen=True)
class FileRecord:
    key: FileKey
    state: str
    published: int
    detail: str | None
    updated: float


class FileClaimLost(CouplerError):
    """Another daemon took over a file this one was processing (its claim ran out): this
    daemon stops working on the file; the other one finishes it."""


class FileState(Protocol):
    """The durable seen-state of one polling adapter (``context.file_state()``).

    A file goes ``PROCESSING`` (``published`` counts the messages already sent) →
    ``PUBLISHED`` → ``DONE``; or → ``FAILED``; or → ``STAGED``. A changed file (size, mtime,
    checksum) is a new key. The embedded implementation is a SQLite file in the adapter's
    data directory; a multi-node site keeps it in PostgreSQL, shared by every daemon, where
    :meth:`begin` is a claim: only one daemon at a time works on a file.
    """

    def get(self, key: FileKey) -> FileRecord | None:
        """The record of ``key``, if any."""
        ...

    def find(self, path: str, size: int, mtime_ns: int) -> list[FileRecord]:
        """Every record of this path, size and mtime (whatever their checksum), newest first."""
        ...

    def begin(self, key: FileKey) -> FileRecord | None:
        """Claim the file: its record (created ``PROCESSING`` when it has none), or None when
        another live daemon holds it (shared state only; the embedded state never says None).
        A claim whose holder made no progress for the lease time is taken over."""
        ...

    def progress(self, key: FileKey, published: int) -> None:
        """``published`` messages of the file are durably on the bus (renews the claim;
        raises :class:`FileClaimLost` when another daemon took the file over)."""
        ...

    def set_state(self, key: FileKey, state: str, detail: str | None = None) -> None:
        """Move the file to ``state`` (raises :class:`FileClaimLost` like :meth:`progress`)."""
        ...

    def counts(self) -> dict[str, int]:
        """Number of files per state."""
        ...

    def prune(self, older_than_seconds: float) -> int:
        """Forget finished files not seen for ``older_than_seconds`` (and old delivery ids)."""
        ...

    def seen(self, consumer: str, keys: Iterable[str]) -> set[str]:
        """Outbound: of ``keys``, those ``consumer`` recorded as written (the store of the
        adapter's Idempotent Receiver, :mod:`coupler.bus.messaging.idempotency`)."""
        ...

    def mark_seen(self, consumer: str, keys: Iterable[str]) -> None:
        """Outbound: record ``keys`` as written by ``consumer``."""
        ...

    def close(self) -> None: ...


