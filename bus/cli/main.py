"""The ``coupler`` command line.

Each command group lives in its own module (``bus/cli/<group>.py``) with a
``register(subparsers)`` function; this module builds the parser from them, lets plugins add
their commands through the hook ``coupler_cli_commands``, and turns a :class:`CouplerError`
into one line on standard error and a non-zero exit code: 2 for a usage error, 1 for a
failure. ``--debug`` shows the traceback as well.

The plugins are loaded only when the command line names no built-in command (a plugin's
command, ``coupler --help``), so that the built-in commands start without importing every
installed plugin.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from importlib import metadata

import pluggy

from coupler.bus.cli.examples import attach
from coupler.bus.plugins.manager import add_cli_commands, site_plugin_manager
from coupler.canonical.errors import CouplerError

#: the modules that each add a command group (in the order ``coupler --help`` lists them)
COMMAND_MODULES: tuple[str, ...] = (
    "coupler.bus.cli.schema",
    "coupler.bus.cli.plugins",
    "coupler.bus.cli.plugin",
    "coupler.bus.cli.xml",
    "coupler.bus.cli.site",
    "coupler.bus.cli.ctl",
    "coupler.bus.cli.store",
    "coupler.bus.cli.channel",
    "coupler.bus.cli.send",
    "coupler.bus.cli.copybook",
    "coupler.bus.cli.batch",
    "coupler.bus.cli.translate",
)


def build_parser(pm: pluggy.PluginManager | None = None) -> argparse.ArgumentParser:
    """The ``coupler`` parser: the built-in commands, and those the plugins of ``pm`` add."""
    parser = argparse.ArgumentParser(
        prog="coupler",
        description="Coupler: integrate legacy systems through a message bus with one canonical data model.",
    )
    parser.add_argument("--version", action="version", version=f"coupler {_version()}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    attach(parser)
    if pm is not None:
        add_cli_commands(pm, sub)
    return parser


def _command_token(argv: Sequence[str]) -> str | None:
    """The command the arguments name (the first that is not an option), if any."""
    return next((a for a in argv if not a.startswith("-")), None)


def _parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = build_parser()
    builtin = _subcommands(parser)
    if _command_token(argv) in builtin:
        return parser
    return build_parser(site_plugin_manager())  # a plugin's command, or the help listing them all


def _subcommands(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def _version() -> str:
    try:
        return metadata.version("coupler")
    except metadata.PackageNotFoundError:  # running from a source tree without installing
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = _parser_for(argv)
    except CouplerError as exc:  # a plugin that cannot be loaded, or adds a command twice
        if "--debug" in argv:
            raise
        print(f"coupler: error: {exc}", file=sys.stderr)
        return exc.exit_code
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args) or 0)
    except CouplerError as exc:
        if args.debug:
            raise
        print(f"coupler: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `coupler ... | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
