"""The daemon applies each adapter's `mapping` and `wrappers` (site.toml): a file drop reads
fixed-width COBOL records, the bus maps each to a canonical entity on publish, and a file drop
writes them back through the inverse mapping; wrapper chains unwrap on publish and wrap
before delivery. The adapters only move bytes."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from coupler.bus.config.loader import ConfigError, load_site
from coupler.bus.runtime.daemon import Daemon
from coupler.canonical import FormatIndicator
from coupler.canonical.registry import SchemaRegistry
from tests.bus.site_helpers import running_daemon, wait_for

COPYBOOK = """\
       01  ACCOUNT.
           05  ACCT-ID      PIC 9(4).
           05  ACCT-NAME    PIC X(10).
           05  STATUS-CODE  PIC X.
           05  BALANCE      PIC 9(5)V99.
"""

ACCOUNT_V1 = {
    "type": "record", "name": "Account", "namespace": "test",
    "fields": [
        {"name": "account_id", "type": "string"},
        {"name": "name", "type": "string"},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["ACTIVE", "CLOSED"]}},
        {"name": "balance", "type": {"type": "bytes", "logicalType": "decimal", "precision": 7, "scale": 2}},
    ],
}

MAPPING = """
legacy = "copybook:account.cpy"
canonical = "test.Account@1"

[legacy_options]
encoding = "ascii"

[lookups.status]
A = "ACTIVE"
C = "CLOSED"

[[field]]
legacy = "ACCT-ID"
canonical = "account_id"
format = "04d"

[[field]]
legacy = "ACCT-NAME"
canonical = "name"

[[field]]
legacy = "STATUS-CODE"
canonical = "status"
lookup = "status"

[[field]]
legacy = "BALANCE"
canonical = "balance"
"""

SITE = """
[site]
data_dir = "data"

[schemas]
paths = ["schemas"]

[[channels]]
name = "accounts"
format = "test.Account"

[[adapters]]
name = "accounts-in"
type = "filedrop"
direction = "inbound"
channel = "accounts"
mapping = "mappings/account.toml"
[adapters.options]
directory = "drop"
payload = "fixed"
record_length = 22
stable_seconds = 0
poll_interval = 0.05
max_poll_interval = 0.2

[[adapters]]
name = "accounts-out"
type = "filedrop"
direction = "outbound"
channel = "accounts"
mapping = "mappings/account.toml"
[adapters.options]
directory = "out"
file_name = "{prop.file.name}"
file_exists = "append"
"""

RECORDS = [b"0001ALICE     A0012345", b"0002BOB       C0000001", b"0003CAROL     A9999999"]


def make_site(root: Path, text: str = SITE) -> Path:
    schema = root / "schemas" / "test" / "account" / "v1.avsc"
    schema.parent.mkdir(parents=True)
    schema.write_text(json.dumps(ACCOUNT_V1))
    (root / "mappings").mkdir()
    (root / "mappings" / "account.cpy").write_text(COPYBOOK)
    (root / "mappings" / "account.toml").write_text(MAPPING)
    (root / "site.toml").write_text(text)
    return root / "site.toml"


def test_copybook_records_mapped_to_canonical_and_back_byte_for_byte(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    registry = SchemaRegistry.from_dirs([tmp_path / "schemas"])
    with running_daemon(site, plugins=None) as daemon:
        t = daemon.transport
        assert t is not None
        daemon.pause("accounts-out")  # hold the writer to look at the channel first
        (tmp_path / "drop" / "accounts.dat").write_bytes(b"".join(RECORDS))
        on_channel = wait_for(lambda: (got := t.peek("accounts", 10)) and len(got) == 3 and got, "3 messages")
        on_channel.sort(key=lambda e: int(e.properties["record.number"]))
        assert {e.format for e in on_channel} == {FormatIndicator("test.Account", 1, "avro/binary")}
        assert [registry.decode(e.body, "test.Account@1") for e in on_channel] == [
            {"account_id": "0001", "name": "ALICE", "status": "ACTIVE", "balance": Decimal("123.45")},
            {"account_id": "0002", "name": "BOB", "status": "CLOSED", "balance": Decimal("0.01")},
            {"account_id": "0003", "name": "CAROL", "status": "ACTIVE", "balance": Decimal("99999.99")},
        ]
        legacy = on_channel[0].properties["coupler.legacy-format"]
        assert legacy.startswith("coupler.File@1") and "application/x-cobol-record" in legacy
        assert on_channel[0].properties["file.name"] == "accounts.dat"
        daemon.resume("accounts-out")
        target = tmp_path / "out" / "accounts.dat"
        wait_for(lambda: target.exists() and target.stat().st_size == 66, "the file written back")
        assert target.read_bytes() == b"".join(RECORDS)
        assert t.dead_letters(kind="invalid") == []


def test_a_record_the_mapping_cannot_take_goes_to_the_invalid_channel_and_the_file_goes_on(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    bad = b"0009MALLORY   X0000000"  # status X is not in the lookup table
    with running_daemon(site, plugins=None) as daemon:
        t = daemon.transport
        assert t is not None
        (tmp_path / "drop" / "accounts.dat").write_bytes(RECORDS[0] + bad + RECORDS[1])
        target = tmp_path / "out" / "accounts.dat"
        wait_for(lambda: target.exists() and target.stat().st_size == 44, "the good records written back")
        assert target.read_bytes() == RECORDS[0] + RECORDS[1]
        (dead,) = wait_for(lambda: t.dead_letters(kind="invalid"), "the invalid record")
        assert dead.component == "adapter:accounts-in" and dead.envelope is not None
        assert dead.envelope.body == bad and dead.envelope.properties["record.number"] == "2"
        assert dead.envelope.properties["record.offset"] == "22"  # its byte offset in the file
        assert "cannot translate coupler.File@1 from adapter accounts-in" in dead.reason and "'X'" in dead.reason
        # the archive move comes after the last record is published: wait for it
        wait_for(lambda: (tmp_path / "drop" / "archive" / "accounts.dat").exists(), "the file archived")
        inbound = daemon.adapters["accounts-in"].adapter
        wait_for(lambda: inbound.describe()["inbound"]["invalid"] == 1, "the invalid record counted")


WRAPPED_SITE = """
[site]
data_dir = "data"

[[adapters]]
name = "framed-in"
type = "filedrop"
direction = "inbound"
channel = "notes"
format = "test.Note@1;text/plain"
[adapters.options]
directory = "drop"
stable_seconds = 0
poll_interval = 0.05
max_poll_interval = 0.2
[[adapters.wrappers]]
type = "stx_etx"

[[adapters]]
name = "framed-out"
type = "filedrop"
direction = "outbound"
channel = "notes"
[adapters.options]
directory = "out"
file_name = "{prop.file.name}"
[[adapters.wrappers]]
type = "length"
options = { size = 2 }
"""


def test_wrapper_chains_unwrap_on_publish_and_wrap_before_delivery(tmp_path: Path) -> None:
    (tmp_path / "site.toml").write_text(WRAPPED_SITE)
    with running_daemon(tmp_path / "site.toml", plugins=None) as daemon:
        t = daemon.transport
        assert t is not None
        daemon.pause("framed-out")
        (tmp_path / "drop" / "note.txt").write_bytes(b"\x02hello\x03")
        (tmp_path / "drop" / "broken.txt").write_bytes(b"hello")  # no STX/ETX frame
        (msg,) = wait_for(lambda: t.peek("notes", 10), "the unwrapped note")
        assert msg.body == b"hello" and msg.format == FormatIndicator("test.Note", 1, "text/plain")
        (dead,) = wait_for(lambda: t.dead_letters(kind="invalid"), "the unframed file")
        assert dead.envelope is not None and dead.envelope.body == b"hello" and "wrapper 1 (stx_etx)" in dead.reason
        daemon.resume("framed-out")
        target = tmp_path / "out" / "note.txt"
        wait_for(target.exists, "the wrapped note")
        assert target.read_bytes() == b"\x00\x05hello"


def test_mapping_and_wrapper_errors_name_the_adapter_entry(tmp_path: Path) -> None:
    site = make_site(tmp_path, SITE.replace('mapping = "mappings/account.toml"\n[adapters.options]\ndirectory = "drop"',
                                             'mapping = "mappings/nowhere.toml"\n[adapters.options]\ndirectory = "drop"'))
    with pytest.raises(ConfigError, match=r"site\.toml:\d+: adapters\[accounts-in\]\.mapping: .*nowhere\.toml"):
        Daemon(load_site(site)).start()
    (tmp_path / "site.toml").write_text(WRAPPED_SITE.replace('type = "stx_etx"', 'type = "stx_etx"\noptions = { max_frame = 5 }'))
    with pytest.raises(ConfigError, match=r"site\.toml:\d+: adapters\[framed-in\]\.wrappers\[0\]\.options\.max_frame: unknown key"):
        Daemon(load_site(tmp_path / "site.toml")).start()
