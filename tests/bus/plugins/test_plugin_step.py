"""The step authors' starting points work: ``examples/plugin-step`` installed into a temporary
environment runs in a real daemon's route, and ``coupler plugin new --kind step`` writes a
package that passes its own tests and runs in a daemon too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.bus.plugins.test_plugin_example import coupler, install_into
from tests.bus.site_helpers import REPO, start_daemon_process, wait_for, write_site

REDACT_SITE = """
[site]
name = "redact-test"

[[routes]]
name = "to-analytics"
from = "payments"
to = ["payments.analytics"]

[[routes.steps]]
type = "redact"
fields = ["card.number"]
keep_last = 4
"""


def _get(env: dict[str, str], site: Path, channel: str) -> list[dict]:
    got = coupler(env, "channel", "get", "--site", str(site), channel, "--max", "10", "--json")
    assert got.returncode == 0, got.stderr
    return [json.loads(line) for line in got.stdout.splitlines() if line.strip()]


def test_plugin_step_redacts_in_a_daemons_route(tmp_path: Path) -> None:
    env = install_into(tmp_path / "env", REPO / "examples" / "plugin-step")
    listed = coupler(env, "plugins", "--json")
    assert listed.returncode == 0, listed.stderr
    assert any("redact" in json.dumps(p) for p in json.loads(listed.stdout))
    site = write_site(tmp_path / "site", REDACT_SITE)
    daemon = start_daemon_process(site, env=env)
    try:
        put = coupler(env, "channel", "put", "--site", str(site), "payments", "--format",
                      "acme.Payment@1;application/json", "--unregistered",
                      stdin=json.dumps({"card": {"number": "4111111111111111"}}))
        assert put.returncode == 0, put.stderr
        [out] = wait_for(lambda: _get(env, site, "payments.analytics"), "the redacted payment")
        assert json.loads(out["body"]) == {"card": {"number": "************1111"}}
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)


STEP_SITE = """
[site]
name = "step-new-test"

[[routes]]
name = "r"
from = "in"
to = ["out"]

[[routes.steps]]
type = "acme-tag"
property = "checked"
value = "yes"
"""


def test_a_new_step_plugin_passes_its_own_tests_and_runs_in_a_daemon(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COUPLER_EXTRA_PLUGINS"}
    env["PYTHONPATH"] = str(REPO)
    made = coupler(env, "plugin", "new", "acme-tag", "--kind", "step", "--directory", str(tmp_path / "pkg"))
    assert made.returncode == 0, made.stderr
    pkg = tmp_path / "pkg"
    assert (pkg / "coupler_acme_tag" / "step.py").is_file()
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=pkg,
                           env=env, capture_output=True, text=True, timeout=300)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=pkg,
                          capture_output=True, text=True, timeout=120)
    assert lint.returncode == 0, lint.stdout
    env = install_into(tmp_path / "env", pkg)
    site = write_site(tmp_path / "site", STEP_SITE)
    daemon = start_daemon_process(site, env=env)
    try:
        put = coupler(env, "channel", "put", "--site", str(site), "in", "--lines", stdin="one\n")
        assert put.returncode == 0, put.stderr
        [out] = wait_for(lambda: _get(env, site, "out"), "the tagged message")
        assert out["properties"]["checked"] == "yes"
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
