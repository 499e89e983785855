"""The Idempotent Receiver of a route on a store shared by concurrent workers (competing
consumers of one daemon, or the daemons of a multi-node site): two copies of one message (one
business key) handled at the same moment are handled once. The key is checked and recorded in
one step (``mark_new``) at the start of the handling transaction: the second copy's
transaction waits on the first's key, then acknowledges it as a duplicate. A handling that
fails records no key: the copy is handled when it comes again."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from coupler.bus.config.loader import parse_site
from coupler.bus.runtime.consumers import ConsumerPatterns
from coupler.bus.runtime.router import Route
from coupler.bus.runtime.steps.pipeline import Pipeline
from coupler.bus.transport.base import Delivery
from coupler.canonical import Envelope, FormatIndicator
from tests.bus.transport.multinode import STORES, daemons, waiting_on_a_lock

SITE = '[[routes]]\nfrom = "in"\nidempotent_key = "properties.order_no"\n[[routes.rules]]\nto = ["out"]\n'
FMT = FormatIndicator("acme.Order", 1, "application/json")


@pytest.fixture(params=sorted(STORES))
def site(request: pytest.FixtureRequest) -> Iterator[tuple[Any, str]]:
    with daemons(request.param, 1) as ((t,), schema):
        yield t, f"{schema}.{STORES[request.param][1]}"


def _route(t: Any) -> tuple[Pipeline, ConsumerPatterns]:
    config = parse_site(SITE).routes[0]
    patterns = ConsumerPatterns.declared(t, "route:in", "in", channel=None, idempotent_key=config.idempotent_key,
                                         throttle=None, where="routes[0]")
    return Pipeline(config.label, [], Route.from_config(config)), patterns


def _receive(t: Any, n: int) -> list[Delivery]:
    got: list[Delivery] = []
    deadline = time.monotonic() + 30
    while len(got) < n:
        assert time.monotonic() < deadline, f"{len(got)} of {n} copies received"
        got += t.receive_wait("in", "route:in", max=n - len(got), wait=1.0)
    return got


def _outputs(t: Any) -> list[Envelope]:
    out: list[Envelope] = []
    while got := t.receive("out", "test", max=10):
        out += [d.envelope for d in got]
        t.ack(got)
    return out


def test_two_copies_handled_at_once_are_handled_once(site: tuple[Any, str], monkeypatch: pytest.MonkeyPatch) -> None:
    t, table = site
    pipeline, patterns = _route(t)
    copies = [Envelope(format=FMT, body=b"{}", properties={"order_no": "A-7"}) for _ in range(2)]
    t.send("in", copies)
    leased = _receive(t, 2)
    # the first worker to run the route's steps waits, inside its transaction, until the other
    # runs them too or waits for the first's key: the two checks of the key overlap
    first: list[str] = []
    other_ran = threading.Event()
    run = Pipeline.run

    def overlapping(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not first:
            first.append(threading.current_thread().name)
            deadline = time.monotonic() + 30
            while not (other_ran.wait(0.01) or waiting_on_a_lock(table)):
                assert time.monotonic() < deadline, "the other worker neither ran the steps nor waited for the key"
        else:
            other_ran.set()
        return run(self, *args, **kwargs)

    monkeypatch.setattr(Pipeline, "run", overlapping)
    results: dict[str, str] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def handle(d: Delivery) -> None:
        try:
            start.wait()
            results[d.message_id] = pipeline.handle(t, d, patterns.settle, patterns.screen)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=handle, args=(d,), name=f"worker{i}") for i, d in enumerate(leased)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert not errors, errors
    assert not other_ran.is_set(), "both workers ran the route's steps for one business key"
    assert sorted(results.values()) == ["done", "duplicate"]
    assert len(_outputs(t)) == 1
    assert _receive_none(t)  # the duplicate acknowledged, not left on the queue


def _receive_none(t: Any) -> bool:
    return t.receive_wait("in", "route:in", max=2, wait=0.5) == []


def test_a_copy_whose_handling_failed_records_no_key(site: tuple[Any, str], monkeypatch: pytest.MonkeyPatch) -> None:
    t, _table = site
    pipeline, patterns = _route(t)
    t.send("in", Envelope(format=FMT, body=b"{}", properties={"order_no": "B-1"}))
    [d] = _receive(t, 1)

    def broken(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("a step's bug")

    with monkeypatch.context() as m:
        m.setattr(Pipeline, "run", broken)
        with pytest.raises(RuntimeError):
            pipeline.handle(t, d, patterns.settle, patterns.screen)
    assert t.seen("route:in", ["key:B-1"]) == set()  # the transaction and its key rolled back
    t.nack(d, "a step's bug", "route:in", delay=0)  # as the worker does with what raised
    [again] = _receive(t, 1)
    assert pipeline.handle(t, again, patterns.settle, patterns.screen) == "done"
    assert len(_outputs(t)) == 1
    assert t.seen("route:in", ["key:B-1"]) == {"key:B-1"}


def test_a_copy_waiting_for_one_that_fails_is_handled(site: tuple[Any, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The second copy waits for the first's key; the first's handling fails (rolled back, its
    key with it): the second records the key and is handled."""
    t, table = site
    pipeline, patterns = _route(t)
    t.send("in", [Envelope(format=FMT, body=b"{}", properties={"order_no": "C-3"}) for _ in range(2)])
    leased = _receive(t, 2)
    first: list[str] = []
    run = Pipeline.run

    def failing_first(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not first:
            first.append(threading.current_thread().name)
            deadline = time.monotonic() + 30
            while not waiting_on_a_lock(table):
                assert time.monotonic() < deadline, "the other worker did not wait for the key"
                time.sleep(0.01)
            raise RuntimeError("a step's bug")
        return run(self, *args, **kwargs)

    monkeypatch.setattr(Pipeline, "run", failing_first)
    results: dict[str, str] = {}
    start = threading.Barrier(2)

    def handle(d: Delivery) -> None:
        start.wait()
        try:
            results[threading.current_thread().name] = pipeline.handle(t, d, patterns.settle, patterns.screen)
        except RuntimeError as exc:
            results[threading.current_thread().name] = str(exc)

    threads = [threading.Thread(target=handle, args=(d,), name=f"worker{i}") for i, d in enumerate(leased)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert results == {first[0]: "a step's bug", **{n: "done" for n in results if n != first[0]}}
    assert len(results) == 2
    assert len(_outputs(t)) == 1
    assert t.seen("route:in", ["key:C-3"]) == {"key:C-3"}
