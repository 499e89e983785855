"""The durable per-file seen-state of inbound adapters, and outbound delivery records.

The interface is :class:`coupler.bus.api.FileState`, which the bus offers through
``context.file_state()``: ``files.db`` (SQLite) in the adapter's data directory on a
single-node site, a PostgreSQL table every daemon shares on a multi-node one (where taking a
file is a claim: two daemons polling one directory never both take the same file).
Adapters run without a bus context (tests, tools) use the embedded SQLite file.

A file is identified by its path, size, modification time and, when configured, its
SHA-256 checksum. Its state goes ``PROCESSING`` (messages being published; ``published``
counts those already sent) → ``PUBLISHED`` (every message sent, post-action pending) →
``DONE``; or → ``FAILED`` (moved to the error directory); or → ``STAGED`` (handed to the
batch job). A file whose size or mtime changes is a new key, hence taken again.
"""

from __future__ import annotations

from pathlib import Path

from coupler.bus.api import (
    DONE,
    FAILED,
    FINAL_STATES,
    PROCESSING,
    PUBLISHED,
    STAGED,
    AdapterContext,
    FileClaimLost,
    FileKey,
    FileRecord,
    FileState,
    embedded_file_state,
    path_shown,
    path_text,
)


def FileStateStore(path: Path, *, synchronous: str = "FULL") -> FileState:  # noqa: N802 - the former class
    """The embedded seen-state in the SQLite file ``path``."""
    return embedded_file_state(path, synchronous=synchronous)


def open_file_state(name: str, context: AdapterContext | None, data_dir: Path) -> FileState:
    """The seen-state the bus offers adapter ``name`` (shared on a multi-node site), or
    ``data_dir/files.db`` when the context offers none."""
    factory = getattr(context, "file_state", None)
    if factory is not None:
        return factory(name)
    return embedded_file_state(data_dir / "files.db")


__all__ = [
    "DONE", "FAILED", "FINAL_STATES", "PROCESSING", "PUBLISHED", "STAGED", "FileClaimLost", "FileKey",
    "FileRecord", "FileState", "FileStateStore", "open_file_state", "path_shown", "path_text",
]
