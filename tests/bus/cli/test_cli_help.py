"""Every command's ``--help`` ends with examples, and every example is a command line the
parser accepts (so an example cannot drift from the options it shows)."""

from __future__ import annotations

import argparse
import contextlib
import io
import shlex

import pytest

from coupler.bus.cli.doc import _subcommands
from coupler.bus.cli.examples import EXAMPLES
from coupler.bus.cli.main import build_parser


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub, _ in _subcommands(parser):
        found += _commands(sub, (*path, name))
    return found


COMMANDS = _commands(build_parser())


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "coupler")
def test_help_ends_with_examples(path: tuple[str, ...]) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        build_parser().parse_args([*path, "--help"])
    assert done.value.code == 0
    text = out.getvalue().rstrip()
    assert "\nexamples:\n" in text, f"coupler {' '.join(path)} --help has no examples"
    assert "coupler " in text.splitlines()[-1]


def test_every_example_names_a_command_and_parses() -> None:
    parser = build_parser()
    known = {" ".join(p) for p in COMMANDS}
    assert set(EXAMPLES) <= known, f"examples of commands that do not exist: {set(EXAMPLES) - known}"
    for path, examples in EXAMPLES.items():
        for _, line in examples:
            for part in line.replace("&&", "|").split("|"):
                argv = shlex.split(part)
                if not argv or argv[0] != "coupler":
                    continue
                err = io.StringIO()
                try:
                    with contextlib.redirect_stderr(err):
                        parser.parse_args(argv[1:])
                except SystemExit:
                    pytest.fail(f"example of `coupler {path}` does not parse: {part.strip()}\n{err.getvalue()}")


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "coupler")
def test_every_argument_says_what_it_is(path: tuple[str, ...]) -> None:
    parser = build_parser()
    for name in path:
        parser = dict((n, s) for n, s, _ in _subcommands(parser))[name]
    silent = [a.option_strings[0] if a.option_strings else (a.metavar or a.dest) for a in parser._actions
              if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and not a.help]
    assert not silent, f"coupler {' '.join(path)}: no help for {silent}"


def test_commands_map_names_the_module_of_every_builtin_command() -> None:
    """``COMMANDS`` (which module a command line imports) matches what the modules register."""
    import importlib

    from coupler.bus.cli.main import COMMAND_MODULES, COMMANDS

    registered: dict[str, str] = {}
    for module in COMMAND_MODULES:
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        importlib.import_module(module).register(sub)
        registered.update(dict.fromkeys(sub.choices, module))
    assert registered == COMMANDS


def test_a_builtin_command_imports_its_own_module_only() -> None:
    """``coupler copybook ...`` starts without the other commands, the plugins, the daemon's
    configuration models or the envelope's Avro codec (start-up time of the copybook path)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from coupler.bus.cli.main import main\n"
        "try:\n"
        "    main(['copybook', 'layout', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(out.split())
    assert "coupler.bus.cli.copybook" in loaded
    for absent in ("coupler.bus.cli.site", "coupler.bus.cli.ctl", "coupler.bus.config.models", "pluggy",
                   "coupler.bus.plugins.manager", "coupler.canonical.envelope", "fastavro", "pyspark"):
        assert absent not in loaded, f"coupler copybook imports {absent}"


def test_coupler_help_still_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    from coupler.bus.cli.main import COMMANDS, main

    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    listing = capsys.readouterr().out
    missing = [name for name in COMMANDS if f"    {name} " not in listing and f"    {name}\n" not in listing]
    assert not missing, f"coupler --help does not list {missing}"


def test_a_command_does_not_load_what_only_some_adapters_need() -> None:
    """Every ``coupler`` command loads the adapter plugins; aiohttp (SOAP), paramiko (SFTP) and
    xmlschema (XSD, WSDL) are imported when an adapter or a command first uses them: they
    were half the start-up of each command (0.84 -> 0.35 s of CPU for ``coupler --help``)."""
    import subprocess
    import sys

    code = ("import contextlib, io, sys\n"
            "from coupler.bus.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    main(['--help'])\n"
            "print(' '.join(m for m in ('aiohttp', 'paramiko', 'xmlschema') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
