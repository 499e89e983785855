"""The ``coupler`` command line.

Each command group lives in its own module (``bus/cli/<group>.py``) with a
``register(subparsers)`` function; this module builds the parser from them, lets plugins add
their commands through the hook ``coupler_cli_commands``, and turns a :class:`CouplerError`
into one line on standard error and a non-zero exit code: 2 for a usage error, 1 for a
failure. ``--debug`` shows the traceback as well.

Ctrl-C stops a command where it is (``KeyboardInterrupt``): the files it was writing are
removed as the stack unwinds (``bus/cli/outputs.py``), its workers stopped, and it exits with
status 130. SIGTERM (``kill``, ``timeout``, systemd stopping a unit) does the same for a
one-shot command, with status 143 (128 + 15, as shells and systemd expect of it): the
command's handler raises :class:`Terminated`, a ``KeyboardInterrupt``, so that every path that
cleans up after Ctrl-C cleans up after it. A command that handles SIGTERM itself (the daemon
drains) is marked with :func:`owns_signals`.

The plugins are loaded only when the command line names no built-in command (a plugin's
command, ``coupler --help``), so that the built-in commands start without importing every
installed plugin. Likewise a built-in command imports only its own module
(:data:`COMMANDS` says which module adds which command): ``coupler copybook decode`` does
not import the daemon's configuration models, the console or the transports. ``coupler
--help``, ``coupler`` alone and the generated reference build the whole parser.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from coupler.bus.cli import startup
from coupler.bus.cli.examples import attach
from coupler.canonical.errors import CouplerError, UnknownSchemaError

if TYPE_CHECKING:  # imported when plugins are loaded (not on a built-in command's path)
    import logging

    import pluggy

#: failures of a write that say where it went is full or refuses it (no file is named)
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}

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

#: every built-in command and the module that adds it (a test checks this against what the
#: modules register), so that a command line naming one imports that module alone
COMMANDS: dict[str, str] = {
    "schema": "coupler.bus.cli.schema",
    "plugins": "coupler.bus.cli.plugins",
    "plugin": "coupler.bus.cli.plugin",
    "xsd": "coupler.bus.cli.xml",
    "xml": "coupler.bus.cli.xml",
    "wsdl": "coupler.bus.cli.xml",
    "init": "coupler.bus.cli.site",
    "daemon": "coupler.bus.cli.site",
    "ctl": "coupler.bus.cli.ctl",
    "store": "coupler.bus.cli.store",
    "channel": "coupler.bus.cli.channel",
    "send": "coupler.bus.cli.send",
    "copybook": "coupler.bus.cli.copybook",
    "batch": "coupler.bus.cli.batch",
    "translate": "coupler.bus.cli.translate",
}


_F = TypeVar("_F", bound=Callable[..., object])


class Terminated(KeyboardInterrupt):  # noqa: N818 - a signal, not an error
    """SIGTERM reached a one-shot command: it stops as on Ctrl-C (a ``KeyboardInterrupt``, so
    that what cleans up after Ctrl-C cleans up after it), and exits with status 143."""


def owns_signals(func: _F) -> _F:
    """Mark a command's function that handles SIGTERM itself (the daemon drains on it): the
    command runs with SIGTERM as it finds it."""
    func.owns_signals = True  # type: ignore[attr-defined]
    return func


class _StopOnSigterm:
    """SIGTERM raises :class:`Terminated` in the command's main thread while the command runs;
    a second one is ignored (the command is already stopping: its clean-up is not cut short).
    A process forked from the command (``xml decode --jobs``' workers) inherits the handler:
    there SIGTERM ends the process as by default (the command stops its workers with it)."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.previous: Any = None
        self.received = False

    def __enter__(self) -> None:
        self.previous = signal.signal(signal.SIGTERM, self._on_sigterm)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        signal.signal(signal.SIGTERM, self.previous)
        if self.received and exc is not None and not isinstance(exc, Terminated):
            # what failed as the command stopped: the workers SIGTERM reached as well (systemd
            # signals every process of a unit), a Spark JVM gone before the session was stopped
            raise Terminated from exc

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        if os.getpid() != self.owner:  # a forked worker: the default action, death by SIGTERM
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        signal.signal(signum, signal.SIG_IGN)
        self.received = True
        raise Terminated


class _Version(argparse.Action):
    """``--version``, reading the installed distribution's version only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kw: Any):
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, **kw)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        print(f"coupler {_version()}")
        parser.exit()


def build_parser(
    pm: pluggy.PluginManager | None = None, *, modules: Sequence[str] = COMMAND_MODULES,
) -> argparse.ArgumentParser:
    """The ``coupler`` parser: the built-in commands (those of ``modules``: all by default),
    and those the plugins of ``pm`` add."""
    parser = argparse.ArgumentParser(
        prog="coupler",
        description="Coupler: integrate legacy systems through a message bus with one canonical data model.",
    )
    parser.add_argument("--version", action=_Version, help="show program's version number and exit")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in modules:
        importlib.import_module(name).register(sub)
    attach(parser)
    if pm is not None:
        from coupler.bus.plugins.manager import add_cli_commands

        add_cli_commands(pm, sub)
    return parser


def _command_token(argv: Sequence[str]) -> str | None:
    """The command the arguments name (the first that is not an option), if any."""
    return next((a for a in argv if not a.startswith("-")), None)


def _parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    command = _command_token(argv)
    if command in COMMANDS:  # a built-in command: its module alone (and its subcommand alone: startup.builds)
        startup.parsing(argv)
        try:
            return build_parser(modules=(COMMANDS[command],))
        finally:
            startup.parsing(None)
    from coupler.bus.plugins.manager import site_plugin_manager

    return build_parser(site_plugin_manager())  # a plugin's command, or the help listing them all


def _subcommands(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("coupler")
    except metadata.PackageNotFoundError:  # running from a source tree without installing
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    # the collector paused during the start-up, and what the start-up made frozen when this is
    # the command's own process (no argv given: the script, `python -m`); see startup.py
    startup.begin(freeze=argv is None)
    if argv is None:  # the command's own process: its standard error
        _name_bytes_on_stderr()
    try:
        try:
            return _main(list(sys.argv[1:] if argv is None else argv), own_process=argv is None)
        finally:  # what is left of the output, here rather than at the interpreter's exit
            _flush_stdout()
    except BrokenPipeError:  # `coupler ... | head`: the reader has what it wanted
        return 0
    except Terminated:  # SIGTERM: stopped as on Ctrl-C, with the status of a process SIGTERM ended
        print("coupler: interrupted (SIGTERM)", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:  # Ctrl-C, from the start-up on: the output files were removed as it stopped
        print("coupler: interrupted", file=sys.stderr)
        return 130
    except _StdoutFailed as exc:
        print(f"coupler: error: {exc}", file=sys.stderr)
        return 1
    finally:
        startup.done()


def _name_bytes_on_stderr() -> None:
    r"""A file name that is not UTF-8 (``bad\xff.dat``) reaches the messages as Python holds it
    (the byte as a lone surrogate, U+DCFF), which standard error showed as ``bad\udcff.dat``:
    shown as the byte it is, ``bad\xff.dat``, instead."""
    import codecs

    def escaped_bytes(exc: UnicodeError) -> tuple[str, int]:
        if not isinstance(exc, UnicodeEncodeError):
            raise exc
        text = exc.object[exc.start:exc.end]
        return "".join(f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else f"\\u{ord(c):04x}"
                       for c in text), exc.end

    codecs.register_error("coupler.escaped_bytes", escaped_bytes)
    reconfigure = getattr(sys.stderr, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="coupler.escaped_bytes")


class _StdoutFailed(Exception):
    """Standard output could not be written (a full disk it is redirected to)."""


def _flush_stdout() -> None:
    """Flush standard output. When its reader has gone (a broken pipe) or it cannot be written,
    point it at ``os.devnull``: the interpreter's own flush at exit then has nothing to fail on
    (else it prints ``Exception ignored ... BrokenPipeError`` and exits with status 120)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
        raise
    except OSError as exc:
        _discard_stdout()
        raise _StdoutFailed(f"cannot write standard output: {exc.strerror or exc}") from None


def _discard_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a file descriptor (a test's capture): nothing to flush
        pass


def _main(argv: list[str], *, own_process: bool = False) -> int:
    # NumPy's OpenBLAS starts a thread per core at import, which then spins: ~0.1 s of CPU
    # per process on two cores (a third of `copybook decode`'s start-up,
    # docs/performance.md). Coupler does no linear algebra; a user's own setting wins, and
    # the processes the command starts (Spark's workers) inherit it.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        parser = _parser_for(argv)
    except CouplerError as exc:  # a plugin that cannot be loaded, or adds a command twice
        if "--debug" in argv:
            raise
        print(f"coupler: error: {exc}", file=sys.stderr)
        return exc.exit_code
    args = parser.parse_args(argv)
    # (a command marked startup.logs_nothing, in its own process, leaves logging unimported)
    if args.debug or not (own_process and getattr(args.func, "logs_nothing", False)) or "logging" in sys.modules:
        _configure_logging(args.debug)
    if not getattr(args.func, "ends_startup", False):
        startup.done()
    try:
        with contextlib.ExitStack() as stack:
            if not getattr(args.func, "owns_signals", False) and threading.current_thread() is threading.main_thread():
                stack.enter_context(_StopOnSigterm())  # signals reach the main thread only
            return int(args.func(args) or 0)
    except CouplerError as exc:
        if args.debug:
            raise
        if isinstance(exc, UnknownSchemaError):
            _where_schemas_come_from(exc, args)
        print(f"coupler: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # `coupler ... | head`: main() points standard output at os.devnull
        raise
    except OSError as exc:  # a file a command writes or reads that the command did not check
        if args.debug:
            raise
        if exc.filename is None and exc.errno in _WRITE_ERRNOS:  # a write, of no named file: standard output
            # (every --output goes through coupler.bus.cli.outputs, which names its file, as does
            # and its --errors file (ReportFile), which names its file
            print(f"coupler: error: cannot write standard output: {exc.strerror}", file=sys.stderr)
            _discard_stdout()  # the rest of its buffer would fail again at exit
            return 1
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"coupler: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug: still one line, the traceback with --debug
        if args.debug:
            raise
        print(f"coupler: error: internal error: {type(exc).__name__}: {exc} "
              "(run again with --debug for the traceback and report it)", file=sys.stderr)
        return 1


def _configure_logging(debug: bool) -> None:
    """Log records on standard error, ``LEVEL logger: message``; debug records with ``--debug``.
    Without ``--debug``, where the handler is ours (not a program's own), a library's log of the
    interrupt that stops the command is left out (:func:`_not_the_interrupt`)."""
    import logging

    ours = not logging.getLogger().handlers  # basicConfig adds a handler (not in a program that has its own)
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if ours and not debug:
        for handler in logging.getLogger().handlers:
            handler.addFilter(_not_the_interrupt)


def _not_the_interrupt(record: logging.LogRecord) -> bool:
    """Leave out a library's log of the Ctrl-C or SIGTERM that stops the command, or of what
    failed as it handled it (py4j logs ``KeyboardInterrupt while sending command.``, then a
    failure to close its connection to a JVM that SIGTERM ended too, with their tracebacks, when
    ``batch translate`` is interrupted): the command says it was interrupted, in one line."""
    exc = record.exc_info[1] if record.exc_info else None
    seen = 0
    while exc is not None and seen < 20:  # the exception, and those it was raised while handling
        if isinstance(exc, KeyboardInterrupt):
            return False
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return True


def _where_schemas_come_from(exc: UnknownSchemaError, args: argparse.Namespace) -> None:
    """Say how this command is given schemas of one's own (``--schemas`` or the site's
    ``[schemas] paths``)."""
    if hasattr(args, "schemas"):
        exc.add_hint("a schema of your own: add its directory with --schemas DIR")
    elif hasattr(args, "site"):
        exc.add_hint("a schema of your own: list its directory in the site's [schemas] paths")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
