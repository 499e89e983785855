"""The directory jail: relative names that can never leave the adapter's root.

Every file name an adapter derives from a header, a property or a template goes through
:func:`safe_relative`; a name that is absolute, climbs with ``..``, contains a NUL byte or
(locally) resolves through a symbolic link to a place outside the root is refused with a
:class:`PathTraversalError` naming it.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

from .errors import PathTraversalError


def safe_relative(name: str, *, where: str = "file name") -> str:
    """``name`` as a normalised relative POSIX path inside the root, or raise."""
    if not name or "\x00" in name:
        raise PathTraversalError(f"empty file name or NUL byte in {name!r}", where=where)
    if "\\" in name:
        raise PathTraversalError(f"backslash in file name {name!r} refused", where=where)
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise PathTraversalError(
            f"absolute file name {name!r} refused: names are relative to the adapter's directory",
            where=where,
        )
    parts = name.split("/")
    if ".." in parts:
        raise PathTraversalError(
            f"file name {name!r} climbs out of the adapter's directory with '..'", where=where,
            hint="path traversal is refused; fix the header, property or template producing it",
        )
    normal = posixpath.normpath(name)
    if normal in (".", "") or normal.startswith("../"):
        raise PathTraversalError(f"file name {name!r} names no file inside the directory", where=where)
    return normal


def local_path(root: Path, name: str, *, where: str = "file name") -> Path:
    """The local path of relative ``name`` under ``root``; symbolic links may not lead out."""
    rel = safe_relative(name, where=where)
    base = Path(os.path.realpath(root))
    target = Path(os.path.realpath(base / rel))
    if target != base and base not in target.parents:
        raise PathTraversalError(
            f"file name {name!r} resolves to {target}, outside {base} (symbolic link?)", where=where
        )
    return base / rel
