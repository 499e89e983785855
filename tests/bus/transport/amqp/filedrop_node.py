"""A file drop adapter on one daemon of a multi-node site (the broker transport, with the
shared PostgreSQL seen-state), for the tests of several daemons polling one directory.

``python -m tests.bus.transport.amqp.filedrop_node PREFIX SCHEMA DATA_DIR DROP LEASE KILL_AFTER``
polls DROP once and SIGKILLs itself right after its KILL_AFTER-th message was published
(records of a file are published in batches, one ``publish_many`` call each: it dies inside
the batch, before the batch's progress is recorded).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

from coupler.adapters.filedrop import FileDropAdapter
from coupler.bus.runtime.context import BusContext, Statistics
from coupler.bus.transport.amqp.transport import AmqpTransport
from coupler.canonical import FormatIndicator
from tests.bus.transport.amqp.broker import AMQP_URL, PG_DSN

CHANNEL = "files.in"


class Node:
    """One daemon: its transport, and a file drop adapter ``drop`` with its own data dir."""

    def __init__(self, names: dict[str, str], data_dir: Path, drop: Path, *, file_lease_seconds: float = 300.0):
        self.transport = AmqpTransport(
            AMQP_URL, postgres=PG_DSN, file_lease_seconds=file_lease_seconds, reconnect_timeout=30.0, **names
        ).open()
        statistics = Statistics()
        statistics.add("drop", "filedrop")
        adapter_dir = data_dir / "adapters" / "drop"
        adapter_dir.mkdir(parents=True, exist_ok=True)
        self.context = BusContext(
            name="drop", config={}, data_dir=adapter_dir, transport=self.transport,
            statistics=statistics, channel=CHANNEL,
        )
        self.adapter: Any = FileDropAdapter(
            "drop", {"directory": str(drop), "autopoll": False, "stable_seconds": 0, "payload": "lines"},
            self.context,
        )
        self.adapter.channel = CHANNEL
        self.adapter.format = FormatIndicator.parse("acme.Line@1")
        self.adapter.direction = "inbound"
        self.adapter.start()

    def close(self) -> None:
        self.adapter.stop()
        self.transport.close()


def main(prefix: str, schema: str, data_dir: str, drop: str, lease: str, kill_after: str) -> None:
    node = Node({"prefix": prefix, "postgres_schema": schema}, Path(data_dir), Path(drop),
                file_lease_seconds=float(lease))
    publish, publish_many = node.context.publish, node.context.publish_many
    count = 0

    def died_after(n: int) -> None:
        nonlocal count
        count += n
        if count >= int(kill_after):
            os.kill(os.getpid(), signal.SIGKILL)

    def publish_then_die(envelope: Any, channel: str | None = None) -> str:
        message_id = publish(envelope, channel)
        died_after(1)
        return message_id

    def publish_many_then_die(envelopes: Any, channel: str | None = None) -> list[str | None]:
        ids: list[str | None] = []
        for envelope in envelopes:  # one at a time, so that it dies after the KILL_AFTER-th
            ids += publish_many([envelope], channel)
            died_after(1)
        return ids

    node.context.publish = publish_then_die  # type: ignore[method-assign]
    node.context.publish_many = publish_many_then_die  # type: ignore[method-assign]
    node.adapter.pipeline.poll()
    node.close()


if __name__ == "__main__":
    main(*sys.argv[1:7])
