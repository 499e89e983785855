"""Routes declaring the version they read (``[[routes]] format = "NAME@V"``): the daemon
converts every message to it through a Datatype Channel before the rules see it; what cannot
be converted goes to the Invalid Message Channel with the reason."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from coupler.bus.config.loader import ConfigError, parse_site
from coupler.bus.plugins import builtin
from coupler.bus.runtime.daemon import Daemon
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.registry import SchemaRegistry
from coupler.schemas import SCHEMA_DIR
from tests.bus.site_helpers import make_daemon, running_daemon, write_reading_site

SITE = """
[schemas]
paths = ["schemas"]

[[channels]]
name = "readings"
kind = "topic"
format = "test.Reading"

[[routes]]
name = "customers-v1"
from = "customer-changes"
format = "acme.Customer@1"
otherwise = "customers.other"
[[routes.rules]]
when = "properties.region = 'EU'"
to = ["customers.eu"]

[[routes]]
name = "readings-v1"
from = "readings"
format = "test.Reading@1"
[[routes.rules]]
to = ["readings.v1"]
"""

CUSTOMER_V2 = {
    "customer_id": "C-7", "name": "Grace Hopper", "email": "grace@example.org",
    "address": {"street": "1 Harbor Rd", "city": "Arlington", "postal_code": "22201", "country": "US"},
    "phone": None, "segment": "BUSINESS",
}


def _site(tmp_path: Path, text: str = SITE) -> Path:
    return write_reading_site(tmp_path, text)


def _daemon(site: Path) -> Daemon:
    return make_daemon(site, (builtin,))


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running_daemon(_site(tmp_path), (builtin,)) as d:
        yield d


@pytest.fixture
def registry(tmp_path: Path) -> SchemaRegistry:
    return SchemaRegistry.from_dirs([SCHEMA_DIR, tmp_path / "schemas"])


def test_the_route_reads_its_version_and_routes_converted_messages(daemon: Daemon, registry: SchemaRegistry) -> None:
    t = daemon.transport
    assert t is not None
    body = registry.encode(CUSTOMER_V2, "acme.Customer@2")
    for region in ("EU", "US"):
        t.send("customer-changes", Envelope(format=FormatIndicator("acme.Customer", 2), body=body,
                                            properties={"region": region}))
    (eu,) = t.receive_wait("customers.eu", "test", wait=10)
    (other,) = t.receive_wait("customers.other", "test", wait=10)
    for got in (eu.envelope, other.envelope):
        assert got.format == FormatIndicator("acme.Customer", 1)
        assert registry.decode(got.body, "acme.Customer@1") == {
            k: CUSTOMER_V2[k] for k in ("customer_id", "name", "email", "address")
        }
        assert any(h.action == "convert acme.Customer@2 -> acme.Customer@1" for h in got.history)
    assert eu.envelope.properties["region"] == "EU"
    # the route made its input channel a Datatype Channel of the entity
    assert t.channel_config("customer-changes").format == "acme.Customer"


def test_what_the_route_cannot_read_goes_to_the_invalid_channel(daemon: Daemon, registry: SchemaRegistry) -> None:
    t = daemon.transport
    assert t is not None
    v2 = Envelope(format=FormatIndicator("test.Reading", 2), body=registry.encode({"meter": "m1", "value": "high"}, "test.Reading@2"))
    v1 = Envelope(format=FormatIndicator("test.Reading", 1), body=registry.encode({"meter": "m1", "value": 7}, "test.Reading@1"))
    t.send("readings", [v2, v1])
    (got,) = t.receive_wait("readings.v1", "test", wait=10)
    assert got.envelope.message_id == v1.message_id
    (dead,) = t.dead_letters(kind="invalid")
    assert dead.envelope is not None and dead.envelope.message_id == v2.message_id
    assert dead.component == "route:readings-v1"
    assert "test.Reading@2" in dead.reason and "version 1" in dead.reason and "value" in dead.reason


def test_a_route_format_that_does_not_fit_its_channel_or_the_registry_is_refused(tmp_path: Path) -> None:
    text = SITE.replace('format = "test.Reading@1"', 'format = "acme.Customer@1"').replace(
        'format = "acme.Customer@1"\notherwise', 'format = "acme.Customer@9"\notherwise')
    d = _daemon(_site(tmp_path, text))
    with pytest.raises(ConfigError) as info:
        d.start()
    problems = info.value.problems
    assert any(p.startswith("routes[customers-v1].format:") and "acme.Customer" in p and "9" in p for p in problems), problems
    assert any(p.startswith("routes[readings-v1].format: the route reads acme.Customer@1 but its channel 'readings' "
                            "is a Datatype Channel of test.Reading") for p in problems), problems
    assert d.stopped.is_set()


def test_route_format_is_checked_on_load() -> None:
    with pytest.raises(ConfigError, match=r"routes\[0\]\.format: "):
        parse_site('[[routes]]\nfrom = "a"\nformat = "not a format"\n[[routes.rules]]\nto = ["b"]\n')
    site = parse_site('[[routes]]\nfrom = "a"\nformat = "acme.Customer@2"\n[[routes.rules]]\nto = ["b"]\n')
    assert site.routes[0].format == "acme.Customer@2"
