"""The Idempotent Receiver of an outbound adapter on a store shared by concurrent workers
(competing workers of one daemon, or the daemons of a multi-node site): two copies of one
business key delivered at the same moment reach the legacy system once. The delivery happens
outside any transaction, so the key is claimed with a lease before it (``Transport.claim``,
until the delivery's own lease ends) and recorded for good with the acknowledgement; a copy
that finds the key claimed is given back for later, then acknowledged as a duplicate; a
delivery that fails gives up its claim, so that its retry is delivered."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from coupler.bus.runtime.consumers import ConsumerPatterns
from coupler.bus.runtime.handlers import Handlers
from coupler.bus.transport.base import Delivery
from coupler.bus.transport.sqlite.transport import SqliteTransport
from coupler.canonical import Envelope, FormatIndicator
from tests.bus.transport.multinode import daemons, waiting_on_a_lock

FMT = FormatIndicator("acme.Order", 1, "application/json")
QUEUE = "adapter.legacy"
CONSUMER = "adapter:legacy"


@pytest.fixture(params=["amqp", "postgres", "sqlite"])
def workers(request: pytest.FixtureRequest, tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    """Two transports of one site (two daemons); on SQLite, one transport shared by two
    worker threads of its one daemon. On AMQP a consumer idle for 1 s returns what the broker
    pushed ahead to it (5 s in a daemon): a copy one daemon's consumer holds reaches the other
    daemon that much sooner (the tests wait for it; what they check does not change)."""
    if request.param == "amqp":
        from coupler.bus.transport.amqp import transport as amqp_transport

        monkeypatch.setattr(amqp_transport, "_IDLE_SECONDS", 1.0)
    if request.param == "sqlite":
        t = SqliteTransport(tmp_path).open()
        try:
            yield t, t
        finally:
            t.close()
        return
    with daemons(request.param) as ((a, b), _schema):
        yield a, b


class Legacy:
    """The legacy system behind the adapter: records what reaches it."""

    def __init__(self) -> None:
        self.delivered: list[str] = []
        self.lock = threading.Lock()

    def deliver(self, env: Envelope) -> str:
        with self.lock:
            self.delivered.append(env.message_id)
        return "legacy"


def _handler(t: Any, legacy: Any) -> tuple[Any, ConsumerPatterns]:
    """The daemon's delivery handler of an outbound adapter ``legacy`` keyed on
    ``properties.order_no``, over transport ``t`` (one daemon)."""
    patterns = ConsumerPatterns.declared(t, CONSUMER, QUEUE, channel=None, idempotent_key="properties.order_no",
                                         throttle=None, where="adapters[0]")
    daemon = SimpleNamespace(transport=t, statistics=SimpleNamespace(count=lambda *a: None))
    ra = SimpleNamespace(name="legacy", adapter=legacy, translation=None, outbound_envelope=lambda env: env)
    return Handlers(daemon).delivery_handler(ra, patterns), patterns  # type: ignore[arg-type]


def _receive(t: Any, n: int, wait: float = 30.0, lease: float | None = None) -> list[Delivery]:
    got: list[Delivery] = []
    deadline = time.monotonic() + wait
    while len(got) < n:
        assert time.monotonic() < deadline, f"{len(got)} of {n} copies received"
        got += t.receive_wait(QUEUE, CONSUMER, max=n - len(got), wait=1.0, lease_seconds=lease)
    return got


def _order(no: str) -> Envelope:
    return Envelope(format=FMT, body=b"{}", properties={"order_no": no})


def test_two_copies_delivered_at_once_reach_the_legacy_system_once(workers: tuple[Any, Any]) -> None:
    a, b = workers
    for t in {a, b}:  # the copy given back comes again after the channel's lease: a short one
        t.declare(QUEUE, lease_seconds=3.0)
    a.send(QUEUE, [_order("A-7"), _order("A-7")])
    # (a lease of its own for the first: the broker may give the second copy to the other
    # transport only once the first's consumer returns what it prefetched, seconds later)
    [first] = _receive(a, 1, lease=60.0)
    [second] = _receive(b, 1, lease=60.0)
    # the first worker's delivery is held inside the legacy system until the second worker
    # has handled its copy: the two deliveries overlap
    entered, finish = threading.Event(), threading.Event()
    legacy = Legacy()

    class Slow:
        def deliver(self, env: Envelope) -> str:
            if env.message_id == first.message_id:
                entered.set()
                assert finish.wait(60), "the second worker did not finish"
            return legacy.deliver(env)

    handle_a, _ = _handler(a, Slow())
    handle_b, patterns_b = _handler(b, Slow())
    errors: list[BaseException] = []

    def worker_a() -> None:
        try:
            handle_a(first)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    th = threading.Thread(target=worker_a, name="worker-a")
    th.start()
    assert entered.wait(30), "the first worker never reached the legacy system"
    try:
        handle_b(second)  # the first copy is in delivery: this one must not reach the legacy system
    finally:
        finish.set()
        th.join(60)
    assert not errors, errors
    assert legacy.delivered == [first.message_id]
    # the second copy was given back, not lost, for the channel's lease (by then the first
    # copy's claim is over); it comes again and is a duplicate now
    given_back = time.time()
    [again] = _receive(b, 1)
    assert again.message_id == second.message_id
    assert time.time() - given_back > 2.0 and again.attempt == 2
    handle_b(again)
    assert legacy.delivered == [first.message_id]
    assert patterns_b.idempotent is not None and patterns_b.idempotent.duplicates == 1
    assert b.receive_wait(QUEUE, CONSUMER, max=2, wait=0.5) == []
    assert a.seen(CONSUMER, ["key:A-7"]) == {"key:A-7"}


def test_a_failed_delivery_gives_up_its_claim_and_its_retry_is_delivered(workers: tuple[Any, Any]) -> None:
    a, b = workers
    a.send(QUEUE, _order("B-1"))
    legacy = Legacy()
    calls: list[str] = []

    class FailingOnce:
        def deliver(self, env: Envelope) -> str:
            calls.append(env.message_id)
            if len(calls) == 1:
                raise ConnectionError("legacy system down")
            return legacy.deliver(env)

    handle_a, _ = _handler(a, FailingOnce())
    handle_b, _ = _handler(b, FailingOnce())
    [d] = _receive(a, 1)
    handle_a(d)  # fails: nacked for a retry (after the backoff's first delay), its claim given up
    assert calls == [d.message_id] and legacy.delivered == []
    assert a.seen(CONSUMER, ["key:B-1"]) == set()
    # the retry, on the other worker, long before the first delivery's lease would have ended
    [again] = _receive(b, 1)
    assert again.message_id == d.message_id and time.time() < d.lease_expires_at
    handle_b(again)
    assert legacy.delivered == [d.message_id]
    assert b.seen(CONSUMER, ["key:B-1"]) == {"key:B-1"}


def test_a_claim_is_all_or_none_shared_and_ends_with_its_lease(workers: tuple[Any, Any]) -> None:
    """``Transport.claim`` itself: seen by the other daemon, all keys or none, given up by
    ``unclaim``, and over once its time passed (a daemon killed mid-delivery blocks nobody
    for longer than the message's lease)."""
    a, b = workers
    later = time.time() + 60
    assert a.claim(CONSUMER, ["key:1", "id:1"], later)
    assert not b.claim(CONSUMER, ["id:2", "key:1"], later)  # key:1 is taken: id:2 is not claimed either
    assert b.claim(CONSUMER, ["id:2"], later)
    b.unclaim(CONSUMER, ["id:2"])
    a.unclaim(CONSUMER, ["key:1", "id:1"])
    assert b.claim(CONSUMER, ["key:1", "id:2"], later)
    # a claim whose time has passed (its holder died) is no claim
    assert a.claim(CONSUMER, ["key:dead"], time.time() - 0.001)
    assert b.claim(CONSUMER, ["key:dead"], later)
    assert not a.claim(CONSUMER, ["key:dead"], later)
    assert a.seen(CONSUMER, ["key:1", "key:dead"]) == set()  # a claim is not a record


def test_a_daemon_killed_mid_delivery_leaves_a_claim_that_ends_with_the_lease(workers: tuple[Any, Any]) -> None:
    """The first daemon claimed the key and died delivering (no acknowledgement, no unclaim):
    once the message's lease is over, the copy comes again and the other daemon delivers it
    (at least once across a crash)."""
    a, b = workers
    a.send(QUEUE, _order("D-4"))
    _, patterns_a = _handler(a, Legacy())
    [d] = _receive(a, 1, lease=1.0)
    assert patterns_a.claim(a, d, CONSUMER)  # claimed; then the daemon is killed
    legacy = Legacy()
    handle_b, _ = _handler(b, legacy)
    [again] = _receive(b, 1)  # visible again once its lease is over
    assert again.message_id == d.message_id and again.attempt == 2
    handle_b(again)
    assert legacy.delivered == [d.message_id]
    assert b.seen(CONSUMER, ["key:D-4"]) == {"key:D-4"}


def test_a_worker_killed_by_its_delivery_gives_up_its_claim(workers: tuple[Any, Any]) -> None:
    """``deliver()`` raising SystemExit kills the worker (the supervisor gives the message
    back): its claim goes with it, so the retry is not held up for a lease."""
    a, b = workers
    a.send(QUEUE, _order("E-5"))

    class Exiting:
        def deliver(self, env: Envelope) -> str:
            raise SystemExit(3)

    handle_a, _ = _handler(a, Exiting())
    [d] = _receive(a, 1)
    with pytest.raises(SystemExit):
        handle_a(d)
    assert b.claim(CONSUMER, ["key:E-5"], time.time() + 60)  # not claimed any more
    b.unclaim(CONSUMER, ["key:E-5"])
    a.nack(d, "the worker died: SystemExit: 3", "deliver:legacy", delay=0)  # as the supervisor does
    legacy = Legacy()
    handle_b, _ = _handler(b, legacy)
    [again] = _receive(b, 1)
    handle_b(again)
    assert legacy.delivered == [d.message_id]


def test_claim_fresh_claims_or_reports_recorded_keys_and_holds_nothing_then(workers: tuple[Any, Any]) -> None:
    """``Transport.claim_fresh``: the claim and the look for recorded keys of one delivery
    (one round trip on the shared stores); a claim found recorded, or not whole, leaves no
    claim behind. ``record_claimed`` ends the claim with the commit that records the keys
    on the shared stores (the embedded one ends its in-process claim after the commit)."""
    a, b = workers
    later = time.time() + 60
    assert a.claim_fresh(CONSUMER, ["id:1", "key:F-1"], later) == "claimed"
    assert b.claim_fresh(CONSUMER, ["id:2", "key:F-1"], later) == "busy"  # key:F-1 is being delivered
    assert b.claim_fresh(CONSUMER, ["id:2"], later) == "claimed"  # the busy one claimed nothing
    with a.transaction() as tx:
        unclaimed = tx.record_claimed(CONSUMER, ["key:F-1", "id:1"])
    assert unclaimed is (a is not b)  # the shared stores: in the commit
    if not unclaimed:
        a.unclaim(CONSUMER, ["key:F-1", "id:1"])
    assert a.seen(CONSUMER, ["id:1", "key:F-1"]) == {"id:1", "key:F-1"}
    assert b.claim_fresh(CONSUMER, ["id:3", "key:F-1"], later) == "recorded"
    assert b.claim(CONSUMER, ["id:3"], later)  # the copy found recorded left no claim of its own id
    assert b.claim_fresh(CONSUMER, ["id:4", "key:F-2"], time.time() - 0.001) == "claimed"  # over already
    assert a.claim_fresh(CONSUMER, ["key:F-2"], later) == "claimed"


def test_a_copy_whose_claim_finds_its_keys_recorded_is_acknowledged_as_a_duplicate(workers: tuple[Any, Any]) -> None:
    """A copy that reaches the delivery handler after the first copy was delivered and
    recorded (past the receiver's look, e.g. received just before that commit) is acknowledged
    by the claim, which reports the keys recorded: never delivered, nothing left claimed."""
    a, b = workers
    legacy = Legacy()
    handle_a, _ = _handler(a, legacy)
    handle_b, patterns_b = _handler(b, legacy)
    a.send(QUEUE, _order("G-1"))
    [first] = _receive(a, 1)
    handle_a(first)
    assert legacy.delivered == [first.message_id]
    b.send(QUEUE, _order("G-1"))
    [copy] = _receive(b, 1)
    handle_b(copy)  # the handler itself, not the receiver's look before it
    assert legacy.delivered == [first.message_id]
    assert patterns_b.idempotent is not None and patterns_b.idempotent.duplicates == 1
    assert b.receive_wait(QUEUE, CONSUMER, max=1, wait=0.5) == []  # acknowledged, not given back
    assert b.claim(CONSUMER, [f"id:{copy.message_id}"], time.time() + 60)  # no claim left behind


def test_a_claim_meeting_the_commit_that_records_waits_for_it_then_finds_the_keys(tmp_path: Path) -> None:
    """PostgreSQL-only store: the claim of a delivered message ends in the transaction that
    records its keys and acknowledges it. Another daemon's claim of the same key meanwhile
    waits for that transaction, then finds the keys recorded (and holds no claim)."""
    with daemons("postgres") as ((a, b), schema):
        later = time.time() + 60
        assert a.claim_fresh(CONSUMER, ["id:W", "key:W-1"], later) == "claimed"
        result: list[str] = []
        th = threading.Thread(target=lambda: result.append(b.claim_fresh(CONSUMER, ["id:W2", "key:W-1"], later)))
        with a.transaction() as tx:
            assert tx.record_claimed(CONSUMER, ["id:W", "key:W-1"]) is True
            assert tx.seen(CONSUMER, ["key:W-1"]) == {"key:W-1"}
            th.start()
            deadline = time.monotonic() + 30
            while not waiting_on_a_lock(f"{schema}.state"):  # b's claim waits on the claim row
                assert time.monotonic() < deadline, "the other daemon's claim did not wait"
                assert not result, result
                time.sleep(0.02)
            assert not result
        th.join(30)
        assert result == ["recorded"]
        assert b.claim(CONSUMER, ["id:W2"], later)  # its own claims deleted with the look
        assert a.claim(CONSUMER, ["id:W"], later)  # the recorded message's claim is gone


def test_an_outbound_receiver_refuses_keyless_messages_and_leaves_the_look_to_the_claim(
        workers: tuple[Any, Any]) -> None:
    """The receiver of a consumer whose handler claims (``ConsumerPatterns.claims``, an
    outbound adapter's worker) sends a message without the business key to the Invalid
    Message Channel and lets the others through without looking for their keys: a copy of a
    delivered message is dropped by the claim instead (the same outcome, one look fewer)."""
    a, _ = workers
    legacy = Legacy()
    handle, patterns = _handler(a, legacy)
    patterns.claims = True  # as the daemon's outbound workers
    receive = patterns.receiver(a, lambda wait: a.receive_wait(QUEUE, CONSUMER, max=10, wait=wait))

    def next_delivery() -> Delivery:
        deadline = time.monotonic() + 30
        while not (got := receive(1.0)):
            assert time.monotonic() < deadline, "nothing received"
        [d] = got
        return d

    a.send(QUEUE, [Envelope(format=FMT, body=b"{}"), _order("H-1")])  # the first has no order_no
    first = next_delivery()
    assert first.envelope.properties == {"order_no": "H-1"}
    [invalid] = a.dead_letters(kind="invalid")
    assert "has no properties.order_no" in invalid.reason
    handle(first)
    a.send(QUEUE, _order("H-1"))
    copy = next_delivery()  # not dropped by the receiver: no look there
    handle(copy)
    assert legacy.delivered == [first.message_id]
    assert patterns.idempotent is not None and patterns.idempotent.duplicates == 1


def test_many_copies_delivered_by_competing_workers_reach_the_legacy_system_once_each(
        workers: tuple[Any, Any]) -> None:
    """Three copies of each of 20 orders, delivered by four workers (two a daemon) at once,
    the legacy system slow enough for deliveries to overlap: each order reaches it once, and
    every other copy is acknowledged as a duplicate (none lost, none dead-lettered)."""
    a, b = workers
    for t in {a, b}:
        t.declare(QUEUE, lease_seconds=2.0)
    orders = [f"M-{i}" for i in range(20)]
    a.send(QUEUE, [_order(no) for no in orders for _ in range(3)])
    legacy = Legacy()
    reached: list[str] = []

    class Slow:
        def deliver(self, env: Envelope) -> str:
            with legacy.lock:
                reached.append(env.properties["order_no"])
            time.sleep(0.005)
            return legacy.deliver(env)

    handlers = [_handler(t, Slow()) for t in (a, a, b, b)]
    errors: list[BaseException] = []
    deadline = time.monotonic() + 120

    def settled() -> int:
        return len(legacy.delivered) + sum(p.idempotent.duplicates for _, p in handlers if p.idempotent)

    def work(t: Any, handle: Any) -> None:
        try:
            while settled() < 60 and time.monotonic() < deadline:
                for d in t.receive_wait(QUEUE, CONSUMER, max=1, wait=0.2):
                    handle(d)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t, h)) for t, (h, _) in zip((a, a, b, b), handlers, strict=True)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(150)
    assert not errors, errors
    assert sorted(reached) == sorted(orders), "an order reached the legacy system twice (or never)"
    assert settled() == 60
    assert a.dead_letters() == []
    assert a.receive_wait(QUEUE, CONSUMER, max=1, wait=0.3) == []
