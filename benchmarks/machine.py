"""What a benchmark's figures depend on besides the code: a line naming the machine's state.

Some virtual machines give memory back to their host: the guest reports free blocks of
memory (``page_reporting``, blocks of 2^order pages) and a DAMON ``pageout`` scheme drops
pages nobody touched for a while; the host then backs the memory again on its next first
write, which costs the guest's CPU. Measured on this project's machine (2026-11-27): 16 GB
written in a fresh process took 37.7 s of CPU with both on and 2.1 s with both off once the
memory had been written once: ~2 s of CPU per GB written to memory the host had taken back,
which lands on whatever process writes it (an output file's page cache, a new buffer). A
benchmark that writes a GB of output can then vary by seconds from run to run. Each
benchmark prints :func:`memory_note` so that its figures say which state they were taken in
(docs/performance.md, "Memory given back to the host").
"""

from __future__ import annotations

from pathlib import Path

REPORTING = Path("/sys/module/page_reporting/parameters/page_reporting_order")
DAMON = Path("/sys/kernel/mm/damon/admin/kdamonds")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def memory_returned() -> list[str]:
    """How this machine gives memory back to its host, if it does: empty when it does not."""
    out = []
    order = _read(REPORTING)
    if order is not None and order.lstrip("-").isdigit() and 0 <= int(order) <= 10:
        out.append(f"free page reporting on (blocks of 2^{order} pages)")
    if DAMON.exists():
        for state in sorted(DAMON.glob("*/state")):
            actions = {_read(a) for a in state.parent.glob("contexts/*/schemes/*/action")}
            if _read(state) == "on" and "pageout" in actions:
                out.append(f"DAMON pageout on (kdamond {state.parent.name})")
    return out


def memory_note() -> str:
    """One line for a benchmark's header."""
    returned = memory_returned()
    if not returned:
        return "memory: not given back to a host (no free page reporting, no DAMON pageout)"
    return ("memory: given back to the host (" + "; ".join(returned) + "): a first write to memory costs up to "
            "~2 s of CPU per GB here, which makes runs that write much output vary (docs/performance.md)")


if __name__ == "__main__":  # `make bench` runs every script here: the state its figures were taken in
    print(memory_note())
