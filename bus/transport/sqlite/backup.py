"""Online backup of an embedded site: every SQLite database of the data directory through
SQLite's backup API (consistent while the daemon runs), and the other files beside them.

The message store (``coupler.db``), the adapters' file state (``adapters/NAME/files.db``)
and any other ``*.db`` file are copied page by page from a consistent snapshot; claim-check
bodies, batch ledgers and the rest are copied as files. The daemon's lock, its control
socket and SQLite's ``-wal``/``-shm`` side files are not part of a backup. Like the data directory,
the backup is private: directories 0700, files 0600.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from coupler.bus.config.loader import SiteConfig
from coupler.bus.transport.private import FILE_MODE, private_dir, private_file
from coupler.canonical.errors import CouplerError

SKIPPED_SUFFIXES = ("-wal", "-shm", "-journal", ".sock", ".lock")


#: SQLite's (extended) result codes of a failure to write the backup's database: a full disk,
#: a failed write (a file size limit gives this one)
_WRITE_FAILURES = {sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR_WRITE, sqlite3.SQLITE_IOERR_FSYNC}


class BackupError(CouplerError):
    """The backup cannot be taken (wrong store type, destination not empty, unreadable file)."""


@dataclass
class BackupReport:
    destination: Path
    databases: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    vanished: list[str] = field(default_factory=list)  # removed while the backup ran

    def to_dict(self) -> dict[str, object]:
        return {
            "destination": str(self.destination), "databases": self.databases,
            "files": len(self.files), "vanished": self.vanished,
        }


def _is_sqlite(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(16) == b"SQLite format 3\x00"


def backup_site(site: SiteConfig, destination: Path) -> BackupReport:
    """Copy the site's data directory to ``destination`` (which must be new or empty)."""
    if site.store.type != "sqlite":
        raise BackupError(
            f"the site's store is {site.store.type!r}: its messages live in the broker",
            where=f"{site.path}: store.type",
            hint="back up RabbitMQ (definitions export) and PostgreSQL (pg_dump); see docs/operations.md",
        )
    source = site.data_dir
    if not source.is_dir():
        raise BackupError(f"data directory {source} does not exist", where=f"{site.path}: data_dir")
    if destination.exists() and any(destination.iterdir()):
        raise BackupError(f"{destination} is not empty", hint="back up into a new directory")
    created = not destination.exists()
    private_dir(destination)  # a backup holds every message, as the data directory does
    try:
        return _copy(source, destination)
    except BaseException:  # a full disk, Ctrl-C: no half backup that looks like one
        for child in list(destination.iterdir()):  # it was empty: all of it is this backup's
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
        if created:
            destination.rmdir()
        raise


def _copy(source: Path, destination: Path) -> BackupReport:
    report = BackupReport(destination)
    # databases first: claim-check files a backed-up message refers to are then still there
    others: list[Path] = []
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        rel = path.relative_to(source)
        if path.name.endswith(SKIPPED_SUFFIXES) or path.is_socket():
            continue
        try:
            if path.suffix == ".db" and _is_sqlite(path):
                target = destination / rel
                private_file(private_dir(target.parent) / target.name)
                src = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
                dst = sqlite3.connect(target)
                try:
                    src.backup(dst)
                finally:
                    dst.close()
                    src.close()
                report.databases.append(str(rel))
            else:
                others.append(path)
        except FileNotFoundError:
            report.vanished.append(str(rel))
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorcode", None) in _WRITE_FAILURES:  # the backup's side (the source is read-only)
                raise BackupError(f"cannot write the backup of {rel}: {exc}; nothing was kept", where=str(destination),
                                  hint="free space on its file system (or raise `ulimit -f`) or back up elsewhere") from exc
            raise BackupError(f"cannot back up database: {exc}", where=str(path)) from exc
    for path in others:
        rel = path.relative_to(source)
        target = destination / rel
        private_dir(target.parent)
        try:
            shutil.copy2(path, target)
            os.chmod(target, FILE_MODE)
            report.files.append(str(rel))
        except FileNotFoundError:
            report.vanished.append(str(rel))
        except OSError as exc:
            raise BackupError(f"cannot write the backup of {rel}: {exc.strerror or exc}; nothing was kept",
                              where=str(destination), hint="free space on its file system or back up elsewhere"
                              if exc.errno in (errno.ENOSPC, errno.EDQUOT) else None) from exc
    return report
