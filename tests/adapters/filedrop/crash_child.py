"""A process that polls a drop directory once and may SIGKILL itself at a chosen point.

``python crash_child.py SITE DROP KILL`` where KILL is ``none``, ``before-archive`` (after
every message is published, before the file is archived) or ``after-publish:N`` (right
after the N-th publish of a batch returned, before its progress is recorded; batches of 2
records here).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from coupler.adapters.common.inbound import InboundPipeline
from coupler.adapters.filedrop import FileDropAdapter
from coupler.canonical import FormatIndicator
from tests.adapters.filebus import Bus, adapter


def main(site: str, drop: str, kill: str) -> None:
    bus = Bus(Path(site))
    ctx = bus.context("drop")
    a = adapter(
        FileDropAdapter, "drop",
        {"directory": drop, "autopoll": False, "stable_seconds": 0, "payload": "lines"},
        ctx, format=FormatIndicator.parse("acme.Line@1"), direction="inbound",
    )
    if kill == "before-archive":
        def die(self: InboundPipeline, info: object) -> None:
            os.kill(os.getpid(), signal.SIGKILL)

        InboundPipeline._after_success = die  # type: ignore[method-assign]
    elif kill.startswith("after-publish:"):
        import coupler.adapters.common.inbound as inbound

        inbound.PUBLISH_BATCH = 2  # type: ignore[misc]
        limit = int(kill.split(":")[1])
        publish_many = ctx.publish_many
        count = 0

        def publish_then_die(envelopes, channel=None):  # type: ignore[no-untyped-def]
            nonlocal count
            ids = publish_many(envelopes, channel)
            count += 1
            if count == limit:
                os.kill(os.getpid(), signal.SIGKILL)
            return ids

        ctx.publish_many = publish_then_die  # type: ignore[method-assign]
    a.start()
    a.pipeline.poll()
    a.stop()
    bus.close()


if __name__ == "__main__":
    main(*sys.argv[1:4])
