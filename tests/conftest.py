"""Fixtures shared by every suite."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
COBRIX = REPO / "tests" / "translators" / "copybook" / "data" / "cobrix"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def cobrix_corpus() -> Path:
    """The Cobrix oracle corpus, kept in the repository with its Apache-2.0 licence."""
    return COBRIX


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test`` runs two workers), every Spark test goes to one
    worker, so the suite starts one Spark session (a JVM) and not one per worker. A Spark
    test has twice the usual time-out: pytest-timeout interrupting a call into the JVM
    leaves the shared session unusable for every Spark test after it (seen at load 20)."""
    spark = REPO / "tests" / "spark"
    for item in items:
        if spark in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.xdist_group("spark"))
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(600))
