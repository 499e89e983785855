"""The route pipelines of a running site (``daemon.pipelines``, by route name): built from
``[[routes]]`` with the step types of the plugins, their Detour switches (Control Bus, CLI,
console), a Test Message through one, and what ``coupler ctl routes`` shows."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from coupler.bus.config.loader import ConfigError
from coupler.bus.plugins.manager import step_types
from coupler.bus.runtime.steps.pipeline import Pipeline, build_pipeline
from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError

if TYPE_CHECKING:
    from coupler.bus.runtime.daemon import Daemon

log = logging.getLogger("coupler.daemon")


class RoutePipelines(dict[str, Pipeline]):
    """Every route's pipeline by name, and what operators do with them."""

    def __init__(self, daemon: Daemon):
        super().__init__()
        self.d = daemon

    def build(self) -> None:
        """Every route's chain of steps (their types from plugins, ``coupler_step_types``)."""
        d = self.d
        types = step_types(d.pm)
        adapter_channels = {a.name: a.channel for a in d.site.adapters if a.channel and a.direction in ("outbound", "both")}
        problems: list[str] = []
        for route, config in zip(d.router.routes, d.site.routes, strict=True):
            try:
                self[route.name] = build_pipeline(
                    config, route, types, site_dir=d.site.path.parent, schema_dirs=d.site.schema_paths,
                    registry=d.registry, transport=d.transport,
                    switches=d.switches, plugins=d.pm, channel_ttls=d.channel_ttls, adapter_channels=adapter_channels,
                )
            except ConfigError as exc:
                problems.extend(str(p) for p in exc.problems)
        if problems:
            raise d.site.config_error(problems, hint="`coupler plugins` lists the step types; docs/patterns.md their keys")

    def named(self, route: str) -> Pipeline:
        if route not in self:
            raise CouplerError(f"no route named {route!r}", hint=f"routes of this site: {', '.join(self) or 'none'}")
        return self[route]

    def detour(self, route: str, step: str | None, on: bool | None) -> list[dict[str, Any]]:
        """The Detour steps of ``route`` (``step``: one of them by name), switched ``on``/off when given."""
        switches = self.d.switches
        detours = [s for s in self.named(route).steps if s.type_name == "detour" and step in (None, s.setup.name)]
        if not detours:
            raise CouplerError(f"route {route!r} has no detour step{f' named {step!r}' if step else ''}",
                               hint="add a [[routes.steps]] of type \"detour\" to the route")
        rows = []
        for s in detours:
            if on is not None:
                switches.set(s.setup.state_scope, on)
                log.info("route %s: detour %s switched %s", route, s.setup.name, "on" if on else "off", extra={"route": route})
            rows.append({"route": route, "step": s.setup.name, "on": switches.get(s.setup.state_scope, False)})
        return rows

    def rows(self) -> list[dict[str, Any]]:
        """Every route: its input, steps (name, type, a detour's switch), end and what its steps dropped."""
        switches = self.d.switches
        out = []
        for name, p in self.items():
            steps = [{"name": s.setup.name, "type": s.type_name,
                      **({"on": switches.get(s.setup.state_scope, False)} if s.type_name == "detour" else {})}
                     for s in p.steps]
            out.append({"route": name, "from": p.end.source, "steps": steps, "to": list(p.end.to),
                        "rules": len(p.end.rules), "otherwise": p.end.otherwise,
                        "dropped": {f"{step} {outcome}": n for (step, outcome), n in sorted(p.counts.items())}})
        return out

    def test_message(self, route: str, envelope: Envelope) -> dict[str, Any]:
        """Test Message through ``route``: what each step did; nothing stored or delivered."""
        marked = envelope.replace(properties={**envelope.properties, "coupler.test-message": "true"})
        return self.named(route).test(marked, self.d.transport)


__all__ = ["RoutePipelines"]
