"""Fixtures shared by every suite."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
COBRIX = REPO / "tests" / "translators" / "copybook" / "data" / "cobrix"
SPARK = REPO / "tests" / "spark"
DEMO = REPO / "tests" / "e2e" / "test_demo.py"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def cobrix_corpus() -> Path:
    """The Cobrix oracle corpus, kept in the repository with its Apache-2.0 licence."""
    return COBRIX


def pytest_itemcollected(item: pytest.Item) -> None:
    """Under pytest-xdist (``make test`` runs two workers), every test that uses a Spark
    session in its own process (the ``spark`` fixture, or marked ``spark_in_process``) goes
    to one worker, so the suite starts one Spark session (a JVM) and not one per worker; the
    demo's tests too, so that the demo (a module fixture) runs once. The other tests of
    ``tests/spark`` (splits planned in Python, ``spark-submit`` and the sessions started in a
    child process) are shared out like any test, so the Spark worker is not the run's tail.
    Marked as each item is collected: pytest-xdist reads the groups in its own
    ``pytest_collection_modifyitems``, which runs before a conftest's. A test of
    ``tests/spark`` has twice the usual time-out: pytest-timeout interrupting a call into the
    JVM leaves the shared session unusable for every Spark test after it (seen at load 20)."""
    path = Path(str(item.path))
    xdist = item.config.pluginmanager.hasplugin("xdist")
    if SPARK in path.parents:
        in_session = "spark" in getattr(item, "fixturenames", ()) or item.get_closest_marker("spark_in_process")
        if xdist and in_session:
            item.add_marker(pytest.mark.xdist_group("spark"))
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(600))
    elif path == DEMO and xdist:
        item.add_marker(pytest.mark.xdist_group("demo"))



@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's
def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    """On the pytest-xdist controller under ``--dist loadgroup``: stop the run if the Spark
    tests lost their group (pytest 9.2 with pytest-xdist 3.8 ignores the node ids xdist
    rewrites, pytest-dev/pytest-xdist#1386): each worker would start a JVM and the demo would
    run twice, silently, a third of ``make test``'s time on a slow machine."""
    spark = [i for i in ids if i.startswith("tests/spark/")]
    if spark and not any(i.endswith("@spark") for i in spark):  # the Spark session's tests lost their group
        pytest.exit(f"pytest-xdist's --dist loadgroup does not group {spark[0]} (nor any Spark test): this "
                    "pytest and pytest-xdist do not work together; install the versions pyproject.toml asks for "
                    "(make venv)", returncode=4)
