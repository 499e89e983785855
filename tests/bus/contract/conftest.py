"""The ``transport`` fixture: every contract test runs against every transport in TRANSPORTS."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from coupler.bus.model.backoff import BackoffPolicy
from coupler.bus.transport.base import Transport

from .support import CLAIM_THRESHOLD, TRANSPORTS


@pytest.fixture(params=sorted(TRANSPORTS))
def transport(request: pytest.FixtureRequest, tmp_path) -> Iterator[Transport]:
    factory = TRANSPORTS[request.param]
    t = factory(
        tmp_path / "data",
        backoff=BackoffPolicy(initial_delay=0.05, multiplier=2, max_delay=0.2, max_attempts=3, jitter=0),
        claim_threshold=CLAIM_THRESHOLD,
    )
    try:
        yield t
    finally:
        t.close()
        cleanup = getattr(factory, "cleanup", None)  # a broker transport deletes its queues
        if cleanup is not None:
            cleanup(t)
