"""Content-Based Router and Recipient List, declared in ``site.toml`` (``[[routes]]``).

A route reads one channel and sends each message on: in mode ``first`` (Content-Based
Router) to the channels of the first rule whose condition matches, in mode ``all``
(Recipient List) to the channels of every matching rule. A message no rule matches goes to
the route's ``otherwise`` channel, or to the dead letters with reason ``unroutable``.
Conditions are Message Selectors (:mod:`coupler.bus.model.selectors`) over headers, properties
and the format indicator.
"""

from __future__ import annotations

from dataclasses import dataclass

from coupler.bus.config.loader import RouteConfig
from coupler.bus.model.selectors import BodyReader, Selector
from coupler.canonical import Envelope


@dataclass(frozen=True)
class CompiledRule:
    condition: Selector | None
    to: tuple[str, ...]

    def matches(self, envelope: Envelope) -> bool:
        return self.condition is None or self.condition(envelope)


@dataclass(frozen=True)
class Route:
    """A compiled route: which channels a message of ``source`` goes to."""

    name: str
    source: str
    rules: tuple[CompiledRule, ...]
    mode: str = "first"
    otherwise: str | None = None
    #: the version it reads (``NAME@V``): the daemon converts messages to it before routing
    format: str | None = None
    #: channels every message goes to, before the rules
    to: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: RouteConfig, body: BodyReader | None = None) -> Route:
        rules = tuple(CompiledRule(Selector.parse(r.when, body=body, bare_properties=False) if r.when else None, r.to)
                      for r in config.rules)
        return cls(
            name=config.label,
            source=config.source,
            rules=rules,
            mode=config.mode,
            otherwise=config.otherwise,
            format=config.format,
            to=config.to,
        )

    def destinations(self, envelope: Envelope) -> list[str]:
        """The channels ``envelope`` goes to, without duplicates, in rule order.

        An empty list means no rule matched and there is no ``otherwise``: the message is
        unroutable.
        """
        out: list[str] = list(self.to)
        matched = False
        for rule in self.rules:
            if rule.matches(envelope):
                matched = True
                out.extend(c for c in rule.to if c not in out)
                if self.mode == "first":
                    break
        if not matched and self.otherwise and (self.rules or not self.to):
            out.append(self.otherwise)
        return out


class Router:
    """Every route of a site, by input channel."""

    def __init__(self, routes: list[RouteConfig], body: BodyReader | None = None):
        self.routes = [Route.from_config(r, body) for r in routes]

    def sources(self) -> list[str]:
        return sorted({r.source for r in self.routes})

    def for_source(self, channel: str) -> list[Route]:
        return [r for r in self.routes if r.source == channel]
