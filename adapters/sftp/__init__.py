"""The SFTP Channel Adapter (a ``coupler`` plugin, paramiko): a remote directory in and out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coupler.adapters.common.lazy import lazy_exports
from coupler.bus.api import hookimpl

if TYPE_CHECKING:
    from .adapter import SftpAdapter

# the adapter module is imported when a site names the type (or on `from ... import SftpAdapter`)
__getattr__ = lazy_exports(__name__, {"SftpAdapter": "adapter"})

__all__ = ["SftpAdapter"]


@hookimpl
def coupler_adapter_types() -> dict[str, type | str]:
    return {"sftp": f"{__name__}.adapter:SftpAdapter"}
