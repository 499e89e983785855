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
