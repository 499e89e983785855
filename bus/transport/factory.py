"""Open the transport a site names in ``[store]``: the embedded SQLite store or the broker."""

from __future__ import annotations

from coupler.bus.config.loader import ConfigError, SiteConfig, backoff_policy
from coupler.bus.transport.base import ChannelConfig, Transport


def _sqlite_transport(site: SiteConfig) -> Transport:
    from coupler.bus.transport.sqlite.transport import SqliteTransport

    store = site.store
    return SqliteTransport(
        site.data_dir,
        filename=store["path"],
        synchronous=store["synchronous"],
        sync_acks=store["sync_acks"],
        backoff=backoff_policy(store["redelivery"]),
        lease_seconds=store["lease_seconds"],
        claim_threshold=store["claim_check_bytes"],
        journal_retention=store["journal_retention_days"] * 86400.0,
        idempotency_retention=store["idempotency_window_seconds"],
        dead_letter=store["dead_letter_channel"],
        invalid=store["invalid_channel"],
    ).open()


def open_transport(site: SiteConfig) -> Transport:
    """The site's transport, opened, with the channels of ``[[channels]]`` declared."""
    store = site.store
    if store["type"] == "amqp":
        from coupler.bus.transport.amqp.transport import amqp_transport_for_site

        transport: Transport = amqp_transport_for_site(site)
    elif store["type"] != "sqlite":  # pragma: no cover - the schema admits sqlite and amqp
        raise ConfigError([f"store.type: unknown transport {store['type']!r}"], where=str(site.path))
    else:
        transport = _sqlite_transport(site)
    try:
        for ch in site.channels:
            transport.declare(
                ch.name,
                ChannelConfig(
                    kind=ch.kind,  # type: ignore[arg-type]
                    dead_letter=ch.dead_letter_channel,
                    format=ch.format,
                    backoff=backoff_policy(store["redelivery"], ch.max_attempts) if ch.max_attempts else None,
                ),
            )
    except BaseException:
        transport.close()
        raise
    return transport
