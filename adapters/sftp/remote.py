"""The remote file system (SFTP) and the local staging of downloads.

Downloads are streamed to ``DATA_DIR/staging/<key>.part`` in windows of pipelined reads
(never the whole file in memory), fsynced, and renamed to ``<key>`` when complete; an
interrupted download resumes from the size of its ``.part`` file.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import posixpath
import stat as stat_module
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

from ..common.errors import RemoteError
from ..common.fs import FileInfo, FileSystem
from ..common.jail import safe_relative
from .connection import SftpConnection

#: SFTP read requests are at most 32 KiB; a window of 64 of them is in flight at a time
REQUEST = 32 * 1024
WINDOW = 64


class SftpFS(FileSystem):
    """A directory on an SFTP server, through a self-healing connection."""

    def __init__(self, conn: SftpConnection, root: str, *, page_size: int = 100):
        self.conn = conn
        self.root = root.rstrip("/") or "/"
        self.page_size = page_size
        self.label = f"{conn.s.label}{self.root if self.root.startswith('/') else '/' + self.root}"

    def full(self, rel: str) -> str:
        if rel in ("", "."):
            return self.root
        return posixpath.join(self.root, safe_relative(rel, where=self.label))

    def scan(self, directory: str, *, recursive: bool, skip: frozenset[str]) -> Iterator[FileInfo]:
        stack = [directory]
        while stack:
            current = stack.pop()
            # listdir_iter reads the directory page by page (READDIR requests in flight)
            def listing(sftp: Any, c: str = current) -> list[Any]:
                return list(_page(sftp.listdir_iter(self.full(c), read_aheads=self.page_size)))

            try:
                entries = self.conn.call(f"list {self.full(current)}", listing)
            except UnicodeDecodeError as exc:
                # paramiko reads names as UTF-8 only, and stops the whole listing at one that
                # is not (a Latin-1 or EBCDIC name of a legacy system); its read-ahead
                # requests are left unanswered: the next call starts a new session
                self.conn.close()
                name = exc.object.decode("utf-8", "backslashreplace") if isinstance(exc.object, bytes) else "?"
                raise RemoteError(
                    f"cannot list {self.full(current)}: the file name {name!r} is not UTF-8, and the SFTP "
                    "client reads names only as UTF-8, so no file of this directory is taken",
                    where=self.label, hint="rename the file on the server to a UTF-8 name (e.g. with convmv) "
                    "or move it out of the directory",
                ) from None
            for attrs in entries:
                rel = posixpath.join(current, attrs.filename) if current else attrs.filename
                mode = attrs.st_mode or 0
                if stat_module.S_ISDIR(mode):
                    if recursive and rel not in skip:
                        stack.append(rel)
                elif stat_module.S_ISREG(mode):
                    yield FileInfo(rel, attrs.st_size or 0, int(attrs.st_mtime or 0) * 1_000_000_000)

    def stat(self, path: str) -> FileInfo | None:
        def do(sftp):
            try:
                return sftp.stat(self.full(path))
            except FileNotFoundError:
                return None
            except OSError as exc:
                if exc.errno == errno.ENOENT:
                    return None
                raise

        attrs = self.conn.call(f"stat {path}", do)
        if attrs is None or not stat_module.S_ISREG(attrs.st_mode or 0):
            return None
        return FileInfo(path, attrs.st_size or 0, int(attrs.st_mtime or 0) * 1_000_000_000)

    def open_read(self, path: str, offset: int = 0) -> BinaryIO:
        f = self.conn.call(f"open {path}", lambda sftp: sftp.open(self.full(path), "rb"))
        if offset:
            f.seek(offset)
        return f

    def open_write(self, path: str, *, append: bool = False) -> BinaryIO:
        f = self.conn.call(f"create {path}", lambda sftp: sftp.open(self.full(path), "ab" if append else "wbx"))
        f.set_pipelined(True)
        return cast(BinaryIO, _Upload(self, path, f))  # writes and close go through the connection

    def flush(self, handle: BinaryIO) -> None:
        self.conn.call(f"write {getattr(handle, 'path', '')}", lambda sftp: handle.flush())

    def replace(self, src: str, dst: str) -> None:
        self.conn.call(f"rename {src} to {dst}", lambda sftp: sftp.posix_rename(self.full(src), self.full(dst)))

    def rename_noreplace(self, src: str, dst: str) -> bool:
        # SFTP v3 RENAME (OpenSSH: link + unlink) fails when the target exists
        def do(sftp):
            try:
                sftp.rename(self.full(src), self.full(dst))
                return True
            except OSError:
                if self.stat(dst) is not None or _exists(sftp, self.full(dst)):
                    return False
                raise

        return self.conn.call(f"rename {src} to {dst}", do)

    def remove(self, path: str) -> None:
        def do(sftp):
            with contextlib.suppress(FileNotFoundError):
                sftp.remove(self.full(path))

        self.conn.call(f"remove {path}", do)

    def makedirs(self, path: str, mode: int | None = None) -> None:
        if not path:
            return

        def do(sftp):
            current = self.root
            for part in safe_relative(path, where=self.label).split("/"):
                current = posixpath.join(current, part)
                if not _exists(sftp, current):
                    try:
                        if mode is None:
                            sftp.mkdir(current)
                        else:
                            sftp.mkdir(current, mode)
                    except OSError:
                        if not _exists(sftp, current):  # created meanwhile by another client: fine
                            raise

        self.conn.call(f"mkdir {path}", do)

    def chmod(self, path: str, mode: int) -> None:
        self.conn.call(f"chmod {path}", lambda sftp: sftp.chmod(self.full(path), mode))

    def truncate(self, path: str, size: int) -> None:
        self.conn.call(f"truncate {path}", lambda sftp: sftp.truncate(self.full(path), size))


class _Upload:
    """A remote file being written: a connection lost under a write or the close is a
    :class:`RemoteError` (and the connection is re-opened for the next call)."""

    def __init__(self, fs: SftpFS, path: str, handle: Any):
        self.fs, self.path, self.handle = fs, path, handle

    def write(self, data: bytes) -> int:
        return self.fs.conn.call(f"write {self.path}", lambda sftp: self.handle.write(data))

    def flush(self) -> None:
        self.handle.flush()

    def close(self) -> None:
        self.fs.conn.call(f"close {self.path}", lambda sftp: self.handle.close())

    def __enter__(self) -> _Upload:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:  # already failing: release what can be released, keep the first error
            with contextlib.suppress(Exception):
                self.handle.close()


def _page(it: Iterator) -> Iterator:
    yield from it


def _exists(sftp, path: str) -> bool:
    try:
        sftp.stat(path)
        return True
    except OSError:
        return False


class Staging:
    """Downloads remote files to local staging files, resuming partial downloads."""

    owned = True

    def __init__(self, fs: SftpFS, directory: Path, *, durable: bool = True):
        self.fs = fs
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.durable = durable
        self.resumed_bytes = 0

    def _name(self, info: FileInfo) -> str:
        return hashlib.sha256(f"{self.fs.label}|{info.path}|{info.size}|{info.mtime_ns}".encode()).hexdigest()[:32]

    def fetch(self, info: FileInfo) -> Path:
        done = self.directory / self._name(info)
        if done.exists() and done.stat().st_size == info.size:
            return done
        part = done.with_suffix(".part")
        offset = part.stat().st_size if part.exists() else 0
        if offset > info.size:
            offset = 0
            part.unlink()
        self.resumed_bytes += offset
        with open(part, "ab") as local:
            if offset < info.size:
                self.fs.conn.call(f"download {info.path}", lambda sftp: self._copy(sftp, info, offset, local))
            local.flush()
            if self.durable:
                os.fsync(local.fileno())
        size = part.stat().st_size
        if size != info.size:
            part.unlink()
            raise RemoteError(
                f"{info.path} changed while it was downloaded ({size} bytes instead of {info.size})",
                where=self.fs.label, hint="it is taken again once it is stable",
            )
        os.replace(part, done)
        return done

    def _copy(self, sftp, info: FileInfo, offset: int, local: BinaryIO) -> None:
        with sftp.open(self.fs.full(info.path), "rb") as remote:
            position = offset
            while position < info.size:
                end = min(info.size, position + REQUEST * WINDOW)
                chunks = [(o, min(REQUEST, end - o)) for o in range(position, end, REQUEST)]
                for block in remote.readv(chunks):
                    local.write(block)
                    position += len(block)
                local.flush()  # what arrived is kept for a resume

    def discard(self, info: FileInfo) -> None:
        done = self.directory / self._name(info)
        for p in (done, done.with_suffix(".part")):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
