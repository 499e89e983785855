"""``coupler channel put`` interrupted half-way: it says how many messages it committed (as it
goes, and on SIGTERM/SIGINT), and ``--id-from`` makes the ids of a ``--lines`` batch
reproducible so that running it again puts only the rest."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from coupler.bus.config.loader import load_site
from coupler.bus.transport.factory import open_transport
from tests.bus.cli.test_cli_channel import run
from tests.bus.site_helpers import REPO, coupler_env, running_daemon, wait_for, write_site


def lines(start: int, stop: int) -> bytes:
    return b"".join(json.dumps({"order": {"id": f"O-{i}"}, "qty": i % 7}).encode() + b"\n" for i in range(start, stop))


def on_channel(site: Path, channel: str) -> list:
    transport = open_transport(load_site(site))
    try:
        return transport.peek(channel, 100_000)
    finally:
        transport.close()


@pytest.mark.parametrize("with_daemon", [False, True], ids=["store", "daemon"])
def test_a_rerun_with_id_from_a_field_puts_nothing_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str], with_daemon: bool) -> None:
    site = write_site(tmp_path, "")
    args = ("channel", "put", "--site", str(site), "orders", "--lines", "--id-from", "order.id")
    ctx = running_daemon(site) if with_daemon else None
    if ctx:
        ctx.__enter__()
    try:
        rc, out, _ = run(capsys, *args, stdin=lines(0, 30))
        assert rc == 0 and out.strip() == "put 30 message(s) on orders"
        rc, out, _ = run(capsys, *args, "--json", stdin=lines(0, 50))  # the first 30 again, then 20 more
        assert rc == 0
        result = json.loads(out)
        assert len(result["message_ids"]) == 20 and result["skipped"] == 30
    finally:
        if ctx:
            ctx.__exit__(None, None, None)
    msgs = on_channel(site, "orders")
    assert sorted(json.loads(m.body)["order"]["id"] for m in msgs) == sorted(f"O-{i}" for i in range(50))
    assert len({m.message_id for m in msgs}) == 50


def test_id_from_hash_and_the_ids_are_reproducible(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = write_site(tmp_path, "")
    first = run(capsys, "channel", "put", "--site", str(site), "notes", "--lines", "--id-from", "hash", "--json",
                stdin=b"alpha\nbeta\nalpha\n")
    assert first[0] == 0
    ids = json.loads(first[1])
    assert len(ids["message_ids"]) == 2 and ids["skipped"] == 1  # identical lines are one message
    other = write_site(tmp_path / "other", "")
    again = run(capsys, "channel", "put", "--site", str(other), "notes", "--lines", "--id-from", "hash", "--json",
                stdin=b"alpha\nbeta\n")
    assert json.loads(again[1])["message_ids"] == ids["message_ids"]  # the same ids on another site


def test_a_line_without_the_field_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = write_site(tmp_path, "")
    rc, _, err = run(capsys, "channel", "put", "--site", str(site), "orders", "--lines", "--id-from", "order.id",
                     stdin=b'{"order": {"id": "A"}}\n{"order": {}}\n')
    assert rc == 1
    assert err.strip().endswith("line 2: no field 'order.id' to take the message id from")
    rc, _, err = run(capsys, "channel", "put", "--site", str(site), "orders", "--lines", "--id-from", "order.id",
                     stdin=b"plain text\n")
    assert rc == 1 and "line 1: not JSON, so it has no field 'order.id'" in err and "--id-from hash" in err


def put_process(site: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "coupler.bus.cli", "channel", "put", "--site", str(site), "orders", "--lines",
         "--id-from", "order.id"],
        cwd=REPO, env=coupler_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )


class Stderr:
    """The lines a child process writes on standard error, read as they come."""

    def __init__(self, proc: subprocess.Popen[bytes]):
        self.lines: list[str] = []
        assert proc.stderr is not None
        self._thread = threading.Thread(target=self._read, args=(proc.stderr,), daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:  # type: ignore[no-untyped-def]
        for line in stream:
            self.lines.append(line.decode())

    def text(self) -> str:
        self._thread.join(30)
        return "".join(self.lines)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_half_way_prints_the_count_committed_and_a_rerun_puts_the_rest(tmp_path: Path, sig: signal.Signals) -> None:
    site = write_site(tmp_path, "")
    proc = put_process(site)
    err = Stderr(proc)
    assert proc.stdin is not None
    proc.stdin.write(lines(0, 1200))  # two batches of 500 committed, 200 read, then the input stalls
    proc.stdin.flush()
    wait_for(lambda: any("committed 1000 message(s)" in line for line in err.lines), "the progress of 1,000")
    proc.send_signal(sig)
    assert proc.wait(30) == 128 + sig
    proc.stdin.close()
    text = err.text()
    assert f"coupler: interrupted ({sig.name}): committed 1000 message(s) on orders; run it again" in text, text
    assert "Traceback" not in text
    assert len(on_channel(site, "orders")) == 1000  # what it said it committed is what is there
    rerun = subprocess.run(proc.args, cwd=REPO, env=coupler_env(), input=lines(0, 1500), capture_output=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.decode().strip() == "put 500 message(s) on orders (1000 put before, skipped)"
    msgs = on_channel(site, "orders")
    assert len(msgs) == 1500 and len({m.message_id for m in msgs}) == 1500


def test_sigkill_half_way_the_progress_printed_is_committed(tmp_path: Path) -> None:
    site = write_site(tmp_path, "")
    proc = put_process(site)
    err = Stderr(proc)
    assert proc.stdin is not None
    proc.stdin.write(lines(0, 700))
    proc.stdin.flush()
    wait_for(lambda: any("committed 500 message(s)" in line for line in err.lines), "the progress of 500")
    proc.kill()
    proc.wait(30)
    proc.stdin.close()
    assert len(on_channel(site, "orders")) == 500


def test_a_put_of_many_large_bodies_is_sent_in_requests_the_daemon_takes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Bodies just under ``claim_check_bytes`` (1 MiB here), 40 at once, through a running
    daemon: the batches end before the control endpoint's request limit (500 of them made one
    request of 700 MiB, beyond its 256 MiB; a 4 MiB limit stands in for it here)."""
    from coupler.bus.runtime import control

    monkeypatch.setattr(control, "MAX_REQUEST_BYTES", 4 << 20)
    site = write_site(tmp_path, "[store]\nclaim_check_bytes = 1048576\n")
    files = []
    for i in range(40):
        f = tmp_path / f"body-{i}.bin"
        f.write_bytes(bytes([i]) * 1_000_000)
        files.append(str(f))
    with running_daemon(site):
        rc, out, err = run(capsys, "channel", "put", "--site", str(site), "big", *files)
        assert rc == 0, err
        assert out.strip() == "put 40 message(s) on big", out
    assert len(on_channel(site, "big")) == 40
