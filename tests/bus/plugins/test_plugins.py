"""Plugins: entry-point discovery, what `coupler plugins` shows, a real third-party install."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coupler.bus.plugins.hookspecs import hookimpl
from coupler.bus.plugins.manager import (
    PluginError,
    adapter_types,
    describe_plugins,
    plugin_manager,
    schema_dirs,
)
from coupler.schemas import SCHEMA_DIR

REPO = Path(__file__).resolve().parents[3]


def plugins_json() -> list[dict]:
    out = subprocess.run(
        [sys.executable, "-m", "coupler.bus.cli.main", "plugins", "--json"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_builtin_plugin_comes_through_the_entry_point() -> None:
    rows = {r["name"]: r for r in plugins_json()}
    assert rows["builtin"]["distribution"] == "coupler"
    assert str(SCHEMA_DIR) in rows["builtin"]["schema_dirs"]
    assert SCHEMA_DIR in schema_dirs(plugin_manager())


def test_loading_the_plugins_reads_the_installed_distributions_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The entry points come from one pass over the installed distributions, not one pass per
    plugin (13 plugins: 1,567 metadata reads, 30 ms of CPU per registry a ``batch translate``
    to ``avro:`` builds); each plugin still knows its distribution."""
    import importlib.metadata

    real = importlib.metadata.distributions
    passes = []

    def counted(*args: object, **kwargs: object) -> object:
        passes.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(importlib.metadata, "distributions", counted)
    pm = plugin_manager()
    assert pm.get_plugin("builtin") is not None
    assert len(passes) <= 2, f"{len(passes)} passes over the installed distributions"
    assert {p: d.project_name for p, d in pm.list_plugin_distinfo()}[pm.get_plugin("builtin")] == "coupler"


def test_third_party_plugin_installs_shows_and_uninstalls() -> None:
    pip = [sys.executable, "-m", "pip", "-q"]
    subprocess.run([*pip, "install", "--no-deps", "--no-build-isolation", str(REPO / "examples" / "plugin-hello")],
                   check=True, timeout=300)
    try:
        rows = {r["name"]: r for r in plugins_json()}
        assert rows["hello"]["distribution"] == "coupler-hello"
        assert rows["hello"]["version"] == "0.1.0"
        assert rows["hello"]["adapter_types"] == ["hello"]
        probe = subprocess.run(
            [sys.executable, "-c",
             "from coupler.bus.plugins.manager import plugin_manager, adapter_types\n"
             "cls = adapter_types(plugin_manager())['hello']\n"
             "a = cls('greeter', {'greeting': 'Hi'})\n"
             "print(a.greet(b'world').decode(), a.describe()['commands'])"],
            capture_output=True, text=True, timeout=60,
        )
        assert probe.stdout.strip() == "Hi, world! ['send', 'ping', 'describe']", probe.stderr
    finally:
        subprocess.run([*pip, "uninstall", "-y", "coupler-hello"], check=True, timeout=120)
    assert "hello" not in {r["name"] for r in plugins_json()}


class _One:
    @hookimpl
    def coupler_adapter_types(self) -> dict[str, type]:
        return {"dup": int}


class _Two:
    @hookimpl
    def coupler_adapter_types(self) -> dict[str, type]:
        return {"dup": str}


def test_two_plugins_claiming_one_adapter_type_is_an_error() -> None:
    pm = plugin_manager(entry_points=False, extra=(_One(), _Two()))
    with pytest.raises(PluginError, match="'dup' is contributed by both"):
        adapter_types(pm)


def test_extra_plugins_are_described() -> None:
    pm = plugin_manager(entry_points=False, extra=(_One(),), core=False)
    [info] = describe_plugins(pm)
    assert info.adapter_types == ["dup"] and info.distribution is None


@pytest.mark.parametrize(("code", "raised"), [('raise RuntimeError("no licence key")', "RuntimeError: no licence key"),
                                              ("import sys; sys.exit(3)", "SystemExit: 3")],
                         ids=["RuntimeError", "sys.exit"])
def test_an_extra_plugin_that_raises_on_import_is_one_line_naming_it(
        code: str, raised: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``$COUPLER_EXTRA_PLUGINS`` naming a module that raises while it is imported (not an
    ImportError; sys.exit() too, which ended `coupler` with the plugin's status and no word):
    the variable, the module and the line that raised; not coupler's internal error."""
    from coupler.bus.cli.main import main

    (tmp_path / "h127_boom_plugin.py").write_text(code + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("COUPLER_EXTRA_PLUGINS", "h127_boom_plugin")
    monkeypatch.delitem(sys.modules, "h127_boom_plugin", raising=False)
    assert main(["plugins"]) == 1
    assert capsys.readouterr().err == (
        f"coupler: error: $COUPLER_EXTRA_PLUGINS: cannot load plugin 'h127_boom_plugin': its import failed:"
        f" {raised} (raised at h127_boom_plugin.py:1 in <module>)"
        " (fix the module or remove it from the variable)\n"
    )
