"""Datatype Channels at run time: the versions outbound adapters and routes declare they read
(``format = "NAME@V"``) are checked against the schema registry and the channels' entities when
the daemon starts, and those consumers receive through a
:class:`~coupler.bus.messaging.channels.DatatypeChannel` (messages converted to the version they
read; what cannot be converted goes to the Invalid Message Channel)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from coupler.bus.config.loader import SiteConfig
from coupler.bus.messaging.channels import DatatypeChannel
from coupler.bus.model.adapter import Adapter
from coupler.bus.runtime.consumers import Receiver
from coupler.bus.transport.base import Transport
from coupler.canonical import FormatIndicator
from coupler.canonical.errors import CouplerError

log = logging.getLogger("coupler.daemon")


class DatatypeReaders:
    """The consumers of a site that read a declared version, and how they receive."""

    def __init__(self, site: SiteConfig, transport: Transport, registry: Callable[[], Any]):
        self.site = site
        self.transport = transport
        self.registry = registry
        #: adapter name -> (the canonical format name of its Datatype Channel, the version it reads)
        self._datatype_readers: dict[str, tuple[str, int]] = {}
        #: route name -> (the canonical format name it reads, the version)
        self._route_readers: dict[str, tuple[str, int]] = {}

    def check(self, classes: dict[str, type[Adapter]]) -> None:
        """Outbound adapters reading a Datatype Channel: their declared version must exist."""
        problems = []
        for ad in self.site.adapters:
            if not (ad.enabled and ad.channel and ad.format and ad.direction in ("outbound", "both")):
                continue
            if "outbound" not in classes[ad.type].directions:
                continue
            carried = self.transport.channel_config(ad.channel).format
            if carried is None:
                continue
            fmt = FormatIndicator.parse(ad.format)
            if fmt.name != carried:
                problems.append(
                    f"{ad.key_path}.format: the adapter reads {fmt.ref} but its channel "
                    f"{ad.channel!r} is a Datatype Channel of {carried}"
                )
                continue
            try:
                self.registry().get(fmt.name, fmt.version)
            except CouplerError as exc:
                problems.append(f"{ad.key_path}.format: {exc.message}")
                continue
            self._datatype_readers[ad.name] = (fmt.name, fmt.version)
        problems += self._check_routes()
        if problems:
            raise self.site.config_error(problems, hint="`coupler schema list` shows the known versions")

    def _check_routes(self) -> list[str]:
        """Routes declaring the version they read (``[[routes]] format``): it must exist, and
        their input channel must carry that entity (a channel without a format becomes its
        Datatype Channel)."""
        problems = []
        for route in self.site.routes:
            if route.format is None:
                continue
            fmt = FormatIndicator.parse(route.format)
            carried = self.transport.channel_config(route.source).format
            if carried is not None and carried != fmt.name:
                problems.append(
                    f"{route.key_path}.format: the route reads {fmt.ref} but its channel "
                    f"{route.source!r} is a Datatype Channel of {carried}"
                )
                continue
            try:
                self.registry().get(fmt.name, fmt.version)
            except CouplerError as exc:
                problems.append(f"{route.key_path}.format: {exc.message}")
                continue
            self._route_readers[route.label] = (fmt.name, fmt.version)
        return problems

    def for_adapter(self, name: str, source: str, select: str | None = None) -> Receiver | None:
        """How adapter ``name`` receives ``source`` converted to the version it reads (None: as sent)."""
        if name not in self._datatype_readers:
            return None
        return self._converting_receiver(name, source, *self._datatype_readers[name], component=f"adapter:{name}",
                                         select=select)

    def for_route(self, route: str, consumer: str, source: str, select: str | None = None, *,
                  max: int = 1) -> Receiver | None:
        """How a route receives ``source`` converted to the version it reads (None: as sent),
        up to ``max`` messages at a time."""
        if route not in self._route_readers:
            return None
        return self._converting_receiver(consumer, source, *self._route_readers[route], component=consumer,
                                         select=select, max=max)

    def _converting_receiver(self, consumer: str, source: str, format_name: str, version: int, *, component: str,
                             select: str | None = None, max: int = 1) -> Receiver:
        """Receive ``source`` through a :class:`DatatypeChannel`: converted to ``format_name@version``,
        what cannot be converted moved to the Invalid Message Channel by ``component``."""
        channel = DatatypeChannel(self.transport, source, format_name, self.registry())
        log.info(
            "%s reads Datatype Channel %s as %s@%d", component, source, format_name, version,
            extra={"component": component, "channel": source},
        )
        return lambda wait: channel.receive(consumer, version, max=max, wait=wait, component=component, selector=select)


__all__ = ["DatatypeReaders"]
