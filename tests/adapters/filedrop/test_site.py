"""File drop adapters run by the daemon from a site.toml: the site-level `direction` is the
only one, and relative paths in options are relative to the directory of site.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

from coupler.adapters.common.errors import AdapterConfigError
from coupler.bus.config.loader import load_site
from coupler.bus.runtime.daemon import Daemon
from coupler.canonical.errors import CouplerError
from tests.bus.site_helpers import running_daemon, wait_for

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
directory = "drop"
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
directory = "out"
file_name = "all.txt"
file_exists = "append"
line_terminator = "\\n"
"""


def test_relative_directories_and_the_site_level_direction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "site.toml").write_text(SITE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # relative to site.toml, not to the working directory
    with running_daemon(site_dir / "site.toml", plugins=None) as daemon:
        inbound, outbound = daemon.adapters["lines-in"].adapter, daemon.adapters["lines-out"].adapter
        assert inbound.describe()["direction"] == "inbound" and outbound.describe()["direction"] == "outbound"
        assert inbound.pipeline is not None and inbound.writer is None
        assert outbound.writer is not None and outbound.pipeline is None
        (site_dir / "drop" / "batch.txt").write_text("one\ntwo\n")
        target = site_dir / "out" / "all.txt"
        wait_for(lambda: target.exists() and target.read_text() == "one\ntwo\n", "the lines written out")
        wait_for(lambda: (site_dir / "drop" / "archive" / "batch.txt").exists(), "the input archived")
    assert not (elsewhere / "drop").exists() and not (elsewhere / "out").exists()


def test_direction_in_the_options_is_refused_with_where_it_belongs(tmp_path: Path) -> None:
    text = SITE.replace('[adapters.options]\ndirectory = "out"', '[adapters.options]\ndirection = "outbound"\ndirectory = "out"')
    (tmp_path / "site.toml").write_text(text)
    daemon = Daemon(load_site(tmp_path / "site.toml"))
    with pytest.raises(CouplerError, match=r"lines-out.*options\.direction.*direction. in site\.toml") as info:
        daemon.start()
    assert isinstance(info.value.__cause__, AdapterConfigError)
    assert daemon.stopped.is_set()
