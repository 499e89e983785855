"""Large bodies as claimed files (issue 29 items 5 and 7).

* ``coupler channel put FILE`` streams a file over the store's ``claim_check_bytes`` into a
  claimed file in bounded memory (the peak RSS of the process is measured with ``wait4``);
* a claimed file is removed when the last message referring to it is settled: through a real
  daemon, a dropped file over the adapter's ``claim_check_bytes`` and a put one, each sent to
  two channels by a route, stay while one copy waits and go once both are settled.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from coupler.bus.cli.main import main
from coupler.bus.config.loader import load_site
from coupler.bus.transport.factory import open_transport
from coupler.canonical.claimcheck import CLAIM_PROPERTY, CLAIM_SIZE_PROPERTY
from tests.bus.site_helpers import coupler_env, start_daemon_process, wait_for, write_site

MB = 1 << 20


def peak_rss_of(args: list[str]) -> int:
    """The peak resident set size (bytes) of ``coupler ARGS`` run as a child process."""
    proc = subprocess.Popen([sys.executable, "-m", "coupler.bus.cli.main", *args], env=coupler_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert proc.returncode == 0, err
    return usage.ru_maxrss * 1024


def test_put_of_a_large_file_streams_into_a_claimed_file_in_bounded_memory(tmp_path: Path) -> None:
    site = write_site(tmp_path / "site", "[store]\nclaim_check_bytes = 65536\n")
    small = tmp_path / "small.bin"
    small.write_bytes(b"x" * 1000)
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:  # 256 MiB, not all zeros (a sparse file would be too kind to a reader)
        block = os.urandom(MB)
        for _ in range(256):
            f.write(block)
    baseline = peak_rss_of(["channel", "put", "--site", str(site), "files", str(small)])
    peak = peak_rss_of(["channel", "put", "--site", str(site), "files", str(big)])
    growth = peak - baseline
    print(f"channel put: peak RSS {peak / MB:.0f} MiB for 256 MiB, {baseline / MB:.0f} MiB for 1 kB")
    assert growth < 64 * MB, f"put of 256 MiB grew the peak RSS by {growth / MB:.0f} MiB"

    transport = open_transport(load_site(site))
    try:
        first, second = transport.peek("files", 10)
    finally:
        transport.close()
    assert first.body == b"x" * 1000 and CLAIM_PROPERTY not in first.properties
    assert second.body == b""
    claimed = Path(second.properties[CLAIM_PROPERTY])
    assert int(second.properties[CLAIM_SIZE_PROPERTY]) == 256 * MB == claimed.stat().st_size
    assert claimed.parent == load_site(site).data_dir / "put" / "claims"
    with open(claimed, "rb") as f:
        assert f.read(MB) == block


SITE = """
[site]
name = "claims"

[store]
claim_check_bytes = 65536

[[adapters]]
name = "drop"
type = "filedrop"
direction = "inbound"
channel = "incoming"
options = { directory = "inbox", claim_check_bytes = 65536, poll_interval = 0.2, max_poll_interval = 0.5 }

[[adapters]]
name = "out"
type = "filedrop"
direction = "outbound"
channel = "deliver"
options = { directory = "outbox", file_name = "{message_id}.bin" }

[[routes]]
from = "incoming"
[[routes.rules]]
to = ["deliver", "archive"]
"""


def claimed_files(data_dir: Path) -> list[Path]:
    return sorted(p for p in data_dir.rglob("*") if p.is_file() and p.parent.name == "claims"
                  and not p.name.startswith("."))


def test_a_claimed_file_goes_when_the_last_message_referring_to_it_is_settled(tmp_path: Path) -> None:
    site_file = write_site(tmp_path / "site", SITE)
    site = load_site(site_file)
    (tmp_path / "site" / "inbox").mkdir()
    data = site.data_dir
    env = coupler_env()
    daemon = start_daemon_process(site_file)
    try:
        dropped = os.urandom(3 * MB + 5)
        (tmp_path / "site" / "inbox" / ".x.part").write_bytes(dropped)
        os.rename(tmp_path / "site" / "inbox" / ".x.part", tmp_path / "site" / "inbox" / "x.bin")
        put = tmp_path / "put.bin"
        put.write_bytes(os.urandom(2 * MB + 3))
        done = subprocess.run([sys.executable, "-m", "coupler.bus.cli.main", "channel", "put", "--site",
                               str(site_file), "incoming", str(put)], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr

        outbox = tmp_path / "site" / "outbox"
        wait_for(lambda: sorted(p.read_bytes() for p in outbox.glob("*.bin")) == sorted([dropped, put.read_bytes()]),
                 "both files delivered whole from their claims")
        # delivered on one channel, still waiting on "archive": the claims stay
        assert len(claimed_files(data)) == 2
        # in the test's process (a Python start-up fewer each): still a process other than the daemon
        assert main(["channel", "get", "--site", str(site_file), "archive", "--max", "1", "--json"]) == 0
        assert len(claimed_files(data)) == 1, "the claim of the settled message stayed"
        assert main(["channel", "get", "--site", str(site_file), "archive", "--max", "1", "--json"]) == 0
        assert claimed_files(data) == []
    finally:
        daemon.terminate()
        daemon.communicate(timeout=60)
