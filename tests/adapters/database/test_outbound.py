"""Outbound: records written to a table (insert, update, upsert, stored procedure), once per
message id; the mapping checked against the table at start; SQL in values stays data."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from coupler.adapters.database import DatabaseAdapter
from coupler.bus.api import Command, CommandFault, Document, command_envelope
from coupler.bus.testing import EmbeddedBus
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError

from .conftest import Database

FMT = FormatIndicator("acme.Order", 1, "application/json")
TABLE = ("CREATE TABLE orders_copy (order_no varchar(20) PRIMARY KEY, customer text NOT NULL, "
         "amount numeric(10,2), ordered date, note text)")
HOSTILE = "x'); DROP TABLE orders_copy; --"


def message(records: Any, message_id: str | None = None) -> Envelope:
    env = Envelope(format=FMT, body=json.dumps(records).encode())
    return env.replace(message_id=message_id) if message_id else env


def writer(bus: EmbeddedBus, db: Database, **write: Any) -> DatabaseAdapter:
    write = {"table": "orders_copy", **write}
    return bus.adapter(DatabaseAdapter, "orders-out", db.options(write=write), direction="outbound",
                       channel="orders")


MAPPING = {"orderNo": "order_no", "customer": "customer", "amount": "amount", "ordered": "ordered", "note": "note"}


def test_insert_maps_fields_to_columns_and_writes_a_message_once(bus: EmbeddedBus, db: Database) -> None:
    db.sql(TABLE)
    a = writer(bus, db, mapping=MAPPING)
    m = message([{"orderNo": "A1", "customer": "Ada", "amount": "12.50", "ordered": "2026-11-26", "ignored": 1},
                 {"orderNo": "A2", "customer": "Grace", "amount": 7, "note": HOSTILE}])
    bus.deliver(a, m)
    bus.deliver(a, m)  # delivered again (a crash before the acknowledgement): not written twice
    rows = db.sql("SELECT order_no, customer, amount, ordered, note FROM orders_copy ORDER BY order_no")
    assert [(r[0], r[1], Decimal(str(r[2])), str(r[3]) if r[3] else None, r[4]) for r in rows] == [
        ("A1", "Ada", Decimal("12.50"), "2026-11-26", None), ("A2", "Grace", Decimal(7), None, HOSTILE)]
    assert a.describe()["outbound"]["duplicates"] == 1
    # the hostile value went in as data: the table is there and holds it verbatim
    assert db.sql(f"SELECT count(*) FROM orders_copy WHERE note = {db.p}", (HOSTILE,)) == [(1,)]


def test_upsert_inserts_then_updates_by_key(bus: EmbeddedBus, db: Database) -> None:
    db.sql(TABLE)
    a = writer(bus, db, operation="upsert", key="order_no", mapping=MAPPING)
    bus.deliver(a, message({"orderNo": "A1", "customer": "Ada", "amount": "1.00"}))
    bus.deliver(a, message({"orderNo": "A1", "customer": "Ada L.", "amount": "2.00"}))
    bus.deliver(a, message({"orderNo": "A2", "customer": "Grace"}))
    assert [(r[0], r[1], r[2] and Decimal(str(r[2]))) for r in db.sql("SELECT order_no, customer, amount FROM orders_copy ORDER BY 1")] \
        == [("A1", "Ada L.", Decimal(2)), ("A2", "Grace", None)]


def test_update_of_a_missing_row_is_refused(bus: EmbeddedBus, db: Database) -> None:
    db.sql(TABLE)
    db.sql("INSERT INTO orders_copy (order_no, customer) VALUES ('A1', 'Ada')")
    a = writer(bus, db, operation="update", key=["order_no"], mapping=MAPPING)
    bus.deliver(a, message({"orderNo": "A1", "customer": "Ada", "note": "paid"}))
    assert db.sql("SELECT note FROM orders_copy") == [("paid",)]
    with pytest.raises(CommandFault, match="no row of .*orders_copy with order_no = 'ZZ'") as err:
        bus.deliver(a, message({"orderNo": "ZZ", "customer": "Nobody"}))
    assert err.value.code == "invalid"


def test_a_value_the_column_cannot_take_refuses_that_message_only(bus: EmbeddedBus, db: Database) -> None:
    db.sql(TABLE)
    a = writer(bus, db, mapping=MAPPING)
    with pytest.raises(CommandFault, match="does not fit column ordered") as err:
        bus.deliver(a, message({"orderNo": "B1", "customer": "Ada", "ordered": "yesterday"}))
    assert err.value.code == "invalid"
    with pytest.raises(CommandFault, match="not JSON"):
        bus.deliver(a, Envelope(format=FMT, body=b"{not json"))
    bus.deliver(a, message({"orderNo": "B2", "customer": "Grace"}))  # the adapter goes on
    assert db.sql("SELECT order_no FROM orders_copy") == [("B2",)]


def test_the_mapping_is_checked_against_the_table_at_start(bus: EmbeddedBus, db: Database) -> None:
    db.sql(TABLE)
    with pytest.raises(CouplerError, match="no column 'order_number'"):
        writer(bus, db, mapping={"orderNo": "order_number", "customer": "customer"})
    with pytest.raises(CouplerError, match=r"column\(s\) customer of .*orders_copy need a value and no field is mapped"):
        writer(bus, db, mapping={"orderNo": "order_no"})
    with pytest.raises(CouplerError, match=r"upsert needs a unique key .*\(customer\)"):
        writer(bus, db, operation="upsert", key="customer", mapping=MAPPING)


def test_the_send_command_writes_and_a_resent_command_is_written_once(bus: EmbeddedBus, db: Database) -> None:
    db.sql(TABLE)
    a = writer(bus, db, mapping=MAPPING)
    doc = Document(FMT, json.dumps({"orderNo": "S1", "customer": "Ada"}).encode())
    env = command_envelope("send", a.name, document=doc)
    command = Command("send", a.name, env, document=doc)
    assert a.handle(command).details["status"] == "written"
    assert a.handle(command).details["status"] == "duplicate"
    assert db.sql("SELECT count(*) FROM orders_copy") == [(1,)]


def test_stored_procedure_called_with_the_mapped_fields(bus: EmbeddedBus, postgres: Database) -> None:
    postgres.sql("CREATE TABLE audit (who text, what text)")
    postgres.sql(f"CREATE PROCEDURE {postgres.schema}.record_audit(who text, what text) LANGUAGE sql "
                 f"AS $$ INSERT INTO {postgres.schema}.audit VALUES (who, what) $$")
    a = bus.adapter(DatabaseAdapter, "audit", postgres.options(write={
        "operation": "procedure", "procedure": f"{postgres.schema}.record_audit",
        "mapping": {"user": "who", "action": "what"}}), direction="outbound", channel="audit")
    bus.deliver(a, message({"user": "ada", "action": HOSTILE}))
    assert postgres.sql("SELECT who, what FROM audit") == [("ada", HOSTILE)]


def test_a_table_gone_from_the_database_is_an_error_of_the_database_not_of_the_message(
        bus: EmbeddedBus, db: Database) -> None:
    db.sql(TABLE)
    a = writer(bus, db, mapping=MAPPING)
    db.sql("ALTER TABLE orders_copy RENAME TO orders_away")  # a DBA's mistake, or a migration running
    m = message({"orderNo": "G1", "customer": "Ada"})
    with pytest.raises(CouplerError, match=r"adapters\[orders-out\]\.options\.write: .*orders_copy") as err:
        bus.deliver(a, m)  # delivered again later (not to the Invalid Message Channel)
    assert not isinstance(err.value, CommandFault)
    db.sql("ALTER TABLE orders_away RENAME TO orders_copy")
    bus.deliver(a, m)
    assert db.sql("SELECT order_no FROM orders_copy") == [("G1",)]


def test_a_number_too_large_for_the_driver_refuses_that_message_only(bus: EmbeddedBus, db: Database) -> None:
    db.sql("CREATE TABLE counts (name text PRIMARY KEY, n integer)")
    a = bus.adapter(DatabaseAdapter, "counts-out", db.options(write={"table": "counts"}), direction="outbound",
                    channel="counts")
    with pytest.raises(CommandFault, match="cannot be written") as err:
        bus.deliver(a, message({"name": "big", "n": 10**20}))
    assert err.value.code == "invalid"  # to the Invalid Message Channel, not tried again and again
    bus.deliver(a, message({"name": "small", "n": 1}))
    assert db.sql("SELECT name, n FROM counts") == [("small", 1)]


def test_a_message_the_table_refused_is_written_when_delivered_again(bus: EmbeddedBus, db: Database) -> None:
    db.sql(TABLE)
    a = writer(bus, db, mapping=MAPPING)
    with pytest.raises(CommandFault, match="refused by the table"):  # customer is NOT NULL
        bus.deliver(a, message({"orderNo": "R1"}, message_id="order-r1"))
    # edited and replayed from the Invalid Message Channel, under its id: written, not "written before"
    bus.deliver(a, message({"orderNo": "R1", "customer": "Ada"}, message_id="order-r1"))
    assert db.sql("SELECT order_no, customer FROM orders_copy") == [("R1", "Ada")]
    assert a.describe()["outbound"]["duplicates"] == 0


@pytest.mark.parametrize("value", [1.5, True, "ten", 10**20], ids=["fraction", "boolean", "text", "beyond-bigint"])
def test_a_value_the_procedure_has_no_parameter_type_for_refuses_that_message_only(
        bus: EmbeddedBus, postgres: Database, value: Any) -> None:
    postgres.sql("CREATE TABLE stock (item text, n integer)")
    postgres.sql(f"CREATE PROCEDURE {postgres.schema}.add_stock(item text, n integer) LANGUAGE sql "
                 f"AS $$ INSERT INTO {postgres.schema}.stock VALUES (item, n) $$")
    a = bus.adapter(DatabaseAdapter, "stock", postgres.options(write={
        "operation": "procedure", "procedure": f"{postgres.schema}.add_stock",
        "mapping": {"item": "item", "n": "n"}}), direction="outbound", channel="stock")
    # PostgreSQL finds no add_stock(text, numeric | boolean | ...): the message's value, not the database
    with pytest.raises(CommandFault, match=r"cannot be written") as err:
        bus.deliver(a, message({"item": "bolt", "n": value}))
    assert err.value.code == "invalid"  # to the Invalid Message Channel, not tried again and again
    bus.deliver(a, message({"item": "nut", "n": 3}))
    assert postgres.sql("SELECT item, n FROM stock") == [("nut", 3)]


@pytest.mark.parametrize("qualified", [True, False], ids=["schema.name", "name"])
def test_a_procedure_gone_from_the_database_is_an_error_of_the_database_not_of_the_message(
        bus: EmbeddedBus, postgres: Database, qualified: bool) -> None:
    postgres.sql("CREATE TABLE stock (item text, n integer)")
    create = (f"CREATE PROCEDURE {postgres.schema}.add_stock(item text, n integer) LANGUAGE sql "
              f"AS $$ INSERT INTO {postgres.schema}.stock VALUES (item, n) $$")
    postgres.sql(create)
    a = bus.adapter(DatabaseAdapter, "stock", postgres.options(write={
        "operation": "procedure", "procedure": f"{postgres.schema}.add_stock" if qualified else "add_stock",
        "mapping": {"item": "item", "n": "n"}}), direction="outbound", channel="stock")
    postgres.sql(f"DROP PROCEDURE {postgres.schema}.add_stock")  # a migration running
    m = message({"item": "bolt", "n": 1})
    with pytest.raises(CouplerError, match=r"adapters\[stock\]\.options\.write: .*add_stock") as err:
        bus.deliver(a, m)  # delivered again later (not to the Invalid Message Channel)
    assert not isinstance(err.value, CommandFault)
    postgres.sql(create)
    bus.deliver(a, m)
    assert postgres.sql("SELECT item, n FROM stock") == [("bolt", 1)]


def test_a_value_whose_type_the_column_cannot_take_refuses_that_message_only(
        bus: EmbeddedBus, postgres: Database) -> None:
    postgres.sql(TABLE)
    a = writer(bus, postgres, mapping=MAPPING)
    # 42804 (datatype_mismatch) and 42846 (cannot_coerce) from the values of one message
    for record in ({"orderNo": "T1", "customer": "Ada", "amount": True},  # numeric column, boolean value
                   {"orderNo": "T2", "customer": "Ada", "ordered": 5}):  # date column, a number
        with pytest.raises(CommandFault, match=r"cannot be written: .*(numeric|date)") as err:
            bus.deliver(a, message(record))
        assert err.value.code == "invalid"  # to the Invalid Message Channel: the others go on
    bus.deliver(a, message({"orderNo": "T3", "customer": "Grace", "amount": "1.50"}))
    assert postgres.sql("SELECT order_no FROM orders_copy") == [("T3",)]


def test_a_column_whose_type_changed_under_the_adapter_is_an_error_of_the_database_not_of_the_message(
        bus: EmbeddedBus, postgres: Database) -> None:
    postgres.sql(TABLE)
    a = writer(bus, postgres, mapping=MAPPING)
    postgres.sql("ALTER TABLE orders_copy ALTER COLUMN note TYPE integer USING NULL")  # a migration running
    m = message({"orderNo": "C1", "customer": "Ada", "note": "rush"})
    # every message would fail the same way (its note bound as the text the column was): not
    # each one to the Invalid Message Channel, but tried again later
    with pytest.raises(CouplerError, match=r"adapters\[orders-out\]\.options\.write: write failed: .*"
                       r"column note is INTEGER now, TEXT when the adapter started") as err:
        bus.deliver(a, m)
    assert not isinstance(err.value, CommandFault) and "restart the adapter" in (err.value.hint or "")
    assert "\n" not in str(err.value)
    postgres.sql("ALTER TABLE orders_copy ALTER COLUMN note TYPE text")  # put back
    bus.deliver(a, m)
    assert postgres.sql("SELECT order_no, note FROM orders_copy") == [("C1", "rush")]


def test_a_connection_whose_check_in_raises_after_a_write_gives_its_slot_back(bus: EmbeddedBus, db: Database) -> None:
    import sqlalchemy as sa

    db.sql(TABLE)
    a = writer(bus, db, mapping=MAPPING)
    assert a.engine is not None
    armed = [True]

    def checkin(dbapi_connection: Any, record: Any) -> None:
        if armed.pop() if armed else False:
            raise RuntimeError("the pool is closed")

    sa.event.listen(a.engine.pool, "checkin", checkin)
    m = message({"orderNo": "P1", "customer": "Ada"})
    with pytest.raises(RuntimeError, match="the pool is closed"):
        a.deliver(m)  # written and committed; the bus delivers it again, the ledger has its id
    assert a.engine.pool.checkedout() == 0  # the slot is back: not one connection fewer until a restart
    bus.deliver(a, m)
    assert db.sql("SELECT order_no FROM orders_copy") == [("P1",)]
    assert a.describe()["outbound"]["duplicates"] == 1
