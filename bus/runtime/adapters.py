"""The adapters of a running site: created from site.toml with their translation stages,
started (one failing to start leaves the site degraded), paused and resumed, their identities
registered, stopped."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Literal

from coupler.bus.config.loader import AdapterConfig, ConfigError
from coupler.bus.model.adapter import Adapter, resolve_path_options
from coupler.bus.model.commands import (
    Document,
)
from coupler.bus.model.identities import Identity, IdentityError
from coupler.bus.plugins.manager import adapter_types, broken_note, translator_types
from coupler.bus.runtime.context import BusContext, build_adapter
from coupler.bus.runtime.dispatch import Servant
from coupler.bus.transport.private import private_dir
from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError, describe_exception

if TYPE_CHECKING:
    from coupler.bus.runtime.daemon import Daemon

log = logging.getLogger("coupler.daemon")


#: each adapter's own command queue
ADAPTER_QUEUE_PREFIX = "coupler.adapter."



def adapter_queue(name: str) -> str:
    return ADAPTER_QUEUE_PREFIX + name


class RunningAdapter:
    """An adapter instance with its configuration, context and pause switch."""

    def __init__(self, config: AdapterConfig, adapter: Adapter, context: BusContext, paused: threading.Event):
        self.config = config
        self.adapter = adapter
        self.context = context
        self.paused = paused
        self.started = False
        #: canonical -> legacy translation of the documents it is handed (bus/runtime/translation.py)
        self.translation: Any = None
        #: then the envelope wrapper chain around them (bus/runtime/stages.py)
        self.wrapping: Any = None

    @property
    def name(self) -> str:
        return self.config.name

    def outbound_envelope(self, envelope: Envelope) -> Envelope:
        """A channel message as the adapter takes it: translated, then wrapped."""
        if self.translation is not None:
            envelope = self.translation.envelope(envelope)
        if self.wrapping is not None:
            envelope = self.wrapping.envelope(envelope)
        return envelope

    def outbound_document(self, document: Document, command: Envelope) -> Document:
        """A command's document as the adapter takes it: translated, then wrapped."""
        if self.translation is not None:
            document = self.translation.document(document)
        if self.wrapping is not None:
            document = self.wrapping.document(document, command)
        return document

    def flows(self, direction: str) -> bool:
        """Whether documents flow ``direction`` (inbound/outbound) through this adapter: its
        site.toml ``direction`` says so and the adapter (in its mode) supports it."""
        return self.config.direction in (direction, "both") and direction in self.adapter.supported_directions()

    def servant(self) -> Servant:
        declared = tuple(self.adapter.commands)
        if self.config.commands is not None:
            declared = tuple(c for c in declared if c in self.config.commands)
        return Servant(self.name, declared, tuple(self.config.targets))


class AdapterRuntime:
    """The adapters of one daemon (``daemon.adapters`` holds them by name)."""

    def __init__(self, daemon: Daemon):
        self.d = daemon

    def classes(self) -> dict[str, type[Adapter]]:
        """``{type name: Adapter class}`` of the types the site's enabled adapters name: only
        those are imported (a plugin may contribute a class as ``"module:Class"``)."""
        types = adapter_types(self.d.pm)
        problems = []
        for ad in self.d.site.adapters:
            if ad.enabled and ad.type not in types:
                problems.append(
                    f"{ad.key_path}.type: no installed plugin provides adapter type {ad.type!r} "
                    f"(installed types: {', '.join(sorted(types)) or 'none'}){broken_note()}"
                )
        if problems:
            raise self.d.site.config_error(problems, hint="`coupler plugins` lists what is installed")
        return {ad.type: types[ad.type] for ad in self.d.site.adapters if ad.enabled}

    def start_all(self, classes: dict[str, type[Adapter]], *, paused: bool = False) -> None:
        """Create every enabled adapter and check it, then start them: a configuration error is
        reported before anything started; an adapter failing to start leaves the site degraded."""
        created = [self.create(ad, classes[ad.type]) for ad in self.d.site.adapters if ad.enabled]
        for ra in created:
            if paused:
                ra.paused.set()
        problems = [p for ra in created if (p := self.direction_problem(ra)) is not None]
        if problems:
            raise self.d.site.config_error(problems, hint='give the adapter the direction it supports (or "both": whatever it supports)')
        for ra in created:
            if ra.flows("outbound"):
                self.outbound_stages(ra)
        for ra in created:
            self.start_one(ra)

    def create(self, ad: AdapterConfig, cls: type[Adapter]) -> RunningAdapter:
        assert self.d.transport is not None
        paused = threading.Event()
        data_dir = self.d.site.data_dir / "adapters" / ad.name
        private_dir(data_dir)
        options = resolve_path_options(ad.options, tuple(cls.path_options), self.d.site.path.parent)
        inbound = self.inbound_stage(ad, cls)
        context = BusContext(
            name=ad.name,
            config=dict(options),
            data_dir=data_dir,
            transport=self.d.transport,
            statistics=self.d.statistics,
            channel=ad.channel,
            paused=paused,
            stopping=self.d.stopping,
            reply_timeout=self.d.site.reply_timeout,
            command_channel=self.d.site.command_channel,
            site_dir=self.d.site.path.parent,
            inbound=inbound,
            registry=self.d.registry,
            channel_ttls=self.d.channel_ttls,
            schema_dirs=self.d.site.schema_paths,
        )
        self.d.statistics.add(ad.name, ad.type)
        try:
            adapter = build_adapter(
                cls, ad.name, options, context, direction=ad.direction, targets=ad.targets,
                identity=ad.identity_dict, channel=ad.channel, format=ad.format,
            )
        except CouplerError as exc:
            raise CouplerError(f"{ad.key_path}: adapter {ad.name!r} cannot be created: {exc}",
                               where=self.d.site.where(f"{ad.key_path}.options")) from exc
        ra = RunningAdapter(ad, adapter, context, paused)
        self.d.adapters[ad.name] = ra
        return ra

    # -- embedding: adapters built by the program that runs the daemon ----------------------

    def context_for(self, name: str, channel: str | None = None, config: dict[str, Any] | None = None) -> BusContext:
        """The context of an adapter the embedding program builds itself (then :meth:`attach`
        it): the daemon's store, counters, pause switch and stop signal, as site adapters get."""
        assert self.d.transport is not None, "start() the daemon first"
        data_dir = self.d.site.data_dir / "adapters" / name
        private_dir(data_dir)
        self.d.statistics.add(name, "embedded")
        return BusContext(
            name=name, config=dict(config or {}), data_dir=data_dir, transport=self.d.transport,
            statistics=self.d.statistics, channel=channel, paused=threading.Event(), stopping=self.d.stopping,
            reply_timeout=self.d.site.reply_timeout, command_channel=self.d.site.command_channel,
            site_dir=self.d.site.path.parent, registry=self.d.registry, schema_dirs=self.d.site.schema_paths,
        )

    def attach(self, adapter: Adapter, context: BusContext, *, direction: Literal["inbound", "outbound", "both"] = "both",
               targets: tuple[str, ...] = (), start: bool = True) -> RunningAdapter:
        """Run ``adapter`` (built with :meth:`context_for`) as one of the site's adapters,
        through the same workers as the site's own: its commands from the daemon's
        dispatcher, the documents of its channel delivered to it when it is outbound."""
        config = AdapterConfig(name=adapter.name, type=getattr(adapter, "type_name", None) or type(adapter).__name__,
                               direction=direction, channel=context.channel,
                               targets=tuple(targets) or tuple(getattr(adapter, "targets", ()) or ()))
        ra = RunningAdapter(config, adapter, context, context.paused_event)
        self.d.adapters[config.name] = ra
        if start:
            self.start_one(ra)
            self.d.workers.start_adapter(ra)
        return ra

    @staticmethod
    def direction_problem(ra: RunningAdapter) -> str | None:
        """An explicit direction the adapter does not support (it would start and never take
        or give a document); None when fine. ``both`` means whatever it supports."""
        ad = ra.config
        supported = tuple(ra.adapter.supported_directions())
        if ad.direction == "both" or ad.direction in supported:
            return None
        mode = ra.adapter.options.get("mode")
        kind = f"adapter type {ad.type!r}" + (f" in mode {mode!r}" if isinstance(mode, str) else "")
        can = " or ".join(supported) if supported else "neither inbound nor outbound (it serves commands only)"
        return f"{ad.key_path}.direction: {kind} cannot be {ad.direction}: it is {can}"

    def start_one(self, ra: RunningAdapter) -> None:
        try:
            ra.adapter.start()
        except Exception as exc:  # one broken adapter must not take the site down: it is degraded
            reason = str(exc) if isinstance(exc, CouplerError) else describe_exception(exc)
            log.error("adapter %s failed to start: %s", ra.name, reason, extra={"adapter": ra.name})
            self.d.statistics.set_state(ra.name, "failed", reason)
            return
        ra.started = True
        self.d.statistics.set_state(ra.name, "running")
        self.d.statistics.beat(ra.name)
        self.register_identity(ra)

    def failed(self) -> dict[str, str]:
        """The adapters that failed to start: name -> why."""
        return {ra.name: self.d.statistics.adapters[ra.name].error or "failed to start"
                for ra in self.d.adapters.values() if not ra.started}

    def inbound_stage(self, ad: AdapterConfig, cls: type[Adapter]) -> Any:
        """Unwrap + legacy -> canonical for what an inbound adapter publishes (None: as it is)."""
        if not ("inbound" in cls.directions and ad.direction in ("inbound", "both") and (ad.mapping or ad.wrappers)):
            return None
        from coupler.bus.plugins.manager import mapping_functions
        from coupler.bus.runtime.stages import InboundTranslation

        try:
            return InboundTranslation.for_adapter(
                ad, self.d.registry() if ad.mapping else None, self.d.site.path.parent, mapping_functions(self.d.pm),
                schema_dirs=self.d.site.schema_paths,
            )
        except ConfigError as exc:
            raise self.d.site.config_error(exc.problems, hint=exc.hint) from None

    def outbound_stages(self, ra: RunningAdapter) -> None:
        """Canonical -> legacy (translation), then the wrapper chain, before an outbound adapter."""
        from coupler.bus.runtime.stages import OutboundWrapping, wrapper_chain
        from coupler.bus.runtime.translation import OutboundTranslation

        ad = ra.config
        try:
            ra.translation = OutboundTranslation.for_adapter(
                ad, self.d.registry(), self.d.site.path.parent, translator_types(self.d.pm),
                schema_dirs=self.d.site.schema_paths,
            )
            chain = wrapper_chain(ad, self.d.site.path.parent, self.d.site.schema_paths)
        except ConfigError as exc:
            raise self.d.site.config_error(exc.problems, hint=exc.hint) from None
        ra.wrapping = OutboundWrapping(ad.name, chain) if chain is not None else None

    def servants(self) -> list[Servant]:
        return [ra.servant() for ra in self.d.adapters.values()]

    def resolve_identity(self, target: str) -> list[str]:
        """Application identity addressing: the adapter of the most specific match."""
        assert self.d.transport is not None
        try:
            pattern = Identity.parse(target)
        except IdentityError:
            return []
        for reg in self.d.transport.identities.matches(pattern):
            if reg.adapter in self.d.adapters:
                return [reg.adapter]
        return []

    def register_identity(self, ra: RunningAdapter) -> None:
        assert self.d.transport is not None
        repo = self.d.transport.identities
        repo.unregister(adapter=ra.name)  # left over by a daemon that was killed
        if ra.config.identity:
            reg = repo.register(Identity.from_dict(ra.config.identity.as_dict()), adapter_queue(ra.name), adapter=ra.name)
            log.info("adapter %s registered identity %s", ra.name, reg.identity, extra={"adapter": ra.name})

    def unregister_identity(self, ra: RunningAdapter) -> None:
        if self.d.transport is not None and ra.config.identity:
            try:
                self.d.transport.identities.unregister(adapter=ra.name)
            except CouplerError as exc:
                log.error("adapter %s: cannot unregister its identity: %s", ra.name, exc)

    def pause(self, name: str) -> None:
        ra = self.get(name)
        ra.paused.set()
        if ra.started:
            self.d.statistics.set_state(name, "paused")

    def resume(self, name: str) -> None:
        ra = self.get(name)
        ra.paused.clear()
        if ra.started:
            self.d.statistics.set_state(name, "running")

    def get(self, name: str) -> RunningAdapter:
        if name not in self.d.adapters:
            raise CouplerError(
                f"no adapter named {name!r}", hint=f"adapters of this site: {', '.join(self.d.adapters) or 'none'}"
            )
        return self.d.adapters[name]

    def health(self, name: str) -> dict[str, Any] | None:
        """``adapter.health()`` of a started adapter (None when it is not running)."""
        ra = self.d.adapters.get(name)
        if ra is None or not ra.started:
            return None
        try:
            return ra.adapter.health()
        except Exception as exc:  # a broken health() must not break ctl status
            log.exception("adapter %s: health() failed", name, extra={"adapter": name})
            return {"status": "degraded", "problems": [f"health() failed: {type(exc).__name__}: {exc}"]}

    def rows(self) -> list[dict[str, Any]]:
        """The statistics of every adapter with its health (``ctl status``/``ctl adapters``)."""
        rows = self.d.statistics.snapshot()
        for row in rows:
            row["health"] = self.health(row["name"])
        return rows

    def stop_all(self, skip: set[str] | frozenset[str] = frozenset()) -> None:
        """Stop every started adapter and unregister the identities (shutdown); those in
        ``skip`` (whose work the drain abandoned: their stop() could hang with it) are not stopped."""
        for ra in self.d.adapters.values():
            if ra.started and ra.name in skip:
                log.error("adapter %s not stopped: its work in progress was abandoned", ra.name, extra={"adapter": ra.name})
            elif ra.started:
                try:
                    ra.adapter.stop()
                except Exception:
                    log.exception("adapter %s failed to stop", ra.name, extra={"adapter": ra.name})
                ra.started = False
                self.d.statistics.set_state(ra.name, "stopped")
            self.unregister_identity(ra)
