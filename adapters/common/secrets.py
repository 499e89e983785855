"""Secrets of the network adapters (passwords, tokens, client secrets), kept out of site.toml.

A secret comes from an environment variable or from a file only the site's user may read
(owned by it, no group or other permission bits); it is handed to the library that needs it
and never written to a log, a reply or an error message.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from coupler.canonical.errors import CouplerError


class SecretError(CouplerError):
    """A secret that is missing, or a secret file that others may read."""


def secret_from_env(name: str, where: str) -> str:
    value = os.environ.get(name)
    if value is None:
        raise SecretError(f"environment variable {name} is not set", where=where,
                          hint="export it in the daemon's environment")
    return value


def secret_file(path: str | Path, where: str) -> str:
    """The text of a secret file (trailing newline dropped) after checking who may read it."""
    path = Path(path)
    try:
        info = path.stat()
    except OSError as exc:
        raise SecretError(f"cannot read the secret file {path}: {exc.strerror}", where=where) from None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SecretError(f"the secret file {path} is readable by other users (mode {stat.S_IMODE(info.st_mode):04o})",
                          where=where, hint=f"chmod 600 {path}")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise SecretError(f"the secret file {path} belongs to another user", where=where,
                          hint="give it to the user the daemon runs as (chown), mode 0600")
    return path.read_text(encoding="utf-8").rstrip("\r\n")
