"""Operator tools and redelivery paths of the broker transport beyond the shared contract."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from coupler.bus.model.backoff import BackoffPolicy
from coupler.bus.transport.amqp.transport import AmqpTransport
from tests.bus.site_helpers import wait_for
from tests.bus.transport.amqp.broker import amqp_transport, cleanup
from tests.bus.transport.contract.support import doc, drain


@pytest.fixture
def t(tmp_path: Path) -> Iterator[AmqpTransport]:
    transport = amqp_transport(
        tmp_path, backoff=BackoffPolicy(initial_delay=0.05, max_delay=0.2, max_attempts=2, jitter=0)
    )
    try:
        yield transport
    finally:
        transport.close()
        cleanup(transport)


def test_nack_waits_in_a_delay_queue_then_comes_back(t: AmqpTransport) -> None:
    t.send("q", doc(b"later"))
    [d] = t.receive("q", "c")
    assert t.nack(d, "busy", "c", delay=1.0) == "retry"
    assert t.receive("q", "c") == []  # waiting in the delay queue, not in the channel
    [again] = t.receive_wait("q", "c", wait=10)
    assert again.envelope.body == b"later" and again.attempt == 2
    t.ack(again)


def test_lease_expiring_on_the_last_attempt_dead_letters(t: AmqpTransport) -> None:
    t.send("q", doc(b"slow"))
    [first] = t.receive("q", "c", lease_seconds=0.2)
    [second] = t.receive_wait("q", "c", lease_seconds=0.2, wait=10)
    assert (first.attempt, second.attempt) == (1, 2)
    deadline = time.monotonic() + 10
    while not t.dead_letters() and time.monotonic() < deadline:
        assert t.receive_wait("q", "c", wait=0.3) == []  # max_attempts=2: never a third time
    [dead] = t.dead_letters()
    assert dead.reason == "lease expired" and dead.attempts == 2


def test_dead_letter_tools_replay_elsewhere_and_purge_by_kind(t: AmqpTransport) -> None:
    t.send("q", [doc(b"dead"), doc(b"bad")])
    dead_d, bad_d = t.receive("q", "c", max=2)
    t.nack(dead_d, "no", "c", dead=True)
    t.invalid(bad_d.envelope, "cannot parse", "translator", delivery=bad_d)
    [bad] = t.dead_letters(kind="invalid")
    assert t.dead_letter(bad.id).reason == "cannot parse"
    assert t.purge_dead_letters(kind="invalid") == 1
    [dead] = t.dead_letters()
    assert dead.kind == "dead"
    t.replay(dead.id, "elsewhere")
    assert [d.envelope.body for d in drain(t, "elsewhere")] == [b"dead"]
    assert t.dead_letters() == [] and t.receive("q", "c") == []


def test_unsubscribe_removes_the_subscription_and_its_messages(t: AmqpTransport) -> None:
    t.declare("news", kind="topic")
    keep, drop = t.subscribe("news", "keep"), t.subscribe("news", "drop")
    t.send("news", doc(b"n1"))
    t.unsubscribe("news", "drop")
    t.send("news", doc(b"n2"))
    assert t.stats("news")[0].subscriptions == ("keep",)
    assert [d.envelope.body for d in drain(t, keep)] == [b"n1", b"n2"]
    assert t.receive(drop, "c") == []


def test_maintain_purges_old_journal_and_idempotency_keys(t: AmqpTransport) -> None:
    t.send("q", doc(b"x"))
    t.mark_seen("c", ["k"])
    t.journal_retention = t.idempotency_retention = 0.0
    purged = {"journal": 0, "seen": 0}

    def gone() -> bool:  # retention 0: what was recorded before the clock moved on goes
        for key, n in t.maintain().items():
            purged[key] = purged.get(key, 0) + n
        return t.seen("c", ["k"]) == set() and t.journal() == []

    wait_for(gone, "the journal and the keys to be purged", timeout=10)
    assert purged["journal"] >= 1 and purged["seen"] == 1


def test_channel_put_skips_the_ids_it_put_before(t: AmqpTransport) -> None:
    """``coupler channel put --id-from``'s re-run on a broker site: the ids put before are skipped,
    in the transaction that sends the others."""
    from coupler.bus.runtime.control import StoreService, encode_envelope

    service = StoreService(t)
    first = [doc(f"m{i}".encode()).replace(message_id=f"id-{i}") for i in range(3)]
    assert service.call("channel.put", channel="q", envelopes=[encode_envelope(e) for e in first], skip_put=True) == {
        "message_ids": ["id-0", "id-1", "id-2"], "skipped": 0}
    again = [*first, doc(b"m3").replace(message_id="id-3")]
    result = service.call("channel.put", channel="q", envelopes=[encode_envelope(e) for e in again], skip_put=True)
    assert result == {"message_ids": ["id-3"], "skipped": 3}
    assert sorted(d.envelope.body for d in drain(t, "q")) == [b"m0", b"m1", b"m2", b"m3"]


def test_the_journal_is_indexed_for_its_lookups_and_a_store_of_before_is_migrated(t: AmqpTransport) -> None:
    """Journal rows are looked up by message id (hash index) and time (BRIN); a store made by
    an earlier version, with B-trees on both, gets the new indexes when it is opened again."""
    schema = t.store.schema

    def indexes() -> dict[str, str]:
        with t.store.conn() as c:
            rows = c.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = "
                             "'journal'", (schema,)).fetchall()
        return {name: definition for name, definition in rows}

    now = indexes()
    assert "USING hash (message_id)" in now["journal_message_hash"]
    assert "USING brin (at)" in now["journal_at_brin"]
    assert "journal_message" not in now and "journal_at" not in now
    with t.store.conn() as c:  # the indexes of before, in a store of before (no record of its DDL)
        c.execute(f"DROP TABLE {schema}.ddl_applied")
        c.execute(f"CREATE INDEX journal_message ON {schema}.journal (message_id)")
        c.execute(f"CREATE INDEX journal_at ON {schema}.journal (at)")
    t.close()
    t.open()
    again = indexes()
    assert "journal_message" not in again and "journal_at" not in again and "journal_message_hash" in again
    sent = t.send("q", doc(b"x"))
    t.store.flush()
    assert [e.event for e in t.journal(message_id=sent[0])] == ["sent"]
