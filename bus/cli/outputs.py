"""Writing the files a user names on the command line (``--output``): all or nothing.

A command writes its output under a temporary name beside it (``OUT.part``) and renames it
to ``OUT`` once everything is written; on any failure (a full disk, a record rejected under
``--strict``, ``--max-errors`` exceeded, Ctrl-C, SIGTERM: ``main.Terminated``) the temporary
file is removed and ``OUT`` is left as it was: never a truncated file under the name a user
asked for. An output that is
not a regular file (``/dev/null``, ``/dev/stdout``, a named pipe) is written in place (a
rename would replace the device or pipe itself), as is a file one may write in a directory
one may not; a symbolic link's target is replaced, the link stays.

An error writing the output becomes one :class:`CouplerError` naming ``OUT`` (not its
temporary name) and what to do, as every other error of a command.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from coupler.canonical.errors import CouplerError, UsageError

#: the suffix of an output being written (removed on a failure; `batch ingest` skips such files)
PART_SUFFIX = ".part"

#: failures of a write that say the output's file system refused it, whatever file it names
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}

_HINTS = {
    errno.ENOSPC: "free space on its file system or choose another {option}",
    errno.EDQUOT: "free space within your quota or choose another {option}",
    errno.EFBIG: "a limit refuses a file this large (ulimit -f): raise it or choose another {option}",
    errno.ENOENT: "create its directory first or choose another {option}",
    errno.EACCES: "choose a directory you may write to",
    errno.EROFS: "choose a writable file system",
}


@contextlib.contextmanager
def output_file(path: Path | str, *, option: str = "--output") -> Iterator[Path]:
    """The path to write ``path``'s content to; published as ``path`` when the block ends
    without an exception, removed otherwise (see the module's docstring)."""
    target = Path(path)
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:  # a parent that is a file, a name too long, ...
        raise _write_error(target, exc, option) from None
    if mode is not None and stat.S_ISDIR(mode):
        raise UsageError(f"{option} {target} is a directory", hint=f"give {option} a file name")
    final = Path(os.path.realpath(target))  # a symbolic link: its target is replaced
    if mode is not None and (not stat.S_ISREG(mode)  # a device or a pipe: written in place, as is
                             or not os.access(final.parent, os.W_OK | os.X_OK) and os.access(final, os.W_OK)):
        # a file one may write in a directory one may not (no room for OUT.part)
        try:
            yield target
        except OSError as exc:
            if not _about_output(exc, target):
                raise
            raise _write_error(target, exc, option, in_place=True) from None
        return
    partial = final.with_name(final.name + PART_SUFFIX)
    try:
        yield partial
        if mode is not None:  # the published file keeps the permissions of the one it replaces
            os.chmod(partial, stat.S_IMODE(mode))
        os.replace(partial, final)
    except CouplerError as exc:  # a writer's error naming the file it wrote: the user's name for it
        if exc.where == str(partial):
            exc.relocate(str(target))
        raise
    except OSError as exc:
        if not _about_output(exc, partial):
            raise
        raise _write_error(target, exc, option) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)


def text_output(stack: contextlib.ExitStack[bool | None], path: Path | str | None) -> TextIO:
    """Standard output (no ``path``), or the ``--output`` file ``path`` opened for text and
    published when ``stack`` closes without an exception (:func:`output_file`)."""
    if not path:
        return sys.stdout
    return stack.enter_context(open(stack.enter_context(output_file(path)), "w", encoding="utf-8"))


class ReportFile:
    """A report written as a command goes (``--errors FILE``): written in place and kept
    whatever happens (the errors of a run that ``--max-errors`` stopped are what a user
    reads then); a failure to write it is one :class:`CouplerError` naming it. It is never
    an ``OSError``: a decoder calls the code that writes a report while it reads its input,
    and takes an ``OSError`` there for a failure to read the input."""

    def __init__(self, path: Path | str, *, option: str = "--errors"):
        self.path = Path(path)
        self.option = option
        if self.path.is_dir():
            raise UsageError(f"{option} {self.path} is a directory", hint=f"give {option} a file name")
        try:
            self._out = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
        except OSError as exc:
            raise _write_error(self.path, exc, option, in_place=True) from None

    def write(self, text: str) -> None:
        try:
            self._out.write(text)
        except OSError as exc:
            raise _write_error(self.path, exc, self.option, in_place=True) from None

    def close(self) -> None:
        try:
            self._out.close()
        except OSError as exc:
            raise _write_error(self.path, exc, self.option, in_place=True) from None


@contextlib.contextmanager
def output_directory(path: Path | str, *, option: str = "--output") -> Iterator[Path]:
    """A new or empty directory ``path`` for the files of one output (created, with its
    parents, when missing). On a failure the files written in it are removed, and the
    directories this call created: a half-written set of files is never left."""
    target = Path(path)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UsageError(f"{option} {target} must be a new or empty directory")
    made = [p for p in (target, *target.parents) if not p.exists()]  # the directories this creates
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _write_error(target, exc, option) from None
    try:
        yield target
    except BaseException as exc:
        if made:
            shutil.rmtree(made[-1], ignore_errors=True)
        else:
            for written in target.iterdir():  # it was empty: everything in it is this output's
                if written.is_dir() and not written.is_symlink():
                    shutil.rmtree(written, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        written.unlink()
        if isinstance(exc, OSError) and _about_output(exc, target):
            raise _write_error(target, exc, option) from None
        raise


def _about_output(exc: OSError, written: Path) -> bool:
    """Whether ``exc`` is a failure to write ``written`` (rather than to read an input)."""
    if exc.filename is not None:
        name = os.fsdecode(exc.filename)
        return name == str(written) or Path(name).parent == written
    return _errno(exc) in _WRITE_ERRNOS or str(written) in str(exc)


def _errno(exc: OSError) -> int | None:
    """The ``errno`` of ``exc``. pyarrow's OSErrors (a Parquet file's writer) carry none: their
    message holds it (``Error writing bytes to file. Detail: [errno 28] No space left on
    device``), read here alone."""
    if exc.errno is not None:
        return exc.errno
    found = re.search(r"\[errno (\d+)\]", str(exc))
    return int(found.group(1)) if found else None


def refused_write(exc: BaseException) -> int | None:
    """The ``errno`` of a write that a file system refused (full, over quota, a file too
    large, read-only) when ``exc`` reports one, else None. Also when the write was another
    process's and ``exc`` holds its error as text (a Spark task's: ``[errno 28] ...``, or a
    JVM's ``java.io.IOException: No space left on device``)."""
    if isinstance(exc, OSError):
        code = _errno(exc)
        return code if code in _WRITE_ERRNOS else None
    text = str(exc)
    found = re.search(r"\[errno (\d+)\]", text, re.IGNORECASE)
    if found and int(found.group(1)) in _WRITE_ERRNOS:
        return int(found.group(1))
    return next((code for code in sorted(_WRITE_ERRNOS) if os.strerror(code) in text), None)


def output_folder_error(target: Path | str, code: int, *, option: str = "--output") -> CouplerError:
    """The one-line error of an output folder that could not be written (``code``: its
    ``errno``, :func:`refused_write`) by a job that publishes it whole or not at all (``batch
    translate``): it names the folder, not the job's staging files."""
    return _write_error(Path(target), OSError(code, os.strerror(code)), option, what="folder")


def _write_error(target: Path, exc: OSError, option: str, *, in_place: bool = False,
                 what: str = "file") -> CouplerError:
    code = _errno(exc)
    reason = os.strerror(code) if code is not None else (exc.strerror or str(exc))
    hint = _HINTS.get(code, "choose another {option}") if code is not None else "choose another {option}"
    if code == errno.ENOENT and not target.parent.is_dir():
        reason = f"its directory {target.parent} does not exist"
    done = "" if in_place else "; nothing was written"
    return CouplerError(f"cannot write the {option} {what}: {reason}{done}", where=str(target),
                        hint=hint.format(option=option))
