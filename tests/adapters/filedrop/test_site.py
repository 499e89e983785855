"""File drop adapters run by the daemon from a site.toml: the site-level `direction` is the
only one."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from coupler.adapters.common.errors import AdapterConfigError
from coupler.bus.config import load_site
from coupler.bus.daemon import Daemon
from coupler.canonical.errors import CouplerError

SITE = """
[site]
data_dir = "data"

[[adapters]]
name = "lines-in"
type = "filedrop"
direction = "inbound"
channel = "lines"
format = "test.Line@1"
[adapters.options]
directory = "{root}/drop"
payload = "lines"
stable_seconds = 0
poll_interval = 0.05
max_poll_interval = 0.2

[[adapters]]
name = "lines-out"
type = "filedrop"
direction = "outbound"
channel = "lines"
[adapters.options]
directory = "{root}/out"
file_name = "all.txt"
file_exists = "append"
line_terminator = "\\n"
"""


@contextmanager
def running(site_file: Path) -> Iterator[Daemon]:
    daemon = Daemon(load_site(site_file))
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.shutdown()


def wait_for(predicate, what: str, timeout: float = 30.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_direction_in_the_options_is_refused_with_where_it_belongs(tmp_path: Path) -> None:
    text = SITE.replace('[adapters.options]\ndirectory = "{root}/out"', '[adapters.options]\ndirection = "outbound"\ndirectory = "{root}/out"')
    (tmp_path / "site.toml").write_text(text.replace("{root}", str(tmp_path)))
    daemon = Daemon(load_site(tmp_path / "site.toml"))
    with pytest.raises(CouplerError, match=r"lines-out.*options\.direction.*direction. in site\.toml") as info:
        daemon.start()
    assert isinstance(info.value.__cause__, AdapterConfigError)
    assert daemon.stopped.is_set()
