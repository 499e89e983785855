"""Adapter health in `coupler ctl status` and `ctl adapters` (issue 6: "the adapter's health
and a poll that is taking too long are visible in coupler ctl status"): a file drop poll held
up past `poll_timeout`, an SFTP server that accepts connections and never answers."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coupler.bus.cli.main import main
from tests.bus.site_helpers import running_daemon, wait_for


def ctl(capsys: pytest.CaptureFixture[str], site: Path, *argv: str) -> str:
    assert main(["ctl", "--site", str(site), *argv]) == 0
    return capsys.readouterr().out


def adapter_row(capsys: pytest.CaptureFixture[str], site: Path, name: str) -> dict[str, Any]:
    status = json.loads(ctl(capsys, site, "status", "--json"))
    return next(a for a in status["adapters"] if a["name"] == name) | {"_alerts": status["alerts"]}


FILEDROP_SITE = """
[site]
data_dir = "data"

[[adapters]]
name = "drop-in"
type = "filedrop"
direction = "inbound"
channel = "lines"
format = "test.Line@1"
[adapters.options]
directory = "drop"
payload = "lines"
stable_seconds = 0
poll_interval = 0.05
max_poll_interval = 0.1
poll_timeout = 0.3
"""


def test_an_overdue_file_drop_poll_shows_in_ctl_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site.toml"
    site.write_text(FILEDROP_SITE)
    with running_daemon(site, plugins=None) as daemon:
        row = adapter_row(capsys, site, "drop-in")
        assert row["health"]["status"] == "ok" and row["health"]["problems"] == []
        assert row["health"]["poll"]["poll_overdue"] is False and row["_alerts"] == []
        # paused, the adapter's publish waits: the poll that found the file cannot finish
        ctl(capsys, site, "pause", "drop-in")
        (tmp_path / "drop" / "lines.txt").write_text("a\nb\n")

        def overdue() -> dict[str, Any] | None:
            r = adapter_row(capsys, site, "drop-in")
            return r if r["health"]["poll"]["poll_overdue"] else None

        row = wait_for(overdue, "the poll to be overdue")
        assert row["health"]["status"] == "degraded"
        assert row["health"]["problems"][0].startswith("poll overdue: running for ")
        assert {"adapter": "drop-in", "alert": row["health"]["problems"][0]} in row["_alerts"]
        text = ctl(capsys, site, "status")
        assert "ALERT adapter drop-in: poll overdue" in text and "degraded: poll overdue" in text
        assert "degraded: poll overdue" in ctl(capsys, site, "adapters")
        assert json.loads(ctl(capsys, site, "adapters", "--json"))[0]["health"]["status"] == "degraded"
        ctl(capsys, site, "resume", "drop-in")
        assert daemon.transport is not None
        wait_for(lambda: len(daemon.transport.peek("lines", 10)) == 2, "the lines published")
        row = wait_for(lambda: (r := adapter_row(capsys, site, "drop-in"))["health"]["status"] == "ok" and r,
                    "the health back to ok")
        assert row["_alerts"] == []


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP server that accepts connections and never says a word (a hung SSH server)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_a_hung_and_disconnected_sftp_server_shows_in_ctl_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], silent_server: int
) -> None:
    site = tmp_path / "site.toml"
    site.write_text(f"""
[site]
data_dir = "data"

[[adapters]]
name = "sftp-in"
type = "sftp"
direction = "inbound"
channel = "files"
[adapters.options]
host = "127.0.0.1"
port = {silent_server}
username = "coupler"
password = "secret"
host_key_fingerprint = "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU"
connect_timeout = 2
reconnect_delay = 0.1
reconnect_max_delay = 0.2
poll_interval = 0.05
max_poll_interval = 0.1
poll_timeout = 0.5
""")
    with running_daemon(site, plugins=None):
        row = wait_for(lambda: (r := adapter_row(capsys, site, "sftp-in"))["health"]["poll"]["poll_overdue"] and r,
                    "the poll waiting for the banner to be overdue")
        assert any(p.startswith("poll overdue") for p in row["health"]["problems"])
        row = wait_for(lambda: (r := adapter_row(capsys, site, "sftp-in"))["health"]["status"] == "down" and r,
                    "the failed connection to show")
        port = silent_server
        disconnected = [p for p in row["health"]["problems"] if p.startswith("disconnected from ")]
        assert disconnected and f"sftp://coupler@127.0.0.1:{port}" in disconnected[0]
        assert row["health"]["connection"]["connected"] is False
        assert row["health"]["connection"]["connect_failures"] >= 1
        text = ctl(capsys, site, "status")
        assert f"ALERT adapter sftp-in: disconnected from sftp://coupler@127.0.0.1:{port}" in text
        assert "down: " in ctl(capsys, site, "adapters")
