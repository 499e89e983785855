"""``coupler channel put --id-from`` run twice at the same moment on a multi-node site (two
daemons' control endpoints, or two operators): the ids are checked and recorded in one step
(``mark_new``) in the transaction that sends, so each message is put once. On the AMQP store
the ids' PostgreSQL rows are held until the broker confirmed the sends."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from coupler.bus.runtime.control import StoreService, encode_envelope
from coupler.bus.transport import storage
from coupler.bus.transport.amqp.transport import AmqpTransport
from tests.bus.transport.contract.support import doc, drain
from tests.bus.transport.multinode import STORES, daemons, waiting_on_a_lock


@pytest.fixture(params=sorted(STORES))
def two_daemons(request: pytest.FixtureRequest) -> Iterator[tuple[str, list[Any], str]]:
    """Two transports of one site (one prefix, one PostgreSQL schema), as two daemons have."""
    with daemons(request.param) as (transports, schema):
        yield request.param, transports, schema



def test_two_puts_of_one_batch_at_once_put_it_once(two_daemons: tuple[str, list[Any], str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    store, transports, schema = two_daemons
    tx_class, table = STORES[store]
    batch = [encode_envelope(doc(f"m{i}".encode()).replace(message_id=f"id-{i}")) for i in range(3)]
    # the first put to send waits, inside its transaction, until the other sends too or waits
    # for the first's ids: the two checks of the ids overlap
    first: list[str] = []
    other_sent = threading.Event()
    send = tx_class.send

    def overlapping(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not first:
            first.append(threading.current_thread().name)
            deadline = time.monotonic() + 30
            while not (other_sent.wait(0.01) or waiting_on_a_lock(f"{schema}.{table}")):
                assert time.monotonic() < deadline, "the other put neither sent nor waited for the ids"
        else:
            other_sent.set()
        return send(self, *args, **kwargs)

    monkeypatch.setattr(tx_class, "send", overlapping)
    results: dict[str, dict[str, Any]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def put(i: int) -> None:
        try:
            start.wait()
            results[f"node{i}"] = StoreService(transports[i]).call("channel.put", channel="q", envelopes=batch,
                                                                   skip_put=True)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=put, args=(i,), name=f"node{i}") for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert not errors, errors
    assert sorted(r["skipped"] for r in results.values()) == [0, 3]
    assert sorted(d.envelope.message_id for d in drain(transports[1], "q")) == ["id-0", "id-1", "id-2"]


def test_a_put_that_failed_records_no_ids(two_daemons: tuple[str, list[Any], str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    store, transports, _schema = two_daemons
    batch = [encode_envelope(doc(b"m").replace(message_id="id-9"))]

    def refused(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("the store refused the message")

    with monkeypatch.context() as m:
        m.setattr(*((AmqpTransport, "_send_confirmed") if store == "amqp" else (storage.StorageTransaction, "send")), refused)
        with pytest.raises(RuntimeError):
            StoreService(transports[0]).call("channel.put", channel="q", envelopes=batch, skip_put=True)
    result = StoreService(transports[1]).call("channel.put", channel="q", envelopes=batch, skip_put=True)
    assert result == {"message_ids": ["id-9"], "skipped": 0}
    assert [d.envelope.message_id for d in drain(transports[0], "q")] == ["id-9"]
