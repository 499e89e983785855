"""``[[batch]]``: the daemon's batch ingestion jobs, without Spark (configuration, when a job
is due, a job that fails before Spark starts, the per-source lock). The jobs that run Spark
are in tests/spark/test_batch_daemon.py."""

from __future__ import annotations

import functools
import io
import os
from contextlib import redirect_stdout
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from coupler.bus.batch.ingest import ingest, source_lock
from coupler.bus.batch.jobs import BatchError
from coupler.bus.batch.schedule import BatchScheduler, JobRun, next_daily
from coupler.bus.cli.main import main
from coupler.bus.config.loader import ConfigError, load_site, parse_site
from coupler.bus.runtime.control import ControlClient
from coupler.bus.runtime.daemon import Daemon
from tests.bus import site_helpers

ADAPTER = """
[site]
data_dir = "data"

[[adapters]]
name = "extracts"
type = "filedrop"
direction = "inbound"
channel = "extracts"
[adapters.options]
directory = "drop"
batch_threshold_bytes = 100
batch_dir = "staged"
stable_seconds = 0
poll_interval = 0.05
"""


def site_file(tmp_path: Path, batch: str, adapter: str = ADAPTER) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "site.toml"
    path.write_text(adapter + batch)
    return path


def stage(tmp_path: Path, name: str, size: int = 200) -> Path:
    """A file staged by hand: written aside, moved in atomically."""
    staged = tmp_path / "staged"
    staged.mkdir(exist_ok=True)
    tmp = staged / f".{name}.tmp"
    tmp.write_bytes(b"x" * size)
    os.replace(tmp, staged / name)
    return staged / name


wait_for = functools.partial(site_helpers.wait_for, timeout=60.0)


# -- configuration -------------------------------------------------------------------------


def test_batch_section_is_typed_with_its_defaults(tmp_path: Path) -> None:
    site = load_site(site_file(tmp_path, """
[[batch]]
source = "extracts"
on_staged = true
at = ["02:30", "14:00"]
mapping = "maps/extract.toml"
options = { record_format = "V", is_rdw_big_endian = true }
"""))
    (job,) = site.batch
    assert (job.source, job.on_staged, job.at, job.interval_seconds) == ("extracts", True, ("02:30", "14:00"), None)
    assert (job.to_spec, job.from_spec, job.master, job.poll_seconds, job.retry_seconds) == ("parquet", None, "local[*]", 5.0, 300.0)
    assert job.mapping == str(tmp_path / "maps" / "extract.toml")  # relative to site.toml
    assert job.options == {"record_format": "V", "is_rdw_big_endian": True}
    assert parse_site(ADAPTER, tmp_path / "site.toml").batch == []


def test_batch_section_problems_name_their_key_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        parse_site(ADAPTER + """
[[batch]]
source = "nope"
on_staged = true

[[batch]]
source = "extracts"

[[batch]]
source = "extracts"
at = ["2:30", "24:00"]
""", tmp_path / "site.toml")
    problems = info.value.problems
    assert "batch[nope].source: no adapter named 'nope' (adapters: extracts)" in problems
    assert "batch[1]: no trigger (set on_staged = true, interval_seconds or at)" in problems
    assert "batch[2].source: 'extracts' is already ingested by batch[1]" in problems
    assert any(p.startswith("batch[2].at[0]: '2:30' is not a time of day") for p in problems)
    assert any(p.startswith("batch[2].at[1]: '24:00'") for p in problems)
    with pytest.raises(ConfigError, match=r"batch\[extracts\]\.interval_seconds: 0 is less than the minimum 1"):
        parse_site(ADAPTER + '[[batch]]\nsource = "extracts"\ninterval_seconds = 0\n', tmp_path / "site.toml")


def test_a_source_that_stages_nothing_is_refused_when_the_daemon_starts(tmp_path: Path) -> None:
    adapter = ADAPTER.replace('batch_threshold_bytes = 100\nbatch_dir = "staged"\n', "")
    site = load_site(site_file(tmp_path, '[[batch]]\nsource = "extracts"\non_staged = true\n', adapter))
    with pytest.raises(ConfigError, match=r"batch\[extracts\]\.source: adapter 'extracts' stages nothing for batch"):
        BatchScheduler(site)
    with pytest.raises(ConfigError, match="stages nothing"):
        Daemon(site).start()
    assert not site.control_socket.exists()


# -- when a job is due ---------------------------------------------------------------------


def test_next_daily_is_the_next_local_time_of_day() -> None:
    base = datetime(2026, 3, 10, 14, 0).timestamp()
    assert next_daily(["02:30", "14:00"], base) == datetime(2026, 3, 11, 2, 30).timestamp()  # 14:00 is not after 14:00
    assert next_daily(["02:30", "14:05"], base) == datetime(2026, 3, 10, 14, 5).timestamp()
    assert next_daily([], base) is None


def test_interval_and_daily_runs_happen_only_when_something_is_staged(tmp_path: Path) -> None:
    site = load_site(site_file(tmp_path, '[[batch]]\nsource = "extracts"\ninterval_seconds = 60\nat = ["03:00"]\n'))
    t0 = datetime(2026, 3, 10, 2, 0).timestamp()
    (job,) = BatchScheduler(site, now=t0).jobs
    assert job.due(t0 + 30) is None
    assert job.due(t0 + 61) is None  # due, but nothing staged: skipped, next one in 60 s
    assert job.next_interval == t0 + 121
    stage(tmp_path, "a.dat")
    assert job.due(t0 + 100) is None  # not on_staged: waits for its schedule
    assert job.due(t0 + 121) == "interval"
    assert job.due(t0 + 3600) == "interval"  # both due at 03:00: one run
    assert job.next_daily == datetime(2026, 3, 11, 3, 0).timestamp()
    assert job.next_interval == t0 + 3660

    daily = load_site(site_file(tmp_path / "b", '[[batch]]\nsource = "extracts"\nat = ["03:00"]\n'))
    (job,) = BatchScheduler(daily, now=t0).jobs
    stage(tmp_path / "b", "a.dat")
    assert job.due(t0 + 3599) is None
    assert job.due(t0 + 3600) == "at 03:00"
    assert job.due(t0 + 3601) is None


def test_on_staged_waits_until_what_is_staged_stops_changing(tmp_path: Path) -> None:
    site = load_site(site_file(tmp_path, '[[batch]]\nsource = "extracts"\non_staged = true\npoll_seconds = 1\n'))
    (job,) = BatchScheduler(site, now=0).jobs
    assert job.due(0) is None  # nothing staged
    stage(tmp_path, "a.dat")
    assert job.due(1) is None  # seen once
    assert job.due(1.5) is None  # not polled again yet
    stage(tmp_path, "b.dat")
    assert job.due(2) is None  # changed since the last look
    assert job.due(3) == "staged"
    assert job.staged == 2


def test_a_failed_job_is_retried_after_retry_seconds_while_its_files_are_staged(tmp_path: Path) -> None:
    site = load_site(site_file(tmp_path, '[[batch]]\nsource = "extracts"\nat = ["03:00"]\nretry_seconds = 600\n'))
    (job,) = BatchScheduler(site, now=0).jobs
    job.last = JobRun("extracts", "at 03:00", started_at=10, finished_at=20, outcome="failed", error="boom")
    stage(tmp_path, "a.dat")
    assert job.due(300) is None
    assert job.due(620) == "retry"


# -- through the daemon ---------------------------------------------------------------------


def test_a_failing_job_is_reported_by_ctl_status_and_leaves_its_files_staged(tmp_path: Path) -> None:
    # payload "whole": the adapter has no copybook, so the job fails before Spark starts
    site_path = site_file(tmp_path, '[[batch]]\nsource = "extracts"\non_staged = true\npoll_seconds = 0.1\n')
    site = load_site(site_path)
    daemon = Daemon(site)
    daemon.start()
    try:
        (tmp_path / "drop" / "big.dat").write_bytes(b"x" * 500)  # over batch_threshold_bytes: staged
        row = wait_for(
            lambda: next((r for r in ControlClient(site.control_socket).call("status")["batch"] if r["state"] == "failed"), None),
            "the job to fail",
        )
        last = row["last_run"]
        assert (last["outcome"], last["trigger"], last["exit_code"]) == ("failed", "staged", 1)
        assert "adapter 'extracts' has no copybook" in last["error"]
        assert [p.name.split("-", 1)[1] for p in (tmp_path / "staged").iterdir() if p.is_file()] == ["big.dat"]
        out = io.StringIO()
        with redirect_stdout(out):
            assert main(["ctl", "--site", str(site_path), "status"]) == 0
        text = out.getvalue()
        alert = next(line for line in text.splitlines() if line.startswith("ALERT batch job extracts: last run failed:"))
        assert "adapter 'extracts' has no copybook" in alert
        assert any(line.split()[:3] == ["extracts", "failed", "on"] for line in text.splitlines())
    finally:
        daemon.shutdown()
    # the last run is on record when no daemon runs
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["ctl", "--site", str(site_path), "status", "--json"]) == 0
    assert "has no copybook" in out.getvalue() and '"state": "stopped"' in out.getvalue()


def test_one_ingestion_per_source_at_a_time(tmp_path: Path) -> None:
    site = load_site(site_file(tmp_path, ""))
    stage(tmp_path, "a.dat")
    with source_lock(site, "extracts"):
        with pytest.raises(BatchError, match=rf"already running \(pid {os.getpid()}\)"):
            ingest(site.path, "extracts", spark=object())
    assert (tmp_path / "staged" / "a.dat").exists()


def _gone(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_job_over_its_time_limit_is_killed_and_a_shutdown_interrupts_the_running_one(tmp_path: Path) -> None:
    # a job that starts Spark cannot finish within a second: the first run is killed at its
    # limit, the retry (retry_seconds = 0) is interrupted by the daemon's shutdown
    (tmp_path / "c.cpy").write_text("       01  R.\n           05  A  PIC X(10).\n")
    site_path = site_file(tmp_path, """
[[batch]]
source = "extracts"
on_staged = true
poll_seconds = 0.1
timeout_seconds = 1
retry_seconds = 0
from = "copybook:c.cpy"
master = "local[1]"
""")
    site = load_site(site_path)
    stage(tmp_path, "a.dat")
    daemon = Daemon(site)
    daemon.start()
    try:
        killed = wait_for(
            lambda: (r := daemon.status()["batch"][0])["last_run"] and r["last_run"]["outcome"] == "failed" and r, "the time limit",
        )
        assert killed["last_run"]["error"].startswith("killed after the time limit of 1s")
        retry = wait_for(lambda: (r := daemon.status()["batch"][0])["state"] == "running" and r, "the retry to start")
        assert retry["last_run"]["trigger"] == "retry"
        pid = retry["pid"]
    finally:
        daemon.shutdown()
    assert _gone(pid), "the job's process group outlived the daemon"
    (row,) = load_and_status(site_path)
    assert row["last_run"]["outcome"] == "interrupted" and row["last_run"]["error"] == "terminated by the daemon's shutdown"
    assert (tmp_path / "staged" / "a.dat").exists()


def load_and_status(site_path: Path) -> list[dict[str, Any]]:
    from coupler.bus.batch.schedule import recorded_runs

    return recorded_runs(load_site(site_path))
