"""One Spark session (``local[2]``) for the whole test session, with Coupler's data sources."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from coupler.bus.batch.jobs import spark_session

    sigint = signal.getsignal(signal.SIGINT)
    session = spark_session("local[2]", app_name="coupler-tests", conf={"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()
    # pyspark's SparkContext puts in its own SIGINT handler (cancel the jobs) and leaves it after
    # stop(), when it can only fail: an interrupt at the end of the run printed its traceback
    signal.signal(signal.SIGINT, sigint)
