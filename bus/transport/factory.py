"""Open the transport a site names in ``[store] type``, through the plugin hook
``coupler_transport_types``: the embedded SQLite store and the broker are registered there by
their own plugins (``transport/sqlite/plugin.py``, ``transport/amqp/plugin.py``) like a third
party's transport."""

from __future__ import annotations

import pluggy

from coupler.bus.config.loader import SiteConfig
from coupler.bus.model.backoff import BackoffPolicy
from coupler.bus.plugins.manager import broken_note, site_plugin_manager, transport_types
from coupler.bus.transport.base import ChannelConfig, Transport


def open_transport(site: SiteConfig, pm: pluggy.PluginManager | None = None) -> Transport:
    """The site's transport, opened, with the channels of ``[[channels]]`` declared."""
    pm = pm if pm is not None else site_plugin_manager()
    factories = transport_types(pm)
    factory = factories.get(site.store.type)
    if factory is None:
        raise site.config_error(
            [f"store.type: no installed plugin provides transport type {site.store.type!r} "
             f"(installed: {', '.join(sorted(factories)) or 'none'}){broken_note()}"],
            hint="`coupler plugins` lists what is installed",
        )
    transport: Transport = factory(site)
    try:
        for ch in site.channels:
            backoff = None
            if ch.max_attempts:
                backoff = BackoffPolicy(**{**site.store.redelivery.model_dump(), "max_attempts": ch.max_attempts})
            transport.declare(
                ch.name,
                ChannelConfig(kind=ch.kind, dead_letter=ch.dead_letter_channel, format=ch.format, backoff=backoff),
            )
    except BaseException:
        transport.close()
        raise
    return transport
