"""Writing a file safely: a temporary name, then an atomic rename; ``file_exists`` policies.

Policies when the target exists: ``override`` (replace it atomically), ``append`` (add to
its end, in place), ``fail`` (raise :class:`FileExistsPolicyError`), ``ignore`` (write
nothing), ``unique`` (choose ``name-1.ext``, ``name-2.ext``, ...). The temporary file is a
hidden ``.NAME.<tag>.part`` beside the target, so that inbound pollers (which ignore
hidden files) never see a half-written file; ``tag`` is random, or derived from the
message being delivered (:func:`temp_name`) so that a redelivery after a crash writes the
same temporary again and the outbound writer can tell its own leftovers. ``commit`` is
called once the temporary holds the whole content, before the rename. The optional done
file is written after the rename.

``append`` is record-atomic: the size of the target before the append is noted and, when the
append fails part-way (a full disk, a dropped SFTP connection, any exception), the target is
truncated back to it, so no fragment of the record stays for the next one to be appended to.
With a ``tag``, the size is first written durably to a hidden marker ``.NAME.<tag>.append``
(removed once the append is durable): a process killed in the middle of the append leaves
it, and :func:`undo_append` (run by a redelivery of the same message, and by the outbound
writer's recovery at start) cuts the fragment off before anything else is appended.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import posixpath
import uuid
from collections.abc import Callable, Iterable
from typing import BinaryIO, Literal

from coupler.canonical.errors import CouplerError, describe_exception

from .errors import FileExistsPolicyError
from .fs import FileSystem, directory_mode
from .jail import safe_relative
from .state import path_shown

log = logging.getLogger("coupler.writer")

#: what happens when a file to write exists (option ``file_exists``)
FileExists = Literal["override", "append", "fail", "ignore", "unique"]


#: the longest file name most file systems take (bytes)
NAME_MAX = 255


def temp_name(rel: str, tag: str | None = None, suffix: str = "part") -> str:
    """The hidden temporary ``.NAME.<tag>.part`` beside ``rel`` (``tag`` random when None).
    When that is longer than :data:`NAME_MAX` bytes, NAME is cut and ends with ``~`` and 8 hex
    digits of its hash (:func:`is_cut`): the temporary of a 255-byte name is still a name."""
    parent, base = posixpath.split(rel)
    tag = tag or uuid.uuid4().hex[:12]
    room = NAME_MAX - len(f"..{tag}.{suffix}".encode())
    raw = base.encode("utf-8", "surrogateescape")  # a name that is not UTF-8 (a listed Latin-1 one) too
    if len(raw) > room:
        digest = hashlib.sha256(raw).hexdigest()[:8]
        base = raw[: room - 9].decode("utf-8", "ignore") + "~" + digest
    return posixpath.join(parent, f".{base}.{tag}.{suffix}")


def is_cut(base: str) -> bool:
    """Whether ``base``, read from a temporary's name, was cut by :func:`temp_name` (the target's
    name cannot be told from it)."""
    return len(base) > 9 and base[-9] == "~" and all(c in "0123456789abcdef" for c in base[-8:])


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
    tag: str | None = None,
    commit: Callable[[str], None] | None = None,
    keep_marker: bool = False,
) -> str | None:
    """Write ``chunks`` as ``name`` under ``fs``; returns the name written, None when ignored.

    ``tag`` names the temporary (:func:`temp_name`; a leftover of that name is replaced);
    ``commit(temporary)`` runs when it holds the whole content, before the rename.
    ``keep_marker``: an append leaves its marker (:func:`append_marker`) for the caller to
    remove once it recorded the append (:func:`append_file`)."""
    rel = safe_relative(name, where=fs.label)
    parent = posixpath.dirname(rel)
    if make_dirs and parent:
        fs.makedirs(parent, None if mode is None else directory_mode(mode))
    if fs.exists(rel):
        if policy == "ignore":
            return None
        if policy == "fail":
            raise FileExistsPolicyError(
                f"{rel} already exists", where=fs.label,
                hint="remove it, or set file_exists to override, append, unique or ignore",
            )
        if policy == "append":
            append_file(fs, rel, chunks, tag=tag, keep_marker=keep_marker)
            _done(fs, rel, done_suffix)
            return rel
    tmp = temp_name(rel, tag)
    try:
        with _open_temp(fs, tmp, leftover=tag is not None) as f:
            for chunk in chunks:
                f.write(chunk)
            fs.flush(f)
        if mode is not None:
            fs.chmod(tmp, mode)
        if commit is not None:
            commit(tmp)
        written = rename_into_place(fs, tmp, rel, policy)
    except BaseException:
        with contextlib.suppress(Exception):
            fs.remove(tmp)
        raise
    finish_written(fs, tmp, rel, written, done_suffix, tag)
    return written


def append_marker(rel: str, tag: str) -> str:
    """The hidden marker ``.NAME.<tag>.append`` holding the size ``rel`` had before an append."""
    return temp_name(rel, tag, "append")


def append_file(
    fs: FileSystem, rel: str, chunks: Iterable[bytes], *, tag: str | None = None, keep_marker: bool = False
) -> None:
    """Append ``chunks`` to the existing ``rel``, all or nothing (see the module's text).

    ``keep_marker``: the marker stays after a complete append, so that a crash before the
    caller recorded the append still cuts it back (the redelivery appends it once); the
    caller removes the marker after its record."""
    marker = append_marker(rel, tag) if tag else None
    if marker is not None:
        undo_append(fs, marker, rel)  # a fragment a killed attempt of this same message left
    info = fs.stat(rel)
    start = info.size if info is not None else 0
    if marker is not None:
        with _open_temp(fs, marker, leftover=True) as f:
            f.write(str(start).encode())
            fs.flush(f)
    try:
        with fs.open_write(rel, append=True) as f:
            for chunk in chunks:
                f.write(chunk)
            fs.flush(f)
    except BaseException:
        try:
            fs.truncate(rel, start)
        except Exception as cut:  # the marker stays: the redelivery or the next start cuts it
            log.debug("%s: cutting %s back raised", fs.label, rel, exc_info=True)
            log.warning("%s: cannot cut %s back to %d bytes after a failed append (%s); the redelivery or "
                        "the next start cuts it", fs.label, path_shown(rel), start,
                        cut if isinstance(cut, CouplerError) else describe_exception(cut))
        else:
            if marker is not None:
                with contextlib.suppress(Exception):
                    fs.remove(marker)
        raise
    if marker is not None and not keep_marker:
        fs.remove(marker)


def undo_append(fs: FileSystem, marker: str, rel: str) -> bool:
    """Cut ``rel`` back to the size ``marker`` recorded and remove the marker; False when there
    is no marker (nothing to undo)."""
    info = fs.stat(marker)
    if info is None:
        return False
    with fs.open_read(marker) as f:
        text = f.read(64).decode("ascii", "replace").strip()
    if text.isdigit():  # empty: killed before the size was durable, so before the append began
        current = fs.stat(rel)
        if current is not None and current.size > int(text):
            fs.truncate(rel, int(text))
            log.warning("%s: cut %s back from %d to %d bytes: an append there was interrupted",
                        fs.label, rel, current.size, int(text))
    fs.remove(marker)
    return True


def _open_temp(fs: FileSystem, tmp: str, *, leftover: bool) -> BinaryIO:
    """Create ``tmp``; with ``leftover``, one left half-written by a crash is replaced."""
    try:
        return fs.open_write(tmp)
    except OSError:  # FileExistsError locally; SFTP servers say "failure"
        if not leftover or not fs.exists(tmp):
            raise
    fs.remove(tmp)
    return fs.open_write(tmp)


def rename_into_place(fs: FileSystem, tmp: str, rel: str, policy: str) -> str | None:
    """Rename the finished temporary ``tmp`` to ``rel`` as ``policy`` says; the name it got
    (None: ``ignore`` and the target exists)."""
    if policy in ("override", "append"):
        fs.replace(tmp, rel)
        return rel
    if policy == "unique":
        return next(c for c in unique_candidates(rel) if fs.rename_noreplace(tmp, c))
    # fail / ignore: lost a race with another writer
    written = rel if fs.rename_noreplace(tmp, rel) else None
    if written is None and policy == "fail":
        raise FileExistsPolicyError(f"{rel} appeared while it was being written", where=fs.label)
    return written


def finish_written(fs: FileSystem, tmp: str, rel: str, written: str | None, done_suffix: str | None,
                   tag: str | None = None) -> None:
    """After :func:`rename_into_place`: drop an unused temporary, else make the rename
    durable and write the done file."""
    if written is None:
        fs.remove(tmp)
        return
    fs.sync_dir(posixpath.dirname(rel))
    _done(fs, written, done_suffix, tag)


def _done(fs: FileSystem, rel: str, done_suffix: str | None, tag: str | None = None) -> None:
    if not done_suffix:
        return
    done = rel + done_suffix
    tmp = temp_name(done, tag)
    with _open_temp(fs, tmp, leftover=tag is not None) as f:
        fs.flush(f)
    fs.replace(tmp, done)
    fs.sync_dir(posixpath.dirname(rel))
