"""Route pipelines run by a real daemon from site.toml, on SQLite and on RabbitMQ + PostgreSQL
(the same test for both stores, as the contract suite does): one test per stateless pattern."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from coupler.bus.config.loader import ConfigError, load_site
from coupler.bus.plugins.manager import plugin_manager
from coupler.bus.runtime.daemon import Daemon
from coupler.canonical import Envelope, FormatIndicator

from .site_helpers import running_daemon, wait_for, write_site

JSON = FormatIndicator.parse("test.Order@1;application/json")
XML = FormatIndicator.parse("test.Order@1;application/xml")
TEXT = FormatIndicator.parse("test.Lines@1;text/plain")

AMQP_STORE = """
[store]
type = "amqp"

[store.amqp]
url = "{url}"
postgres = "{dsn}"
prefix = "{prefix}"
postgres_schema = "{postgres_schema}"
"""


@pytest.fixture(params=["sqlite", "amqp"])
def store(request: pytest.FixtureRequest) -> Iterator[str]:
    """The ``[store]`` of the site: SQLite (the default), or the broker transport."""
    if request.param == "sqlite":
        yield ""
        return
    from .amqp.broker import AMQP_URL, PG_DSN, destroy, servers_or_fail, unique_names

    servers_or_fail()
    names = unique_names()
    yield AMQP_STORE.format(url=AMQP_URL, dsn=PG_DSN, **names)
    destroy(names)


def order(region: str, amount: float, **properties: str) -> Envelope:
    body = {"id": f"{region}-{amount}", "customer": {"region": region}, "amount": amount, "items": [{"sku": "a"}]}
    return Envelope(format=JSON, body=json.dumps(body).encode(), properties=properties)


def drained(d: Daemon, channel: str, n: int) -> list[Envelope]:
    """Exactly ``n`` messages of ``channel`` (waiting for them), acknowledged."""
    assert d.transport is not None
    got: list[Envelope] = []

    def take() -> bool:
        assert d.transport is not None
        batch = d.transport.receive(channel, "test", max=100)
        d.transport.ack(batch)
        got.extend(x.envelope for x in batch)
        return len(got) >= n

    wait_for(take, f"{n} message(s) on {channel}")
    assert len(got) == n, [e.body for e in got]
    return got


def settled(d: Daemon, channel: str) -> None:
    assert d.transport is not None
    wait_for(lambda: d.transport is not None and d.transport.stats(channel)[0].depth == 0, f"{channel} drained")


def body(e: Envelope) -> dict:
    return json.loads(e.body)


FILTER = """
[[routes]]
name = "eu-orders"
from = "orders.in"
to = ["orders.eu"]
[[routes.steps]]
type = "filter"
when = "body.customer.region = 'EU' and body.amount > 0"

[[routes]]
name = "big-orders"
from = "big.in"
to = ["big.out"]
[[routes.steps]]
type = "filter"
when = "body.amount >= 100"
otherwise = "small.out"
"""


def test_message_filter_discards_or_sends_otherwise_and_counts(store: str, tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, store + FILTER)) as d:
        t = d.transport
        assert t is not None
        t.send("orders.in", [order("EU", 10), order("US", 10), order("EU", -1), order("EU", 20)])
        t.send("big.in", [order("EU", 150), order("EU", 5)])
        eu = drained(d, "orders.eu", 2)
        assert sorted(body(e)["amount"] for e in eu) == [10, 20]
        [big] = drained(d, "big.out", 1)
        [small] = drained(d, "small.out", 1)
        assert body(big)["amount"] == 150 and body(small)["amount"] == 5
        settled(d, "orders.in")
        assert t.receive("orders.eu", "test") == []
        assert t.dead_letters() == []
        assert d.pipelines["eu-orders"].counts[("step 0 filter", "discarded")] == 2
        # every step is in the Message History of what leaves the route
        assert ("route:eu-orders", "step 0 filter: passed") in [(h.component, h.action) for h in eu[0].history]


PROPERTIES = """
[[routes]]
name = "tag"
from = "in"
to = ["out", "copies"]
[[routes.steps]]
type = "set_properties"
properties = { region = "body.customer.region", sku = "body.items.0.sku", no = "xpath('/order/@no')" }
[[routes.steps]]
type = "wire_tap"
to = "tap"
when = "properties.region = 'EU'"

[[routes]]
name = "by-region"
from = "copies"
otherwise = "other"
[[routes.rules]]
when = "body.customer.region = 'EU'"
to = ["eu"]
"""


def test_set_properties_wire_tap_and_content_based_router_on_the_body(store: str, tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, store + PROPERTIES)) as d:
        t = d.transport
        assert t is not None
        t.send("in", [order("EU", 1), order("US", 2)])
        t.send("in", Envelope(format=XML, body=b'<order no="42"><customer region="EU"/></order>'))
        out = drained(d, "out", 3)
        props = sorted((e.properties.get("region", ""), e.properties.get("sku", ""), e.properties.get("no", "")) for e in out)
        assert props == [("", "", "42"), ("EU", "a", ""), ("US", "a", "")]
        [tapped] = drained(d, "tap", 1)
        assert tapped.properties["region"] == "EU"
        [eu] = drained(d, "eu", 1)
        assert body(eu)["customer"]["region"] == "EU"
        # the XML one has no body.* fields: it cannot be routed on them and is invalid, with the reason
        [other] = drained(d, "other", 1)
        assert body(other)["customer"]["region"] == "US"
        [bad] = wait_for(lambda: t.dead_letters(kind="invalid"), "the XML order in the invalid messages")
        assert "body fields need an Avro or JSON body" in bad.reason and bad.component == "route:by-region"


def test_a_route_rule_on_a_bare_name_is_refused_with_the_fix(tmp_path: Path) -> None:
    site = write_site(tmp_path, '[[routes]]\nfrom = "in"\n[[routes.rules]]\nwhen = "status = \'ACTIVE\'"\nto = ["out"]\n')
    with pytest.raises(ConfigError) as info:
        load_site(site)
    message = str(info.value)
    assert "routes[0].rules[0].when" in message and "write body.status" in message and "\n" not in message


def test_unknown_step_types_and_keys_are_reported_with_their_key_path(tmp_path: Path) -> None:
    text = """
[[routes]]
from = "in"
to = ["out"]
[[routes.steps]]
type = "filtr"
[[routes.steps]]
type = "filter"
whn = "kind = 'document'"
"""
    with pytest.raises(ConfigError) as info:
        load_site(write_site(tmp_path, text), pm=plugin_manager(entry_points=False))
    message = str(info.value)
    assert "routes[0].steps[0].type: no installed plugin provides step type 'filtr' (did you mean 'filter'?" in message
    assert re.search(r"routes\[0\]\.steps\[1\]\.whn: unknown key", message)
    assert "routes[0].steps[1].when: required key is missing" in message


def test_the_built_in_step_types_come_through_the_plugin_hook() -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "coupler.bus.cli.main", "plugins", "--json"],
                         capture_output=True, text=True, check=True).stdout
    plugins = {p["name"]: p for p in json.loads(out)}
    steps = plugins["steps"]["contributes"]["step_types"] if "contributes" in plugins["steps"] else plugins["steps"]["step_types"]
    assert {"filter", "set_properties", "wire_tap"} <= set(steps)


def test_metrics_count_the_discarded_messages(tmp_path: Path) -> None:
    text = FILTER + '\n[http]\nlisten = "127.0.0.1:0"\n'
    with running_daemon(write_site(tmp_path, text)) as d:
        assert d.transport is not None and d.console_url is not None
        d.transport.send("orders.in", [order("US", 1), order("EU", 2)])
        drained(d, "orders.eu", 1)
        settled(d, "orders.in")
        with urllib.request.urlopen(d.console_url.rstrip("/") + "/metrics") as r:
            metrics = r.read().decode()
        assert 'coupler_route_step_messages_total{outcome="discarded",route="eu-orders",step="step 0 filter"} 1.0' in metrics
