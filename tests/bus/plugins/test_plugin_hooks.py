"""The extension points are pluggy hooks: transports, translators and CLI commands come from
plugins, Coupler's own registered like a third party's (tests/bus/plugin_extensions.py)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from coupler.bus.cli.main import main
from coupler.bus.config.loader import ConfigError, load_site
from coupler.bus.plugins.hookspecs import hookimpl
from coupler.bus.plugins.manager import (
    PluginError,
    plugin_manager,
    translator_types,
    transport_types,
)
from coupler.bus.runtime.daemon import Daemon
from coupler.bus.transport.factory import open_transport
from coupler.canonical import Envelope, FormatIndicator
from tests.adapters.filedrop.test_site_translation import RECORDS
from tests.adapters.filedrop.test_site_translation import SITE as MAPPED_SITE
from tests.adapters.filedrop.test_site_translation import make_site as make_mapped_site
from tests.bus import plugin_extensions
from tests.bus.site_helpers import wait_for

REPO = Path(__file__).resolve().parents[3]
EXTRA = "tests.bus.plugin_extensions"


def run_cli(*args: str, extra: str = EXTRA, input: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"COUPLER_EXTRA_PLUGINS": extra, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "coupler.bus.cli.main", *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=REPO, input=input)


def test_plugins_json_lists_transports_and_translators_next_to_adapters() -> None:
    out = run_cli("plugins", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert rows["sqlite"]["transport_types"] == ["sqlite"] and rows["sqlite"]["distribution"] == "coupler"
    assert rows["amqp"]["transport_types"] == ["amqp"] and rows["amqp"]["distribution"] == "coupler"
    assert sorted(rows["builtin"]["translator_types"]) == ["copybook", "json", "xml"]
    assert rows["filedrop"]["adapter_types"] == ["filedrop"]
    ext = rows[EXTRA]
    assert (ext["transport_types"], ext["translator_types"], ext["cli_commands"]) == (["mirror"], ["shout"], ["hello"])


def test_the_builtin_transports_come_only_through_the_hook() -> None:
    assert sorted(transport_types(plugin_manager())) == ["amqp", "memory", "postgres", "sqlite"]
    assert transport_types(plugin_manager(entry_points=False, core=False)) == {}
    assert sorted(translator_types(plugin_manager())) == ["copybook", "json", "xml"]


def test_a_plugin_transport_is_opened_by_the_site_that_names_it(tmp_path: Path) -> None:
    site_file = tmp_path / "site.toml"
    site_file.write_text('[site]\nname = "mirrored"\n\n[store]\ntype = "mirror"\n')
    with pytest.raises(ConfigError, match=r"site\.toml:5: store\.type: no installed plugin provides transport type 'mirror'"):
        load_site(site_file, pm=plugin_manager())
    pm = plugin_manager(extra=(plugin_extensions,))
    site = load_site(site_file, pm=pm)
    with open_transport(site, pm) as t:
        t.send("orders", Envelope(format=FormatIndicator("test.Note", 1, "text/plain"), body=b"hi"))
        (got,) = t.receive("orders", "test")
        assert got.envelope.body == b"hi"
    assert "mirrored" in plugin_extensions.OPENED and (tmp_path / "data" / "mirror.db").exists()
    # the CLI finds it the same way (a channel command in another process)
    put = run_cli("channel", "put", "--site", str(site_file), "notes", "--lines", input="one\ntwo\n")
    assert put.returncode == 0, put.stderr
    with open_transport(site, pm) as t:
        assert sorted(e.body for e in t.peek("notes", 10)) == [b"one", b"two"]


def test_a_plugin_translator_is_chosen_by_translator(tmp_path: Path) -> None:
    text = MAPPED_SITE.replace('direction = "outbound"\nchannel = "accounts"\nmapping = "mappings/account.toml"\n',
                               'direction = "outbound"\nchannel = "accounts"\nmapping = "mappings/account.toml"\n'
                               'translator = "shout"\n')
    assert text != MAPPED_SITE
    site_file = make_mapped_site(tmp_path, text)
    with pytest.raises(ConfigError, match=r"adapters\[accounts-out\]\.translator: no installed plugin provides "
                                          r"translator type 'shout'"):
        load_site(site_file, pm=plugin_manager())
    pm = plugin_manager(extra=(plugin_extensions,))
    daemon = Daemon(load_site(site_file, pm=pm), pm=pm)
    daemon.start()
    try:
        (tmp_path / "drop" / "accounts.dat").write_bytes(RECORDS[0])
        target = tmp_path / "out" / "accounts.dat"
        wait_for(lambda: target.exists() and target.stat().st_size > 0, "the shouted record")
        assert json.loads(target.read_text().lower()) == {
            "acct_id": 1, "acct_name": "alice", "status_code": "a", "balance": "123.45"}
    finally:
        daemon.shutdown()


def test_a_plugin_adds_a_cli_command(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COUPLER_EXTRA_PLUGINS", EXTRA)
    assert main(["hello", "world"]) == 0
    assert capsys.readouterr().out == "hello, world!\n"
    assert main(["hello", "three"]) == 3
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "hello" in capsys.readouterr().out
    out = run_cli("hello", "there")
    assert (out.returncode, out.stdout) == (0, "hello, there!\n"), out.stderr


class _Clash:
    @hookimpl
    def coupler_cli_commands(self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        subparsers.add_parser("plugins")


def test_a_plugin_command_that_exists_already_is_an_error_naming_the_plugin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from coupler.bus.cli.main import build_parser

    with pytest.raises(PluginError, match="adds a command that coupler itself has already"):
        build_parser(plugin_manager(entry_points=False, extra=(_Clash(),)))
    monkeypatch.setenv("COUPLER_EXTRA_PLUGINS", "tests.bus.plugins.test_plugin_hooks:_CLASH")
    assert main(["nosuch"]) == 1
    assert "adds a command that coupler itself has already" in capsys.readouterr().err


_CLASH = _Clash()
