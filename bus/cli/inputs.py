"""Reading the files a user names on the command line: JSON lines (or an Avro container file
where a command reads records) from a path or ``-`` (standard input).

Every way a named input can be of the wrong kind (missing, a directory, not UTF-8 text, an
Avro container where text is expected) becomes one :class:`UsageError` naming the file, the
line and what the command expects, never a traceback.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from coupler.canonical.errors import UsageError, one_line
from coupler.canonical.streams import avro_container

#: the first bytes of an Avro object container file (Avro specification, "Object Container Files")
AVRO_MAGIC = b"Obj\x01"


def is_avro_container(path: Path) -> bool:
    """True when ``path`` (a regular file) starts like an Avro object container file."""
    try:
        with open(path, "rb") as f:
            return f.read(len(AVRO_MAGIC)) == AVRO_MAGIC
    except OSError:
        return False


def _check_file(path: Path, expected: str) -> None:
    if path.is_dir():
        raise UsageError(f"{path} is a directory", hint=f"pass {expected}")
    if not path.exists():
        raise UsageError(f"input file {path} does not exist", hint=f"pass {expected}")


@contextlib.contextmanager
def text_lines(path: Path | str, expected: str) -> Iterator[Iterator[str]]:
    """The lines of the UTF-8 text file ``path`` (``-``: standard input). ``expected`` says
    what the command reads (``"JSON lines"``), for the messages of a wrong input."""
    if str(path) == "-":
        yield _decoded(sys.stdin, "standard input", expected)
        return
    path = Path(path)
    _check_file(path, expected)
    if is_avro_container(path):
        raise UsageError(f"{path} is an Avro container file", hint=f"this command reads {expected}")
    try:
        stream = open(path, encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    with stream:
        yield _decoded(stream, str(path), expected)


def _decoded(stream: Any, name: str, expected: str) -> Iterator[str]:
    number = 0
    try:
        for number, line in enumerate(stream, 1):  # noqa: B007
            yield line
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"line {number + 1} is not UTF-8 text (byte 0x{exc.object[exc.start]:02X})",
            where=name, hint=f"this command reads {expected}",
        ) from None


def avro_records(path: Path) -> Iterator[dict[str, Any]]:
    """The records of an Avro object container file (as ``--to avro`` writes them)."""
    from fastavro.schema import SchemaParseException

    try:
        with open(path, "rb") as f:
            for number, record in enumerate(avro_container(f)[1], 1):
                if not isinstance(record, dict):
                    raise UsageError(f"record {number} is not a record (an Avro {type(record).__name__})", where=str(path))
                yield record
    except (ValueError, EOFError, OSError) as exc:  # a damaged or truncated container
        raise UsageError(f"not a readable Avro container file: {one_line(exc) or type(exc).__name__}",
                         where=str(path)) from None
    except (KeyError, IndexError, SchemaParseException) as exc:  # fastavro's, on a damaged header or block
        raise UsageError(f"not a readable Avro container file: {type(exc).__name__}: {one_line(exc)}",
                         where=str(path)) from None
