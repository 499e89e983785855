"""One Spark session (``local[2]``) for the whole test session, with Coupler's data sources.

Its JVM is lean (``lean_jvm``: the client JIT only): the tests' inputs are kilobytes to a few
megabytes, and C2's compiles of code that then runs milliseconds were CPU of their own
(three files of Spark tests here: 67-71 s of CPU -> 42-43 s, 71-82 s -> 57-60 s)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from coupler.bus.batch.jobs import spark_session

    sigint = signal.getsignal(signal.SIGINT)
    session = spark_session("local[2]", app_name="coupler-tests", conf={"spark.sql.shuffle.partitions": "2"}, lean_jvm=True)
    yield session
    session.stop()
    # pyspark's SparkContext puts in its own SIGINT handler (cancel the jobs) and leaves it after
    # stop(), when it can only fail: an interrupt at the end of the run printed its traceback
    signal.signal(signal.SIGINT, sigint)
