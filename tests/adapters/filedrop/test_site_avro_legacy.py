"""A mapping whose legacy side is a canonical entity of the site (``legacy = "avro:NAME@V"``)
finds it in the site's ``[schemas] paths``, as its ``canonical`` side does."""

from __future__ import annotations

import json
from pathlib import Path

from coupler.bus.api import record_of
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.registry import SchemaRegistry
from tests.bus.site_helpers import running_daemon, wait_for

CUSTOMER = {"type": "record", "name": "Customer", "namespace": "newco",
            "fields": [{"name": "cust_id", "type": "int"}, {"name": "cust_name", "type": "string"}]}
PERSON = {"type": "record", "name": "Person", "namespace": "acme",
          "fields": [{"name": "id", "type": "string"}, {"name": "name", "type": "string"}]}

MAPPING = """
legacy = "avro:newco.Customer@1"
canonical = "acme.Person@1"

[[field]]
legacy = "cust_id"
canonical = "id"
format = "05d"

[[field]]
legacy = "cust_name"
canonical = "name"
"""

SITE = """
[site]
data_dir = "data"

[schemas]
paths = ["schemas"]

[[adapters]]
name = "newco-in"
type = "filedrop"
direction = "inbound"
channel = "people"
mapping = "customer.toml"
[adapters.options]
directory = "drop"
stable_seconds = 0
poll_interval = 0.05
max_poll_interval = 0.2
"""


def test_the_legacy_avro_entity_of_a_mapping_is_read_from_the_site_schemas(tmp_path: Path) -> None:
    for schema in (CUSTOMER, PERSON):
        path = tmp_path / "schemas" / schema["namespace"] / schema["name"].lower() / "v1.avsc"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(schema))
    (tmp_path / "customer.toml").write_text(MAPPING)
    (tmp_path / "site.toml").write_text(SITE)
    (tmp_path / "drop").mkdir()
    with running_daemon(tmp_path / "site.toml", plugins=None) as daemon:
        t = daemon.transport
        assert t is not None
        (tmp_path / "drop" / "c.json").write_text(json.dumps({"cust_id": 7, "cust_name": "Ann"}))
        [message] = wait_for(lambda: t.peek("people", 10), "the mapped message")
    assert message.format == FormatIndicator("acme.Person", 1, "avro/binary")
    registry = SchemaRegistry.from_dirs([tmp_path / "schemas"])
    assert registry.decode(message.body, "acme.Person@1") == {"id": "00007", "name": "Ann"}


OUT = """
[[adapters]]
name = "people-out"
type = "filedrop"
direction = "outbound"
channel = "people"
[adapters.options]
directory = "out"
file_name = "{body.id}-{prop.file.name}.avro"
"""


def test_an_outbound_file_is_named_after_a_field_of_the_canonical_body(tmp_path: Path) -> None:
    """``{body.FIELD}`` in ``file_name``: the field of the canonical Avro record, decoded with
    the site's schemas (``coupler.bus.api.record_of``, the helper a plugin's outbound
    adapter uses too)."""
    for schema in (CUSTOMER, PERSON):
        path = tmp_path / "schemas" / schema["namespace"] / schema["name"].lower() / "v1.avsc"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(schema))
    (tmp_path / "customer.toml").write_text(MAPPING)
    (tmp_path / "site.toml").write_text(SITE + OUT)
    (tmp_path / "drop").mkdir()
    (tmp_path / "out").mkdir()
    with running_daemon(tmp_path / "site.toml", plugins=None) as daemon:
        (tmp_path / "drop" / "c.json").write_text(json.dumps({"cust_id": 42, "cust_name": "Bo"}))
        target = tmp_path / "out" / "00042-c.json.avro"
        wait_for(target.exists, "the file named after the customer id")
        context = daemon.adapters["people-out"].context
    registry = SchemaRegistry.from_dirs([tmp_path / "schemas"])
    assert registry.decode(target.read_bytes(), "acme.Person@1") == {"id": "00042", "name": "Bo"}
    # the helper on a message of the site's own entity (not a built-in one)
    message = Envelope(format=FormatIndicator("acme.Person", 1, "avro/binary"), body=target.read_bytes())
    assert record_of(message, context) == {"id": "00042", "name": "Bo"}
