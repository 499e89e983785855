"""Writing a file safely: a temporary name, then an atomic rename; ``file_exists`` policies.

Policies when the target exists: ``override`` (replace it atomically), ``append`` (add to
its end, in place), ``fail`` (raise :class:`FileExistsPolicyError`), ``ignore`` (write
nothing), ``unique`` (choose ``name-1.ext``, ``name-2.ext``, ...). The temporary file is a
hidden ``.NAME.<random>.part`` beside the target, so that inbound pollers (which ignore
hidden files) never see a half-written file. The optional done file is written after the
rename.
"""

from __future__ import annotations

import contextlib
import posixpath
import uuid
from collections.abc import Iterable
from typing import Literal

from .errors import FileExistsPolicyError
from .fs import FileSystem
from .jail import safe_relative

#: what happens when a file to write exists (option ``file_exists``)
FileExists = Literal["override", "append", "fail", "ignore", "unique"]


def temp_name(rel: str) -> str:
    parent, base = posixpath.split(rel)
    return posixpath.join(parent, f".{base}.{uuid.uuid4().hex[:12]}.part")


def unique_candidates(rel: str) -> Iterable[str]:
    parent, base = posixpath.split(rel)
    stem, dot, ext = base.partition(".") if not base.startswith(".") else (base, "", "")
    yield rel
    n = 1
    while True:
        yield posixpath.join(parent, f"{stem}-{n}{dot}{ext}")
        n += 1


def write_file(
    fs: FileSystem,
    name: str,
    chunks: Iterable[bytes],
    *,
    policy: str = "fail",
    mode: int | None = None,
    done_suffix: str | None = None,
    make_dirs: bool = True,
) -> str | None:
    """Write ``chunks`` as ``name`` under ``fs``; returns the name written, None when ignored."""
    rel = safe_relative(name, where=fs.label)
    parent = posixpath.dirname(rel)
    if make_dirs and parent:
        fs.makedirs(parent)
    if fs.exists(rel):
        if policy == "ignore":
            return None
        if policy == "fail":
            raise FileExistsPolicyError(
                f"{rel} already exists", where=fs.label,
                hint="remove it, or set file_exists to override, append, unique or ignore",
            )
        if policy == "append":
            with fs.open_write(rel, append=True) as f:
                for chunk in chunks:
                    f.write(chunk)
                fs.flush(f)
            _done(fs, rel, done_suffix)
            return rel
    tmp = temp_name(rel)
    try:
        with fs.open_write(tmp) as f:
            for chunk in chunks:
                f.write(chunk)
            fs.flush(f)
        if mode is not None:
            fs.chmod(tmp, mode)
        if policy in ("override", "append"):
            fs.replace(tmp, rel)
            written: str | None = rel
        elif policy == "unique":
            written = next(c for c in unique_candidates(rel) if fs.rename_noreplace(tmp, c))
        else:  # fail / ignore: lost a race with another writer
            written = rel if fs.rename_noreplace(tmp, rel) else None
            if written is None and policy == "fail":
                raise FileExistsPolicyError(f"{rel} appeared while it was being written", where=fs.label)
    except BaseException:
        with contextlib.suppress(Exception):
            fs.remove(tmp)
        raise
    if written is None:
        fs.remove(tmp)
        return None
    fs.sync_dir(parent)
    _done(fs, written, done_suffix)
    return written


def _done(fs: FileSystem, rel: str, done_suffix: str | None) -> None:
    if not done_suffix:
        return
    done = rel + done_suffix
    tmp = temp_name(done)
    with fs.open_write(tmp) as f:
        fs.flush(f)
    fs.replace(tmp, done)
    fs.sync_dir(posixpath.dirname(rel))
