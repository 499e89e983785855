"""The daemon's open-files limit (``RLIMIT_NOFILE``): every connection its servers hold is a
file descriptor, beside the store's, the files adapters read and write and their connections
to legacy systems and the broker.

At start the daemon raises its soft limit (``ulimit -n``, 1024 where systemd or a login shell
set it) to the hard one, as the JVM does on Linux by default (``-XX:+MaxFDLimit``), unless
``[site] raise_open_files_limit = false``; it logs the limit in effect once. Once its servers
listen, it checks that what they may hold fits under that limit: each HTTP server's
``max_connections``, and its listen backlog, as many again, which a burst of connections
arriving at once fills before the first of them is counted and the ones over the limit
refused (:mod:`coupler.bus.model.httpserver`), plus :data:`OTHER_FILES`. Else one WARNING line
names the options and the limit to change.

(Above 1023, a descriptor cannot be waited for with select(2): the daemon's own code uses
poll(2) or asyncio's epoll.)
"""

from __future__ import annotations

import logging
import resource
from collections.abc import Sequence
from dataclasses import dataclass

from coupler.bus.model.httpserver import ConnectionLimit

log = logging.getLogger("coupler.daemon")

#: descriptors kept for everything but the HTTP servers' connections: the store (SQLite files,
#: PostgreSQL and broker connections), the control socket, log files, the files adapters read
#: and write, their connections to legacy systems, Python's own
OTHER_FILES = 256


def _nr_open() -> int | None:
    """The most the kernel lets a process open (``fs.nr_open``), the ceiling of an unlimited hard limit."""
    try:
        with open("/proc/sys/fs/nr_open") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def expected_limit(enabled: bool) -> int:
    """The soft open-files limit the daemon would run with (:func:`raise_limit` with
    ``enabled``), this process's left as it is: what ``coupler daemon --check`` checks."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = _nr_open() if hard == resource.RLIM_INFINITY else hard
    return target if enabled and target is not None else soft


def raise_limit(enabled: bool, site: str) -> int:
    """Raise the soft open-files limit to the hard one when ``enabled``; log the limit in effect
    (INFO, once) and return it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = _nr_open() if hard == resource.RLIM_INFINITY else hard
    if soft == hard or soft == target:
        log.info("open files: limit %s (the hard limit)", _shown(soft), extra={"site": site})
        return soft
    if target is None:  # unlimited, and no /proc to say how far the kernel goes
        log.info("open files: limit %s (not raised: the hard limit is unlimited)", _shown(soft), extra={"site": site})
        return soft
    if not enabled:
        log.info("open files: limit %s (kept: [site] raise_open_files_limit = false; the hard limit is %s)",
                 _shown(soft), _shown(hard), extra={"site": site})
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (OSError, ValueError) as exc:
        log.warning("open files: limit %s: cannot raise it to the hard limit %s (%s)", _shown(soft), _shown(target),
                    exc, extra={"site": site})
        return soft
    log.info("open files: limit %s (raised from %s to the hard limit; [site] raise_open_files_limit = false keeps "
             "it)", _shown(target), _shown(soft), extra={"site": site})
    return target


@dataclass(frozen=True)
class Held:
    """What a server not listening yet would hold (the console, which ``coupler daemon --check``
    does not start), as its :class:`ConnectionLimit` says it."""

    where: str
    option: str
    maximum: int
    backlog: int


def shortfall(limit: int, servers: Sequence[ConnectionLimit | Held]) -> str | None:
    """None when what ``servers`` may hold at once, backlogs included, and :data:`OTHER_FILES`
    fit under ``limit``; else one line naming the options to change and ``ulimit -n``."""
    if limit == resource.RLIM_INFINITY or not servers:
        return None
    needed = sum(s.maximum + s.backlog for s in servers) + OTHER_FILES
    if needed <= limit:
        return None
    held = ", ".join(f"{s.where} {s.option} = {s.maximum} (+ listen backlog {s.backlog})"
                     for s in sorted(servers, key=lambda s: s.where))
    return (f"open files: the limit {limit} is below what the HTTP servers may hold in a burst of connections: "
            f"{held}, and {OTHER_FILES} for the store and the adapters' files = {needed}; past the limit no server "
            f"accepts connections until some close. Lower those max_connections or raise the limit to {needed} or "
            f"more (ulimit -n {needed} before starting the daemon, systemd LimitNOFILE={needed})")


def check(limit: int, servers: Sequence[ConnectionLimit | Held], site: str) -> bool:
    """Whether what ``servers`` may hold at once fits under ``limit`` (:func:`shortfall`); else
    one WARNING line saying so."""
    message = shortfall(limit, servers)
    if message is not None:
        log.warning("%s", message, extra={"site": site})
    return message is None


def _shown(value: int) -> str:
    return "unlimited" if value == resource.RLIM_INFINITY else str(value)


__all__ = ["OTHER_FILES", "Held", "check", "expected_limit", "raise_limit", "shortfall"]
