"""``--strict`` and ``--max-errors``: one meaning and one wording for every decode path
(``copybook decode``, ``translate``, ``batch translate``).

Records are numbered from 1 and located by the file byte offset of the record in every
message. Exit status 1 when a record was rejected under ``--strict`` or when more than
``--max-errors N`` errors were found (``0``: stop at the first, Cobrix's FAILFAST).
"""

from __future__ import annotations

import argparse

from coupler.canonical.errors import UsageError

MAX_ERRORS_HELP = (
    "stop with exit status 1 once more than N errors (rejected records and bad fields) were found;"
    " 0 stops at the first (Cobrix's FAILFAST)"
)


def add_max_errors_option(p: argparse.ArgumentParser, help: str = MAX_ERRORS_HELP) -> None:
    p.add_argument("--max-errors", type=int, metavar="N", help=help)


def check_max_errors(value: int | None) -> None:
    if value is not None and value < 0:
        raise UsageError("--max-errors needs a number >= 0")


def record_where(file: str, record: int, offset: int | None) -> str:
    """``FILE: record N at byte B`` (``N`` from 1), as the copybook decoder locates errors."""
    return f"{file}: record {record}" + (f" at byte {offset}" if offset is not None else "")


def too_many_errors(limit: int, where: str | None) -> str:
    """The one line that ends a run stopped by ``--max-errors``."""
    return f"stopped after more than {limit} errors (--max-errors)" + (f", the last at {where}" if where else "")


def rejected_under_strict(count: int, where: str | None) -> str:
    """The one line that ends a ``--strict`` run that rejected records."""
    return f"{count} records rejected (--strict)" + (f", the first at {where}" if where else "")


def exceeded_at_the_end(limit: int, count: int, where: str | None) -> str:
    """The one line of a run that could only count its errors at the end (a Spark job runs
    its tasks to completion): more than ``--max-errors`` were found."""
    return (f"{count} records rejected, more than {limit} errors (--max-errors)"
            + (f", the first at {where}" if where else ""))
