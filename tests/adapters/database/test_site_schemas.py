"""An Avro format of the database adapter resolves in the site's schema registry (``[schemas]
paths`` of site.toml), like the other adapters': a table polled into ``avro/binary`` messages
of a schema only the site declares, and those messages written to another table."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.bus.site_helpers import running_daemon, wait_for, write_reading_site

SITE = """
[site]
data_dir = "data"

[store]
synchronous = "NORMAL"

[schemas]
paths = ["schemas"]

[[adapters]]
name = "meters-in"
type = "database"
direction = "inbound"
channel = "readings"
format = "test.Reading@1;avro/binary"
[adapters.options]
url = "sqlite:///{db}"
[adapters.options.poll]
table = "readings"
columns = ["meter", "value"]
status_column = "processed_at"
interval = 0.1

[[adapters]]
name = "meters-out"
type = "database"
direction = "outbound"
channel = "readings"
format = "test.Reading@1;avro/binary"
[adapters.options]
url = "sqlite:///{db}"
[adapters.options.write]
table = "copies"
"""


def test_an_avro_format_of_the_sites_schemas_polls_and_writes(tmp_path: Path) -> None:
    db = tmp_path / "legacy.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE readings (id integer PRIMARY KEY, meter text, value integer, processed_at timestamp)")
        conn.execute("CREATE TABLE copies (meter text, value integer)")
        conn.executemany("INSERT INTO readings (id, meter, value) VALUES (?, ?, ?)",
                         [(i, f"M-{i}", i * 10) for i in range(1, 6)])
    # test.Reading is in the site's schemas/ only (not a built-in or plugin schema)
    site = write_reading_site(tmp_path, SITE.format(db=db))

    def copies() -> list[tuple[str, int]]:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT meter, value FROM copies ORDER BY value").fetchall()

    with running_daemon(site, plugins=None) as daemon:  # the installed plugins, as `coupler daemon`
        assert not daemon.failed_adapters()
        got = wait_for(lambda: len(copies()) == 5 and copies(), "the five readings written back")
    assert got == [(f"M-{i}", i * 10) for i in range(1, 6)]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM readings WHERE processed_at IS NULL").fetchone() == (0,)
