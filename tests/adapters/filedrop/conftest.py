from __future__ import annotations

import pytest

from ..filebus import bus_fixture

bus = pytest.fixture(bus_fixture, name="bus")
