"""The ``transport`` fixture: every contract test runs against every transport in TRANSPORTS."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from coupler.bus.testing.contract import CONTRACT_OPTIONS
from coupler.bus.transport.base import Transport
from tests.bus.transport.contract.support import TRANSPORTS


@pytest.fixture(params=sorted(TRANSPORTS))
def transport(request: pytest.FixtureRequest, tmp_path) -> Iterator[Transport]:
    factory = TRANSPORTS[request.param]
    t = factory(tmp_path / "data", **CONTRACT_OPTIONS)
    try:
        yield t
    finally:
        t.close()
        cleanup = getattr(factory, "cleanup", None)  # a broker transport deletes its queues
        if cleanup is not None:
            cleanup(t)
