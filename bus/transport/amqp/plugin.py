"""The broker transport (RabbitMQ + PostgreSQL) as transport type ``amqp`` (``[store] type = "amqp"``).

Registered through the ``coupler`` entry-point group in pyproject.toml (``amqp``), like a
third party's transport, with its options (``[store.amqp]``, :class:`AmqpOptions`). The
transport module (pika, psycopg) is imported only when a site opens it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ConfigDict

from coupler.bus.plugins.hookspecs import TransportType, hookimpl
from coupler.bus.transport.base import Transport
from coupler.canonical.options import Int, Num, OptionsModel, Str, option

if TYPE_CHECKING:
    from coupler.bus.config.loader import SiteConfig


class AmqpOptions(OptionsModel):
    """The broker transport (`type = "amqp"`): channels on RabbitMQ, the state every daemon of a
    multi-node site shares (journal, idempotency keys, identities, configurations, the polling
    adapters' file seen-state) in PostgreSQL. See docs/operations.md."""

    model_config = ConfigDict(
        json_schema_extra={
            "example": '[store]\ntype = "amqp"\n\n[store.amqp]\nurl = "amqp://coupler:secret@rabbit.example:5672/%2F"\n'
            'postgres = "postgresql://coupler@db.example:5432/coupler"'
        }
    )

    url: Str = option(
        "AMQP URL of the RabbitMQ broker (or of a load balancer in front of its cluster).",
        default="amqp://guest:guest@127.0.0.1:5672/%2F",
    )
    postgres: Str = option(
        "PostgreSQL connection string (libpq DSN or URL) of the shared state.",
        default="postgresql://127.0.0.1:5432/coupler",
    )
    postgres_schema: Str = option("PostgreSQL schema holding the site's tables.", default="coupler")
    prefix: Str = option("Prefix of the name of every queue and exchange of the site.", default="coupler.")
    delivery_limit: Int = option(
        "Times the broker returns an unacknowledged message (crashed consumers) before dead-lettering it.",
        default=50,
        ge=1,
    )
    reconnect_timeout_seconds: Num = option(
        "How long an operation waits for the broker to come back before it fails.", default=60.0, ge=1
    )
    file_lease_seconds: Num = option(
        "How long a daemon's claim on a file it polls (file drop, SFTP) lasts without progress before "
        "another daemon may take the file over (a daemon that died in the middle of it).",
        default=300.0,
        ge=1,
    )


def open_amqp(site: SiteConfig, options: AmqpOptions) -> Transport:
    """The site's broker transport, opened."""
    from coupler.bus.transport.amqp.transport import amqp_transport_for_site

    return amqp_transport_for_site(site, options)


@hookimpl
def coupler_transport_types() -> dict[str, TransportType]:
    return {"amqp": TransportType(open_amqp, AmqpOptions)}
