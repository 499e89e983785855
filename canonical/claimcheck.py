"""The Claim Check of whole files: the message carries where its body is, not the body.

A body too large to carry (a dropped file over the adapter's ``claim_check_bytes``, a file put
with ``coupler channel put`` over the store's) is stored as a file under the site's data
directory, in a directory named ``claims``; the message has an empty body and the properties
:data:`CLAIM_PROPERTY` (the file's absolute path) and :data:`CLAIM_SIZE_PROPERTY`. Outbound
file adapters stream it to their destination. The store counts the messages referring to a
claimed file like those of its own claim-checked bodies: the file is removed when the last
of them is settled (acknowledged, purged, or replaced by an edited replay).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from pathlib import Path

CLAIM_PROPERTY = "coupler.claim-file"
CLAIM_SIZE_PROPERTY = "coupler.claim-size"
#: the name of the directories claimed files live in (the store refers only to those)
CLAIMS_DIR_NAME = "claims"


def write_claim(claims_dir: Path, chunks: Iterable[bytes], *, suffix: str = "") -> tuple[Path, int]:
    """Stream ``chunks`` into a new claimed file in ``claims_dir`` (created 0700); returns its
    path and size. It appears under its final name complete and durable (written as a hidden
    ``.part`` first, fsynced, renamed); on any failure nothing is left."""
    _private_dirs(claims_dir)
    target = claims_dir / (uuid.uuid4().hex + (f"-{suffix}" if suffix else ""))
    tmp = claims_dir / f".{target.name}.part"
    size = 0
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            for chunk in chunks:
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
                size += len(chunk)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    sync_directory(claims_dir)
    return target, size


def _private_dirs(path: Path) -> None:
    """``path`` and its missing parents, each created 0700 (they hold message bodies)."""
    missing = []
    while not path.is_dir():
        missing.append(path)
        path = path.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(directory, 0o700)  # whatever the umask


def sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def claim_path(envelope_properties: dict[str, str]) -> Path | None:
    """The claimed file a message refers to, only when it looks like one the bus made: an
    absolute path, in a directory named ``claims``, not a symbolic link itself. None
    when there is no claim; :class:`ValueError` for any other path, so that a property
    forged by a partner never makes an adapter stream a file of its choosing (``/etc/shadow``)."""
    claim = envelope_properties.get(CLAIM_PROPERTY)
    if not claim:
        return None
    path = Path(claim)
    if not path.is_absolute() or ".." in path.parts or path.parent.name != CLAIMS_DIR_NAME or path.is_symlink():
        raise ValueError(f"{CLAIM_PROPERTY} {claim!r} is not a claimed file of the bus")
    return path


def claimed_file(data_dir: Path, envelope_properties: dict[str, str]) -> str | None:
    """The claimed file a message refers to, relative to ``data_dir``, when it is one the site
    made (a regular file in a ``claims`` directory under ``data_dir``, reached without a
    symbolic link); None otherwise (no claim, or a path from elsewhere: never removed)."""
    claim = envelope_properties.get(CLAIM_PROPERTY)
    if not claim:
        return None
    path = Path(claim)
    if not path.is_absolute() or ".." in path.parts or path.parent.name != CLAIMS_DIR_NAME:
        return None
    root = Path(os.path.realpath(data_dir))
    try:
        rel = Path(os.path.realpath(path.parent)).relative_to(root) / path.name
    except ValueError:
        return None
    if Path(os.path.realpath(root / rel)) != root / rel:  # the file itself is a link
        return None
    return rel.as_posix()
