"""A process that polls a drop directory once and may SIGKILL itself at a chosen point.

``python crash_child.py SITE DROP KILL`` where KILL is ``none``, ``before-archive`` (after
every message is published, before the file is archived) or ``after-publish:N`` (right
after the N-th publish returned, before its progress is recorded).
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
        limit = int(kill.split(":")[1])
        publish = ctx.publish
        count = 0

        def publish_then_die(envelope, channel=None):  # type: ignore[no-untyped-def]
            nonlocal count
            message_id = publish(envelope, channel)
            count += 1
            if count == limit:
                os.kill(os.getpid(), signal.SIGKILL)
            return message_id

        ctx.publish = publish_then_die  # type: ignore[method-assign]
    a.start()
    a.pipeline.poll()
    a.stop()
    bus.close()


if __name__ == "__main__":
    main(*sys.argv[1:4])
