"""The code objects of the generated converters and encoders, kept on disk between processes.

The XML decoder generates Python source per record type and per Avro schema
(:class:`~.decoder.GeneratedConverters`, :func:`.avro.compile_encoder`) and compiles it: ~18 ms
of CPU for ``orders.xsd``'s records, three quarters of what a Spark worker's first XML split
costs beyond a later one, paid by every task slot's worker at once in a session's first job
(issue 32). The source depends only on the schema, so its compiled code is kept, as Python
keeps a module's bytecode in ``__pycache__``: ``marshal`` data named by the SHA-256 of the
interpreter's bytecode version, the code's file name and the source, in
``$XDG_CACHE_HOME/coupler/generated-code`` (``~/.cache/...``). Another process generating the
same source loads the code (0.3 ms) instead of compiling it.

The cache is only a shortcut: a folder that cannot be created or written, a file that cannot
be read or is damaged, and the source is compiled as without it. A folder another user
could write to (not owned by this user, or writable by group or others) is not used: its
files would be code this process runs. At most :data:`MAX_FILES` files are written.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
from pathlib import Path
from types import CodeType

#: files the folder holds at most (each a generated module: tens of KB); past it, compiled as without
MAX_FILES = 512


def _folder() -> Path | None:
    """The cache folder, created (mode 0700) if need be; None when it cannot be used."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "coupler" / "generated-code"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.stat()
    except OSError:
        return None
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return None
    return folder


def compiled(source: str, filename: str) -> CodeType:
    """``compile(source, filename, "exec")``, from the cache when another process compiled it."""
    folder = _folder()
    if folder is None:
        return compile(source, filename, "exec")
    key = hashlib.sha256(importlib.util.MAGIC_NUMBER + filename.encode() + b"\0" + source.encode()).hexdigest()
    path = folder / f"{key}.code"
    try:
        code = marshal.loads(path.read_bytes())
        if isinstance(code, CodeType) and code.co_filename == filename:
            return code
    except (OSError, EOFError, ValueError, TypeError):
        pass  # not there yet, or damaged: compiled and written again below
    code = compile(source, filename, "exec")
    partial = folder / f"{key}.{os.getpid()}.tmp"
    try:
        if sum(1 for _ in os.scandir(folder)) < MAX_FILES:
            partial.write_bytes(marshal.dumps(code))
            os.replace(partial, path)  # whole or not at all, for a process reading it meanwhile
    except OSError:
        partial.unlink(missing_ok=True)
    return code
