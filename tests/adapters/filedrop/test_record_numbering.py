"""One numbering of records everywhere a user reads it: from 1, at file byte offsets. The
third record of a file is record 3 in its properties, in the invalid-record reason (which
names the place once, not the message id) and in the names of the files written per record."""

from __future__ import annotations

from pathlib import Path

from tests.adapters.filedrop.test_site_translation import RECORDS, SITE, make_site
from tests.bus.site_helpers import running_daemon, wait_for


def test_the_third_record_is_record_3_at_its_file_offset(tmp_path: Path) -> None:
    site = make_site(tmp_path, SITE.replace('file_name = "{prop.file.name}"', 'file_name = "{prop.file.name}-{sequence}"')
                     .replace('file_exists = "append"', ""))
    bad = b"0009MALLORY   A00X0000"  # BALANCE is not a number: the copybook decoder refuses it
    with running_daemon(site, plugins=None) as daemon:
        t = daemon.transport
        assert t is not None
        (tmp_path / "drop" / "accounts.dat").write_bytes(RECORDS[0] + RECORDS[1] + bad)
        (dead,) = wait_for(lambda: t.dead_letters(kind="invalid"), "the invalid record")
        wait_for(lambda: len(list((tmp_path / "out").glob("accounts.dat-*"))) == 2, "the two good records written")
    props = dead.envelope.properties
    assert (props["record.number"], props["record.offset"]) == ("3", "44")
    assert "file.path=accounts.dat, record.number=3, record.offset=44" in dead.reason, dead.reason
    # the decoder's own place: the file, the record, the byte of the bad field in the file
    assert "accounts.dat: record 3 at byte 59, field ACCOUNT.BALANCE" in dead.reason, dead.reason
    assert dead.envelope.message_id not in dead.reason and "record 1 " not in dead.reason
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["accounts.dat-1", "accounts.dat-2"]
    assert (tmp_path / "out" / "accounts.dat-2").read_bytes() == RECORDS[1]
