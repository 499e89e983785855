"""``python -m tests.adapters.filedrop.fault_daemon SITE N``: run the site's daemon, and SIGKILL
it right after the N-th file an outbound file adapter renamed into place, before that
delivery is recorded and acknowledged (the fault-injection hook
:attr:`~coupler.adapters.common.outbound.FileWriter.after_rename`)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from coupler.adapters.common.outbound import FileWriter
from coupler.bus.config.loader import load_site
from coupler.bus.runtime.daemon import Daemon


def main(site: str, n: str) -> int:
    count = 0

    def die_after_nth(name: str) -> None:
        nonlocal count
        count += 1
        if count == int(n):
            os.kill(os.getpid(), signal.SIGKILL)

    FileWriter.after_rename = staticmethod(die_after_nth)  # type: ignore[assignment]
    return Daemon(load_site(Path(site))).run()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
