"""A competing consumer in a process of its own (a stand-in for a second daemon).

    python -m tests.bus.transport.amqp.worker PREFIX SCHEMA CHANNEL MODE OUT

MODE ``consume``: receive, acknowledge, append ``message_id attempt`` to OUT; forever. A poll
that found nothing (a one-second wait) appends ``IDLE``: the readiness signal a test waits
for to know that nothing more was there for this consumer.
MODE ``hold``: receive up to 20 messages with a long lease, write their ids to OUT and
never acknowledge (the test kills this process).
"""

from __future__ import annotations

import sys
import time

from coupler.bus.transport.amqp.transport import AmqpTransport
from tests.bus.transport.amqp.broker import AMQP_URL, PG_DSN


def main() -> None:
    prefix, schema, channel, mode, out = sys.argv[1:6]
    t = AmqpTransport(AMQP_URL, postgres=PG_DSN, prefix=prefix, postgres_schema=schema,
                      lease_seconds=120).open()
    with open(out, "a", buffering=1) as f:
        if mode == "hold":
            held = []
            while len(held) < 20:
                held += t.receive_wait(channel, "holder", max=20 - len(held), wait=1)
            f.write("".join(f"{d.message_id} {d.attempt}\n" for d in held))
            f.write("HOLDING\n")
            time.sleep(600)
        while True:
            got = t.receive_wait(channel, "worker", max=10, wait=1)
            for d in got:
                time.sleep(0.002)  # some work
                t.ack(d)
                f.write(f"{d.message_id} {d.attempt}\n")
            if not got:
                f.write("IDLE\n")


if __name__ == "__main__":
    main()
