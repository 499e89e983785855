"""The databases of the database adapter's tests: the machine's real PostgreSQL (a schema of
its own per test, dropped afterwards) and SQLite (a file in the test's folder)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from coupler.bus.testing import EmbeddedBus
from tests.bus.transport.amqp.broker import PG_DSN, servers_or_fail


@dataclass
class Database:
    """A database for one test: ``url`` for the adapter, ``schema`` (None on SQLite), ``sql``
    to run statements as the test's own independent client (psycopg or sqlite3)."""

    kind: str
    url: str
    schema: str | None
    connect: Any

    def sql(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self.connect() as conn:
            cur = conn.execute(statement, params or ())
            rows = cur.fetchall() if cur.description else []
            conn.commit()
            return rows

    def many(self, statement: str, params: list[Any]) -> None:
        with self.connect() as conn:
            conn.cursor().executemany(statement, params)
            conn.commit()

    @property
    def p(self) -> str:
        """The parameter marker of the test's client."""
        return "%s" if self.kind == "postgresql" else "?"

    def options(self, **more: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"url": self.url, **more}
        if self.schema:
            out["schema"] = self.schema
        return out


@pytest.fixture
def postgres() -> Iterator[Database]:
    servers_or_fail()
    schema = f"t28_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")

    def connect() -> psycopg.Connection[Any]:
        return psycopg.connect(PG_DSN, options=f"-c search_path={schema}")

    url = PG_DSN.replace("postgresql://", "postgresql+psycopg://", 1)
    try:
        yield Database("postgresql", url, schema, connect)
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def sqlite(tmp_path: Path) -> Database:
    import sqlite3

    path = tmp_path / "legacy.db"
    return Database("sqlite", f"sqlite:///{path}", None, lambda: sqlite3.connect(path))


@pytest.fixture(params=["postgres", "sqlite"])
def db(request: pytest.FixtureRequest) -> Database:
    """Each test taking ``db`` runs against both databases."""
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


@pytest.fixture
def bus(tmp_path: Path) -> Iterator[EmbeddedBus]:
    with EmbeddedBus(tmp_path / "site") as b:
        yield b
