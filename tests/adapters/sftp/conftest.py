from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ..filebus import bus_fixture
from .sshd import Sshd

bus = pytest.fixture(bus_fixture, name="bus")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    server = Sshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """A directory the SFTP tests use as the remote side (root logs in, so any path works)."""
    path = tmp_path / "remote"
    path.mkdir()
    return path
