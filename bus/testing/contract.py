"""The transport contract, shipped: what every transport (embedded SQLite, RabbitMQ,
PostgreSQL, in-memory, a third party's) must do.

To run it over your transport, import the tests into a test module of yours and give them one
fixture, ``transport``: an open transport made with :data:`CONTRACT_OPTIONS` (fast redelivery,
a small claim-check threshold)::

    import pytest
    from coupler.bus.testing.contract import *  # noqa: F403  (the contract's tests)
    from coupler.bus.testing.contract import CONTRACT_OPTIONS

    @pytest.fixture
    def transport(tmp_path):
        t = MyTransport(..., **CONTRACT_OPTIONS).open()
        yield t
        t.close()

The tests use real (short) leases and backoff delays and wait for messages to come back; they
assert what is delivered, never how fast. A transport keeps large bodies aside (Claim Check)
and lists them with ``claim_refs()`` (or ``claim_files()``) for the claim-check tests.
"""

# the tests check what they read (a dead letter's envelope, an age) with assert only
# mypy: disable-error-code="union-attr,operator"

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from coupler.bus.model.backoff import BackoffPolicy
from coupler.bus.transport.base import (
    LeaseLostError,
    Transport,
    TransportError,
    UnknownDeadLetterError,
)
from coupler.canonical import Envelope

#: bodies larger than this are claim-checked by the transports of the contract tests
CLAIM_THRESHOLD = 4096

#: the options a transport under the contract is made with
CONTRACT_OPTIONS: dict[str, Any] = {
    "backoff": BackoffPolicy(initial_delay=0.05, multiplier=2, max_delay=0.2, max_attempts=3, jitter=0),
    "claim_threshold": CLAIM_THRESHOLD,
}


def stored_claims(transport: Transport) -> list[str]:
    """The claim-checked bodies a transport stores now."""
    for name in ("claim_files", "claim_refs"):
        listing = getattr(transport, name, None)
        if listing is not None:
            return list(listing())
    return list(transport.store.claim_refs())  # type: ignore[attr-defined]  # the RabbitMQ transport


def doc(body: bytes = b"payload", **headers: Any) -> Envelope:
    """A test message of format ``acme.Customer@1``."""
    headers.setdefault("format", "acme.Customer@1")
    return Envelope(body=body, **headers)


def bodies(deliveries: list[Any]) -> list[bytes]:
    return [d.envelope.body for d in deliveries]


def drain(transport: Transport, channel: str, consumer: str = "drain", wait: float = 0.0) -> list[Any]:
    """Receive and acknowledge everything on ``channel``."""
    out: list[Any] = []
    while True:
        got = transport.receive_wait(channel, consumer, max=100, wait=wait)
        if not got:
            return out
        transport.ack(got)
        out.extend(got)



def test_send_receive_ack_in_order(transport: Transport) -> None:
    ids = transport.send("orders", [doc(b"a"), doc(b"b"), doc(b"c")])
    assert len(set(ids)) == 3
    got = transport.receive("orders", "worker", max=2)
    assert bodies(got) == [b"a", b"b"]
    assert [d.message_id for d in got] == ids[:2]
    transport.ack(got)
    rest = transport.receive("orders", "worker", max=10)
    assert bodies(rest) == [b"c"]
    transport.ack(rest)
    assert transport.receive("orders", "worker") == []
    [stats] = transport.stats("orders")
    assert (stats.depth, stats.sent, stats.acked) == (0, 3, 3)


def test_competing_consumers_get_different_messages(transport: Transport) -> None:
    transport.send("work", [doc(str(i).encode()) for i in range(10)])
    first = transport.receive("work", "worker-1", max=4)
    second = transport.receive("work", "worker-2", max=10)
    assert len(first) == 4 and len(second) == 6
    assert set(bodies(first)).isdisjoint(bodies(second))
    assert sorted(bodies(first) + bodies(second)) == sorted(str(i).encode() for i in range(10))


def test_unacknowledged_message_returns_after_its_lease(transport: Transport) -> None:
    transport.send("q", doc(b"x"))
    [first] = transport.receive("q", "slow", lease_seconds=0.2)
    assert first.attempt == 1 and first.envelope.attempt == 1
    assert transport.receive("q", "other") == []  # leased: invisible
    [again] = transport.receive_wait("q", "other", wait=5)
    assert again.envelope.body == b"x"
    assert again.attempt == 2 and again.envelope.attempt == 2
    with pytest.raises(LeaseLostError):
        transport.ack(first)  # the lease went to another consumer
    transport.ack(again)
    assert transport.stats("q")[0].depth == 0


def test_acknowledging_a_batch_with_a_lost_lease_acknowledges_none_of_it(transport: Transport) -> None:
    transport.send("q", [doc(b"kept"), doc(b"lost")])
    [kept] = transport.receive("q", "slow")
    [lost] = transport.receive("q", "slow", lease_seconds=0.2)
    [taken] = transport.receive_wait("q", "other", wait=5)  # the lease of "lost" ran out
    assert taken.envelope.body == b"lost"
    with pytest.raises(LeaseLostError):
        transport.ack([kept, lost])
    transport.ack(kept)  # still held: the failed batch settled nothing
    transport.ack(taken)
    assert transport.stats("q")[0].depth == 0


def test_acknowledging_a_batch_of_two_channels_with_a_lost_lease_acknowledges_none_of_it(transport: Transport) -> None:
    transport.send("q1", doc(b"kept"))
    transport.send("q2", doc(b"lost"))
    [kept] = transport.receive("q1", "slow")
    [lost] = transport.receive("q2", "slow", lease_seconds=0.2)
    [taken] = transport.receive_wait("q2", "other", wait=5)  # the lease of "lost" ran out
    with pytest.raises(LeaseLostError):
        transport.ack([kept, lost])
    transport.ack(kept)  # still held: the failed batch settled nothing, on no channel
    transport.ack(taken)
    assert [s.depth for s in transport.stats("q1") + transport.stats("q2")] == [0, 0]


def test_nack_redelivers_then_dead_letters_with_error_component_attempts(transport: Transport) -> None:
    transport.send("q", doc(b"poison", properties={"k": "v"}))
    outcomes = []
    for expected_attempt in (1, 2, 3):  # backoff policy of the fixture: max_attempts=3
        [d] = transport.receive_wait("q", "handler", wait=5)
        assert d.attempt == expected_attempt
        outcomes.append(transport.nack(d, ValueError(f"bad record {expected_attempt}"), "translator"))
    assert outcomes == ["retry", "retry", "dead"]
    assert transport.receive_wait("q", "handler", wait=0.5) == []
    [dead] = transport.dead_letters()
    assert dead.kind == "dead" and dead.channel == "q"
    assert dead.envelope is not None and dead.envelope.body == b"poison"
    assert dead.envelope.properties == {"k": "v"}
    assert dead.error == "ValueError: bad record 3"
    assert dead.component == "translator"
    assert dead.attempts == 3
    assert transport.stats("q")[0].failed == 3


def test_nack_dead_goes_straight_to_dead_letters(transport: Transport) -> None:
    transport.send("q", doc(b"refused"))
    [d] = transport.receive("q", "c")
    assert transport.nack(d, "cannot handle", "router", dead=True) == "dead"
    [dead] = transport.dead_letters()
    assert (dead.reason, dead.error, dead.component, dead.attempts) == ("rejected", "cannot handle", "router", 1)


def test_dead_letter_channel_per_channel_or_site_wide(transport: Transport) -> None:
    transport.declare("orders", dead_letter="orders.dead")
    transport.send("orders", doc(b"o"))
    transport.send("misc", doc(b"m"))
    for ch in ("orders", "misc"):
        [d] = transport.receive(ch, "c")
        transport.nack(d, "no", "c", dead=True)
    assert [x.envelope.body for x in transport.dead_letters("orders.dead")] == [b"o"]
    assert [x.envelope.body for x in transport.dead_letters("dead-letters")] == [b"m"]


def test_replay_sends_a_dead_letter_back_with_fresh_attempts(transport: Transport) -> None:
    transport.send("q", doc(b"again"))
    [d] = transport.receive("q", "c")
    transport.nack(d, "later", "c", dead=True)
    [dead] = transport.dead_letters()
    message_id = transport.replay(dead.id)
    assert message_id == d.message_id
    assert transport.dead_letters() == []
    [back] = transport.receive("q", "c")
    assert back.envelope.body == b"again" and back.attempt == 1
    with pytest.raises(UnknownDeadLetterError):
        transport.dead_letter(dead.id)


def test_replay_with_an_edited_body(transport: Transport) -> None:
    transport.send("q", doc(b"wrong"))
    [d] = transport.receive("q", "c")
    transport.nack(d, "refused", "c", dead=True)
    [dead] = transport.dead_letters()
    assert transport.replay(dead.id, body=b"right") == d.message_id
    assert transport.dead_letters() == []
    [back] = transport.receive_wait("q", "c", wait=5)
    assert back.envelope.body == b"right" and back.attempt == 1


def test_replay_with_a_message_in_its_place(transport: Transport) -> None:
    """An operator's edit run through an inbound mapping again: another format and body, the
    same message id; a claim-checked body is let go."""
    transport.send("q", doc(BIG, format="legacy.Record@1"))
    [d] = transport.receive("q", "c")
    transport.nack(d, "refused", "c", dead=True)
    [dead] = transport.dead_letters()
    mapped = dead.envelope.replace(format="acme.Customer@1;application/json", body=b'{"id": 1}',
                                   properties={**dead.envelope.properties, "mapped": "yes"})
    with pytest.raises(TransportError, match="not other-id"):
        transport.replay(dead.id, envelope=mapped.replace(message_id="other-id"))
    assert transport.replay(dead.id, envelope=mapped) == d.message_id
    assert transport.dead_letters() == []
    [back] = transport.receive_wait("q", "c", wait=5)
    assert back.envelope.body == b'{"id": 1}' and back.envelope.format.ref == "acme.Customer@1"
    assert back.envelope.properties["mapped"] == "yes" and back.attempt == 1
    transport.ack(back)
    assert _wait_until(lambda: stored_claims(transport) == [])


def test_an_acknowledgement_is_journaled_with_the_consumers_note(transport: Transport) -> None:
    """What the consumer did (the file it wrote, why it discarded it), for the trace."""
    transport.send("q", [doc(b"a"), doc(b"b")])
    first, second = transport.receive("q", "writer", max=2)
    first.note = "to /out/a.dat"
    transport.ack([first, second])
    acks = {e.message_id: e.detail for e in transport.journal(event="acked")}
    assert acks == {first.message_id: "writer: to /out/a.dat", second.message_id: "writer"}


def test_the_journal_finds_the_messages_of_a_trace(transport: Transport) -> None:
    from coupler.canonical.tracecontext import BUSINESS_KEY, TRACEPARENT, TraceContext

    one, other = TraceContext.new(), TraceContext.new()
    first = doc(b"1")
    first.properties.update({TRACEPARENT: one.header, BUSINESS_KEY: "ORDER-7"})
    derived = doc(b"2")
    derived.properties[TRACEPARENT] = one.child().header
    unrelated = doc(b"3")
    unrelated.properties[TRACEPARENT] = other.header
    ids = transport.send("a", [first, unrelated])
    [derived_id] = transport.send("b", derived)
    [d] = transport.receive("a", "c")
    transport.ack(d)
    stored = transport.journal(trace_ids=[one.trace_id])
    assert {(e.message_id, e.channel, e.event) for e in stored} == {(ids[0], "a", "sent"), (derived_id, "b", "sent")}
    assert all(e.trace_id == one.trace_id for e in stored)
    assert [e.message_id for e in transport.journal(key="ORDER-7")] == [ids[0]]
    assert transport.journal(key="ORDER-") == []  # whole values only
    assert [e.event for e in transport.journal(message_ids=[ids[0]])] == ["sent", "received", "acked"]


def test_invalid_message_channel_keeps_the_reason(transport: Transport) -> None:
    transport.send("in", doc(b"garbage"))
    [d] = transport.receive("in", "translator")
    transport.invalid(d.envelope, "field 'amount': not a number", "translator", delivery=d)
    assert transport.receive_wait("in", "translator", wait=0.3) == []
    [bad] = transport.dead_letters(kind="invalid")
    assert bad.queue == "invalid" and bad.channel == "in"
    assert bad.reason == "field 'amount': not a number"
    assert bad.envelope is not None and bad.envelope.body == b"garbage"
    assert transport.dead_letters(kind="dead") == []
    raw_id = transport.invalid(b"\x00not an envelope", "cannot decode", "socket-in", channel="in")
    assert transport.dead_letter(raw_id).raw == b"\x00not an envelope"


def test_expired_message_is_never_delivered(transport: Transport) -> None:
    past = datetime.now(UTC) - timedelta(seconds=1)
    transport.send("q", [doc(b"stale", expires_at=past), doc(b"fresh")])
    got = transport.receive("q", "c", max=10)
    assert bodies(got) == [b"fresh"]
    [dead] = transport.dead_letters()
    assert dead.reason == "expired" and dead.envelope is not None and dead.envelope.body == b"stale"


def test_transaction_commits_receive_send_ack_together(transport: Transport) -> None:
    transport.send("in", doc(b"1"))
    with transport.transaction() as tx:
        [d] = tx.receive("in", "mover")
        tx.send("out", doc(d.envelope.body + b"!"))
        tx.ack(d)
    assert transport.receive("in", "c") == []
    assert bodies(drain(transport, "out")) == [b"1!"]


def test_transaction_rolls_back_everything_on_error(transport: Transport) -> None:
    transport.send("in", doc(b"1"))
    with pytest.raises(RuntimeError), transport.transaction() as tx:
        [d] = tx.receive("in", "mover")
        tx.send("out", doc(b"should vanish"))
        tx.ack(d)
        raise RuntimeError("crash before commit")
    assert bodies(transport.receive("in", "c")) == [b"1"]  # visible again at once
    assert transport.receive("out", "c") == []


def test_transaction_acknowledging_a_lost_lease_commits_nothing(transport: Transport) -> None:
    """A transaction that acknowledges a message whose lease was lost fails with
    LeaseLostError (at the acknowledgement, at a later operation or at the commit: a store may
    check it with the commit) and nothing of it commits: its sends, its keys, its other
    acknowledgements."""
    transport.send("in", [doc(b"kept"), doc(b"lost")])
    [kept] = transport.receive("in", "slow")
    [lost] = transport.receive("in", "slow", lease_seconds=0.2)
    [taken] = transport.receive_wait("in", "other", wait=5)  # the lease of "lost" ran out
    for first in (True, False):
        with pytest.raises(LeaseLostError), transport.transaction() as tx:
            if first:
                tx.ack(lost)
            tx.send("out", doc(b"should vanish"))
            tx.mark_seen("slow", ["key:1"])
            tx.ack(kept)
            if not first:
                tx.ack(lost)
            transport.send("elsewhere", doc(b"in the transaction too"))
    assert transport.receive("out", "c") == [] and transport.receive("elsewhere", "c") == []
    assert transport.seen("slow", ["key:1"]) == set()
    transport.ack([kept, taken])  # both still held: the failed transactions settled nothing
    assert transport.stats("in")[0].depth == 0


def test_transaction_nacking_a_lost_lease_commits_nothing(transport: Transport) -> None:
    """A transaction that nacks a message whose lease was lost (back to its channel, or to
    the dead letters) fails with LeaseLostError (at the nack, at a later operation or at the
    commit) and nothing of it commits: no dead letter, no failure counted, its sends and its
    other acknowledgements undone."""
    transport.send("in", [doc(b"kept"), doc(b"lost")])
    [kept] = transport.receive("in", "slow")
    [lost] = transport.receive("in", "slow", lease_seconds=0.2)
    [taken] = transport.receive_wait("in", "other", wait=5)  # the lease of "lost" ran out
    for dead in (False, True):
        with pytest.raises(LeaseLostError), transport.transaction() as tx:
            tx.send("out", doc(b"should vanish"))
            tx.nack(lost, "failed", "c", dead=dead, delay=0)
            tx.ack(kept)
    assert transport.receive("out", "c") == []
    assert transport.dead_letters() == []
    assert transport.stats("in")[0].failed == 0
    transport.ack([kept, taken])  # both still held: the failed transactions settled nothing
    assert transport.stats("in")[0].depth == 0


def test_moving_a_lost_lease_to_the_invalid_channel_commits_nothing(transport: Transport) -> None:
    """``invalid(..., delivery=d)`` of a message whose lease was lost fails with
    LeaseLostError (at the call, at a later operation or at the commit: a store may check it
    with the commit) and nothing of it commits: no dead letter, no count, no journal entry;
    in a transaction, its sends and other acknowledgements undone."""
    transport.send("in", [doc(b"kept"), doc(b"lost")])
    [kept] = transport.receive("in", "slow")
    [lost] = transport.receive("in", "slow", lease_seconds=0.2)
    [taken] = transport.receive_wait("in", "other", wait=5)  # the lease of "lost" ran out
    with pytest.raises(LeaseLostError):
        transport.invalid(lost.envelope, "bad", "c", channel="in", delivery=lost)
    for first, later in ((True, False), (False, False), (True, True), (False, True)):
        with pytest.raises(LeaseLostError), transport.transaction() as tx:
            move = tx.invalid_later if later else tx.invalid  # later: the id not asked for
            if first:
                move(lost.envelope, "bad", "c", channel="in", delivery=lost)
            tx.send("out", doc(b"should vanish"))
            tx.ack(kept)
            if not first:
                move(lost.envelope, "bad", "c", channel="in", delivery=lost)
    assert transport.dead_letters() == [] and transport.dead_letters(kind="invalid") == []
    assert transport.receive("out", "c") == []
    assert transport.stats("in")[0].invalid == 0
    events = [e.event for e in transport.journal(message_ids=[lost.message_id])]
    assert "invalid" not in events, events
    transport.ack([kept, taken])  # both still held: the failed calls settled nothing
    assert transport.stats("in")[0].depth == 0


def test_a_dead_letter_id_answered_after_the_commit(transport: Transport) -> None:
    """``tx.invalid_later(...)``: the function it returns answers, once the transaction has
    committed, the id of the dead letter made (a delivery's, settled with it, and raw bytes)."""
    transport.send("in", doc(b"refused"))
    [d] = transport.receive("in", "c")
    with transport.transaction() as tx:
        tx.send("out", doc(b"fault"))
        moved = tx.invalid_later(d.envelope, "refused", "c", channel="in", delivery=d)
        raw = tx.invalid_later(b"\x00raw", "cannot decode", "c", channel="in")
    letter = transport.dead_letter(moved())
    assert letter.envelope is not None and letter.envelope.body == b"refused" and letter.reason == "refused"
    assert transport.dead_letter(raw()).raw == b"\x00raw"
    assert transport.receive("in", "c") == [] and bodies(transport.receive("out", "c")) == [b"fault"]


def test_publish_subscribe_durable_subscriptions(transport: Transport) -> None:
    transport.declare("events", kind="topic")
    billing = transport.subscribe("events", "billing")
    audit = transport.subscribe("events", "audit", selector="kind = 'event'")
    transport.send("events", [doc(b"e1", kind="event"), doc(b"d1")])
    late = transport.subscribe("events", "late")
    transport.send("events", doc(b"e2", kind="event"))
    assert bodies(drain(transport, billing)) == [b"e1", b"d1", b"e2"]
    assert bodies(drain(transport, audit)) == [b"e1", b"e2"]
    assert bodies(drain(transport, late)) == [b"e2"]
    assert transport.stats("events")[0].subscriptions == ("audit", "billing", "late")


def test_selector_receives_only_matching_messages(transport: Transport) -> None:
    transport.send("q", [doc(b"eu", properties={"region": "EU"}), doc(b"us", properties={"region": "US"})])
    got = transport.receive("q", "c", max=10, selector="region in ('US', 'APAC')")
    assert bodies(got) == [b"us"]
    assert bodies(transport.receive("q", "c", max=10)) == [b"eu"]


def test_message_history_has_every_hop(transport: Transport) -> None:
    transport.send("a", doc(b"h"), component="inbound")
    with transport.transaction() as tx:
        [d] = tx.receive("a", "router")
        tx.send("b", d.envelope, component="router")
        tx.ack(d)
    [final] = transport.receive("b", "outbound")
    assert [(h.component, h.action) for h in final.envelope.history] == [
        ("inbound", "send a"),
        ("router", "receive a"),
        ("router", "send b"),
        ("outbound", "receive b"),
    ]


def test_journal_records_every_state_change(transport: Transport) -> None:
    [mid] = transport.send("q", doc(b"j"))
    [d] = transport.receive("q", "c")
    transport.nack(d, "oops", "c", delay=0)
    [d] = transport.receive_wait("q", "c", wait=5)
    transport.ack(d)
    events = [e.event for e in transport.journal(message_id=mid)]
    assert events == ["sent", "received", "nacked", "received", "acked"]


def test_peek_and_purge(transport: Transport) -> None:
    transport.send("q", [doc(b"1"), doc(b"2")])
    assert [e.body for e in transport.peek("q")] == [b"1", b"2"]
    assert bodies(transport.receive("q", "c")) == [b"1"]  # peek leased nothing
    assert transport.purge("q") == 2
    assert transport.peek("q") == []


def test_sent_messages_survive_reopening(transport: Transport, tmp_path) -> None:
    transport.send("q", doc(b"durable"))
    transport.close()
    transport.open()
    assert bodies(transport.receive("q", "c")) == [b"durable"]


def test_seen_keys_are_per_consumer(transport: Transport) -> None:
    transport.mark_seen("a", ["k1", "k2"])
    assert transport.seen("a", ["k1", "k3"]) == {"k1"}
    assert transport.seen("b", ["k1"]) == set()


def test_mark_new_records_and_returns_only_the_keys_not_seen_yet(transport: Transport) -> None:
    transport.mark_seen("a", ["k1"])
    assert transport.mark_new("a", ["k1", "k2", "k3"]) == {"k2", "k3"}
    assert transport.mark_new("a", ["k2", "k4"]) == {"k4"}
    assert transport.seen("a", ["k1", "k2", "k3", "k4"]) == {"k1", "k2", "k3", "k4"}
    with pytest.raises(RuntimeError), transport.transaction() as tx:  # rolled back: not recorded
        assert tx.mark_new("a", ["k5"]) == {"k5"}
        raise RuntimeError("the work it was checked for failed")
    assert transport.seen("a", ["k5"]) == set()
    assert transport.mark_new("b", ["k1"]) == {"k1"}  # per consumer


def test_remember_is_a_replay_cache_with_a_time_to_live(transport: Transport) -> None:
    assert transport.remember("remember:nonces", "n1", 300) is True
    assert transport.remember("remember:nonces", "n1", 300) is False  # a replay
    assert transport.remember("remember:other", "n1", 300) is True  # scopes are separate
    assert transport.remember("remember:nonces", "n2", 0.2) is True
    deadline = time.monotonic() + 10
    while not transport.remember("remember:nonces", "n2", 0.2):  # forgotten once the ttl is over
        assert time.monotonic() < deadline, "a remembered key never expired"
        time.sleep(0.05)
    assert transport.remember("remember:nonces", "n2", 300) is False


def test_claim_is_all_or_none_until_unclaimed_or_over(transport: Transport) -> None:
    """``claim``: the lease an outbound adapter's Idempotent Receiver takes on a message's keys
    before its delivery (see :meth:`~coupler.bus.transport.base.Transport.claim`)."""
    later = time.time() + 300
    assert transport.claim("adapter:x", ["id:1", "key:A"], later) is True
    assert transport.claim("adapter:x", ["id:2", "key:A"], later) is False  # key:A taken: id:2 not claimed
    assert transport.claim("adapter:x", ["id:2"], later) is True
    assert transport.claim("adapter:y", ["key:A"], later) is True  # scopes are separate
    transport.unclaim("adapter:x", ["id:1", "key:A"])
    assert transport.claim("adapter:x", ["key:A"], later) is True
    assert transport.claim("adapter:x", ["key:B"], time.time() - 0.001) is True  # over already
    assert transport.claim("adapter:x", ["key:B"], later) is True
    assert transport.seen("adapter:x", ["id:1", "id:2", "key:A", "key:B"]) == set()  # a claim is no record


def test_claim_fresh_claims_unless_recorded_or_claimed(transport: Transport) -> None:
    """``claim_fresh``: the claim of an outbound delivery's keys and the look for them
    recorded, together (see :meth:`~coupler.bus.transport.base.Transport.claim_fresh`)."""
    later = time.time() + 300
    assert transport.claim_fresh("adapter:x", ["id:1", "key:A"], later) == "claimed"
    assert transport.claim_fresh("adapter:x", ["id:2", "key:A"], later) == "busy"  # nothing claimed
    assert transport.claim("adapter:x", ["id:2"], later) is True
    with transport.transaction() as tx:
        ended = tx.record_claimed("adapter:x", ["id:1", "key:A"])
    if not ended:  # a store keeping its claims apart: the caller ends them after the commit
        transport.unclaim("adapter:x", ["id:1", "key:A"])
    assert transport.seen("adapter:x", ["id:1", "key:A"]) == {"id:1", "key:A"}
    assert transport.claim_fresh("adapter:x", ["id:3", "key:A"], later) == "recorded"
    assert transport.claim("adapter:x", ["id:3", "key:A"], later) is True  # no claim left, of either key
    assert transport.claim_fresh("adapter:y", ["key:A"], later) == "claimed"  # consumers are separate


# -- Claim Check: large bodies stored aside, removed when no message refers to them ------------

BIG = bytes(range(256)) * 40  # 10 KiB, over the fixture's claim-check threshold


def test_claim_check_large_body_round_trips_and_goes_with_its_message(transport: Transport) -> None:
    transport.send("q", [doc(BIG), doc(b"small")])
    assert len(stored_claims(transport)) == 1  # only the large body is stored aside
    got = transport.receive("q", "c", max=2)
    assert bodies(got) == [BIG, b"small"]
    assert all(not k.startswith("coupler.") for k in got[0].envelope.properties)
    transport.ack(got)
    assert stored_claims(transport) == []


def test_claim_check_body_lives_until_no_message_refers_to_it(transport: Transport) -> None:
    transport.declare("t", kind="topic")
    a = transport.subscribe("t", "a")
    b = transport.subscribe("t", "b")
    transport.send("t", doc(BIG))
    assert len(stored_claims(transport)) == 1  # one body for both copies
    transport.ack(transport.receive_wait(a, "c", wait=5))
    assert len(stored_claims(transport)) == 1  # b's copy still refers to it
    [d] = transport.receive_wait(b, "c", wait=5)
    transport.nack(d, "no", "c", dead=True)
    assert len(stored_claims(transport)) == 1  # the dead letter refers to it
    assert transport.dead_letters()[0].envelope.body == BIG
    transport.purge_dead_letters()
    assert stored_claims(transport) == []


def test_claim_check_body_survives_redelivery_and_replay(transport: Transport) -> None:
    transport.send("q", doc(BIG))
    [d] = transport.receive("q", "c")
    assert transport.nack(d, "later", "c", delay=0) == "retry"
    [again] = transport.receive_wait("q", "c", wait=5)
    assert again.envelope.body == BIG and again.attempt == 2
    transport.nack(again, "give up", "c", dead=True)
    [dead] = transport.dead_letters()
    transport.replay(dead.id)
    [back] = transport.receive_wait("q", "c", wait=5)
    assert back.envelope.body == BIG and back.attempt == 1
    assert len(stored_claims(transport)) == 1
    transport.ack(back)
    assert stored_claims(transport) == []


def test_claim_check_body_stays_when_its_acknowledgement_does_not_commit(transport: Transport) -> None:
    """Claim-checked bodies acknowledged in a transaction that does not commit (an error in
    it, or a lost lease of another message it acknowledges) are still there, whole, for the
    messages that refer to them."""
    transport.send("q", [doc(BIG), doc(BIG[::-1])])
    [held] = transport.receive("q", "c")
    [lost] = transport.receive("q", "c", lease_seconds=0.2)
    [taken] = transport.receive_wait("q", "other", wait=5)  # the lease of "lost" ran out
    with pytest.raises(RuntimeError), transport.transaction() as tx:
        tx.ack(held)
        raise RuntimeError("crash before commit")
    for first in (True, False):
        with pytest.raises(LeaseLostError), transport.transaction() as tx:
            if first:
                tx.ack(lost)
            tx.ack(held)
            if not first:
                tx.ack(lost)
    assert len(stored_claims(transport)) == 2
    for d in (held, taken):  # both still held: back to the queue, read again
        transport.nack(d, "again", "c", delay=0)
    again: list[Any] = []
    deadline = time.monotonic() + 10
    while len(again) < 2 and time.monotonic() < deadline:
        again += transport.receive_wait("q", "c", max=2, wait=1)
    assert sorted(bodies(again)) == sorted([BIG, BIG[::-1]])
    transport.ack(again)
    assert stored_claims(transport) == []


def test_claim_check_body_of_a_rolled_back_send_is_not_kept(transport: Transport) -> None:
    with pytest.raises(RuntimeError), transport.transaction() as tx:
        tx.send("q", doc(BIG))
        raise RuntimeError
    assert stored_claims(transport) == []
    transport.send("q", doc(BIG))
    assert transport.purge("q") == 1
    assert stored_claims(transport) == []  # a purged message's body goes with it


# -- stuck messages: the age of the oldest message of a channel ------------------------------


def _wait_until(predicate: Any, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def test_oldest_age_grows_while_a_message_waits_and_stuck_alert_fires(transport: Transport) -> None:
    sent = time.time()
    transport.send("orders", doc(b"waiting"))
    transport.send("fine", doc(b"fresh"))

    def stuck() -> list[Any]:  # what the daemon's stuck-channel monitor reads: oldest_age
        return [st for st in transport.stats() if st.oldest_age is not None and st.oldest_age > 0.5]

    alerts = _wait_until(lambda: [st for st in stuck() if st.channel == "orders"])
    assert [a.channel for a in alerts] == ["orders"] and alerts[0].depth == 1
    [st] = transport.stats("orders")
    assert 0.5 < st.oldest_age <= time.time() - sent + 0.1
    # a message that was received and given back is still as old as when it was sent
    [d] = transport.receive("orders", "c")
    transport.nack(d, "not yet", "c", delay=0)
    [st] = _wait_until(lambda: [s for s in transport.stats("orders") if s.depth == 1])
    assert st.oldest_age > 0.5
    # taken at once, not drained with a second's wait for more: a copy left behind shows in
    # the channel's statistics below
    [d] = transport.receive_wait("orders", "drain", wait=5)
    transport.ack(d)
    assert [st.channel for st in stuck()] in ([], ["fine"]) and transport.stats("orders")[0].oldest_age is None


def test_oldest_age_counts_messages_held_under_a_lease(transport: Transport) -> None:
    transport.send("q", doc(b"held"))
    [d] = transport.receive("q", "slow")
    time.sleep(0.3)
    [st] = transport.stats("q")
    assert st.depth == 1 and st.in_flight == 1 and st.oldest_age >= 0.3
    transport.ack(d)
    assert transport.stats("q")[0].oldest_age is None


# -- exact attempt counts --------------------------------------------------------------------


def test_attempts_count_deliveries_only_not_looks_skips_or_rollbacks(transport: Transport) -> None:
    transport.send("q", [doc(b"a", properties={"r": "EU"}), doc(b"b", properties={"r": "US"})])
    assert [e.body for e in transport.peek("q")] == [b"a", b"b"]  # a look is no attempt
    transport.stats("q")  # nor is the look at the oldest message
    [us] = transport.receive("q", "c", selector="r = 'US'")  # a skipped message is none
    assert us.attempt == 1
    transport.ack(us)
    with pytest.raises(RuntimeError), transport.transaction() as tx:
        [d] = tx.receive("q", "c")
        assert d.attempt == 1
        raise RuntimeError  # a rolled-back receive is none either
    [eu] = transport.receive("q", "c")
    assert eu.envelope.body == b"a" and eu.attempt == 1 and eu.envelope.attempt == 1
    transport.nack(eu, "once", "c", delay=0)
    [again] = transport.receive_wait("q", "c", wait=5)
    assert again.attempt == 2  # a real redelivery is


def test_attempts_survive_a_reopened_transport(transport: Transport) -> None:
    transport.send("q", [doc(str(i).encode()) for i in range(5)])
    [first] = transport.receive("q", "c")
    transport.ack(first)
    transport.close()  # the rest were never delivered to a handler
    transport.open()
    got: list[Any] = []  # the four taken as they come, not drained with a second's wait for more:
    deadline = time.monotonic() + 10  # a copy more shows in the depth below
    while len(got) < 4 and time.monotonic() < deadline:
        got += transport.receive_wait("q", "c", max=10, wait=1)
    transport.ack(got)
    assert bodies(got) == [b"1", b"2", b"3", b"4"] and {d.attempt for d in got} == {1}
    assert transport.stats("q")[0].depth == 0


# -- step state: keyed, in the transaction of the acknowledgement ------------------------------


def test_step_state_commits_with_the_acknowledgement_or_not_at_all(transport: Transport) -> None:
    try:
        with transport.transaction() as tx:
            tx.get_state("aggregator")
    except TransportError as exc:  # the RabbitMQ transport: no stateful steps on it
        pytest.skip(str(exc))
    transport.send("in", [doc(b"1"), doc(b"2")])
    with transport.transaction() as tx:  # an aggregator adds the first message to its group
        [d] = tx.receive("in", "aggregator")
        group = tx.get_state("aggregator", ["order-7"], lock=True).get("order-7", b"")
        tx.put_state("aggregator", {"order-7": group + d.envelope.body})
        tx.ack(d)
    with pytest.raises(RuntimeError), transport.transaction() as tx:  # a crash before the commit
        [d] = tx.receive("in", "aggregator")
        tx.put_state("aggregator", {"order-7": b"lost", "other": b"x"})
        tx.ack(d)
        raise RuntimeError
    with transport.transaction() as tx:
        assert tx.get_state("aggregator") == {"order-7": b"1"}  # neither the state nor the ack
        [d] = tx.receive("in", "aggregator")
        assert d.envelope.body == b"2"
        tx.put_state("aggregator", {"order-7": None, "order-8": b"2"}, expires_at=time.time() + 0.3)
        tx.ack(d)
    with transport.transaction() as tx:
        assert tx.get_state("aggregator", ["order-7", "order-8"]) == {"order-8": b"2"}
        assert tx.get_state("resequencer") == {}  # scopes are separate
    assert _wait_until(lambda: _state_gone(transport)), "a value read after its expiry"


def _state_gone(transport: Transport) -> bool:
    with transport.transaction() as tx:
        return tx.get_state("aggregator") == {}
