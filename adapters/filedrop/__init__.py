"""The file drop Channel Adapter (a ``coupler`` plugin): a local directory in and out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coupler.adapters.common.lazy import lazy_exports
from coupler.bus.api import hookimpl

if TYPE_CHECKING:
    from .adapter import FileDropAdapter

# the adapter module is imported when a site names the type (or on `from ... import FileDropAdapter`)
__getattr__ = lazy_exports(__name__, {"FileDropAdapter": "adapter"})

__all__ = ["FileDropAdapter"]


@hookimpl
def coupler_adapter_types() -> dict[str, type | str]:
    return {"filedrop": f"{__name__}.adapter:FileDropAdapter"}
