"""The database adapter's inbound rows with values its mapping does not expect, in a real
PostgreSQL table (a schema ``h96_*`` of its own): timestamps and dates out of Python's range
(``infinity``, ``-infinity``, year 0 (1 BC), 294276 AD), ``24:00:00``, JSON nested thousands
deep, numeric and float NaN/Infinity, NULLs, huge text and bytea, arrays, intervals, inet.

Each row is published or goes to the Invalid Message Channel with its cause naming the
column, and the poll goes on with the other rows: one row must never fail its batch (the
driver raising while it loads a value failed every poll of the table, for good). The random
run inserts rows of random values, a batch at a time, bounded by ``COUPLER_FUZZ_SECONDS`` (3
s by default); the seed is printed and ``COUPLER_FUZZ_SEED=N`` replays a run."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from coupler.adapters.database import DatabaseAdapter
from coupler.bus.api import Command, command_envelope
from coupler.bus.testing import EmbeddedBus
from tests.fuzzing import SEED, bounded, cases

from .conftest import Database

TABLE = ("CREATE TABLE odd (id integer PRIMARY KEY, ts timestamp, tstz timestamptz, d date, t time, doc jsonb, "
         "js json, iv interval, n numeric, f double precision, b bytea, txt text, addr inet, arr integer[], "
         "processed_at timestamptz)")
#: column -> (SQL values a row may hold, those the adapter cannot convert: the row is invalid)
VALUES: dict[str, tuple[list[str], list[str]]] = {
    "ts": (["'2026-11-27 10:00'", "NULL", "'0001-01-01'", "'9999-12-31 23:59:59.999999'"],
           ["'infinity'", "'-infinity'", "'294276-12-31 23:59:59'", "'0001-01-01 BC'", "'4713-01-01 BC'", "'10000-01-01'"]),
    "tstz": (["'2026-11-27 10:00+02'", "NULL"], ["'infinity'", "'-infinity'", "'294276-12-31 23:59:59+00'"]),
    "d": (["'2026-11-27'", "NULL", "'0001-01-01'"], ["'infinity'", "'-infinity'", "'0001-01-01 BC'", "'5874897-12-31'"]),
    "t": (["'23:59:59.999999'", "NULL"], ["'24:00:00'"]),
    "doc": (["'{\"a\": [1, 2, {\"b\": null}]}'", "NULL", "'\"x\"'", "'1e308'"],
            ["(repeat('[', 3000) || repeat(']', 3000))::jsonb", "(repeat('{\"a\":', 2000) || '1' || repeat('}', 2000))::jsonb"]),
    "js": (["'[1, 2.5, \"x\"]'", "NULL"], ["(repeat('[', 3000) || repeat(']', 3000))::json"]),
    "iv": (["'1 day 02:00'", "NULL", "'2000000 years 11 mons'", "'-2000000 years'"],
           ["'178000000 years'", "'-178000000 years'", "'2147483647 days'", "'5000000 years'"]),
    "n": (["'12.50'", "NULL", "'1e1000'", "'-0.000000000000000000001'"], ["'NaN'", "'Infinity'", "'-Infinity'"]),
    "f": (["0.25", "NULL", "1e308", "'-0'"], ["'NaN'", "'Infinity'", "'-Infinity'"]),
    "b": (["'\\x00ff'::bytea", "NULL", "decode(repeat('ab', 500000), 'hex')"], []),
    "txt": (["'plain'", "NULL", "repeat('x', 1000000)", "E'\\u00e9\\u20ac'"], []),
    "addr": (["'10.0.0.1'", "'::1'", "'192.168.0.0/16'", "NULL"], []),
    "arr": (["ARRAY[1, NULL, 3]", "'{{1,2},{3,4}}'", "'{}'", "NULL"], []),
}


def fetch(adapter: DatabaseAdapter) -> dict[str, str]:
    return adapter.handle(Command("fetch", adapter.name, command_envelope("fetch", adapter.name))).details


def insert(db: Database, rows: list[tuple[int, dict[str, str]]]) -> None:
    with db.connect() as conn:
        for key, values in rows:
            columns = ", ".join(["id", *values])
            conn.execute(f"INSERT INTO odd ({columns}) VALUES ({', '.join([str(key), *values.values()])})")  # type: ignore[arg-type]
        conn.commit()


def check_poll(bus: EmbeddedBus, adapter: DatabaseAdapter, db: Database, keys: set[int], bad: dict[int, str],
               label: str) -> dict[int, dict[str, Any]]:
    """One fetch of the rows ``keys``: the good rows published (returned), each bad one in the
    Invalid Message Channel naming its column, every row marked (the poll went on)."""
    before_invalid = len(bus.invalid())
    with bounded(label, seconds=60):
        details = fetch(adapter)
    assert "error" not in details, f"{label}: {details}"
    assert db.sql("SELECT count(*) FROM odd WHERE processed_at IS NULL") == [(0,)], f"{label}: {details}"
    published = {json.loads(m.body)["id"]: json.loads(m.body) for m in bus.published("odd")}
    invalid = bus.invalid()[before_invalid:]
    got = {json.loads(d.envelope.body)["id"]: d.reason for d in invalid if d.envelope is not None}
    assert {int(k) for k in got} == set(bad), f"{label}: invalid {sorted(got)}, expected {sorted(bad)}"
    for key, column in bad.items():
        reason = got[str(key)]
        assert f"row {key} of" in reason and f"column {column}" in reason and "\n" not in reason, f"{label}: {reason}"
    assert set(published) == keys - set(bad), f"{label}: published {sorted(published)}"
    return published


@pytest.fixture(autouse=True)
def _seed_with_every_report() -> None:
    print(f"COUPLER_FUZZ_SEED={SEED}")


def test_each_value_the_driver_cannot_load_is_one_invalid_row_and_the_poll_goes_on(bus: EmbeddedBus,
                                                                                    postgres: Database) -> None:
    postgres.sql(TABLE)
    rows, bad, key = [], {}, 0
    for column, (good, unconvertible) in VALUES.items():
        for value in good:
            key += 1
            rows.append((key, {column: value}))
        for value in unconvertible:
            key += 1
            rows.append((key, {column: value}))
            bad[key] = column
    insert(postgres, rows)
    a = bus.adapter(DatabaseAdapter, "odd-in", postgres.options(poll={"table": "odd", "autopoll": False,
                                                                        "status_column": "processed_at"}),
                    direction="inbound", channel="odd")
    published = check_poll(bus, a, postgres, {k for k, _ in rows}, bad, "the table of every value")
    deep = next(k for k, c in bad.items() if c == "doc")  # its dead letter keeps the whole value, to be corrected
    kept = next(json.loads(d.envelope.body) for d in bus.invalid() if d.envelope is not None
                and json.loads(d.envelope.body)["id"] == str(deep))
    assert kept["doc"] == "[" * 3000 + "]" * 3000
    assert any(r["addr"] == "10.0.0.1" for r in published.values())  # an inet column is text, not an invalid row
    assert any(r["iv"] == (2_000_000 * 365 + 11 * 30) * 86400 for r in published.values())
    assert a.poller is not None  # the tolerant loaders were for that batch: the driver's own are back
    with a.poller.engine.connect() as conn:
        adapters = conn.connection.driver_connection.adapters  # type: ignore[union-attr]
        assert not adapters.get_loader(adapters.types["timestamp"].oid, 0).__name__.startswith("Tolerant")


def test_random_rows_are_published_or_invalid_and_the_poll_goes_on(bus: EmbeddedBus, postgres: Database) -> None:
    postgres.sql(TABLE)
    a = bus.adapter(DatabaseAdapter, "odd-in", postgres.options(poll={"table": "odd", "autopoll": False,
                                                                        "status_column": "processed_at",
                                                                        "batch_size": 7}),
                    direction="inbound", channel="odd")
    rng = random.Random(SEED)
    key, rows_in = 0, 0
    count = 0
    for count in cases(least=3):
        rows, bad = [], {}
        for _ in range(rng.randrange(1, 7)):  # less than a batch: one fetch reads them all
            key += 1
            values = {}
            for column in rng.sample(sorted(VALUES), rng.randrange(1, 5)):
                good, unconvertible = VALUES[column]
                if unconvertible and rng.random() < 0.25:
                    values[column] = rng.choice(unconvertible)
                    bad.setdefault(key, column)  # the first column in the row's order is named
                else:
                    values[column] = rng.choice(good)
            order = [c for c in VALUES if c in values]
            if key in bad:
                bad[key] = next(c for c in order if values[c] in VALUES[c][1])
            rows.append((key, {c: values[c] for c in order}))
        insert(postgres, rows)
        rows_in += len(rows)
        check_poll(bus, a, postgres, {k for k, _ in rows}, bad, f"poll {count} (rows {rows}; COUPLER_FUZZ_SEED={SEED})")
    print(f"{count + 1} polls, {rows_in} rows")


def test_a_watermark_of_infinity_is_kept_and_the_rows_after_it_come_next(bus: EmbeddedBus, postgres: Database) -> None:
    """A watermark column holding a value Python has no form for (``infinity``): its row is
    invalid, and the watermark still moves past it (kept as the database's text)."""
    postgres.sql(TABLE)
    insert(postgres, [(1, {"ts": "'2026-01-01'"}), (2, {"ts": "'infinity'"}), (3, {"ts": "'-infinity'"})])
    a = bus.adapter(DatabaseAdapter, "odd-in", postgres.options(poll={"table": "odd", "autopoll": False,
                                                                        "watermark_column": "ts"}),
                    direction="inbound", channel="odd")
    details = fetch(a)
    assert (details["messages"], details["invalid"]) == ("1", "2"), details
    assert [json.loads(m.body)["id"] for m in bus.published("odd")] == [1]
    insert(postgres, [(4, {"ts": "'2027-01-01'"}), (5, {"ts": "'infinity'"})])
    details = fetch(a)  # after (infinity, 2): only row 5
    assert (details["messages"], details["invalid"]) == ("0", "1"), details
    assert fetch(a)["messages"] == "0"
    assert [json.loads(d.envelope.body)["id"] for d in bus.invalid() if d.envelope is not None] == ["3", "2", "5"]


def test_rows_an_avro_format_does_not_expect_are_invalid_with_their_cause(bus: EmbeddedBus, postgres: Database) -> None:
    """``format = "acme.Customer@1;avro/binary"``: NULL where the schema has no null, a value of
    another type, a JSON address of the wrong shape or nested thousands deep, an extra column."""
    postgres.sql("CREATE TABLE cust (customer_id text PRIMARY KEY, name text, email text, address jsonb, "
                 "processed_at timestamptz)")
    address = '\'{"street": "1 Main St", "city": "Springfield", "postal_code": "12345", "country": "US"}\''
    rows = {
        "c1": {"name": "'Ada'", "email": "NULL", "address": address},  # good
        "c2": {"name": "NULL", "email": "NULL", "address": address},  # NULL where a string is expected
        "c3": {"name": "'Bob'", "email": "NULL", "address": "NULL"},  # the record missing
        "c4": {"name": "'Cy'", "email": "NULL", "address": "'[1, 2]'"},  # an array for a record
        "c5": {"name": "'Di'", "email": "NULL", "address": "(repeat('[', 3000) || repeat(']', 3000))::jsonb"},
        "c6": {"name": "'Ed'", "email": "'e@x'", "address": '\'{"street": 1, "city": "x", "postal_code": "y"}\''},
        "c7": {"name": "repeat('x', 1000000)", "email": "NULL", "address": address},  # good: 1 MB of name
    }
    with postgres.connect() as conn:
        for key, values in rows.items():
            conn.execute(f"INSERT INTO cust (customer_id, {', '.join(values)}) "  # type: ignore[arg-type]
                         f"VALUES ('{key}', {', '.join(values.values())})")
        conn.commit()
    a = bus.adapter(DatabaseAdapter, "cust-in", postgres.options(poll={"table": "cust", "autopoll": False,
                                                                         "status_column": "processed_at",
                                                                         "columns": ["customer_id", "name", "email",
                                                                                     "address"]}),
                    direction="inbound", channel="cust", format="acme.Customer@1;avro/binary")
    details = fetch(a)
    assert (details["messages"], details["invalid"]) == ("2", "5"), details
    assert len(bus.published("cust")) == 2
    reasons = {json.loads(d.envelope.body)["customer_id"]: d.reason for d in bus.invalid() if d.envelope is not None}
    assert sorted(reasons) == ["c2", "c3", "c4", "c5", "c6"]
    assert all("\n" not in r and "cannot be converted to acme.Customer@1" in r for r in reasons.values()), reasons
    assert "column address" in reasons["c5"] and "cannot be read" in reasons["c5"]
    assert postgres.sql("SELECT count(*) FROM cust WHERE processed_at IS NULL") == [(0,)]


def test_an_sqlite_column_holding_text_its_type_cannot_read_is_one_invalid_row(bus: EmbeddedBus, sqlite: Database) -> None:
    """SQLite keeps any text in a column declared ``timestamp``, ``date`` or ``numeric``:
    SQLAlchemy's conversion of such a value (``Invalid isoformat string: 'infinity'``) raised
    a ValueError out of the fetch, and every poll of the table failed for good."""
    sqlite.sql("CREATE TABLE odd (id integer PRIMARY KEY, ts timestamp, d date, n numeric, processed_at timestamp)")
    sqlite.sql("INSERT INTO odd (id, ts, d) VALUES (1, '2026-01-01 00:00:00', '2026-01-02'), (2, 'infinity', NULL), "
               "(3, '2026-01-01 10:00:00', 'garbage'), (4, NULL, '2026-13-45'), (5, NULL, NULL)")
    a = bus.adapter(DatabaseAdapter, "odd-in", sqlite.options(poll={"table": "odd", "autopoll": False,
                                                                      "status_column": "processed_at"}),
                    direction="inbound", channel="odd")
    details = fetch(a)
    assert (details["messages"], details["invalid"]) == ("2", "3"), details
    assert [json.loads(m.body)["id"] for m in bus.published("odd")] == [1, 5]
    reasons = {json.loads(d.envelope.body)["id"]: d.reason for d in bus.invalid() if d.envelope is not None}
    assert sorted(reasons) == ["2", "3", "4"]
    assert "column ts: 'infinity' cannot be read" in reasons["2"] and "column d: 'garbage'" in reasons["3"], reasons
    assert json.loads(next(d.envelope.body for d in bus.invalid() if d.envelope is not None
                           and json.loads(d.envelope.body)["id"] == "2"))["ts"] == "infinity"  # kept as it is
    assert sqlite.sql("SELECT count(*) FROM odd WHERE processed_at IS NULL") == [(0,)]


#: texts SQLite keeps in any column, whatever its declared type
SQLITE_TEXTS = ["'2026-11-27 10:00:00'", "'2026-11-27'", "'10:00:00'", "'infinity'", "'-infinity'", "'garbage'", "''",
                "'2026-13-45'", "'24:00:00'", "'0000-00-00 00:00:00'", "'9999-12-31 23:59:59.999999'", "'12.50'",
                "'NaN'", "'1e999'", "'-0'", "'abc'", "NULL", "1", "1.5", "9e999", "-9e999", "x'00ff'", "x''",
                "'" + "9" * 500 + "'", "'\u00e9\u20ac'", "'[1, 2'", "'{\"a\": 1}'"]


def test_random_sqlite_values_are_published_or_invalid_and_the_poll_goes_on(bus: EmbeddedBus, sqlite: Database) -> None:
    """Each row either a message or one invalid row naming a column, whatever text SQLite
    holds in a typed column; the poll goes on (every row marked)."""
    sqlite.sql("CREATE TABLE odd (id integer PRIMARY KEY, ts timestamp, d date, t time, n numeric, f real, "
               "b blob, i integer, processed_at timestamp)")
    a = bus.adapter(DatabaseAdapter, "odd-in", sqlite.options(poll={"table": "odd", "autopoll": False,
                                                                      "status_column": "processed_at"}),
                    direction="inbound", channel="odd")
    rng = random.Random(SEED)
    key = count = 0
    for count in cases(least=3):
        keys = []
        for _ in range(rng.randrange(1, 7)):
            key += 1
            keys.append(key)
            columns = rng.sample(["ts", "d", "t", "n", "f", "b", "i"], rng.randrange(1, 4))
            sqlite.sql(f"INSERT INTO odd (id, {', '.join(columns)}) "
                       f"VALUES ({key}, {', '.join(rng.choice(SQLITE_TEXTS) for _ in columns)})")
        label = f"poll {count} (rows {keys}; COUPLER_FUZZ_SEED={SEED})"
        before = len(bus.invalid())
        with bounded(label, seconds=60):
            details = fetch(a)
        published = [json.loads(m.body)["id"] for m in bus.published("odd")]
        invalid = bus.invalid()[before:]
        bad = [int(json.loads(d.envelope.body)["id"]) for d in invalid if d.envelope is not None]
        assert sorted(published + bad) == keys, f"{label}: {details}, published {published}, invalid {bad}"
        assert all("cannot be converted" in d.reason and "\n" not in d.reason for d in invalid), label
        assert sqlite.sql("SELECT count(*) FROM odd WHERE processed_at IS NULL") == [(0,)], label
    print(f"{count + 1} polls, {key} rows")
