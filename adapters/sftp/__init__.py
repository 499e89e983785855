"""The SFTP Channel Adapter (a ``coupler`` plugin, paramiko): a remote directory in and out."""

from __future__ import annotations

from coupler.bus.api import hookimpl

from .adapter import SftpAdapter

__all__ = ["SftpAdapter"]



@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {"sftp": SftpAdapter}
