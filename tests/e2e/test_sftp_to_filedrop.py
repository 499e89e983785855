"""Acceptance: `coupler daemon` runs an SFTP inbound adapter reading copybook files from a
real sshd, publishing one canonical record per COBOL record, and a file drop outbound
adapter writing them as JSON lines; `coupler ctl status --json` shows both with counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.adapters.sftp.sshd import PASSPHRASE, Sshd
from tests.bus.site_helpers import REPO

COPYBOOK = """\
       01  CUSTOMER.
           05  CUST-ID      PIC 9(4).
           05  CUST-NAME    PIC X(6).
"""


def coupler(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coupler.bus.cli.main", *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def sshd(tmp_path: Path):
    server = Sshd(tmp_path / "sshd").start()
    yield server
    server.stop()


def test_sftp_copybook_records_to_json_lines(tmp_path: Path, sshd: Sshd) -> None:
    remote, out = tmp_path / "remote", tmp_path / "out"
    remote.mkdir()
    (tmp_path / "customer.cpy").write_text(COPYBOOK)
    site = tmp_path / "site.toml"
    site.write_text(f"""
[site]
name = "e2e-sftp"
data_dir = "{tmp_path / 'data'}"

[[adapters]]
name = "legacy-sftp"
type = "sftp"
direction = "inbound"
channel = "customers"
format = "acme.Customer@1"
[adapters.options]
host = "127.0.0.1"
port = {sshd.port}
username = "root"
private_key = "{sshd.keys['ed25519']}"
passphrase = "{PASSPHRASE}"
known_hosts = "{sshd.known_hosts}"
remote_directory = "{remote}"
include = ["*.dat"]
stable_seconds = 0.5
poll_interval = 0.2
max_poll_interval = 1.0
payload = "copybook"
copybook = "{tmp_path / 'customer.cpy'}"

[[adapters]]
name = "json-out"
type = "filedrop"
direction = "outbound"
channel = "customers"
[adapters.options]
directory = "{out}"
file_name = "customers.jsonl"
file_exists = "append"
line_terminator = "\\n"
""")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    daemon = subprocess.Popen([sys.executable, "-m", "coupler.bus.cli.main", "daemon", "--site", str(site)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        records = "".join(f"{i:04d}{name:<6}" for i, name in enumerate(["ALICE", "BOB", "CAROL"], start=1))
        (remote / "customers.dat").write_bytes(records.encode("cp037"))
        target = out / "customers.jsonl"
        deadline = time.monotonic() + 60
        lines: list[str] = []
        while time.monotonic() < deadline:
            if target.exists():
                lines = target.read_text().splitlines()
                if len(lines) >= 3:
                    break
            assert daemon.poll() is None, daemon.communicate()[1]
            time.sleep(0.1)
        assert [json.loads(line) for line in lines] == [
            {"CUST_ID": 1, "CUST_NAME": "ALICE"}, {"CUST_ID": 2, "CUST_NAME": "BOB"},
            {"CUST_ID": 3, "CUST_NAME": "CAROL"},
        ]
        deadline = time.monotonic() + 60  # the archive move comes after the last record is on the bus
        while not (remote / "archive" / "customers.dat").exists():
            assert time.monotonic() < deadline, "the input was never archived"
            time.sleep(0.05)
        for _ in range(50):  # the last acknowledgement may lag the file by an instant
            status = coupler("ctl", "--site", str(site), "status", "--json", env=env)
            assert status.returncode == 0, status.stderr
            adapters = {a["name"]: a for a in json.loads(status.stdout)["adapters"]}
            if adapters["json-out"]["in"] == 3:
                break
            time.sleep(0.1)
        assert adapters["legacy-sftp"]["out"] == 3 and adapters["legacy-sftp"]["state"] == "running"
        assert adapters["json-out"]["in"] == 3 and adapters["json-out"]["failed"] == 0, adapters
        assert adapters["json-out"]["state"] == "running"
    finally:
        daemon.terminate()
        try:
            daemon.wait(30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
