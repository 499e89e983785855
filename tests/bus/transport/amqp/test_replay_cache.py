"""The replay cache of a multi-node site (``AdapterContext.remember``) lives in the shared
PostgreSQL: a WS-Security nonce used at one daemon is refused at every other (issue 17)."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import zeep
from zeep.exceptions import Fault
from zeep.wsse.username import UsernameToken

from coupler.adapters.soap import SoapAdapter
from coupler.bus.runtime.context import BusContext, Statistics
from coupler.bus.transport.amqp.transport import AmqpTransport
from tests.adapters.soap.conftest import WSDL
from tests.bus.transport.amqp.broker import AMQP_URL, PG_DSN, cleanup, servers_or_fail, unique_names


@pytest.fixture
def two_daemons(tmp_path: Path) -> Iterator[list[AmqpTransport]]:
    """Two transports of one site (the same prefix and PostgreSQL schema), as two daemons have."""
    servers_or_fail()
    names = unique_names()
    transports = [AmqpTransport(AMQP_URL, postgres=PG_DSN, **names).open() for _ in range(2)]
    try:
        yield transports
    finally:
        for t in transports:
            t.close()
        cleanup(transports[0])


def test_one_nonce_is_new_exactly_once_across_daemons(two_daemons: list[AmqpTransport]) -> None:
    results: list[bool] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def use(t: AmqpTransport) -> None:
        start.wait()
        new = t.remember("remember:wsse-nonce", "nonce-1", 300)
        with lock:
            results.append(new)

    threads = [threading.Thread(target=use, args=(two_daemons[i % 2],)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    assert sorted(results) == [False] * 7 + [True]
    assert two_daemons[1].remember("remember:wsse-nonce", "nonce-2", 300) is True
    assert two_daemons[0].remember("remember:other-scope", "nonce-1", 300) is True


def test_a_soap_token_used_at_one_daemon_is_refused_at_the_other(two_daemons: list[AmqpTransport], tmp_path: Path) -> None:
    adapters = []
    for i, transport in enumerate(two_daemons):
        context = BusContext(
            name="policy-in", config={}, data_dir=tmp_path / f"node{i}", transport=transport,
            statistics=Statistics(), reply_timeout=1,
        )
        adapter = SoapAdapter(
            "policy-in",
            {"mode": "server", "wsdl": str(WSDL), "target": "quotes", "listen_port": 0,
             "users": {"agent": "s3cret"}, "timeout": 1},
            context,
        )
        adapter.start()
        adapters.append(adapter)
    try:
        token = UsernameToken(
            "agent", "s3cret", use_digest=True, nonce="captured", created=datetime.datetime.now(datetime.UTC)
        )
        services = [zeep.Client(f"{a.url}?wsdl", wsse=token).bind("PolicyService", "PolicyPort11") for a in adapters]
        # daemon 1 authenticates it (nobody serves the target here: the bus times out, a Server fault)
        with pytest.raises(Fault) as first:
            services[0].GetQuote(policyId="P-1", driverAge=60)
        assert first.value.code.endswith("Server") and "authentication" not in first.value.message
        # daemon 2 has never seen this request, and still refuses its nonce
        with pytest.raises(Fault, match="authentication failed") as replay:
            services[1].GetQuote(policyId="P-1", driverAge=60)
        assert replay.value.code.endswith("Client")
    finally:
        for a in adapters:
            a.stop()
