"""The database Channel Adapter (SQLAlchemy Core), a ``coupler`` plugin.

Registered through the ``coupler`` entry-point group (``database = "coupler.adapters.database"``).
PostgreSQL (psycopg) and SQLite are tested; other dialects work as SQLAlchemy offers them.
"""

from __future__ import annotations

from coupler.bus.api import hookimpl

from .adapter import DatabaseAdapter

__all__ = ["DatabaseAdapter"]


@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {"database": DatabaseAdapter}
