"""The postgres transport settles a received message in one round trip to PostgreSQL: an
acknowledgement of a claim-checked body (its reference count released in the same pipeline),
a nack back to the queue and a nack to the dead letters (``BEGIN``, the checked statement,
the journal and ``COMMIT`` in one pipeline); and two transactions releasing references to one
claim-checked body at once each take one off, the body going with the last."""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import psycopg
import pytest

from coupler.bus.model.backoff import BackoffPolicy
from coupler.bus.runtime.handlers import Handlers
from coupler.bus.testing.contract import BIG, doc, stored_claims
from coupler.bus.transport.base import Delivery, LeaseLostError
from coupler.bus.transport.postgres.transport import PostgresTransport
from coupler.bus.transport.storage import Buried, JournalRow, Stored
from tests.bus.transport.amqp.broker import PG_DSN, servers_or_fail, unique_names


@pytest.fixture
def transport() -> Iterator[PostgresTransport]:
    servers_or_fail()
    t = PostgresTransport(PG_DSN, schema=unique_names()["postgres_schema"], claim_threshold=4096,
                          backoff=BackoffPolicy(initial_delay=0.05, max_attempts=3, jitter=0)).open()
    try:
        yield t
    finally:
        t.destroy()


def _round_trips(t: PostgresTransport, action: Callable[[], object]) -> int:
    """The round trips of ``action`` on this thread's connection: runs of frontend messages in
    a libpq trace (the channel configurations just read, the counts just flushed: neither of
    the once-a-second reads or writes falls in it)."""
    t._configs = None
    t.channel_config("q")
    t._write_counts(force=True)
    conn = t._conn()
    with tempfile.TemporaryFile("w+") as trace:
        conn.pgconn.trace(trace.fileno())
        conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            action()
        finally:
            conn.pgconn.untrace()
        trace.seek(0)
        text = trace.read()
    sides = [line.split("\t", 1)[0] for line in text.splitlines() if line[:2] in ("F\t", "B\t")]
    return sum(1 for i, side in enumerate(sides) if side == "F" and (i == 0 or sides[i - 1] == "B"))


def test_acknowledging_a_claim_checked_body_is_one_round_trip(transport: PostgresTransport) -> None:
    t = transport
    t.send("q", [doc(BIG), doc(BIG)])
    t.send("out", doc(b"first"))  # its table made
    first, second = t.receive("q", "c", max=2)
    assert _round_trips(t, lambda: t.ack(first)) == 1
    assert len(stored_claims(t)) == 1  # the other's body

    def in_a_transaction() -> None:
        with t.transaction() as tx:
            tx.send("out", doc(b"done"))
            tx.ack(second)

    assert _round_trips(t, in_a_transaction) == 1
    assert stored_claims(t) == []
    assert t.stats("q")[0].depth == 0 and t.stats("out")[0].depth == 2


def test_a_nack_is_one_round_trip_to_the_queue_or_the_dead_letters(transport: PostgresTransport) -> None:
    t = transport
    t.send("q", [doc(b"retried"), doc(BIG)])
    retried, refused = t.receive("q", "c", max=2)
    assert _round_trips(t, lambda: t.nack(retried, "later", "c")) == 1
    assert _round_trips(t, lambda: t.nack(refused, "refused", "c", dead=True)) == 1
    [again] = t.receive_wait("q", "c", wait=5)
    assert again.envelope.body == b"retried" and again.attempt == 2
    [dead] = t.dead_letters()
    assert dead.envelope is not None and dead.envelope.body == BIG and dead.envelope.message_id == refused.message_id
    assert (dead.reason, dead.error, dead.component, dead.attempts) == ("rejected", "refused", "c", 1)
    assert len(stored_claims(t)) == 1  # the dead letter's
    assert t.stats("q")[0].failed == 2


def test_two_transactions_releasing_one_body_at_once_each_take_one_reference_off(
        transport: PostgresTransport) -> None:
    t = transport
    t.declare("t", kind="topic")
    queues = [t.subscribe("t", name) for name in ("a", "b", "c")]
    t.send("t", doc(BIG))
    a, b, c = (t.receive_wait(queue, "c", wait=5)[0] for queue in queues)
    failed: list[BaseException] = []

    def acknowledge_b() -> None:
        try:
            t.ack(b)
        except BaseException as exc:  # said by the assertion below
            failed.append(exc)

    other = threading.Thread(target=acknowledge_b)
    with psycopg.connect(PG_DSN, autocommit=True) as watch, t.transaction() as tx:
        tx.ack(a)
        tx.seen("c", ["k"])  # a statement: the acknowledgement and its release go before it
        other.start()  # its release waits for this transaction's on the body's reference count
        deadline = time.monotonic() + 10
        while not watch.execute(
                "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
                (f"%{t.schema}.state%",)).fetchone():
            assert time.monotonic() < deadline, "the other acknowledgement never waited for this one"
            time.sleep(0.02)
    other.join(10)
    assert not other.is_alive() and failed == []
    assert len(stored_claims(t)) == 1  # c's copy still refers to it: both references taken off, not one
    [d] = t.peek(queues[2])
    assert d.body == BIG
    t.ack(c)
    assert stored_claims(t) == []


def test_a_dead_letter_is_logged_once_it_is_there(transport: PostgresTransport,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """The lease of a nack is checked with the commit: a nack of a lost lease logs no dead
    letter (there is none); one that commits logs it."""
    t = transport
    t.send("q", doc(b"lost"))
    [lost] = t.receive("q", "slow", lease_seconds=0.2)
    [taken] = t.receive_wait("q", "other", wait=5)  # the lease of "lost" ran out
    with caplog.at_level("WARNING", logger="coupler.bus.transport"):
        with pytest.raises(LeaseLostError):
            t.nack(lost, "refused", "c", dead=True)
        assert t.dead_letters() == []
        assert [r for r in caplog.records if "-> dead-letters" in r.getMessage()] == []
        t.nack(taken, "refused", "c", dead=True)
        [said] = [r.getMessage() for r in caplog.records if "-> dead-letters" in r.getMessage()]
    assert said.startswith(f"message {taken.message_id} on q -> dead-letters: rejected: refused (component c")
    assert len(t.dead_letters()) == 1


def test_moving_a_delivery_to_the_invalid_channel_is_one_round_trip(transport: PostgresTransport) -> None:
    """``invalid(..., delivery=d)``: the message deleted and its dead letter made from the row
    deleted (its id, attempts, blob, claim) in one checked statement, sent with the journal
    and the ``COMMIT``; the dead letter's id read once committed. So is a raw one."""
    t = transport
    t.send("q", [doc(b"garbage"), doc(BIG)])
    small, big = t.receive("q", "translator", max=2)
    ids = []
    for d in (small, big):
        def move(d: Delivery = d) -> None:
            ids.append(t.invalid(d.envelope, "field 'amount': not a number", "translator", channel="q", delivery=d))

        assert _round_trips(t, move) == 1
    raw: list[int] = []
    assert _round_trips(t, lambda: raw.append(t.invalid(b"\x00raw", "cannot decode", "socket-in", channel="q"))) == 1
    assert t.stats("q")[0].depth == 0 and t.stats("q")[0].invalid == 3
    letters = {letter.id: letter for letter in t.dead_letters(kind="invalid")}
    assert sorted(letters) == sorted([*ids, *raw])
    for id_, d, body in zip(ids, (small, big), (b"garbage", BIG), strict=True):
        letter = t.dead_letter(id_)
        assert letter.envelope is not None and letter.envelope.body == body
        assert letter.envelope.message_id == d.message_id
        assert (letter.queue, letter.channel, letter.reason, letter.error, letter.component, letter.attempts) == (
            "invalid", "q", "field 'amount': not a number", "field 'amount': not a number", "translator", 1)
    assert t.dead_letter(raw[0]).raw == b"\x00raw"
    assert len(stored_claims(t)) == 1  # the dead letter's
    assert [e.event for e in t.journal(message_ids=[small.message_id])] == ["sent", "received", "invalid"]


def test_an_invalid_message_is_logged_once_it_is_there(transport: PostgresTransport,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    """The lease of a delivery moved to the Invalid Message Channel is checked with the
    commit: a lost one raises, makes no dead letter and logs none; one that commits logs it."""
    t = transport
    t.send("q", doc(b"lost"))
    [lost] = t.receive("q", "slow", lease_seconds=0.2)
    [taken] = t.receive_wait("q", "other", wait=5)  # the lease of "lost" ran out
    with caplog.at_level("WARNING", logger="coupler.bus.transport"):
        with pytest.raises(LeaseLostError):
            t.invalid(lost.envelope, "bad", "c", channel="q", delivery=lost)
        assert t.dead_letters(kind="invalid") == []
        assert [r for r in caplog.records if "-> invalid" in r.getMessage()] == []
        t.invalid(taken.envelope, "bad", "c", channel="q", delivery=taken)
        [said] = [r.getMessage() for r in caplog.records if "-> invalid" in r.getMessage()]
    assert said.startswith(f"message {taken.message_id} on q -> invalid: bad (component c")
    assert len(t.dead_letters(kind="invalid")) == 1 and t.stats("q")[0].invalid == 1


def test_a_dead_letter_id_asked_for_inside_a_transaction_is_sent_for(transport: PostgresTransport) -> None:
    """Inside a transaction the id of ``invalid(...)`` is wanted before the ``COMMIT``: what is
    kept goes out then (the move, checked), the rest with the ``COMMIT``; a rollback undoes it."""
    t = transport
    t.send("q", [doc(b"one"), doc(b"two")])
    t.send("out", doc(b"first"))  # its table made
    first, second = t.receive("q", "c", max=2)
    ids: list[int] = []

    def in_a_transaction(d: Delivery, fail: bool) -> None:
        with t.transaction() as tx:
            tx.send("out", doc(b"fault"))
            ids.append(tx.invalid(d.envelope, "refused", "c", channel="q", delivery=d))
            ids.append(t.invalid(b"\x00raw", "cannot decode", "c", channel="q"))  # the thread's transaction
            if fail:
                raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        in_a_transaction(first, fail=True)
    assert t.dead_letters(kind="invalid") == [] and t.stats("out")[0].depth == 1
    assert len(ids) == 2
    assert _round_trips(t, lambda: in_a_transaction(second, fail=False)) == 3  # one an id asked for, the COMMIT
    assert sorted(x.id for x in t.dead_letters(kind="invalid")) == sorted(ids[2:])
    assert t.dead_letter(ids[2]).envelope.body == b"two"  # type: ignore[union-attr]
    assert t.dead_letter(ids[3]).raw == b"\x00raw"
    assert t.stats("out")[0].depth == 2
    t.ack(first)  # the rollback gave it back, still leased


def test_a_receive_dead_lettering_an_expired_message_is_two_round_trips(transport: PostgresTransport) -> None:
    """A standalone receive meeting an expired message: the lease (one statement, its own
    transaction), then the move of the expired one -- the row deleted under the lease just
    granted, its dead letter and its journal entry made from the row deleted -- as one
    statement of its own; no ``BEGIN``/``COMMIT`` round trips."""
    t = transport
    past = datetime.now(UTC) - timedelta(seconds=1)
    t.send("q", [doc(b"stale", expires_at=past), doc(BIG, expires_at=past), doc(b"fresh")])
    got: list[Delivery] = []
    assert _round_trips(t, lambda: got.extend(t.receive("q", "c", max=10))) == 3  # the lease, a move each
    assert [d.envelope.body for d in got] == [b"fresh"]
    dead = t.dead_letters()
    assert sorted((d.reason, d.envelope.body) for d in dead if d.envelope) == [  # type: ignore[type-var]
        ("expired", BIG), ("expired", b"stale")]
    assert len(stored_claims(t)) == 1  # the dead letter's
    stats = t.stats("q")[0]
    assert (stats.depth, stats.expired) == (1, 2)
    for letter in dead:
        assert letter.envelope is not None
        assert [e.event for e in t.journal(message_ids=[letter.envelope.message_id])] == ["sent", "expired"]
    t.send("q", doc(b"late", expires_at=past))
    assert _round_trips(t, lambda: t.receive("q", "c")) == 2
    assert t.stats("q")[0].expired == 3


def test_a_move_of_a_message_no_longer_held_does_nothing(transport: PostgresTransport) -> None:
    """``PgTx.bury_held`` of a row whose lease another consumer took over, or of a row gone
    (purged), makes no dead letter and no journal entry, and says so; the other's row stays."""
    t = transport

    def move(d: Delivery) -> bool:
        dead = Buried("dead", "dead-letters", "q", d.message_id, "expired", "expired", "transport", 1, time.time())
        with t.begin() as stx:
            return stx.bury_held(Stored("q", d.message_id, b"", 0, 0, token=d.token, tag=d.tag), dead,
                                 [JournalRow(time.time(), "q", d.message_id, "expired", "dead-letters: expired")])

    t.send("q", doc(b"taken"))
    [lost] = t.receive("q", "slow", lease_seconds=0.2)
    [taken] = t.receive_wait("q", "other", wait=5)  # the lease of "lost" ran out
    assert move(lost) is False
    t.ack(taken)  # still there, still the other's
    t.send("q", doc(b"gone"))
    [gone] = t.receive("q", "c")
    t.purge("q")
    assert move(gone) is False
    assert t.dead_letters() == []
    for d in (lost, gone):
        assert "expired" not in [e.event for e in t.journal(message_ids=[d.message_id])]


def test_a_move_to_the_invalid_channel_whose_id_is_not_asked_for_goes_with_the_commit(
        transport: PostgresTransport) -> None:
    """``tx.invalid_later(...)`` inside a transaction (the dispatcher refusing a command: a
    fault sent, the command moved): ``BEGIN``, the send, the checked move and ``COMMIT`` in one
    pipeline; the id read afterwards. ``tx.invalid(...)`` asks for it before the ``COMMIT``: 2."""
    t = transport
    t.send("q", [doc(b"one"), doc(b"two")])
    t.send("out", doc(b"first"))  # its table made
    first, second = t.receive("q", "c", max=2)
    answers: list[Callable[[], int]] = []

    def refuse(d: Delivery, later: bool) -> None:
        with t.transaction() as tx:
            tx.send("out", doc(b"fault"))
            if later:
                answers.append(tx.invalid_later(d.envelope, "refused", "c", channel="q", delivery=d))
            else:
                tx.invalid(d.envelope, "refused", "c", channel="q", delivery=d)

    assert _round_trips(t, lambda: refuse(first, later=True)) == 1
    assert _round_trips(t, lambda: refuse(second, later=False)) == 2
    letter = t.dead_letter(answers[0]())
    assert letter.envelope is not None and letter.envelope.body == b"one" and letter.queue == "invalid"
    assert t.stats("q")[0].depth == 0 and t.stats("out")[0].depth == 3


def test_the_dispatcher_refusing_a_command_is_one_round_trip(transport: PostgresTransport) -> None:
    """A command that is not one (its fault sent to its return address, the command moved to
    the Invalid Message Channel) is one transaction of one round trip: the dispatcher does
    not ask for the dead letter's id."""
    t = transport
    t.send("commands", doc(b"not a command", return_address="replies"))
    t.send("replies", doc(b"first"))  # its table made
    [d] = t.receive("commands", "dispatcher")
    handlers = Handlers(SimpleNamespace(transport=t))  # type: ignore[arg-type]  # only its transport is used
    assert _round_trips(t, lambda: handlers.dispatch(d)) == 1
    [letter] = t.dead_letters(kind="invalid")
    assert letter.envelope is not None and letter.envelope.message_id == d.message_id
    assert letter.component == "dispatcher" and t.stats("commands")[0].depth == 0
    assert t.stats("replies")[0].depth == 2
