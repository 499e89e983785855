"""An EBCDIC record that a mapping refused, as an operator repairs it (issue 30 item 6): the
dead letter is shown decoded with the copybook its adapter's mapping names, in the mapping's
code page, as JSON (console, ``ctl dlq show``); edited as JSON and replayed, it is encoded
back with the same copybook: unedited fields byte for byte, the edited one in EBCDIC."""

from __future__ import annotations

import json
from pathlib import Path

from coupler.bus.config.loader import load_site
from coupler.bus.runtime.bodies import encode_body, hexdump
from coupler.bus.runtime.control import ControlClient
from tests.adapters.filedrop.test_site_translation import MAPPING, RECORDS, SITE, make_site
from tests.bus.site_helpers import running_daemon, wait_for

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


def test_an_ebcdic_dead_letter_is_shown_as_json_and_replayed_re_encoded_byte_exact(tmp_path: Path) -> None:
    site = ebcdic_site(tmp_path)
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

        daemon.pause("accounts-out")  # to look at the replayed message on its channel
        record["STATUS_CODE"] = "A"
        edited = json.dumps(record)
        replayed = control.call("dlq.replay", id=dead.id, body=edited)["message_id"]
        [again] = wait_for(lambda: [e for e in t.peek("accounts", 10) if e.message_id == replayed], "the replayed record")
        assert again.body == ebcdic(FIXED)  # only the edited byte changed, in EBCDIC


def test_the_hex_dump_of_an_ebcdic_record_shows_its_text_in_its_code_page() -> None:
    from coupler.translators.copybook.codepages import code_page

    dump = hexdump(ebcdic(b"0001ALICE     A0012345"), codec=code_page(CP))
    assert dump.splitlines()[0].endswith("0001ALICE     A0")
    assert hexdump(ebcdic(b"0001ALICE")).splitlines()[0].endswith(".........")  # as ASCII: unreadable
