"""Run a ``coupler`` command with one of its output streams on a pseudo-terminal, as a user
at a terminal sees it (progress bars, colours), and read what it showed there; stop a
command as ``kill`` or a service manager does (:func:`terminate`)."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Literal


@dataclass
class TerminalRun:
    returncode: int
    #: what the command showed on the terminal
    shown: str
    #: the other stream (captured through a pipe)
    piped: str


def coupler_on_a_terminal(
    args: list[str], *, terminal: Literal["stdout", "stderr"] = "stderr", env: dict[str, str] | None = None,
    timeout: float = 120.0,
) -> TerminalRun:
    """``python -m coupler.bus.cli.main ARGS`` with ``terminal`` on a pseudo-terminal and the
    other stream on a pipe; waits for the command to end (at most ``timeout`` seconds)."""
    leader, follower = pty.openpty()
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, terminal: follower}
    proc = subprocess.Popen([sys.executable, "-m", "coupler.bus.cli.main", *args], stdin=subprocess.DEVNULL,
                            env=env, **streams)  # type: ignore[call-overload]
    os.close(follower)
    shown = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the command closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        elif proc.poll() is not None:
            break
    other = proc.stderr if terminal == "stdout" else proc.stdout
    piped = other.read().decode() if other is not None else ""
    returncode = proc.wait(timeout=60)
    os.close(leader)
    return TerminalRun(returncode, shown.decode(errors="replace"), piped)


def terminate(proc: subprocess.Popen[str], *, group: bool, timeout: float) -> None:
    """SIGTERM to a running ``coupler`` command, as ``kill PID`` sends it (``group`` false) or
    as systemd stopping a unit does (to every process of the command's process group: start it
    with ``start_new_session=True``); it answers with one line and exit status 143."""
    if group:
        os.killpg(proc.pid, signal.SIGTERM)
    else:
        proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=timeout)
    assert (proc.returncode, stderr) == (143, "coupler: interrupted (SIGTERM)\n")
