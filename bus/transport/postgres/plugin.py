"""The PostgreSQL transport as transport type ``postgres`` (``[store] type = "postgres"``).

Registered through the ``coupler`` entry-point group in pyproject.toml (``postgres``) exactly
as a third party's transport is: a :class:`~coupler.bus.plugins.hookspecs.TransportType` with
its options model (``[store.postgres]``, :class:`PostgresOptions`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ConfigDict

from coupler.bus.plugins.hookspecs import TransportType, hookimpl
from coupler.bus.transport.base import Transport
from coupler.canonical.options import Bool, Num, OptionsModel, Str, option

if TYPE_CHECKING:
    from coupler.bus.config.loader import SiteConfig


class PostgresOptions(OptionsModel):
    """The PostgreSQL transport (`type = "postgres"`): channels as tables of one PostgreSQL
    database (`FOR UPDATE SKIP LOCKED` leases, `LISTEN/NOTIFY` wake-ups), with the state every
    daemon of a multi-node site shares; no broker. See docs/operations.md."""

    model_config = ConfigDict(
        json_schema_extra={
            "example": '[store]\ntype = "postgres"\n\n[store.postgres]\n'
            'dsn = "postgresql://coupler@db.example:5432/coupler"'
        }
    )

    dsn: Str = option(
        "PostgreSQL connection string (libpq DSN or URL).", default="postgresql://127.0.0.1:5432/coupler"
    )
    postgres_schema: Str = option("PostgreSQL schema holding the site's tables.", default="coupler")
    synchronous_commit: Bool = option(
        "Wait for PostgreSQL's WAL flush at every commit. Off, a crash of the PostgreSQL server (not of "
        "a daemon) may lose the last fraction of a second of sends and acknowledgements.",
        default=True,
    )
    file_lease_seconds: Num = option(
        "How long a daemon's claim on a file it polls (file drop, SFTP) lasts without progress before "
        "another daemon may take the file over (a daemon that died in the middle of it).",
        default=300.0,
        ge=1,
    )


def open_postgres(site: SiteConfig, options: PostgresOptions) -> Transport:
    """The site's PostgreSQL transport, opened."""
    from coupler.bus.transport.postgres.transport import PostgresTransport

    return PostgresTransport(
        options.dsn, schema=options.postgres_schema, synchronous_commit=options.synchronous_commit,
        file_lease_seconds=options.file_lease_seconds,
        **site.store.transport_settings(),
    ).open()


@hookimpl
def coupler_transport_types() -> dict[str, TransportType]:
    return {"postgres": TransportType(open_postgres, PostgresOptions)}
