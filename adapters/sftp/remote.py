"""The remote file system (SFTP) and the local staging of downloads.

Downloads are streamed to ``DATA_DIR/staging/<key>.part`` in windows of pipelined reads
(never the whole file in memory), fsynced, and renamed to ``<key>`` when complete; an
interrupted download resumes from the size of its ``.part`` file.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import hashlib
import os
import posixpath
import shutil
import stat as stat_module
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

from coupler.canonical.errors import CouplerError

from ..common.errors import AdapterConfigError, FileChanged, PayloadError, RemoteError
from ..common.fs import FileInfo, FileSystem, changed, kind_of
from ..common.jail import safe_relative
from ..common.state import path_shown, path_text
from .connection import SftpConnection

#: SFTP read requests are at most 32 KiB; a window of 64 of them is in flight at a time
REQUEST = 32 * 1024
WINDOW = 64
#: the share of the local disk a download must leave free (the bus's store is usually on the
#: same disk), at most STAGING_RESERVE_MAX bytes
STAGING_RESERVE = 0.05
STAGING_RESERVE_MAX = 1 << 30


class SftpFS(FileSystem):
    """A directory on an SFTP server, through a self-healing connection."""

    def __init__(self, conn: SftpConnection, root: str, *, page_size: int = 100, encoding: str = "utf-8",
                 adapter: str = "sftp"):
        self.conn = conn
        self.root = root.rstrip("/") or "/"
        self.page_size = page_size
        #: the server's file-name encoding (option ``filename_encoding``): names are text here,
        #: bytes on the wire (:meth:`raw`)
        self.encoding = encoding
        self.adapter = adapter
        self.label = f"{conn.s.label}{self.root if self.root.startswith('/') else '/' + self.root}"
        #: names not valid in the encoding that were reported (directory, name), while listed
        self._reported: set[tuple[str, bytes]] = set()
        #: entries of the last scan that are not regular files nor directories (path -> kind),
        #: and sub-directories it could not list (path -> why): the pipeline reports them once
        self.irregular: dict[str, str] = {}
        self.unlisted: dict[str, str] = {}
        #: who must be allowed to list them: the SSH login
        self.reader = conn.s.username

    def full(self, rel: str) -> str:
        if rel in ("", "."):
            return self.root
        return posixpath.join(self.root, safe_relative(rel, where=self.label))

    def raw(self, rel: str) -> bytes:
        """The path of ``rel`` on the server, as bytes in the server's file-name encoding (the
        surrogate escapes of a listed name that is not valid in it give its bytes back)."""
        path = self.full(rel)
        try:
            return path.encode(self.encoding, "surrogateescape")
        except UnicodeEncodeError as exc:
            raise PayloadError(
                f"the file name {path_text(rel)!r} cannot be written in the server's file-name encoding "
                f"{self.encoding} ({exc.reason} at {path[exc.start:exc.end]!r})", where=self.label,
                hint="change the name the file_name option makes, or filename_encoding",
            ) from None

    def shown(self, rel: str) -> str:
        """``rel`` in a message, on one line: its bytes that are not UTF-8 as ``\\xNN``, its
        control characters as escapes (:func:`path_shown`)."""
        return path_shown(rel)

    def scan(self, directory: str, *, recursive: bool, skip: frozenset[str]) -> Iterator[FileInfo]:
        listed: set[tuple[str, bytes]] = set()
        irregular: dict[str, str] = {}
        self.irregular = irregular  # what this scan left alone: links, FIFOs, sockets, devices
        unlisted: dict[str, str] = {}
        self.unlisted = unlisted  # sub-directories this scan could not list, and why
        stack = [directory]
        while stack:
            current = stack.pop()
            folder = self.raw(current)

            def listing(sftp: Any, folder: bytes = folder) -> list[tuple[bytes, Any]]:
                from .listing import listdir_bytes  # paramiko: imported when a connection is made

                return listdir_bytes(sftp, folder, self.page_size)

            try:
                entries = self.conn.call(f"list {self.shown(current)}", listing)
            except (PermissionError, FileNotFoundError) as exc:
                if not current:  # the directory polled: nothing can be taken
                    raise RemoteError(
                        f"cannot list {self.shown(self.root)}: {exc.strerror or exc}", where=self.label,
                        hint=f"check remote_directory, and that {self.conn.s.username} may read and search it",
                    ) from None
                if not isinstance(exc, FileNotFoundError):  # a sub-directory: the others are taken
                    unlisted[current] = exc.strerror or str(exc)
                continue  # removed or replaced by a file after it was listed: a listing race
            for raw, attrs in entries:
                name = self._name(current, raw, listed)
                if name is None:
                    continue
                rel = posixpath.join(current, name) if current else name
                mode = attrs.st_mode or 0
                if stat_module.S_ISDIR(mode):
                    if recursive and rel not in skip:
                        stack.append(rel)
                elif stat_module.S_ISREG(mode):
                    yield FileInfo(rel, attrs.st_size or 0, int(attrs.st_mtime or 0) * 1_000_000_000)
                else:  # reported by the pipeline, once, as the file drop adapter's are
                    irregular[rel] = kind_of(mode)
        self._reported &= listed  # a name reported again only once it was gone for a listing

    def _name(self, directory: str, raw: bytes, listed: set[tuple[str, bytes]]) -> str | None:
        """The name ``raw`` as text (:func:`decode_name`); one that is not valid in
        ``filename_encoding`` is reported once, in one line, while it stays in the directory;
        one that cannot be given back exactly is also left alone."""
        name = decode_name(raw, self.encoding)
        if name is not None and path_text(name) == name:
            return name
        key = (directory, raw)
        listed.add(key)
        if key not in self._reported:
            self._reported.add(key)
            where = f"{self.label}/{self.shown(directory)}" if directory else self.label
            if name is None:
                self.conn.log.warning(
                    "%s: the file name %r in %s cannot be read in %s and given back to the server "
                    "as it is: left alone (rename it on the server, or set filename_encoding)",
                    self.adapter, raw, where, self.encoding)
            else:
                self.conn.log.warning(
                    "%s: the file name %r in %s is not %s: taken as '%s' (its other bytes as \\xNN) "
                    "(set filename_encoding to the server's, e.g. \"cp1252\", to read it as text)",
                    self.adapter, raw, where, self.encoding, path_shown(name))
        return name

    def stat(self, path: str) -> FileInfo | None:
        def do(sftp):
            try:
                return sftp.stat(self.raw(path))
            except FileNotFoundError:
                return None
            except OSError as exc:
                if exc.errno == errno.ENOENT:
                    return None
                raise

        attrs = self.conn.call(f"stat {self.shown(path)}", do)
        if attrs is None or not stat_module.S_ISREG(attrs.st_mode or 0):
            return None
        return FileInfo(path, attrs.st_size or 0, int(attrs.st_mtime or 0) * 1_000_000_000)

    def open_read(self, path: str, offset: int = 0) -> BinaryIO:
        f = self.conn.call(f"open {self.shown(path)}", lambda sftp: sftp.open(self.raw(path), "rb"))
        if offset:
            f.seek(offset)
        return f

    def open_write(self, path: str, *, append: bool = False) -> BinaryIO:
        f = self.conn.call(f"create {self.shown(path)}", lambda sftp: sftp.open(self.raw(path), "ab" if append else "wbx"))
        f.set_pipelined(True)
        return cast(BinaryIO, _Upload(self, path, f))  # writes and close go through the connection

    def flush(self, handle: BinaryIO) -> None:
        self.conn.call(f"write {self.shown(getattr(handle, 'path', ''))}", lambda sftp: handle.flush())

    def replace(self, src: str, dst: str) -> None:
        self.conn.call(f"rename {self.shown(src)} to {self.shown(dst)}",
                       lambda sftp: sftp.posix_rename(self.raw(src), self.raw(dst)))

    def rename_noreplace(self, src: str, dst: str) -> bool:
        # SFTP v3 RENAME (OpenSSH: link + unlink) fails when the target exists
        def do(sftp):
            try:
                sftp.rename(self.raw(src), self.raw(dst))
                return True
            except OSError:
                if self.stat(dst) is not None or _exists(sftp, self.raw(dst)):
                    return False
                raise

        return self.conn.call(f"rename {self.shown(src)} to {self.shown(dst)}", do)

    def remove(self, path: str) -> None:
        def do(sftp):
            with contextlib.suppress(FileNotFoundError):
                sftp.remove(self.raw(path))

        self.conn.call(f"remove {self.shown(path)}", do)

    def makedirs(self, path: str, mode: int | None = None) -> None:
        if not path:
            return

        def do(sftp):
            rel = ""
            for part in safe_relative(path, where=self.label).split("/"):
                rel = posixpath.join(rel, part)
                current = self.raw(rel)
                if not _exists(sftp, current):
                    try:
                        if mode is None:
                            sftp.mkdir(current)
                        else:
                            sftp.mkdir(current, mode)
                    except OSError:
                        if not _exists(sftp, current):  # created meanwhile by another client: fine
                            raise

        self.conn.call(f"mkdir {self.shown(path)}", do)

    def chmod(self, path: str, mode: int) -> None:
        self.conn.call(f"chmod {self.shown(path)}", lambda sftp: sftp.chmod(self.raw(path), mode))

    def truncate(self, path: str, size: int) -> None:
        self.conn.call(f"truncate {self.shown(path)}", lambda sftp: sftp.truncate(self.raw(path), size))


class _Upload:
    """A remote file being written: a connection lost under a write or the close is a
    :class:`RemoteError` (and the connection is re-opened for the next call)."""

    def __init__(self, fs: SftpFS, path: str, handle: Any):
        self.fs, self.path, self.handle = fs, path, handle

    def write(self, data: bytes) -> int:
        return self.fs.conn.call(f"write {self.fs.shown(self.path)}", lambda sftp: self.handle.write(data))

    def flush(self) -> None:
        self.handle.flush()

    def close(self) -> None:
        self.fs.conn.call(f"close {self.fs.shown(self.path)}", lambda sftp: self.handle.close())

    def __enter__(self) -> _Upload:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:  # already failing: release what can be released, keep the first error
            with contextlib.suppress(Exception):
                self.handle.close()


def decode_name(raw: bytes, encoding: str) -> str | None:
    """A name the server listed, as text: decoded in ``encoding`` with the bytes not valid in
    it as surrogate escapes (``b"M\\xdcLLER"`` in UTF-8: ``"M\\udcdcLLER"``, as Python lists a
    local directory), so that ``name.encode(encoding, "surrogateescape")`` gives ``raw`` back.
    A codec with two byte sequences for one character (cp932) may not give it back: then its
    ASCII as text and every other byte escaped; None when even that does not."""
    for codec in (encoding, "ascii"):
        name = raw.decode(codec, "surrogateescape")
        try:
            if name.encode(encoding, "surrogateescape") == raw:
                return name
        except UnicodeEncodeError:
            pass
    return None


def check_encoding(encoding: str, *, where: str) -> str:
    """``encoding`` if Python knows it and it keeps ASCII as it is (``/`` and ``.`` are bytes
    of ASCII in SFTP paths); else an :class:`AdapterConfigError`."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise AdapterConfigError(f"unknown encoding {encoding!r}", where=where,
                                 hint='e.g. "utf-8", "cp1252", "latin-1", "cp932"') from None
    if bytes(range(128)).decode(encoding, "replace") != "".join(map(chr, range(128))):
        raise AdapterConfigError(f"encoding {encoding!r} does not keep ASCII as it is, as SFTP paths need",
                                 where=where, hint='e.g. "utf-8", "cp1252", "latin-1", "cp932"')
    return encoding


def _exists(sftp, path: bytes) -> bool:
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
        key = f"{self.fs.label}|{info.path}|{info.size}|{info.mtime_ns}".encode("utf-8", "surrogateescape")
        return hashlib.sha256(key).hexdigest()[:32]

    def fetch(self, info: FileInfo) -> Path:
        done = self.directory / self._name(info)
        if done.exists() and done.stat().st_size == info.size:
            return done
        part = done.with_suffix(".part")
        offset = part.stat().st_size if part.exists() else 0
        if offset > info.size:
            offset = 0
            part.unlink()
        if offset < info.size:
            self._check_room(info, info.size - offset)
        self.resumed_bytes += offset
        try:
            with open(part, "ab") as local:
                if offset < info.size:
                    self.fs.conn.call(f"download {self.fs.shown(info.path)}",
                                      lambda sftp: self._copy(sftp, info, offset, local))
                local.flush()
                if self.durable:
                    os.fsync(local.fileno())
        except FileChanged:  # cut short, grown or rewritten meanwhile: what came is not this file
            part.unlink(missing_ok=True)
            raise
        except OSError as exc:
            if exc.errno == errno.ENOSPC:  # the disk filled meanwhile: a resume would keep it full
                part.unlink(missing_ok=True)
            elif offset == 0 and part.exists() and part.stat().st_size == 0:  # refused at once (a
                part.unlink()  # file the login may not read): no empty .part left at each poll
            raise
        size = part.stat().st_size
        if size != info.size:
            part.unlink()
            raise RemoteError(
                f"{self.fs.shown(info.path)} changed while it was downloaded ({size} bytes instead of {info.size})",
                where=self.fs.label, hint="it is taken again once it is stable",
            )
        os.replace(part, done)
        return done

    def _check_room(self, info: FileInfo, need: int) -> None:
        """Refuse a download that would leave less than :data:`STAGING_RESERVE` of the local
        disk free (the bus's store is usually on it): the file stays on the server."""
        usage = shutil.disk_usage(self.directory)
        reserve = min(STAGING_RESERVE_MAX, int(usage.total * STAGING_RESERVE))
        if usage.free - need < reserve:
            raise CouplerError(
                f"{self.fs.shown(info.path)} needs {need} bytes in {self.directory}, which has {usage.free} free; "
                f"downloaded, it would leave less than {reserve} (5 % of the disk, at most 1 GiB): it stays on the "
                f"server", where=self.fs.label, hint="free space on that local disk; the file is taken once it fits",
            )

    def _copy(self, sftp, info: FileInfo, offset: int, local: BinaryIO) -> None:
        """Bytes ``offset`` to the listed size of ``info`` to ``local``; :class:`FileChanged`
        when the file is no longer as listed (removed, cut short, grown or rewritten)."""
        from .listing import ShortFile, download  # paramiko: imported when a connection is made

        where = f"{self.fs.label}/{self.fs.shown(info.path)}"
        try:
            attrs = download(sftp, self.fs.raw(info.path), offset, info.size, local.write,
                             request=REQUEST, window=WINDOW, flush=local.flush)  # what arrived is kept for a resume
        except FileNotFoundError:
            raise FileChanged(errno.ENOENT, "removed after it was listed", where) from None
        except ShortFile as short:
            raise changed(info, short.size, where) from None
        now = FileInfo(info.path, attrs.st_size or 0, int(attrs.st_mtime or 0) * 1_000_000_000)
        if (now.size, now.mtime_ns) != (info.size, info.mtime_ns):
            raise changed(info, now.size, where)

    def discard(self, info: FileInfo) -> None:
        done = self.directory / self._name(info)
        for p in (done, done.with_suffix(".part")):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
