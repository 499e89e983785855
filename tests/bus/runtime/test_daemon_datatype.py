"""Datatype Channels in the daemon: a consumer declaring the version it reads gets every
message converted to it; what cannot be converted goes to the Invalid Message Channel."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from coupler.bus.config.loader import ConfigError
from coupler.bus.plugins import builtin
from coupler.bus.runtime.daemon import Daemon
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.registry import SchemaRegistry
from coupler.schemas import SCHEMA_DIR
from tests.bus import plugin_echo
from tests.bus.site_helpers import make_daemon, running_daemon, write_reading_site

SITE = """
[schemas]
paths = ["schemas"]

[[channels]]
name = "customers"
format = "acme.Customer"

[[channels]]
name = "readings"
kind = "topic"
format = "test.Reading"

[[adapters]]
name = "crm-v1"
type = "echo"
direction = "outbound"
channel = "customers"
format = "acme.Customer@1"
[adapters.options]
forward_to = "crm.out"

[[adapters]]
name = "meter-v1"
type = "echo"
direction = "outbound"
channel = "readings"
format = "test.Reading@1"
[adapters.options]
forward_to = "meter.out"

[[adapters]]
name = "any-version"
type = "echo"
direction = "outbound"
channel = "readings"
[adapters.options]
forward_to = "any.out"
"""

CUSTOMER_V2 = {
    "customer_id": "C-42", "name": "Ada Lovelace", "email": "ada@example.org",
    "address": {"street": "1 Analytical Way", "city": "London", "postal_code": "N1 1AA", "country": "GB"},
    "phone": "+44 20 7946 0000", "segment": "BUSINESS",
}


def _site(tmp_path: Path, text: str = SITE) -> Path:
    return write_reading_site(tmp_path, text)


def _daemon(site: Path) -> Daemon:
    return make_daemon(site, (plugin_echo, builtin))


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running_daemon(_site(tmp_path), (plugin_echo, builtin)) as d:
        yield d


@pytest.fixture
def registry(tmp_path: Path) -> SchemaRegistry:
    return SchemaRegistry.from_dirs([SCHEMA_DIR, tmp_path / "schemas"])


def test_customer_v2_reaches_a_v1_consumer_converted(daemon: Daemon, registry: SchemaRegistry) -> None:
    t = daemon.transport
    assert t is not None
    body = registry.encode(CUSTOMER_V2, "acme.Customer@2")
    sent = Envelope(format=FormatIndicator("acme.Customer", 2), body=body)
    t.send("customers", sent)
    (got,) = t.receive_wait("crm.out", "test", wait=10)
    env = got.envelope
    assert env.format == FormatIndicator("acme.Customer", 1) and env.message_id == sent.message_id
    record = registry.decode(env.body, "acme.Customer@1")
    assert record == {k: CUSTOMER_V2[k] for k in ("customer_id", "name", "email", "address")}
    assert any(h.action == "convert acme.Customer@2 -> acme.Customer@1" for h in env.history)
    # the same version passes as it is
    v1 = Envelope(format=FormatIndicator("acme.Customer", 1), body=env.body)
    t.send("customers", v1)
    (again,) = t.receive_wait("crm.out", "test", wait=10)
    assert again.envelope.body == env.body and again.envelope.format.version == 1
    assert t.dead_letters(kind="invalid") == []


def test_what_cannot_be_converted_goes_to_the_invalid_channel(daemon: Daemon, registry: SchemaRegistry) -> None:
    t = daemon.transport
    assert t is not None
    incompatible = Envelope(format=FormatIndicator("test.Reading", 2),
                            body=registry.encode({"meter": "M-1", "value": "high"}, "test.Reading@2"))
    other_entity = Envelope(format=FormatIndicator("acme.Address", 1), body=b"\x00")
    json_body = Envelope(format=FormatIndicator("test.Reading", 2, "application/json"), body=b'{"meter": "M-2", "value": "7"}')
    good = Envelope(format=FormatIndicator("test.Reading", 1), body=registry.encode({"meter": "M-3", "value": 7}, "test.Reading@1"))
    for env in (incompatible, other_entity, json_body, good):
        t.send("readings", env)
    (got,) = t.receive_wait("meter.out", "test", wait=10)
    assert got.envelope.message_id == good.message_id
    # the consumer that declares no version gets every message as it was sent
    seen = []
    while len(seen) < 4:
        batch = t.receive_wait("any.out", "test", max=10, wait=10)
        assert batch, "the version-less consumer did not get every message"
        seen += [d.envelope.message_id for d in batch]
    assert sorted(seen) == sorted(e.message_id for e in (incompatible, other_entity, json_body, good))
    dead = {d.envelope.message_id: d for d in t.dead_letters(kind="invalid") if d.envelope}
    assert set(dead) == {incompatible.message_id, other_entity.message_id, json_body.message_id}
    assert "incompatible version" in dead[incompatible.message_id].reason
    assert "value" in dead[incompatible.message_id].reason
    assert "carries test.Reading, not acme.Address" in dead[other_entity.message_id].reason
    assert "only avro/binary bodies are converted" in dead[json_body.message_id].reason
    assert all(d.component == "adapter:meter-v1" and d.envelope is not None for d in dead.values())
    assert t.receive_wait("meter.out", "test", wait=0.3) == []


def test_a_reader_of_an_unknown_version_or_another_entity_is_a_config_error(tmp_path: Path) -> None:
    text = SITE.replace('format = "acme.Customer@1"', 'format = "acme.Customer@9"').replace(
        'format = "test.Reading@1"', 'format = "acme.Order@1"'
    )
    d = _daemon(_site(tmp_path, text))
    with pytest.raises(ConfigError) as info:
        d.start()
    assert "adapters[crm-v1].format: no version 9 of acme.Customer" in str(info.value)
    assert "adapters[meter-v1].format: the adapter reads acme.Order@1 but its channel 'readings' is a Datatype Channel of test.Reading" in str(info.value)
