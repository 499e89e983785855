"""The ``coupler`` command line.

Each command group lives in its own module (``bus/cli/<group>.py``) with a
``register(subparsers)`` function; this module builds the parser from them and turns a
:class:`CouplerError` into one line on standard error and a non-zero exit code: 2 for a
usage error, 1 for a failure. ``--debug`` shows the traceback as well.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from importlib import metadata

from coupler.bus.cli.examples import attach
from coupler.canonical.errors import CouplerError

#: the modules that each add a command group (in the order ``coupler --help`` lists them)
COMMAND_MODULES: tuple[str, ...] = (
    "coupler.bus.cli.schema",
    "coupler.bus.cli.plugins",
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


def build_parser() -> argparse.ArgumentParser:
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
    return parser


def _version() -> str:
    try:
        return metadata.version("coupler")
    except metadata.PackageNotFoundError:  # running from a source tree without installing
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
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
