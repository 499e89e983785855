"""The keyed state of stateful steps on the SQLite and the broker transport (``tx.get_state`` /
``put_state``): committed with the transaction or not at all, expiring, and locked against a
second daemon until the commit."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coupler.bus.transport.sqlite.transport import SqliteTransport
from tests.bus.site_helpers import wait_for


@pytest.fixture(params=["sqlite", "amqp"])
def transports(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """Two transports on one store, as two daemons have."""
    if request.param == "sqlite":
        a, b = SqliteTransport(tmp_path / "bus.db").open(), SqliteTransport(tmp_path / "bus.db").open()
        yield a, b
        a.close()
        b.close()
        return
    from coupler.bus.transport.amqp.transport import AmqpTransport
    from tests.bus.transport.amqp.broker import (
        AMQP_URL,
        PG_DSN,
        destroy,
        servers_or_fail,
        unique_names,
    )

    servers_or_fail()
    names = unique_names()
    a = AmqpTransport(AMQP_URL, postgres=PG_DSN, **names).open()
    b = AmqpTransport(AMQP_URL, postgres=PG_DSN, **names).open()
    yield a, b
    a.close()
    b.close()
    destroy(names)


def test_state_commits_with_the_transaction_or_not_at_all_and_expires(transports: tuple[Any, Any]) -> None:
    a, b = transports
    with a.transaction() as tx:
        tx.put_state("r/agg/groups", {"EU": b"1", "US": b"2", "old": b"x"})
        tx.put_state("r/agg/groups", {"soon": b"s"}, expires_at=time.time() + 0.5)
        assert tx.get_state("r/agg/groups", ["EU", "nope"]) == {"EU": b"1"}
    with pytest.raises(RuntimeError), a.transaction() as tx:
        tx.put_state("r/agg/groups", {"EU": b"changed", "old": None})
        raise RuntimeError("crash before the commit")
    with b.transaction() as tx:
        assert tx.get_state("r/agg/groups") == {"EU": b"1", "US": b"2", "old": b"x", "soon": b"s"}
        tx.put_state("r/agg/groups", {"old": None})
        assert tx.get_state("r/agg/other") == {}

    def left() -> dict[str, bytes]:
        with a.transaction() as tx:
            return tx.get_state("r/agg/groups")

    wait_for(lambda: "soon" not in left(), "the value to expire")
    assert left() == {"EU": b"1", "US": b"2"}


def waiting_for(a: Any, scope: str, key: str) -> bool:
    """Another daemon's transaction waits for the one ``a`` holds, on the lock of ``key``: on
    SQLite a writer queued on the store's writer ``flock`` (a ``->`` line of /proc/locks),
    on the broker transport a PostgreSQL backend waiting for the key's advisory lock (named
    as :class:`~coupler.bus.transport.amqp.store.StateTx` names it)."""
    if isinstance(a, SqliteTransport):
        inode = f":{os.stat(str(a.path) + '-writer').st_ino} "
        with open("/proc/locks") as locks:
            return any(" -> " in line and inode in line for line in locks)
    import psycopg

    from tests.bus.transport.amqp.broker import PG_DSN

    name = f"{a.store.schema}\x1fstep:{scope}\x1f{key}"
    with psycopg.connect(PG_DSN, autocommit=True) as c:
        row = c.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1"
                        " AND ((classid::int8 << 32) | objid::int8) = hashtextextended(%s, 0)", (name,)).fetchone()
    return bool(row and row[0])


def test_a_locked_key_waits_for_the_other_daemons_commit(transports: tuple[Any, Any]) -> None:
    a, b = transports
    order: list[str] = []
    locked = threading.Event()
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with a.transaction() as tx:
                assert tx.get_state("r/agg/groups", ["new-group"], lock=True) == {}  # no row yet: locked all the same
                locked.set()
                # held until the second daemon is seen waiting for it
                wait_for(lambda: waiting_for(a, "r/agg/groups", "new-group"), "the second daemon to wait on the lock")
                tx.put_state("r/agg/groups", {"new-group": b"1"})
                order.append("first committed")
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)
            locked.set()

    thread = threading.Thread(target=first)
    thread.start()
    assert locked.wait(10)
    with b.transaction() as tx:
        got = tx.get_state("r/agg/groups", ["new-group"], lock=True)
        order.append("second read")
    thread.join()
    assert not errors, errors
    assert got == {"new-group": b"1"} and order == ["first committed", "second read"]


def _broker(names: dict[str, str]) -> Any:
    from coupler.bus.transport.amqp.transport import AmqpTransport
    from tests.bus.transport.amqp.broker import AMQP_URL, PG_DSN

    return AmqpTransport(AMQP_URL, postgres=PG_DSN, **names)


def _committed_unpublished(t: Any, body: bytes) -> Any:
    """What a daemon that committed a state change and has not published its output leaves:
    the state and an outbox entry with a batch for ``batches``. Returns the batch."""
    from coupler.bus.transport.amqp.transport import _outbox_entry
    from coupler.canonical import Envelope, FormatIndicator

    batch = Envelope(format=FormatIndicator.parse("test.Batch@1;text/plain"), body=body)
    tx = t.store.state_tx()
    tx.put("step:r/agg/groups", {"EU": None}, None)
    tx.outbox(_outbox_entry([("batches", [batch], "route:r")]))
    tx.commit()
    return batch


def test_amqp_outputs_of_a_state_change_are_published_by_the_next_open_when_their_process_died(
        broker_names: dict[str, str]) -> None:
    with _broker(broker_names) as a:  # killed after its PostgreSQL commit, before its publish
        batch = _committed_unpublished(a, b"1\n2\n")
        assert a.receive("batches", "test") == []
    with _broker(broker_names) as b:
        [d] = b.receive_wait("batches", "test", wait=10)
        assert d.message_id == batch.message_id and d.envelope.body == b"1\n2\n"
        b.ack(d)
        assert b.publish_outbox(0.0) == 0  # published once, then forgotten


def test_amqp_outputs_of_a_running_process_are_left_to_it_and_a_dead_ones_are_published_at_once(
        broker_names: dict[str, str]) -> None:
    """A daemon that starts does not publish a copy of what a running daemon committed and is
    publishing (its outbox entry); once that process is gone, its entry is published."""
    a = _broker(broker_names).open()
    try:
        batch = _committed_unpublished(a, b"3\n4\n")  # a runs on: it would publish now
        with _broker(broker_names) as b:
            assert b.publish_outbox(0.0) == 0
            assert b.receive("batches", "test") == []
            a.close()  # its connections, and with them its lock, go (as a killed process's do)
            published: list[int] = []  # at once, whatever the entry's age, once PostgreSQL

            def publish() -> bool:  # has seen its backend go
                published.append(b.publish_outbox(60.0))
                return sum(published) > 0

            wait_for(publish, "the entry of a closed process published")
            assert sum(published) == 1
            [d] = b.receive_wait("batches", "test", wait=10)
            assert d.message_id == batch.message_id
            b.ack(d)
    finally:
        a.close()
