"""Open the transport a site names in ``[store] type``, through the plugin hook
``coupler_transport_types``: the built-in transports are registered there by their own plugins
(``transport/<type>/plugin.py``) like a third party's transport, each with the options model
of its ``[store.<type>]`` table."""

from __future__ import annotations

from typing import Any

import pluggy

from coupler.bus.config.loader import SiteConfig
from coupler.bus.model.backoff import BackoffPolicy
from coupler.bus.plugins.hookspecs import TransportType
from coupler.bus.plugins.manager import broken_note, site_plugin_manager, transport_types
from coupler.bus.transport.base import ChannelConfig, Transport


def transport_options(kind: TransportType | Any, site: SiteConfig, name: str) -> Any:
    """The validated ``[store.<name>]`` table of a site for transport type ``kind`` (None
    when the type declares no options)."""
    model = getattr(kind, "options_model", None)
    return None if model is None else model.model_validate(site.store_table(name))


def open_transport(site: SiteConfig, pm: pluggy.PluginManager | None = None) -> Transport:
    """The site's transport, opened, with the channels of ``[[channels]]`` declared."""
    pm = pm if pm is not None else site_plugin_manager()
    kinds = transport_types(pm)
    kind = kinds.get(site.store.type)
    if kind is None:
        raise site.config_error(
            [f"store.type: no installed plugin provides transport type {site.store.type!r} "
             f"(installed: {', '.join(sorted(kinds)) or 'none'}){broken_note()}"],
            hint="`coupler plugins` lists what is installed",
        )
    if isinstance(kind, TransportType):
        transport: Transport = kind.open(site, transport_options(kind, site, site.store.type))
    else:  # a plain factory(site) of a plugin written before TransportType
        transport = kind(site)
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
