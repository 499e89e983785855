"""What the file drop's log lines say about a file: its modification time as a UTC timestamp
a person reads (not the raw nanoseconds the seen-state keys on)."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path

import pytest

from tests.bus.runtime.console.helpers import console_site
from tests.bus.site_helpers import running_daemon, wait_for


def test_the_took_line_shows_the_mtime_as_a_utc_timestamp(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    site = console_site(tmp_path)
    dropped = tmp_path / "in" / "order-1.json"
    dropped.write_text(json.dumps({"order": 1}))
    os.utime(dropped, ns=(1_764_160_000_123_456_789, 1_764_160_000_123_456_789))
    with caplog.at_level(logging.INFO), running_daemon(site, plugins=None):
        wait_for(lambda: (tmp_path / "out" / "order-1.json").exists(), "the file delivered")
    [took] = [r.getMessage() for r in caplog.records if ": took " in r.getMessage()]
    assert "order-1.json (12 bytes, modified 2025-11-26T12:26:40.123Z)" in took, took
    assert not re.search(r"\d{13,}", took), took
