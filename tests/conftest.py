"""Fixtures shared by every suite."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


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
