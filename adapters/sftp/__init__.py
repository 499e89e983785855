"""The SFTP Channel Adapter (a ``coupler`` plugin, paramiko): a remote directory in and out."""

from __future__ import annotations

import pluggy

from .adapter import SftpAdapter

__all__ = ["SftpAdapter"]

#: the marker of ``coupler`` hook implementations (adapters import no bus module but the API)
hookimpl = pluggy.HookimplMarker("coupler")


@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {"sftp": SftpAdapter}
