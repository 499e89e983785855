"""The start-up of a ``coupler`` process and the garbage collector (bus/cli/startup.py): the
collector pauses while a command imports and builds its parser; in the command's own
process what the start-up made is frozen once the command has imported what it needs (the
collector then does not walk it again, nor at the exit: a quarter of ``copybook decode``'s
start-up, docs/performance.md); a program calling ``main([...])`` keeps its collector as it
was."""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coupler.bus.cli.main import main

REPO = Path(__file__).resolve().parents[3]


def _data(tmp_path: Path) -> tuple[Path, Path]:
    sys.path.insert(0, str(REPO / "benchmarks"))
    import datagen

    return datagen.write_copybook(tmp_path / "txn.cpy"), datagen.write_fixed_file(tmp_path / "tiny.dat", 10)


def _own_process(tmp_path: Path, args: list[str]) -> list[str]:
    """What the command's own process saw: at gc.freeze, the modules loaded; at the end,
    whether the collector runs and anything is frozen."""
    code = (
        "import gc, sys\n"
        "seen = []\n"
        "freeze = gc.freeze\n"
        "def spy():\n"
        "    seen.append(' '.join(m for m in ('pyarrow', 'coupler.translators.copybook.batch_files',\n"
        "                                     'coupler.translators.copybook.arrow_parquet') if m in sys.modules))\n"
        "    freeze()\n"
        "gc.freeze = spy\n"
        f"sys.argv = ['coupler', *{args!r}]\n"
        "from coupler.bus.cli.main import main\n"
        "try:\n"
        "    code = main()\n"
        "except SystemExit as stop:\n"
        "    code = stop.code\n"
        "print(*(f'@@{v}' for v in (code, gc.isenabled(), gc.get_freeze_count() > 0, *seen)), sep='\\n')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return [line[2:] for line in done.stdout.splitlines() if line.startswith("@@")]


def test_copybook_decode_freezes_its_start_up_after_importing_the_decoder_and_writer(tmp_path: Path) -> None:
    copybook, data = _data(tmp_path)
    out = _own_process(tmp_path, ["copybook", "decode", str(copybook), str(data), "--to", "parquet",
                                  "--output", str(tmp_path / "out.parquet")])
    assert out == ["0", "True", "True",
                   "pyarrow coupler.translators.copybook.batch_files coupler.translators.copybook.arrow_parquet"]


def test_another_command_freezes_its_start_up_before_it_runs(tmp_path: Path) -> None:
    copybook, _ = _data(tmp_path)
    out = _own_process(tmp_path, ["copybook", "layout", str(copybook)])
    assert out[:3] == ["0", "True", "True"] and len(out) == 4


def test_help_and_usage_errors_leave_the_collector_running(tmp_path: Path) -> None:
    assert _own_process(tmp_path, ["copybook", "decode", "--help"])[:3] == ["0", "True", "True"]
    assert _own_process(tmp_path, ["copybook", "decode"])[:2] == ["2", "True"]


@pytest.mark.parametrize("args", [["copybook", "layout"], ["copybook", "decode", "--help"], []])
def test_main_called_in_a_program_leaves_its_collector_as_it_was(tmp_path: Path, args: list[str]) -> None:
    copybook, _ = _data(tmp_path)
    if args[:2] == ["copybook", "layout"]:
        args = [*args, str(copybook)]
    frozen = gc.get_freeze_count()
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                    contextlib.suppress(SystemExit):
                main(args)
            assert gc.isenabled() is enabled
        finally:
            gc.enable()
    assert gc.get_freeze_count() == frozen


def _loaded_after(tmp_path: Path, args: list[str], modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a ``coupler`` process has imported once the command is done."""
    code = (
        "import sys\n"
        f"sys.argv = ['coupler', *{args!r}]\n"
        "from coupler.bus.cli.main import main\n"
        "assert main() == 0\n"
        f"print('@@' + ' '.join(m for m in {modules!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return [line[2:] for line in done.stdout.splitlines() if line.startswith("@@")][0].split()


def test_a_small_decode_starts_no_threads_and_imports_no_error_helpers(tmp_path: Path) -> None:
    """A file of one chunk decodes on the command's thread even with ``--jobs 2`` (no thread
    pool, no ``concurrent.futures``); ``difflib`` is for a misspelt option only (start-up)."""
    copybook, data = _data(tmp_path)
    decode = ["copybook", "decode", str(copybook), str(data), "--to", "parquet", "--jobs", "2"]
    lazy = ("concurrent.futures", "difflib")
    assert _loaded_after(tmp_path, [*decode, "--output", str(tmp_path / "a.parquet")], lazy) == []
    sys.path.insert(0, str(REPO / "benchmarks"))
    import datagen

    big = datagen.write_fixed_file(tmp_path / "big.dat", 16_385)  # two chunks of the CLI's 16,384 records
    assert _loaded_after(tmp_path, ["copybook", "decode", str(copybook), str(big), "--to", "parquet", "--jobs", "2",
                                    "--output", str(tmp_path / "b.parquet")], lazy) == ["concurrent.futures"]


def test_copybook_decode_imports_no_logging_unless_debug(tmp_path: Path) -> None:
    """``copybook decode`` is marked ``logs_nothing`` (startup.py): its process configures
    logging only with --debug, so nothing it imports may log; a module on its path that
    imports :mod:`logging` makes this fail (then drop the mark)."""
    copybook, data = _data(tmp_path)
    for to in ("parquet", "jsonl", "avro"):
        decode = ["copybook", "decode", str(copybook), str(data), "--to", to, "--output", str(tmp_path / f"a.{to}")]
        assert _loaded_after(tmp_path, decode, ("logging",)) == [], to
        assert _loaded_after(tmp_path, ["--debug", *decode], ("logging",)) == ["logging"], to
    assert _loaded_after(tmp_path, ["copybook", "layout", str(copybook)], ("logging",)) == ["logging"]


@pytest.mark.parametrize("imported_first", [True, False])
def test_a_program_calling_main_has_its_logging_configured_as_before(tmp_path: Path, imported_first: bool) -> None:
    """A program calling ``main([...])`` gets the same logging configuration from every
    command, marked ``logs_nothing`` or not, whether it imported logging first or not."""
    copybook, data = _data(tmp_path)
    code = (
        ("import logging\n" if imported_first else "")
        + "from coupler.bus.cli.main import main\n"
        f"assert main(['copybook', 'decode', {str(copybook)!r}, {str(data)!r}, '--to', 'parquet',\n"
        f"             '--output', {str(tmp_path / 'a.parquet')!r}]) == 0\n"
        "import logging\n"
        "root = logging.getLogger()\n"
        "print('@@', logging.getLevelName(root.level), [h.formatter._fmt for h in root.handlers])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "@@ WARNING ['%(levelname)s %(name)s: %(message)s']" in done.stdout


def test_copybook_decode_imports_no_dataclasses(tmp_path: Path) -> None:
    """The classes of the copybook parser, layout, options and decoder are plain classes
    (canonical/plain.py): ``@dataclass`` compiled their methods from source text in every
    process, ~15 % of ``copybook decode``'s instructions (docs/performance.md, h137). A module on
    the decode's path that imports :mod:`dataclasses` (or builds a dataclass) fails this."""
    copybook, data = _data(tmp_path)
    for to in ("parquet", "jsonl", "avro"):
        decode = ["copybook", "decode", str(copybook), str(data), "--to", to, "--output", str(tmp_path / f"a.{to}")]
        assert _loaded_after(tmp_path, decode, ("dataclasses",)) == [], to


def test_a_copybook_command_line_builds_the_arguments_of_its_subcommand_alone(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``coupler copybook decode ...`` adds no arguments to the other subcommands' parsers
    (startup.builds: 2.4 M instructions of the decode's start-up); each subcommand's help is the
    one of the whole parser, and the whole parser (the reference, ``build_parser()``) has them all."""
    from coupler.bus.cli.main import _parser_for, build_parser

    def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        group = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        copybook = group.choices["copybook"]
        return dict(next(a for a in copybook._actions if isinstance(a, argparse._SubParsersAction)).choices)

    def options(parser: argparse.ArgumentParser) -> list[str]:
        return [a.dest for a in parser._actions if a.dest != "help"]

    whole = subparsers(build_parser())
    names = ["layout", "schema", "decode", "family", "encode"]
    assert sorted(whole) == sorted(names) and all(options(whole[name]) for name in names)
    built = subparsers(_parser_for(["copybook", "decode", "a.cpy", "a.dat", "--to", "parquet"]))
    assert [name for name in names if options(built[name])] == ["decode"]
    assert options(built["decode"]) == options(whole["decode"])
    assert all(options(p) for p in subparsers(_parser_for(["copybook"])).values())
    for name in names:
        for args in (["copybook", name, "--help"], ["--debug", "copybook", name, "-h"]):
            with pytest.raises(SystemExit):
                main(args)
            shown = capsys.readouterr().out
            assert shown == whole[name].format_help() and "--" in shown, args


def _mimalloc_options(tmp_path: Path, **env: str) -> list[str]:
    """The options pyarrow's mimalloc printed as it started in ``coupler copybook decode``'s
    own process (``MIMALLOC_VERBOSE``)."""
    copybook, data = _data(tmp_path)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_") and k != "ARROW_DEFAULT_MEMORY_POOL"}
    done = subprocess.run(
        [sys.executable, "-m", "coupler.bus.cli", "copybook", "decode", str(copybook), str(data), "--to", "parquet",
         "--jobs", "2", "--parts", "--output", str(tmp_path / f"parts{len(env)}")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env={**environ, "MIMALLOC_VERBOSE": "1", **env},
    )
    assert done.returncode == 0, done.stderr
    return [line.strip() for line in done.stderr.splitlines() if line.startswith("option 'purge_delay'")]


def test_copybook_decode_keeps_the_memory_it_frees_for_its_next_batches(tmp_path: Path) -> None:
    """pyarrow's allocator gives nothing back to the OS in the command's own process: with
    mimalloc's 1 s delay it gave back and faulted in again 460-760 MB over a 1 GB decode
    (docs/performance.md, h139); a delay the user set is kept."""
    pa = pytest.importorskip("pyarrow")
    try:
        pa.mimalloc_memory_pool()
    except NotImplementedError:
        pytest.skip("this pyarrow has no mimalloc")
    assert _mimalloc_options(tmp_path) == ["option 'purge_delay': -1"]
    assert _mimalloc_options(tmp_path, MIMALLOC_PURGE_DELAY="500") == ["option 'purge_delay': 500"]


def test_main_called_in_a_program_leaves_the_allocator_as_it_was(tmp_path: Path) -> None:
    copybook, data = _data(tmp_path)
    code = (
        "import os\n"
        "from coupler.bus.cli.main import main\n"
        f"assert main(['copybook', 'decode', {str(copybook)!r}, {str(data)!r}, '--to', 'parquet',\n"
        f"             '--output', {str(tmp_path / 'a.parquet')!r}]) == 0\n"
        "print('@@', os.environ.get('MIMALLOC_PURGE_DELAY'))\n"
    )
    environ = {k: v for k, v in os.environ.items() if k != "MIMALLOC_PURGE_DELAY"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=environ)
    assert done.returncode == 0, done.stderr
    assert "@@ None" in done.stdout
