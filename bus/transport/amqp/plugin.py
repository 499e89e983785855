"""The broker transport (RabbitMQ + PostgreSQL) as transport type ``amqp`` (``[store] type = "amqp"``).

Registered through the ``coupler`` entry-point group in pyproject.toml (``amqp``), like a
third party's transport. The transport module (pika, psycopg) is imported only when a site
opens it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coupler.bus.plugins.hookspecs import hookimpl
from coupler.bus.transport.base import Transport

if TYPE_CHECKING:
    from coupler.bus.config.loader import SiteConfig


def open_amqp(site: SiteConfig) -> Transport:
    """The site's broker transport, opened."""
    from coupler.bus.transport.amqp.transport import amqp_transport_for_site

    return amqp_transport_for_site(site)


@hookimpl
def coupler_transport_types() -> dict[str, Any]:
    return {"amqp": open_amqp}
