"""An adapter type contributed as ``"module:Class"`` is imported only when a site names it: a
daemon of a filedrop-only site imports neither the other adapters nor their libraries."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coupler.bus.config.loader import ConfigError, load_site
from coupler.bus.plugins.hookspecs import hookimpl
from coupler.bus.plugins.manager import (
    PluginError,
    adapter_types,
    broken_plugins,
    describe_plugins,
    plugin_manager,
)
from tests.bus.site_helpers import coupler_env, write_site

#: the other built-in adapters' implementations and the libraries they use
UNUSED = [f"coupler.adapters.{name}.adapter" for name in ("sftp", "soap", "http", "database", "socket", "amqp")] + [
    "paramiko", "zeep", "aiohttp", "httpx", "sqlalchemy", "psycopg", "pika", "pyspark",
]

FILEDROP_SITE = """
[site]
name = "h141"

[[adapters]]
name = "in"
type = "filedrop"
direction = "inbound"
channel = "orders"
format = "test.Rec@1;application/json"
[adapters.options]
directory = "{root}/in"

[[routes]]
name = "r"
from = "orders"
to = ["out"]

[[adapters]]
name = "out"
type = "filedrop"
direction = "outbound"
channel = "out"
[adapters.options]
directory = "{root}/out"
"""

#: ``coupler daemon --site SITE --check`` (starts the adapters paused, stops them), then the
#: modules the process imported
PROBE = (
    "import json, sys\n"
    "from coupler.bus.cli.main import main\n"
    "rc = main(['daemon', '--site', sys.argv[1], '--check'])\n"
    "print(json.dumps({'rc': rc, 'modules': sorted(sys.modules)}))\n"
)


@pytest.mark.slow
def test_a_filedrop_site_daemon_imports_no_other_adapter(tmp_path: Path) -> None:
    for sub in ("in", "out"):
        (tmp_path / sub).mkdir()
    site_file = write_site(tmp_path, FILEDROP_SITE.format(root=tmp_path))
    out = subprocess.run([sys.executable, "-c", PROBE, str(site_file)], env=coupler_env(),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["rc"] == 0, out.stderr
    modules = set(result["modules"])
    assert "coupler.adapters.filedrop.adapter" in modules  # the one it runs
    assert sorted(m for m in UNUSED if m in modules) == []


class _ByReference:
    @hookimpl
    def coupler_adapter_types(self) -> dict[str, type | str]:
        return {"lazy-sftp": "coupler.adapters.sftp.adapter:SftpAdapter",
                "missing": "h141_no_such_module:Adapter"}


def test_a_type_given_by_reference_is_imported_when_looked_up() -> None:
    types = adapter_types(plugin_manager(entry_points=False, extra=(_ByReference(),), core=False))
    assert sorted(types) == ["lazy-sftp", "missing"] and "missing" in types  # names: no import
    from coupler.adapters.sftp.adapter import SftpAdapter

    assert types["lazy-sftp"] is SftpAdapter and types.get("lazy-sftp") is SftpAdapter
    with pytest.raises(PluginError) as raised:
        types["missing"]
    message = str(raised.value)
    assert "\n" not in message
    assert "adapter type 'missing' of plugin" in message
    assert "cannot import 'h141_no_such_module:Adapter': ModuleNotFoundError" in message


def test_options_of_a_type_given_by_reference_are_checked(tmp_path: Path) -> None:
    site_file = write_site(tmp_path, '[[adapters]]\nname = "s"\ntype = "sftp"\ndirection = "inbound"\n'
                                     'channel = "c"\n[adapters.options]\nno_such_option = 1\n')
    with pytest.raises(ConfigError, match=r"adapters\[s\]\.options\.no_such_option: unknown key"):
        load_site(site_file, pm=plugin_manager())


def test_coupler_plugins_lists_a_plugin_whose_type_does_not_import_as_broken() -> None:
    pm = plugin_manager(entry_points=False, extra=(_ByReference(),), core=False)
    try:
        [info] = describe_plugins(pm)
        assert info.broken is not None and "h141_no_such_module" in info.broken
        assert info.adapter_types == []
    finally:
        from coupler.bus.plugins import manager

        for b in broken_plugins():
            if "h141_no_such_module" in b.error:
                manager._BROKEN.pop(b.entry_point)


def test_a_site_naming_a_type_that_does_not_import_is_one_line_naming_its_place(tmp_path: Path) -> None:
    site_file = write_site(tmp_path, '[[adapters]]\nname = "m"\ntype = "missing"\ndirection = "inbound"\n'
                                     'channel = "c"\n')
    pm = plugin_manager(entry_points=False, extra=(_ByReference(),), core=False)
    with pytest.raises(ConfigError) as raised:
        load_site(site_file, adapter_types=adapter_types(pm))
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{site_file}:3: adapters[m].type: adapter type 'missing' of plugin ")
    assert "cannot import 'h141_no_such_module:Adapter'" in message
