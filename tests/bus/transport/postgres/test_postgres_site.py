"""A site on the ``postgres`` transport: its ``[store.postgres]`` options declared by the
transport's plugin, checked by the site loader, used to open the transport."""

from __future__ import annotations

from pathlib import Path

import pytest

from coupler.bus.config.loader import ConfigError, load_site
from coupler.bus.plugins.manager import plugin_manager
from coupler.bus.transport.factory import open_transport
from coupler.bus.transport.postgres.transport import PostgresTransport
from coupler.canonical import Envelope
from tests.bus.transport.amqp.broker import PG_DSN, servers_or_fail, unique_names


def _site(tmp_path: Path, table: str) -> Path:
    path = tmp_path / "site.toml"
    path.write_text(f'[site]\nname = "pg"\n\n[store]\ntype = "postgres"\nlease_seconds = 5\n\n{table}')
    return path


def test_the_options_of_the_postgres_table_are_checked_with_their_line(tmp_path: Path) -> None:
    path = _site(tmp_path, '[store.postgres]\ndsn = "postgresql://db/x"\nschema = "x"\n')
    with pytest.raises(ConfigError, match=r"site\.toml:10: store\.postgres\.schema: unknown key"):
        load_site(path, pm=plugin_manager())
    path = _site(tmp_path, '[store.postgress]\ndsn = "postgresql://db/x"\n')
    with pytest.raises(ConfigError, match=r"store\.postgress: no installed transport type 'postgress' has options"):
        load_site(path, pm=plugin_manager())
    path = _site(tmp_path, 'synchronus = "FULL"\n')
    with pytest.raises(ConfigError, match=r"store\.synchronus: unknown key; did you mean 'synchronous'\?"):
        load_site(path.with_name("site.toml"), pm=plugin_manager())


def test_a_site_opens_the_postgres_transport_its_table_describes(tmp_path: Path) -> None:
    servers_or_fail()
    schema = unique_names()["postgres_schema"]
    path = _site(tmp_path, f'[store.postgres]\ndsn = "{PG_DSN}"\npostgres_schema = "{schema}"\n')
    pm = plugin_manager()
    site = load_site(path, pm=pm)
    t = open_transport(site, pm)
    try:
        assert isinstance(t, PostgresTransport) and t.schema == schema and t.lease_seconds == 5
        t.send("orders", Envelope(format="test.Note@1", body=b"hi"))
        [got] = t.receive_wait("orders", "test", wait=5)
        assert got.envelope.body == b"hi"
        t.ack(got)
    finally:
        t.destroy()


def test_the_file_lease_of_a_postgres_site_is_its_option(tmp_path: Path) -> None:
    """Several daemons polling one directory share the file seen-state on this transport too:
    how long a dead daemon's claim on a file lasts is `[store.postgres] file_lease_seconds`
    (docs/operations.md, "Several daemons"), and a lost claim names that key."""
    servers_or_fail()
    schema = "h98_" + unique_names()["postgres_schema"]
    path = _site(tmp_path, f'[store.postgres]\ndsn = "{PG_DSN}"\npostgres_schema = "{schema}"\n'
                           "file_lease_seconds = 42\n")
    pm = plugin_manager()
    t = open_transport(load_site(path, pm=pm), pm)
    try:
        state = t.file_state("drop", "host-a:/data")
        assert state.lease_seconds == 42
        assert "store.postgres.file_lease_seconds" in state.lease_key
    finally:
        t.destroy()
