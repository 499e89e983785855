"""The data directory is the site owner's only: directories 0700, files 0600.

It holds every message body (the store, claim checks, adapters' seen-state, backups), so
whatever creates it or a file in it (a CLI command, the daemon) creates them private,
whatever the process's umask; and the daemon tightens, with a warning, a data directory
another tool left readable by others (:func:`tighten`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) as a 0700 directory; an existing one is left as
    it is (see :func:`tighten`)."""
    path = Path(path)
    if not path.is_dir():
        path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        os.chmod(path, DIR_MODE)  # mkdir's mode is masked by the umask
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty and 0600 when it does not exist (before SQLite opens it: SQLite
    gives its -wal and -shm files the mode of the database)."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return path
    os.close(fd)
    os.chmod(path, FILE_MODE)
    return path


def loose(mode: int) -> bool:
    """Whether a permission mode lets the group or others in."""
    return bool(stat.S_IMODE(mode) & 0o077)


def tighten(root: Path) -> list[str]:
    """Make ``root`` and everything below it private (directories 0700, files 0600, symbolic
    links and sockets left alone); returns the paths (relative) that were not."""
    root = Path(root)
    changed: list[str] = []
    if not root.is_dir():
        return changed

    def fix(path: Path, mode: int) -> None:
        try:
            st = path.lstat()
        except FileNotFoundError:
            return
        if stat.S_ISLNK(st.st_mode) or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            return
        if loose(st.st_mode):
            os.chmod(path, mode)
            changed.append(str(path.relative_to(root)) or ".")

    fix(root, DIR_MODE)
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        for name in dirs:
            fix(base / name, DIR_MODE)
        for name in files:
            fix(base / name, FILE_MODE)
    return changed
