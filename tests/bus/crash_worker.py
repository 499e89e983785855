"""Child process of the crash test: produces N messages and consumes them exactly once.

Run as ``python -m tests.bus.crash_worker DATA_DIR N``; it can be killed at any instant and
restarted, and carries on where the store says it stopped. The producer records its progress
in a file *after* each send returns, so a kill between the two makes it send a batch again:
those duplicates must be dropped by the Idempotent Receiver. The consumer moves each message
to the ``done`` channel in one transaction with its acknowledgement (Transactional Client).
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

from coupler.bus.messaging.idempotency import IdempotentReceiver
from coupler.bus.transport.sqlite.transport import SqliteTransport
from coupler.canonical import Envelope

NAMESPACE = uuid.UUID("6f1c2f4e-59a4-4c41-9d4e-0d8f1b7c6a10")
BATCH = 20


def message_id(i: int) -> str:
    return str(uuid.uuid5(NAMESPACE, str(i)))


def main(data_dir: str, total: int) -> int:
    progress = Path(data_dir) / "produced"
    t = SqliteTransport(data_dir, lease_seconds=0.5).open()
    receiver = IdempotentReceiver("consumer")
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        produced = int(progress.read_text()) if progress.exists() else 0
        if produced < total:
            upto = min(total, produced + BATCH)
            t.send("in", [
                Envelope(format="test.Item@1", body=str(i).encode(), message_id=message_id(i))
                for i in range(produced, upto)
            ])
            tmp = progress.with_suffix(".tmp")
            tmp.write_text(str(upto))
            os.replace(tmp, progress)
        with t.transaction() as tx:
            got = receiver.fresh(t, tx.receive("in", "consumer", max=BATCH))
            for d in got:
                tx.send("done", Envelope(format="test.Item@1", body=d.envelope.body))
            receiver.ack(t, got)
        if produced >= total and not got and t.stats("in")[0].depth == 0:
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
