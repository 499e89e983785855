"""Fixtures shared by every suite."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def pytest_sessionstart(session: pytest.Session) -> None:
    """The Cobrix corpus is the copybook translator's acceptance oracle: without it the run
    fails at once instead of skipping the tests that prove decoding right."""
    corpus = SHARED / "corpus" / "cobrix"
    if not corpus.is_dir():
        pytest.exit(f"the Cobrix corpus is missing at {corpus}: clone the project beside shared/", returncode=1)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def cobrix_corpus() -> Path:
    """The Cobrix oracle corpus (``shared/`` lies beside the clone)."""
    path = SHARED / "corpus" / "cobrix"
    if not path.is_dir():
        pytest.fail(f"the Cobrix corpus is missing at {path}: clone the project beside shared/")
    return path
