"""One broken plugin stops only the sites that use it (issue 29 item 4).

An installed distribution ``coupler-broken 1.2`` whose entry point fails to import: ``coupler
plugins`` lists it as broken by entry point and distribution and exits 0; a real daemon of a
site that does not use it runs (its status names the broken plugin); a site that uses a type
nobody else provides fails with an error naming the broken entry point and distribution.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from coupler.bus.runtime.control import ControlClient
from tests.bus.site_helpers import REPO, start_daemon_process, write_site


def broken_distribution(target: Path) -> dict[str, str]:
    """A distribution installed the way pip lays one out (``*.dist-info`` with its entry points
    beside the module) whose module fails to import; the environment that sees it."""
    info = target / "coupler_broken-1.2.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: coupler-broken\nVersion: 1.2\n")
    (info / "entry_points.txt").write_text("[coupler]\nbroken = coupler_broken_plugin\n")
    (info / "RECORD").write_text("")
    (target / "coupler_broken_plugin.py").write_text("import a_dependency_that_is_not_installed  # noqa\n")
    env = {k: v for k, v in os.environ.items() if k != "COUPLER_EXTRA_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(target), str(REPO), env.get("PYTHONPATH")]))
    return env


def coupler(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coupler.bus.cli", *args], env=env,
                          capture_output=True, text=True, timeout=120)


UNUSED = """
[site]
name = "no-broken-types"

[[adapters]]
name = "drop"
type = "filedrop"
direction = "outbound"
channel = "out"
options = { directory = "out" }
"""

USES_IT = """
[site]
name = "uses-broken"

[[adapters]]
name = "legacy"
type = "broken-thing"
channel = "out"
"""


def test_a_plugin_that_fails_to_import_is_listed_broken_and_stops_only_sites_using_it(tmp_path: Path) -> None:
    env = broken_distribution(tmp_path / "env")

    listed = coupler(env, "plugins")
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.startswith("broken "))
    assert "[coupler-broken 1.2]" in line and "BROKEN" in line and "a_dependency_that_is_not_installed" in line
    assert "builtin" in listed.stdout  # the other plugins are listed as ever
    rows = {r["name"]: r for r in json.loads(coupler(env, "plugins", "--json").stdout)}
    assert rows["broken"]["distribution"] == "coupler-broken" and rows["broken"]["version"] == "1.2"
    assert "ModuleNotFoundError" in rows["broken"]["broken"]
    assert rows["builtin"]["broken"] is None

    site = write_site(tmp_path / "site", UNUSED)
    daemon = start_daemon_process(site, env=env)
    try:
        from coupler.bus.config.loader import load_site

        status = ControlClient(load_site(site).control_socket).call("status")
        assert status["state"] == "running"
        [alert] = [a for a in status["alerts"] if a.get("plugin") == "broken"]
        assert "'broken' = 'coupler_broken_plugin' (distribution coupler-broken 1.2) failed to load" in alert["alert"]
    finally:
        daemon.terminate()
        _, err = daemon.communicate(timeout=60)
    assert daemon.returncode == 0, err
    assert "plugin entry point 'broken'" in err and "distribution coupler-broken 1.2" in err

    uses = write_site(tmp_path / "uses", USES_IT)
    refused = coupler(env, "daemon", "--site", str(uses))
    assert refused.returncode != 0
    assert "broken-thing" in refused.stderr
    assert "plugin entry point 'broken' = 'coupler_broken_plugin' (distribution coupler-broken 1.2)" in refused.stderr
    assert "Traceback" not in refused.stderr
