"""The fetch and request commands run declared, parameterised queries; credentials stay secret."""

from __future__ import annotations

import json
import logging
import os
from decimal import Decimal
from pathlib import Path

import pytest

from coupler.adapters.database import DatabaseAdapter
from coupler.bus.api import Command, CommandFault, Document, command_envelope
from coupler.bus.testing import EmbeddedBus
from coupler.canonical import FormatIndicator
from coupler.canonical.errors import CouplerError

from .conftest import Database
from .test_inbound import make_orders

QUERIES = {
    "by_customer": {"sql": "SELECT id, customer, amount FROM orders WHERE customer = :customer ORDER BY id"},
    "recent": {"sql": "SELECT id FROM orders WHERE id >= :from_id ORDER BY id", "max_rows": 2},
}


def request(a: DatabaseAdapter, operation: str, params: object) -> Command:
    doc = Document(FormatIndicator("q.Params", 1, "application/json"), json.dumps(params).encode())
    return Command("request", a.name, command_envelope("request", a.name, document=doc, operation=operation),
                   document=doc, operation=operation)


def test_request_binds_the_documents_fields_as_parameters(bus: EmbeddedBus, db: Database) -> None:
    make_orders(db, 4)
    a = bus.adapter(DatabaseAdapter, "orders-db", db.options(queries=QUERIES), direction="inbound")
    reply = a.handle(request(a, "by_customer", {"customer": "customer 2"}))
    (doc,) = reply.documents
    (row,) = json.loads(doc.body)
    # NUMERIC comes as its exact digits from PostgreSQL; SQLite keeps it as a REAL
    assert row["id"] == 2 and row["customer"] == "customer 2" and Decimal(str(row["amount"])) == Decimal("2.5")
    assert str(doc.format) == "db.Rows@1;application/json" and reply.details["rows"] == "1"
    # SQL in a parameter is a value compared, never run
    hostile = a.handle(request(a, "by_customer", {"customer": "x' OR '1'='1"}))
    assert json.loads(hostile.documents[0].body) == []
    a.handle(request(a, "by_customer", {"customer": "x'; DROP TABLE orders; --"}))
    assert db.sql("SELECT count(*) FROM orders") == [(4,)]
    # max_rows caps the answer
    assert [r["id"] for r in json.loads(a.handle(request(a, "recent", {"from_id": 1})).documents[0].body)] == [1, 2]


def test_request_faults(bus: EmbeddedBus, db: Database) -> None:
    make_orders(db, 1)
    a = bus.adapter(DatabaseAdapter, "orders-db", db.options(queries=QUERIES), direction="inbound")
    with pytest.raises(CommandFault, match="needs the parameter.* customer") as err:
        a.handle(request(a, "by_customer", {}))
    assert err.value.code == "invalid"
    with pytest.raises(CommandFault, match="no query 'drop_all'") as err:
        a.handle(request(a, "drop_all", {}))
    assert err.value.code == "unsupported"


def test_fetch_runs_a_query_named_in_its_query(bus: EmbeddedBus, db: Database) -> None:
    make_orders(db, 3)
    a = bus.adapter(DatabaseAdapter, "orders-db", db.options(queries=QUERIES), direction="inbound")
    cmd = Command("fetch", a.name, command_envelope("fetch", a.name),
                  query={"query": "by_customer", "customer": "customer 3"})
    assert [r["id"] for r in json.loads(a.handle(cmd).documents[0].body)] == [3]


def test_a_password_in_the_url_is_refused_when_the_site_loads(bus: EmbeddedBus, db: Database) -> None:
    from coupler.bus.api import OptionsError

    with pytest.raises(OptionsError, match="the URL holds a password: put it in password_env or password_file"):
        bus.adapter(DatabaseAdapter, "x", {"url": "postgresql://app:s3cret@127.0.0.1/test"}, direction="inbound")


def test_password_file_readable_by_others_is_refused(bus: EmbeddedBus, postgres: Database, tmp_path: Path) -> None:
    db = postgres
    secret = tmp_path / "db.password"
    secret.write_text("hunter2-file\n")
    secret.chmod(0o644)
    with pytest.raises(CouplerError, match="readable by other users .mode 0644") as err:
        bus.adapter(DatabaseAdapter, "x", db.options(password_file=str(secret)), direction="inbound")
    assert "hunter2" not in str(err.value)
    secret.chmod(0o600)
    a = bus.adapter(DatabaseAdapter, "y", db.options(password_file=str(secret)), direction="inbound")
    assert a.engine is not None and a.engine.url.password == "hunter2-file"  # given to the driver
    assert "hunter2" not in json.dumps(a.describe())


def test_the_password_is_never_logged_or_answered(bus: EmbeddedBus, caplog: pytest.LogCaptureFixture,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_DB_PASSWORD", "hunter2-env")
    caplog.set_level(logging.DEBUG)
    with pytest.raises(CouplerError) as err:  # a port nobody listens on
        bus.adapter(DatabaseAdapter, "x", {"url": "postgresql+psycopg://app@127.0.0.1:9/test",
                                           "password_env": "TEST_DB_PASSWORD", "connect_timeout": 2},
                    direction="inbound")
    assert "cannot connect to postgresql+psycopg://app:***@127.0.0.1:9/test" in str(err.value)
    assert "hunter2" not in str(err.value) and "hunter2" not in caplog.text
    monkeypatch.delenv("TEST_DB_PASSWORD")
    with pytest.raises(CouplerError, match="environment variable TEST_DB_PASSWORD is not set"):
        bus.adapter(DatabaseAdapter, "y", {"url": "postgresql://app@127.0.0.1:9/test",
                                           "password_env": "TEST_DB_PASSWORD"}, direction="inbound")
    assert os.environ.get("TEST_DB_PASSWORD") is None


def test_a_query_the_database_refuses_is_a_fault_naming_the_query(bus: EmbeddedBus, db: Database) -> None:
    make_orders(db, 1)
    a = bus.adapter(DatabaseAdapter, "orders-db", db.options(queries={
        "old": {"sql": "SELECT id FROM orders_before_migration WHERE id = :id"}}), direction="inbound")
    with pytest.raises(CommandFault, match=r"adapters\[orders-db\]\.options\.queries\.old: query old failed: "
                                           r".*orders_before_migration") as err:
        a.handle(request(a, "old", {"id": 1}))
    assert err.value.code == "failed"
