"""The embedded SQLite store as transport type ``sqlite`` (``[store] type = "sqlite"``).

Registered through the ``coupler`` entry-point group in pyproject.toml (``sqlite``), like a
third party's transport.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coupler.bus.plugins.hookspecs import TransportType, hookimpl
from coupler.bus.transport.base import Transport

if TYPE_CHECKING:
    from coupler.bus.config.loader import SiteConfig


def open_sqlite(site: SiteConfig, options: None = None) -> Transport:
    """The site's SQLite store, opened."""
    from coupler.bus.transport.sqlite.transport import SqliteTransport

    store = site.store
    return SqliteTransport(
        site.data_dir,
        filename=store.path,
        synchronous=store.synchronous,
        sync_acks=store.sync_acks,
        **store.transport_settings(),
    ).open()


@hookimpl
def coupler_transport_types() -> dict[str, TransportType]:
    # its keys (path, synchronous, sync_acks) are [store]'s own: the embedded default's
    return {"sqlite": TransportType(open_sqlite)}
