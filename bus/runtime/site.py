"""A site at run time: its transport, its plugins, its daemon lock.

Shared by the daemon and the command-line tools that work with or without a running daemon.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

from coupler.bus.config.loader import SiteConfig
from coupler.bus.transport.private import private_dir
from coupler.canonical.errors import CouplerError


class DaemonLockError(CouplerError):
    """Another daemon already runs for this data directory."""


class DaemonLock:
    """One daemon per data directory: an exclusive ``flock`` on ``DATA_DIR/daemon.lock``.

    The lock file holds the daemon's pid. The kernel releases the lock when the process
    dies, however it dies, so a stale file never blocks a new daemon.
    """

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        # a channel tool checking for a daemon holds a shared lock for an instant: retry briefly
        for attempt in range(10):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt < 9:
                    time.sleep(0.05)
        else:
            os.close(fd)
            pid = read_pid(self.path)
            raise DaemonLockError(
                f"another coupler daemon{f' (pid {pid})' if pid else ''} already runs for data directory {self.path.parent}",
                hint="stop it first (`coupler ctl --site SITE.toml stop`) or give this site another data_dir",
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def daemon_running(site: SiteConfig) -> bool:
    """Whether a daemon holds this site's data directory lock right now."""
    if not site.lock_path.exists():
        return False
    fd = os.open(site.lock_path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also drops our shared lock
    return False
