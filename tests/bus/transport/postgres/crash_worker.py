"""A competing daemon of the PostgreSQL crash test, in a process of its own.

    python -m tests.bus.transport.postgres.crash_worker SCHEMA

Moves every message of ``in`` to ``done`` in one transaction with its acknowledgement
(Transactional Client), dropping what the Idempotent Receiver saw before; it can be killed at
any instant and restarted. Exits when ``in`` is empty.
"""

from __future__ import annotations

import sys
import time

from coupler.bus.messaging.idempotency import IdempotentReceiver
from coupler.bus.transport.postgres.transport import PostgresTransport
from coupler.canonical import Envelope
from tests.bus.transport.amqp.broker import PG_DSN

BATCH = 5
#: seconds of work per message (so that the kills land while messages are in hand)
WORK = 0.01


def main(schema: str) -> int:
    t = PostgresTransport(PG_DSN, schema=schema, lease_seconds=0.5).open()
    receiver = IdempotentReceiver("consumer")
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        with t.transaction() as tx:
            got = receiver.fresh(t, tx.receive("in", "consumer", max=BATCH))
            for d in got:
                time.sleep(WORK)
                tx.send("done", Envelope(format="test.Item@1", body=d.envelope.body))
            receiver.ack(t, got)
        if not got:
            if t.stats("in")[0].depth == 0:
                return 0
            t.wait_for("in", 0.2)  # until a lease of a killed worker runs out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
