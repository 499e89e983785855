"""The file drop Channel Adapter (a ``coupler`` plugin): a local directory in and out."""

from __future__ import annotations

import pluggy

from .adapter import FileDropAdapter

__all__ = ["FileDropAdapter"]

#: the marker of ``coupler`` hook implementations (adapters import no bus module but the API)
hookimpl = pluggy.HookimplMarker("coupler")


@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {"filedrop": FileDropAdapter}
