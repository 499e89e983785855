"""The start-up of a ``coupler`` process and Python's cyclic garbage collector.

A command's start-up imports its modules (NumPy and pyarrow for ``copybook decode``) and
builds its parser: a few hundred thousand objects that live as long as the process, and no
garbage. The collector would walk them in dozens of collections while they are made, and
walk them all again at the interpreter's exit: 0.10-0.13 s of CPU at the exit alone for
``coupler copybook decode`` on a slow host, a quarter of its start-up (docs/performance.md).

:func:`begin` pauses the collector; :func:`done` starts it again when the start-up is over
and, when the command owns its process (the ``coupler`` script, ``python -m
coupler.bus.cli``), first moves what the start-up made out of the collector's view
(``gc.freeze``): the objects stay, are freed by reference counting as ever, and are no longer
walked by later collections nor at the exit. A garbage cycle made during the start-up, if
any, stays in memory (bounded: the start-up runs once). Called in a process that goes on
after the command (tests, a program calling ``main([...])``), nothing is frozen.

``main`` calls :func:`done` before a command runs, unless the command's function is marked
with :func:`ends_startup`: such a command calls :func:`done` itself once it has imported
what it needs (``copybook decode`` imports its decoder and writers first); ``main`` calls it
again when the command returns (it does nothing the second time).

:func:`builds` lets a command group leave out the arguments of the subcommands a command line
does not name (``coupler copybook decode ...`` adds none to ``copybook layout``).
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

_F = TypeVar("_F", bound=Callable[..., object])

_paused = False
_freeze = False
#: the words of the command line (less its options) while ``main`` builds the parser of the
#: built-in command it names (:func:`parsing`); ``None``: every parser is built whole
_words: tuple[str, ...] | None = None
_own_process = False


def begin(*, freeze: bool) -> None:
    """Pause the collector for the start-up (if it runs); ``freeze``: this process is the
    command's own (see the module's documentation)."""
    global _paused, _freeze, _own_process
    _own_process = freeze
    if gc.isenabled():
        gc.disable()
        _paused, _freeze = True, freeze


def done() -> None:
    """The start-up is over: the collector runs again (what the start-up made frozen first, in
    a process of the command's own). Does nothing when :func:`begin` paused nothing or
    :func:`done` already ran."""
    global _paused, _freeze
    if _paused:
        if _freeze:
            gc.freeze()
        _paused = _freeze = False
        gc.enable()


def ends_startup(func: _F) -> _F:
    """Mark a command's function that calls :func:`done` itself, after its own imports."""
    func.ends_startup = True  # type: ignore[attr-defined]
    return func


def logs_nothing(func: _F) -> _F:
    """Mark a command's function whose modules never log (nor import :mod:`logging`): in the
    command's own process (the ``coupler`` script, ``python -m coupler.bus.cli``) ``main`` then
    configures logging for it only with ``--debug`` or when :mod:`logging` is already imported,
    so that the process does not import :mod:`logging` (2 % of ``copybook decode``'s start-up,
    docs/performance.md); a program calling ``main([...])`` has its logging configured as by
    every command. A test keeps the mark true: ``copybook decode`` imports no :mod:`logging`."""
    func.logs_nothing = True  # type: ignore[attr-defined]
    return func


def parsing(argv: Sequence[str] | None) -> None:
    """``main`` builds the parser of a built-in command for ``argv`` (``None``: it is done)."""
    global _words
    _words = None if argv is None else tuple(arg for arg in argv if not arg.startswith("-"))


def builds(command: str, name: str, names: Collection[str]) -> bool:
    """Whether ``command``'s subcommand ``name`` (one of ``names``, its subcommands) gets its
    arguments: not while ``main`` builds the parser of a command line that names ``command`` and
    another of ``names`` (``coupler copybook decode ...`` adds none to ``copybook layout``, whose
    parser it never uses: 2.4 M instructions of the decode's start-up, docs/performance.md); always
    otherwise (``coupler copybook --help``, the reference, :func:`~.main.build_parser` called by
    a program). The command, then the subcommand, are the command line's first words that are
    not options: the options before them (``--debug``, ``--version``, ``-h``) take no value."""
    words = _words
    return words is None or len(words) < 2 or words[0] != command or words[1] not in names or words[1] == name


#: how long pyarrow's allocator (mimalloc) keeps memory freed before it gives it back to the OS
#: in a process of the command's own: never (-1), instead of mimalloc's 1 s. A command that
#: decodes a file frees and allocates its batches and Parquet buffers over and over; with the
#: 1 s delay mimalloc gave back 460-760 MB over a 1 GB `copybook decode --to parquet`, every
#: page of it faulted in and zeroed again as huge pages (2 MB, mimalloc asks for them) when
#: the memory was used again: 24,000 page faults with one thread, 49,000 with `--jobs 2
#: --parts`, 7,800 and 8,800 with none given back; the peak RSS stays what it was (the
#: memory is reused, not added to; docs/performance.md, h139)
PURGE_DELAY_MS = "-1"


def keep_freed_memory() -> None:
    """Before pyarrow is loaded, in a process of the command's own (see :func:`begin`): its
    allocator keeps the memory the command frees for the command's next batches
    (``MIMALLOC_PURGE_DELAY``, :data:`PURGE_DELAY_MS`; mimalloc reads it once, when pyarrow
    loads it). A value the user set is kept; a program calling ``main([...])`` is left as it
    is, and so is a process that has loaded pyarrow already (the setting would do nothing)."""
    if _own_process and "pyarrow" not in sys.modules:
        os.environ.setdefault("MIMALLOC_PURGE_DELAY", PURGE_DELAY_MS)
