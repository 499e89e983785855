"""The database Channel Adapter (SQLAlchemy Core), a ``coupler`` plugin.

Registered through the ``coupler`` entry-point group (``database = "coupler.adapters.database"``).
PostgreSQL (psycopg) and SQLite are tested; other dialects work as SQLAlchemy offers them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coupler.adapters.common.lazy import lazy_exports
from coupler.bus.api import hookimpl

if TYPE_CHECKING:
    from .adapter import DatabaseAdapter

# the adapter module is imported when a site names the type (or on `from ... import DatabaseAdapter`)
__getattr__ = lazy_exports(__name__, {"DatabaseAdapter": "adapter"})

__all__ = ["DatabaseAdapter"]


@hookimpl
def coupler_adapter_types() -> dict[str, type | str]:
    return {"database": f"{__name__}.adapter:DatabaseAdapter"}
