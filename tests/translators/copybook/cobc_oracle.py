"""GnuCOBOL as an independent oracle: generated COBOL programs that COPY a copybook and
print, for every named item, its address minus its record's address and its LENGTH OF.

:func:`compiler_layout` compiles such a program with IBM binary sizes (``-std=ibm``:
COMP/BINARY of 1-4 digits take 2 bytes, 5-9 take 4, 10-18 take 8) and returns
``{dotted path: (offset, length)}`` as the compiler sees them. ``cobc`` is a real
dependency of these tests (``make system-deps`` installs ``gnucobol3``): :func:`cobc`
fails the test when it is missing rather than skipping it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from coupler.translators.copybook.layout import Field, Group, Layout, Node

COBC_FLAGS = ["-std=ibm", "-fbinary-size=2-4-8", "-w"]


def cobc() -> str:
    path = shutil.which("cobc")
    if path is None:
        pytest.fail("cobc (GnuCOBOL 3) is missing: run `make system-deps` (Debian package gnucobol3)")
    return path


def _ref(node: Node, parents: list[Node]) -> str:
    """A fully qualified COBOL reference with subscripts 1 for every table around it."""
    subs = sum(1 for n in [*parents, node] if n.occurs)
    qual = " OF ".join([node.name, *[p.name for p in reversed(parents) if not p.is_filler and p.name]])
    return qual + (" (" + " ".join(["1"] * subs) + ")" if subs else "")


def _items(layout: Layout) -> list[tuple[Node, list[Node], Node]]:
    """(item, its ancestors outermost first, its record) for every named item."""
    out: list[tuple[Node, list[Node], Node]] = []

    def walk(node: Node, parents: list[Node], record: Node) -> None:
        if not node.is_filler:
            out.append((node, parents, record))
        if isinstance(node, Group):
            for child in node.children:
                walk(child, [*parents, node], record)

    for rec in layout.records:
        walk(rec, [], rec)
    return out


def program(copybook: Path, layout: Layout, program_id: str = "ORACLE", tag: str = "", last: str = "STOP RUN.") -> str:
    """A COBOL program printing ``path|offset|length`` for every named item of ``copybook``
    (each line after ``tag``; ``last``: the statement that ends it)."""
    wrapped = any(r.level not in (1, 77) for r in layout.records)
    lines = [
        "       IDENTIFICATION DIVISION.",
        f"       PROGRAM-ID. {program_id}.",
        "       DATA DIVISION.",
        "       WORKING-STORAGE SECTION.",
        "       01 ORA-P0 USAGE POINTER.",
        "       01 ORA-N0 REDEFINES ORA-P0 PIC 9(18) COMP-5.",
        "       01 ORA-P1 USAGE POINTER.",
        "       01 ORA-N1 REDEFINES ORA-P1 PIC 9(18) COMP-5.",
        "       01 ORA-OFF PIC 9(9).",
        "       01 ORA-LEN PIC 9(9).",
    ]
    if wrapped:
        lines.append("       01 ORA-RECORD.")
    lines.append(f"       COPY '{copybook.name}'.")
    lines.append("       PROCEDURE DIVISION.")
    # tables that depend on a counter take their largest size, as the layout reports them
    for node in layout.walk():
        if node.occurs and node.occurs.depending_on:
            counter = next(f for f in layout.fields() if f.identifier == node.occurs.depending_on)
            cparents = next(p for n, p, _r in _items(layout) if n is counter)
            lines.append(f"           MOVE {node.occurs.max} TO {_ref(counter, cparents)}")
    for number, (node, parents, record) in enumerate(_items(layout)):
        if node.level == 66:
            continue  # no address of a RENAMES item in GnuCOBOL
        base = "ORA-RECORD" if record.level not in (1, 77) else _ref(record, [])
        path = number  # the item's index in _items (paths can be longer than a literal line)
        lines += [
            f"           SET ORA-P0 TO ADDRESS OF {base}",
            f"           SET ORA-P1 TO ADDRESS OF {_ref(node, parents)}",
            "           COMPUTE ORA-OFF = ORA-N1 - ORA-N0",
            f"           MOVE LENGTH OF {_ref(node, parents)} TO ORA-LEN",
            f"           DISPLAY '{tag}{path}|' ORA-OFF '|' ORA-LEN",
        ]
    lines.append(f"           {last}")
    out = []
    for line in lines:  # continuation-free: split long statements at spaces before column 72
        while len(line) > 72:
            cut = line.rfind(" ", 12, 72)
            if cut < 0:
                raise ValueError(f"cannot fit {line!r} in columns 8-72")
            out.append(line[:cut])
            line = "           " + line[cut + 1 :]
        out.append(line)
    return "\n".join(out) + "\n"


def compiler_layout(copybook: Path, layout: Layout, workdir: Path, flags: tuple[str, ...] = ()) -> dict[str, tuple[int, int]]:
    """``{dotted path: (offset in its record, LENGTH OF)}`` for every named item, from cobc
    (``flags``: more cobc options, e.g. ``-fdebugging-line``)."""
    source = workdir / "oracle.cbl"
    source.write_text(program(copybook, layout))
    exe = workdir / "oracle"
    done = subprocess.run(
        [cobc(), "-x", *COBC_FLAGS, *flags, "-I", str(copybook.parent), "-o", str(exe), str(source)],
        capture_output=True, text=True, timeout=120,
    )
    if done.returncode:
        raise AssertionError(f"cobc failed on {copybook.name}:\n{done.stderr}\n{done.stdout}")
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, cwd=workdir)
    assert run.returncode == 0, run.stderr
    items = _items(layout)
    result: dict[str, tuple[int, int]] = {}
    for line in run.stdout.splitlines():
        number, off, length = line.rsplit("|", 2)
        result[items[int(number)][0].dotted_path] = (int(off), int(length))
    return result


def compiler_layouts(cases: list[tuple[Path, Layout]], workdir: Path) -> list[dict[str, tuple[int, int]]]:
    """:func:`compiler_layout` of many copybooks from one compilation: each copybook's program
    is a subprogram of one source (its own WORKING-STORAGE, called in turn by a main program),
    so cobc and the C compiler start once, not once per copybook (99 compilations took 29 s
    here, the one 8.5 s, with the same output). A copybook cobc refuses fails them all, with
    cobc's message naming the line of ``oracles.cbl``."""
    ids = [f"ORA{k:04d}" for k in range(len(cases))]
    main = ["       IDENTIFICATION DIVISION.", "       PROGRAM-ID. ORAMAIN.", "       PROCEDURE DIVISION.",
            *[f"           CALL '{i}'" for i in ids], "           STOP RUN.", "       END PROGRAM ORAMAIN."]
    parts = ["\n".join(main) + "\n"]
    for k, (copybook, layout) in enumerate(cases):
        parts.append(program(copybook, layout, ids[k], f"{k}|", "GOBACK.") + f"       END PROGRAM {ids[k]}.\n")
    source = workdir / "oracles.cbl"
    source.write_text("".join(parts))
    exe = workdir / "oracles"
    includes = [arg for parent in sorted({str(c.parent) for c, _ in cases}) for arg in ("-I", parent)]
    done = subprocess.run(  # -fstatic-call: the CALLs are C calls within the one executable
        [cobc(), "-x", "-fstatic-call", *COBC_FLAGS, *includes, "-o", str(exe), str(source)],
        capture_output=True, text=True, timeout=600,
    )
    if done.returncode:
        raise AssertionError(f"cobc failed on {source}:\n{done.stderr}\n{done.stdout}")
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, cwd=workdir)
    assert run.returncode == 0, run.stderr
    items = [_items(layout) for _, layout in cases]
    results: list[dict[str, tuple[int, int]]] = [{} for _ in cases]
    for line in run.stdout.splitlines():
        k, number, off, length = line.rsplit("|", 3)
        results[int(k)][items[int(k)][int(number)][0].dotted_path] = (int(off), int(length))
    return results


def coupler_layout(rows: list[dict]) -> dict[str, tuple[int, int]]:
    """The same view from ``coupler copybook layout --json`` rows: 0-based start, and the
    bytes of one occurrence (``size``), for every named item (not FILLER, not level 66)."""
    return {
        r["path"]: (r["start"] - 1, r["size"])
        for r in rows if r["name"].upper() != "FILLER" and r["level"] != 66
    }


__all__ = ["COBC_FLAGS", "cobc", "compiler_layout", "compiler_layouts", "coupler_layout", "program", "Field"]
