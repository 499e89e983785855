"""Content-Based Router and Recipient List from site.toml routes."""

from __future__ import annotations

from pathlib import Path

from coupler.bus.config.loader import parse_site
from coupler.bus.runtime.router import Route, Router
from coupler.canonical import Envelope, FormatIndicator, MessageKind

ROUTES = """
[[routes]]
name = "cbr"
from = "in"
otherwise = "rest"
[[routes.rules]]
when = "format.name = 'acme.Order' and properties.amount >= 1000"
to = ["big"]
[[routes.rules]]
when = "format = 'acme.Order@2' or kind = 'event'"
to = ["v2", "audit"]

[[routes]]
name = "fanout"
from = "in2"
mode = "all"
[[routes.rules]]
when = "properties.region in ('EU', 'UK')"
to = ["europe", "audit"]
[[routes.rules]]
when = "properties.region is not null"
to = ["audit", "anywhere"]
"""


def routes(tmp_path: Path) -> dict[str, Route]:
    site = parse_site(ROUTES, tmp_path / "site.toml")
    return {r.name: r for r in Router(site.routes).routes}


def env(fmt: str = "acme.Order@1", kind: str = "document", **props: str) -> Envelope:
    return Envelope(format=FormatIndicator.parse(fmt), kind=MessageKind(kind), properties=props)


def test_content_based_router_takes_the_first_matching_rule(tmp_path: Path) -> None:
    r = routes(tmp_path)["cbr"]
    assert r.destinations(env("acme.Order@2", amount="5000")) == ["big"]  # first rule wins
    assert r.destinations(env("acme.Order@2", amount="5")) == ["v2", "audit"]
    assert r.destinations(env("acme.Customer@1", kind="event")) == ["v2", "audit"]
    assert r.destinations(env("acme.Customer@1")) == ["rest"]
    assert r.destinations(env("acme.Order@1", amount="not a number")) == ["rest"]


def test_recipient_list_takes_every_matching_rule_without_duplicates(tmp_path: Path) -> None:
    r = routes(tmp_path)["fanout"]
    assert r.destinations(env(region="EU")) == ["europe", "audit", "anywhere"]
    assert r.destinations(env(region="US")) == ["audit", "anywhere"]
    assert r.destinations(env()) == []  # unroutable: no otherwise


def test_router_indexes_routes_by_input_channel(tmp_path: Path) -> None:
    router = Router(parse_site(ROUTES, tmp_path / "site.toml").routes)
    assert router.sources() == ["in", "in2"]
    assert [r.name for r in router.for_source("in2")] == ["fanout"]
