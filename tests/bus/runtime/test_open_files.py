"""The daemon's open-files limit (bus/runtime/openfiles.py): raised at start from the soft limit
to the hard one (``[site] raise_open_files_limit``), logged once, and checked against what the
HTTP servers may hold in a burst (``max_connections`` plus the listen backlog of each)."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from tests.bus.runtime.console.helpers import console_site
from tests.bus.site_helpers import REPO, coupler_env, wait_for


def _run_daemon(site_file: Path, soft: int, hard: int) -> tuple[str, int]:
    """Start the site's daemon with the open-files limits ``soft``/``hard``, wait until it runs;
    its log and the soft limit the running process has (/proc/PID/limits), after stopping it."""
    _, ours = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert ours == resource.RLIM_INFINITY or ours >= hard, f"the test needs a hard open-files limit of {hard} (ulimit -Hn)"

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    log_path = site_file.parent / "daemon.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "coupler.bus.cli", "daemon", "--site", str(site_file)],
                                cwd=REPO, env=coupler_env(), stdout=subprocess.DEVNULL, stderr=log, preexec_fn=limited)
    try:
        wait_for(lambda: "running:" in log_path.read_text() or proc.poll() is not None, "the daemon to run", timeout=120)
        assert proc.poll() is None, log_path.read_text()
        limits = Path(f"/proc/{proc.pid}/limits").read_text()
        in_effect = int(next(line for line in limits.splitlines() if line.startswith("Max open files")).split()[3])
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return log_path.read_text(), in_effect


def _lines(text: str, part: str) -> list[str]:
    return [line for line in text.splitlines() if part in line]


def test_the_soft_limit_is_raised_to_the_hard_one_and_logged_once(tmp_path: Path) -> None:
    site_file = console_site(tmp_path)
    text, in_effect = _run_daemon(site_file, 512, 4096)
    assert in_effect == 4096
    lines = _lines(text, "open files:")
    assert len(lines) == 1 and "open files: limit 4096 (raised from 512 to the hard limit" in lines[0], text
    assert "WARNING" not in text, text  # the console's 1024 connections and backlog fit under 4096

    # [site] raise_open_files_limit = false: kept, and then the console's 1024 do not fit under 512
    site_file.write_text(site_file.read_text().replace("[site]\n", "[site]\nraise_open_files_limit = false\n", 1))
    text, in_effect = _run_daemon(site_file, 512, 4096)
    assert in_effect == 512
    assert len(_lines(text, "open files: limit 512 (kept: [site] raise_open_files_limit = false")) == 1, text
    assert len(_lines(text, "WARNING")) == 1, text
    assert "console http.max_connections = 1024" in _lines(text, "WARNING")[0], text


def test_max_connections_over_the_hard_limit_are_a_warning_naming_the_options(tmp_path: Path) -> None:
    site_file = console_site(tmp_path)
    site_file.write_text(site_file.read_text().replace("[http]\n", "[http]\nmax_connections = 2000\n", 1))
    text, in_effect = _run_daemon(site_file, 512, 1024)
    assert in_effect == 1024
    warnings = _lines(text, "WARNING")
    assert len(warnings) == 1, text
    line = warnings[0]
    assert "open files: the limit 1024 is below" in line, line
    assert "console http.max_connections = 2000 (+ listen backlog 128)" in line, line
    assert "= 2384" in line and "ulimit -n 2384" in line and "LimitNOFILE=2384" in line, line
    assert "Traceback" not in text


def _check(site_file: Path, soft: int, hard: int) -> subprocess.CompletedProcess[str]:
    """``coupler daemon --check`` of the site with the open-files limits ``soft``/``hard``."""
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return subprocess.run([sys.executable, "-m", "coupler.bus.cli", "daemon", "--site", str(site_file), "--check"],
                          cwd=REPO, env=coupler_env(), capture_output=True, text=True, timeout=120, preexec_fn=limited)


def test_daemon_check_says_the_warning_the_daemon_would_log(tmp_path: Path) -> None:
    """``coupler daemon --check`` (no daemon running: the adapters start paused, the console does
    not) prints the daemon's open-files warning, one line, with the limit it would run with."""
    _, ours = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert ours == resource.RLIM_INFINITY or ours >= 4096, "the test needs a hard open-files limit of 4096 (ulimit -Hn)"
    site_file = console_site(tmp_path, extra=f"""
[[adapters]]
name = "api"
type = "http"
direction = "inbound"
channel = "orders"
[adapters.options]
mode = "server"
port = 0
max_connections = 300
[adapters.options.endpoints.orders]
format = "acme.Order@1"
schema_file = "{REPO / 'tests/adapters/http/data/order.avsc'}"
""")
    site_file.write_text(site_file.read_text().replace("[http]\n", "[http]\nmax_connections = 2000\n", 1))
    done = _check(site_file, 512, 1024)  # the daemon would raise 512 to 1024: still below
    assert done.returncode == 0, done.stdout + done.stderr
    warnings = _lines(done.stdout, "WARNING")
    assert len(warnings) == 1, done.stdout
    line = warnings[0]
    assert line.startswith("WARNING open files: the limit 1024 is below"), line
    assert "adapters[api] max_connections = 300 (+ listen backlog 512)" in line, line
    assert "console http.max_connections = 2000 (+ listen backlog 128)" in line, line
    needed = 300 + 512 + 2000 + 128 + 256
    assert f"= {needed};" in line and f"ulimit -n {needed} " in line and f"LimitNOFILE={needed}" in line, line
    assert "running: 3 adapter(s) started" in done.stdout, done.stdout
    assert "Traceback" not in done.stdout + done.stderr

    done = _check(site_file, 512, 4096)  # the daemon would raise 512 to 4096: they fit
    assert done.returncode == 0 and "WARNING" not in done.stdout, done.stdout + done.stderr

    site_file.write_text(site_file.read_text().replace("[site]\n", "[site]\nraise_open_files_limit = false\n", 1))
    done = _check(site_file, 512, 4096)  # kept at 512
    assert _lines(done.stdout, "WARNING open files: the limit 512 is below"), done.stdout + done.stderr
