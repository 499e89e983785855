"""The file drop Channel Adapter (a ``coupler`` plugin): a local directory in and out."""

from __future__ import annotations

from coupler.bus.api import hookimpl

from .adapter import FileDropAdapter

__all__ = ["FileDropAdapter"]



@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {"filedrop": FileDropAdapter}
