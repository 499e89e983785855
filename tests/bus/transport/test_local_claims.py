"""``Transport.claim``'s default: claims with a lease kept in the process (the embedded store's
outbound Idempotent Receiver; a third-party transport's unless it keeps them in its store).
What a worker relies on: a second claim of a claimed key in the same process is refused (all or
none: nothing of it is claimed) until the first is given up or its lease ends; also on a
transport class that does not call ``Transport.__init__`` or that declares ``__slots__``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coupler.bus.transport.base import Transport
from coupler.bus.transport.sqlite.transport import SqliteTransport
from tests.bus.transport.contract.support import FakeClock


def _stub(*_args: Any, **_kwargs: Any) -> Any:
    raise NotImplementedError


class _Minimal(Transport):
    """A transport of a plugin's kind: ``__slots__``, its own ``__init__`` that does not call
    ``Transport.__init__``, the claims of the default."""

    __slots__ = ("label",)

    def __init__(self, clock: FakeClock):
        self.label = "minimal"
        self.keep_policy(clock=clock)


for _name in sorted(Transport.__abstractmethods__):
    setattr(_Minimal, _name, _stub)
_Minimal.__abstractmethods__ = frozenset()


@pytest.fixture(params=["sqlite", "minimal"])
def claims(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Transport, FakeClock]]:
    clock = FakeClock()
    if request.param == "minimal":
        yield _Minimal(clock), clock
        return
    t = SqliteTransport(tmp_path, clock=clock).open()
    try:
        yield t, clock
    finally:
        t.close()


def test_a_claimed_key_is_refused_to_a_second_claim_until_given_up_or_over(claims) -> None:
    t, clock = claims
    until = clock.now + 30
    assert t.claim("adapter:x", ["id:1", "key:A"], until) is True
    assert t.claim("adapter:x", ["id:2", "key:A"], until) is False  # key:A is claimed: refused
    assert t.claim("adapter:x", ["id:2"], until) is True  # the refused claim took nothing
    clock.advance(29.5)
    assert t.claim("adapter:x", ["key:A"], clock.now + 30) is False  # still live
    clock.advance(1)  # the first claim's lease is over: a process that died holding it blocks no longer
    assert t.claim("adapter:x", ["id:1", "key:A"], clock.now + 30) is True
    t.unclaim("adapter:x", ["id:1", "key:A"])  # given up: claimable at once
    assert t.claim("adapter:x", ["key:A"], clock.now + 30) is True
    assert t.claim("adapter:y", ["key:A"], clock.now + 30) is True  # another scope: apart


def test_first_claims_of_one_key_from_many_threads_at_once_one_wins() -> None:
    """Worker threads of one daemon claiming the same message's key on a transport that has
    made no claim yet: exactly one gets it."""
    for _round in range(20):
        clock = FakeClock()
        t = _Minimal(clock)
        start = threading.Barrier(8)
        won: list[bool] = []

        def claim(t: _Minimal = t, start: threading.Barrier = start, won: list[bool] = won,
                  until: float = clock.now + 30) -> None:
            start.wait()
            won.append(t.claim("adapter:x", ["key:A"], until))

        threads = [threading.Thread(target=claim) for _ in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=10)
        assert sorted(won) == [False] * 7 + [True]
