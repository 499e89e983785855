"""An EBCDIC record that a mapping refused, as an operator repairs it (issue 30 item 6): the
dead letter is shown decoded with the copybook its adapter's mapping names, in the mapping's
code page, as JSON (console, ``ctl dlq show``); edited as JSON and replayed, it is encoded
back with the same copybook (unedited fields byte for byte, the edited one in EBCDIC) and run
through the adapter's inbound mapping again: the channel gets the canonical record, which the
outbound mapping writes back as the edited record's bytes."""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path

import pytest

from coupler.bus.config.loader import load_site
from coupler.bus.runtime.bodies import encode_body, hexdump
from coupler.bus.runtime.control import ControlClient, ControlError, StoreService, site_service
from coupler.canonical import FormatIndicator
from coupler.canonical.registry import SchemaRegistry
from tests.adapters.filedrop.test_site_translation import MAPPING, RECORDS, SITE, make_site
from tests.bus.site_helpers import REPO, running_daemon, wait_for
from tests.terminal import coupler_on_a_terminal

CP = "cp037"


def ebcdic(record: bytes) -> bytes:
    return record.decode("ascii").encode(CP)


def ebcdic_site(tmp_path: Path, *, http: bool = False) -> Path:
    text = SITE.replace("[site]\n", '[http]\nlisten = "127.0.0.1:0"\n\n[site]\n', 1) if http else SITE
    site = make_site(tmp_path, text)
    (tmp_path / "mappings" / "account.toml").write_text(MAPPING.replace('encoding = "ascii"', f'ebcdic_code_page = "{CP}"'))
    return site


BAD = b"0009MALLORY   X0004200"  # status X is not in the mapping's lookup table
FIXED = b"0009MALLORY   A0004200"


def test_an_ebcdic_dead_letter_is_shown_as_json_and_replayed_through_its_mapping(tmp_path: Path) -> None:
    site = ebcdic_site(tmp_path)
    registry = SchemaRegistry.from_dirs([tmp_path / "schemas"])
    with running_daemon(site, plugins=None) as daemon:
        t = daemon.transport
        assert t is not None
        (tmp_path / "drop" / "accounts.dat").write_bytes(ebcdic(RECORDS[0]) + ebcdic(BAD))
        (dead,) = wait_for(lambda: t.dead_letters(kind="invalid"), "the invalid record")
        assert dead.envelope is not None and dead.envelope.body == ebcdic(BAD)
        control = ControlClient(load_site(site).control_socket)
        shown = control.call("dlq.show", id=dead.id)
        decoded = shown["decoded"]
        assert decoded["as"] == "copybook" and decoded["error"] is None, decoded
        record = json.loads(decoded["text"])
        assert record == {"ACCT_ID": 9, "ACCT_NAME": "MALLORY", "STATUS_CODE": "X", "BALANCE": 42.0}
        # the text shown, encoded back unedited, is the record's bytes exactly
        assert encode_body(dead.envelope.format, decoded["text"], site=load_site(site), original=dead.envelope) == ebcdic(BAD)
        target = tmp_path / "out" / "accounts.dat"
        wait_for(lambda: target.exists() and target.stat().st_size == 22, "the good record written back")

        # replayed unedited, the mapping still refuses it: one line, and the dead letter stays
        with pytest.raises(ControlError, match=r"^dead letter \d+: adapter accounts-in's mapping mappings/account.toml "
                                               r"still refuses it: .*'X' is not in lookup table"):
            control.call("dlq.replay", id=dead.id)
        assert [d.id for d in t.dead_letters(kind="invalid")] == [dead.id]

        daemon.pause("accounts-out")  # to look at the replayed message on its channel
        record["STATUS_CODE"] = "A"
        answer = control.call("dlq.replay", id=dead.id, body=json.dumps(record))
        assert answer["mapped"] == "mappings/account.toml"
        [again] = wait_for(lambda: [e for e in t.peek("accounts", 10) if e.message_id == answer["message_id"]], "the replayed record")
        # on the channel in its canonical format, as the adapter publishes a good record
        assert again.format == FormatIndicator("test.Account", 1, "avro/binary")
        assert registry.decode(again.body, "test.Account@1") == {
            "account_id": "0009", "name": "MALLORY", "status": "ACTIVE", "balance": Decimal("42.00")}
        assert again.properties["record.number"] == "2" and again.properties["coupler.legacy-format"] == str(dead.envelope.format)
        assert t.dead_letters(kind="invalid") == []
        # and written back through the outbound mapping: the edited record, byte for byte in EBCDIC
        daemon.resume("accounts-out")
        wait_for(lambda: target.stat().st_size == 44, "the replayed record written back")
        assert target.read_bytes() == ebcdic(RECORDS[0]) + ebcdic(FIXED)


def test_a_refused_record_replayed_while_the_daemon_is_stopped_goes_through_the_mapping_too(tmp_path: Path) -> None:
    site = ebcdic_site(tmp_path)
    with running_daemon(site, plugins=None) as daemon:
        t = daemon.transport
        assert t is not None
        daemon.pause("accounts-out")
        (tmp_path / "drop" / "accounts.dat").write_bytes(ebcdic(BAD))
        (dead,) = wait_for(lambda: t.dead_letters(kind="invalid"), "the invalid record")
    config = load_site(site)
    # `coupler ctl dlq show` on a terminal: the record decoded with its copybook, no raw EBCDIC
    run = coupler_on_a_terminal(["ctl", "--site", str(site), "dlq", "show", str(dead.id)], terminal="stdout",
                                env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert run.returncode == 0, run.piped
    assert "body (decoded as copybook):" in run.shown and '"ACCT_NAME": "MALLORY"' in run.shown, run.shown
    assert ebcdic(b"MALLORY") not in run.shown.encode("utf-8", "surrogateescape")
    with site_service(config) as service:  # no daemon: the store itself, the mapping from site.toml
        assert isinstance(service, StoreService)
        text = json.loads(service.call("dlq.show", id=dead.id)["decoded"]["text"])
        answer = service.call("dlq.replay", id=dead.id, body=json.dumps({**text, "STATUS_CODE": "C"}))
        [again] = [e for e in service.transport.peek("accounts", 10) if e.message_id == answer["message_id"]]
        assert again.format.ref == "test.Account@1"
    # replayed onto another channel (a repair queue), a record goes as it is
    with running_daemon(site, plugins=None) as daemon:
        t = daemon.transport
        assert t is not None
        daemon.pause("accounts-out")
        (tmp_path / "drop" / "more.dat").write_bytes(ebcdic(BAD))
        (dead,) = wait_for(lambda: t.dead_letters(kind="invalid"), "the second invalid record")
        control = ControlClient(config.control_socket)
        answer = control.call("dlq.replay", id=dead.id, channel="repair")
        assert "mapped" not in answer
        assert [e.body for e in t.peek("repair", 10)] == [ebcdic(BAD)]


def test_the_hex_dump_of_an_ebcdic_record_shows_its_text_in_its_code_page() -> None:
    from coupler.translators.copybook.codepages import code_page

    dump = hexdump(ebcdic(b"0001ALICE     A0012345"), codec=code_page(CP))
    assert dump.splitlines()[0].endswith("0001ALICE     A0")
    assert hexdump(ebcdic(b"0001ALICE")).splitlines()[0].endswith(".........")  # as ASCII: unreadable
