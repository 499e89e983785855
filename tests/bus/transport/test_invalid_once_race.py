"""``context.invalid_once`` on a multi-node site: two daemons that read the same bad unit at
the same moment make one dead letter. The key is checked and recorded in one step
(``mark_new``): on the AMQP store a PostgreSQL row claimed in a transaction that commits after
the broker confirmed the dead letter; on the postgres store a row of the transaction that
makes the dead letter."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coupler.bus.runtime.context import BusContext, Statistics
from coupler.bus.transport import storage
from coupler.bus.transport.amqp.transport import AmqpTransport
from coupler.bus.transport.base import TransportError
from coupler.canonical import Envelope, FormatIndicator
from tests.bus.transport.multinode import STORES, daemons, waiting_on_a_lock


@pytest.fixture(params=sorted(STORES))
def two_daemons(request: pytest.FixtureRequest) -> Iterator[tuple[str, list[Any], str]]:
    """Two transports of one site (one prefix, one PostgreSQL schema), as two daemons have."""
    with daemons(request.param) as (transports, schema):
        yield request.param, transports, schema



def test_two_daemons_refusing_one_unit_at_once_make_one_dead_letter(
    two_daemons: tuple[str, list[Any], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, transports, schema = two_daemons
    tx_class, table = STORES[store]
    contexts = [BusContext(name="rows", config={}, data_dir=tmp_path / f"node{i}", transport=t,
                           statistics=Statistics(), channel="in") for i, t in enumerate(transports)]
    bad = Envelope(format=FormatIndicator("acme.Payment", 1, "application/json"), body=b'{"AMOUNT": "x1"}',
                   message_id="db:payments:7")
    # the first daemon to make the dead letter (it checked the key: not there) waits, inside its
    # transaction, until the other has checked too or waits for it: the two checks overlap
    first: list[str] = []
    other_checked = threading.Event()
    make_dead_letter = tx_class.invalid_later  # what invalid_once calls, inside its transaction

    def invalid_later(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        me = threading.current_thread().name
        if not first:
            first.append(me)
            deadline = time.monotonic() + 30
            while not (other_checked.wait(0.01) or waiting_on_a_lock(f"{schema}.{table}")):
                assert time.monotonic() < deadline, "the other daemon neither checked the key nor waited for it"
        else:
            other_checked.set()
        return make_dead_letter(self, *args, **kwargs)

    monkeypatch.setattr(tx_class, "invalid_later", invalid_later)
    results: dict[str, int | None] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def refuse(i: int) -> None:
        try:
            start.wait()
            results[f"node{i}"] = contexts[i].invalid_once(bad, "field AMOUNT: not a number", "db:payments:7:ab12")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=refuse, args=(i,), name=f"node{i}") for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert not errors and len(results) == 2
    assert sorted(r is None for r in results.values()) == [False, True]  # one made it, one found it
    letters = transports[1].dead_letters(kind="invalid", limit=10)
    assert [d.envelope.message_id for d in letters] == ["db:payments:7"]  # type: ignore[union-attr]
    # a key recorded with its dead letter: a third try (after both committed) finds it
    assert contexts[1].invalid_once(bad, "again", "db:payments:7:ab12") is None


def test_a_key_whose_dead_letter_failed_is_not_recorded(
    two_daemons: tuple[str, list[Any], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, transports, _schema = two_daemons
    ctx = BusContext(name="rows", config={}, data_dir=tmp_path, transport=transports[0], statistics=Statistics(),
                     channel="in")
    bad = Envelope(format=FormatIndicator("acme.Payment", 1, "application/json"), body=b"{", message_id="m-1")

    def broker_gone(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise TransportError("the broker refused the dead letter")

    with monkeypatch.context() as m:
        m.setattr(*((AmqpTransport, "_invalid") if store == "amqp" else (storage.StorageTransaction, "invalid_later")),
                  broker_gone)
        with pytest.raises(TransportError):
            ctx.invalid_once(bad, "not JSON", "m-1:k")
    assert transports[0].dead_letters(kind="invalid", limit=10) == []
    assert transports[1].seen("invalid:adapter:rows", ["m-1:k"]) == set()  # the claim rolled back
    assert ctx.invalid_once(bad, "not JSON", "m-1:k") is not None  # and is made when read again
    assert len(transports[0].dead_letters(kind="invalid", limit=10)) == 1
