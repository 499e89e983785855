"""A small file-system interface, so that one pipeline and one writer serve both adapters.

Paths are relative POSIX names under the file system's root (already checked by
:mod:`.jail`). :class:`LocalFS` is the local implementation; the SFTP adapter provides a
remote one with the same methods.
"""

from __future__ import annotations

import abc
import contextlib
import errno
import os
import posixpath
import stat as stat_module
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .errors import FileChanged, PathTraversalError
from .jail import local_path


@dataclass(frozen=True)
class FileInfo:
    """A file seen in a listing: relative path, size and modification time (ns)."""

    path: str
    size: int
    mtime_ns: int

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)


class FileSystem(abc.ABC):
    """What the inbound pipeline and the outbound writer need from a file system."""

    #: how to show the root in messages (``/srv/drop`` or ``sftp://host:22/in``)
    label: str = ""

    @abc.abstractmethod
    def scan(self, directory: str, *, recursive: bool, skip: frozenset[str]) -> Iterator[FileInfo]:
        """Regular files under ``directory`` ("" is the root); ``skip`` are directories to skip."""

    @abc.abstractmethod
    def stat(self, path: str) -> FileInfo | None:
        """The file, or None when it does not exist."""

    @abc.abstractmethod
    def open_read(self, path: str, offset: int = 0) -> BinaryIO: ...

    @abc.abstractmethod
    def open_write(self, path: str, *, append: bool = False) -> BinaryIO: ...

    @abc.abstractmethod
    def flush(self, handle: BinaryIO) -> None:
        """Make what was written to ``handle`` durable."""

    @abc.abstractmethod
    def replace(self, src: str, dst: str) -> None:
        """Rename ``src`` to ``dst`` atomically, replacing ``dst``."""

    @abc.abstractmethod
    def rename_noreplace(self, src: str, dst: str) -> bool:
        """Rename unless ``dst`` exists (then return False and leave both alone)."""

    @abc.abstractmethod
    def remove(self, path: str) -> None: ...

    @abc.abstractmethod
    def makedirs(self, path: str, mode: int | None = None) -> None:
        """Create ``path`` and its missing parents; those it creates get ``mode`` when given
        (a local one is otherwise 0700 under the daemon's umask)."""

    @abc.abstractmethod
    def chmod(self, path: str, mode: int) -> None: ...

    @abc.abstractmethod
    def truncate(self, path: str, size: int) -> None:
        """Cut ``path`` back to ``size`` bytes (undoes an append that failed part-way)."""

    def exists(self, path: str) -> bool:
        return self.stat(path) is not None

    def same_file(self, a: str, b: str) -> bool:
        """Whether ``a`` and ``b`` are links to one file (False when it cannot tell)."""
        return False

    def sync_dir(self, directory: str) -> None:  # noqa: B027 - optional for implementations
        """Make renames in ``directory`` durable (no-op where the protocol has no such thing)."""


class LocalFS(FileSystem):
    """A local directory tree; symbolic links leading out of the root are refused."""

    def __init__(self, root: Path, *, durable: bool = True):
        #: entries of the last scan that are not regular files (path -> kind), never read, and
        #: sub-directories it could not list (path -> why): the pipeline reports them once
        self.irregular: dict[str, str] = {}
        self.unlisted: dict[str, str] = {}
        self.root = Path(root)
        self.label = str(self.root)
        self.durable = durable

    @property
    def reader(self) -> str:
        """Who must be allowed to list the directories: the user the daemon runs as."""
        import pwd

        try:
            return pwd.getpwuid(os.geteuid()).pw_name
        except KeyError:
            return f"uid {os.geteuid()}"

    def path(self, rel: str) -> Path:
        return self.root if rel in ("", ".") else local_path(self.root, rel, where=self.label)

    def scan(self, directory: str, *, recursive: bool, skip: frozenset[str]) -> Iterator[FileInfo]:
        irregular: dict[str, str] = {}
        self.irregular = irregular  # what the last scan left alone: FIFOs, links, sockets, devices
        unlisted: dict[str, str] = {}
        self.unlisted = unlisted  # sub-directories it could not list, and why
        stack = [directory]
        while stack:
            current = stack.pop()
            try:
                it = self._listing(current)
            except FileNotFoundError:
                continue
            except (NotADirectoryError, PathTraversalError):
                if not current:
                    raise
                continue  # listed as a directory, then replaced by a file or a link: a listing race
            except PermissionError as exc:
                if not current:  # the directory polled: nothing can be taken
                    raise
                unlisted[current] = exc.strerror or str(exc)  # a sub-directory: the others are taken
                continue
            with it as entries:
                for entry in entries:
                    rel = posixpath.join(current, entry.name) if current else entry.name
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if recursive and rel not in skip:
                                stack.append(rel)
                            continue
                        if not entry.is_file(follow_symlinks=False):
                            irregular[rel] = kind_of(entry.stat(follow_symlinks=False).st_mode)
                            continue
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    yield FileInfo(rel, st.st_size, st.st_mtime_ns)

    def _listing(self, rel: str) -> contextlib.AbstractContextManager[Iterator[os.DirEntry[str]]]:
        """The entries of directory ``rel``; a sub-directory is opened without following a
        symbolic link (one put in its place after it was listed: NotADirectoryError)."""
        path = self.path(rel)
        if not rel:
            return os.scandir(path)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise NotADirectoryError(errno.ENOTDIR, "a symbolic link now", str(path)) from exc
            raise
        return _fd_listing(fd)

    def stat(self, path: str) -> FileInfo | None:
        try:
            st = os.stat(self.path(path), follow_symlinks=False)
        except FileNotFoundError:
            return None
        if not stat_module.S_ISREG(st.st_mode):
            return None
        return FileInfo(path, st.st_size, st.st_mtime_ns)

    def open_read(self, path: str, offset: int = 0) -> BinaryIO:
        f = open(self.path(path), "rb")  # noqa: SIM115 - returned to the caller
        if offset:
            f.seek(offset)
        return f

    def open_write(self, path: str, *, append: bool = False) -> BinaryIO:
        return open(self.path(path), "ab" if append else "xb")  # noqa: SIM115

    def flush(self, handle: BinaryIO) -> None:
        handle.flush()
        if self.durable:
            os.fsync(handle.fileno())

    def replace(self, src: str, dst: str) -> None:
        os.replace(self.path(src), self.path(dst))

    def rename_noreplace(self, src: str, dst: str) -> bool:
        s, d = self.path(src), self.path(dst)
        try:
            os.link(s, d)
        except FileExistsError:
            return False
        except OSError as exc:  # a file system without hard links: check, then rename
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV):
                raise
            if d.exists():
                return False
            os.rename(s, d)
            return True
        os.unlink(s)
        return True

    def remove(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path(path))

    def same_file(self, a: str, b: str) -> bool:
        try:
            return os.path.samefile(self.path(a), self.path(b))
        except FileNotFoundError:
            return False

    def makedirs(self, path: str, mode: int | None = None) -> None:
        if not path:
            return
        if mode is None:
            self.path(path).mkdir(parents=True, exist_ok=True)
            return
        make_directory(self.path(path), mode)

    def chmod(self, path: str, mode: int) -> None:
        os.chmod(self.path(path), mode)

    def truncate(self, path: str, size: int) -> None:
        fd = os.open(self.path(path), os.O_WRONLY)
        try:
            os.ftruncate(fd, size)
            if self.durable:
                os.fsync(fd)
        finally:
            os.close(fd)

    def sync_dir(self, directory: str) -> None:
        if not self.durable:
            return
        fd = os.open(self.path(directory), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def _fd_listing(fd: int) -> Iterator[Iterator[os.DirEntry[str]]]:
    """The entries of the open directory ``fd``, closed at the end (their ``stat`` uses it)."""
    try:
        with os.scandir(fd) as it:
            yield it
    finally:
        os.close(fd)


def kind_of(mode: int) -> str:
    """What an entry that is not a regular file is, in a message (``a symbolic link``)."""
    if stat_module.S_ISLNK(mode):
        return "a symbolic link"
    if stat_module.S_ISFIFO(mode):
        return "a FIFO"
    if stat_module.S_ISSOCK(mode):
        return "a socket"
    if stat_module.S_ISCHR(mode) or stat_module.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def directory_mode(file_mode: int) -> int:
    """The mode of a directory that holds files of ``file_mode``: the owner's rwx, and read and
    search for whoever may read the files (0640 -> 0750, 0644 -> 0755, 0600 -> 0700)."""
    readers = file_mode & 0o044
    return 0o700 | readers | (readers >> 2)


def make_directory(path: Path, mode: int) -> None:
    """``path.mkdir(parents=True)``, each directory it creates set to ``mode`` (not the umask's)."""
    missing = []
    current = path
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for directory in reversed(missing):
        try:
            directory.mkdir()
        except FileExistsError:
            continue  # created meanwhile: its mode is its creator's
        os.chmod(directory, mode)


def open_regular(path: Path, expect: FileInfo | None = None) -> BinaryIO:
    """``path`` opened for reading if it is (still) a regular file, reached without following a
    symbolic link: a FIFO, device or link put in its place after the listing is refused at
    once (a FIFO would block the poller; a link could lead out of the directory). With
    ``expect`` (its listing), it must also still have the size and mtime listed. Raises
    :class:`FileChanged` (an OSError) otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as exc:
        raise FileChanged(errno.ENOENT, "removed after it was listed", str(path)) from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileChanged(errno.ELOOP, "a symbolic link now (refused)", str(path)) from exc
        raise
    try:
        st = os.fstat(fd)
        if not stat_module.S_ISREG(st.st_mode):
            raise FileChanged(errno.EINVAL, "no longer a regular file (refused)", str(path))
        if expect is not None:
            check_listed(st, expect, path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_listed(st: os.stat_result, expect: FileInfo, path: Path | str) -> None:
    """Raise :class:`FileChanged` unless ``st`` has the size and mtime ``expect`` was listed with."""
    if st.st_size != expect.size or st.st_mtime_ns != expect.mtime_ns:
        raise changed(expect, st.st_size, path)


def changed(expect: FileInfo, size: int, path: Path | str) -> FileChanged:
    """The :class:`FileChanged` of a file listed as ``expect`` that now has ``size`` bytes."""
    what = "grew" if size > expect.size else "shrank" if size < expect.size else "was rewritten"
    return FileChanged(errno.EAGAIN, f"{what} while it was read ({expect.size} bytes listed, {size} now)", str(path))
