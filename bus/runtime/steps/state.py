"""The state of a stateful step in the transport's store: :class:`StepState`.

A stateful step (Aggregator, Resequencer, Process Manager) keeps its state in the keyed state
table of the transport (``ctx.tx.get_state`` / ``put_state``), under ``setup.state_scope``
plus a part name (``groups``, ``members``, ...), so that a state change commits with the
acknowledgement of the message that changed it:

* SQLite and the storage transports: one transaction; a crash before the commit leaves
  neither the change nor the acknowledgement, and the redelivered message counts once.
* AMQP: the state is in PostgreSQL and the acknowledgement goes to the broker after the
  PostgreSQL commit. :meth:`StepState.first_time` records the id of each message the step
  counted in the same PostgreSQL transaction (locked, so two daemons never both count it)
  and answers False for a redelivered one, which the step then acknowledges without counting.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from coupler.bus.transport.base import TransactionOps
from coupler.canonical import Envelope

#: how long the ids of counted messages are kept (AMQP): a redelivery comes within minutes
COUNTED_RETENTION = 7 * 86400.0


class StepState:
    """The parts of one step's state (``scope``: ``route/step``)."""

    def __init__(self, scope: str):
        self.scope = scope

    def part(self, name: str) -> str:
        return f"{self.scope}/{name}"

    def get(self, tx: TransactionOps, part: str, keys: list[str] | None = None, *, lock: bool = False) -> dict[str, bytes]:
        return tx.get_state(self.part(part), keys, lock=lock)

    def get_json(self, tx: TransactionOps, part: str, key: str, *, lock: bool = False) -> Any:
        raw = tx.get_state(self.part(part), [key], lock=lock).get(key)
        return None if raw is None else json.loads(raw)

    def all_json(self, tx: TransactionOps, part: str) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in tx.get_state(self.part(part)).items()}

    def put(self, tx: TransactionOps, part: str, values: dict[str, bytes | None], *, ttl: float | None = None) -> None:
        tx.put_state(self.part(part), values, expires_at=None if ttl is None else time.time() + ttl)

    def put_json(self, tx: TransactionOps, part: str, key: str, value: Any, *, ttl: float | None = None) -> None:
        self.put(tx, part, {key: None if value is None else json.dumps(value, separators=(",", ":")).encode()}, ttl=ttl)

    def first_time(self, tx: TransactionOps, message: Envelope) -> bool:
        """Whether ``message`` is new to this step (always on a transport that acknowledges with
        the state); on AMQP records its id, and is False for one counted before."""
        if tx.acks_with_state:
            return True
        # the id and what the message says: a redelivery is the same; copies of one message that
        # came back by different branches (a Scatter-Gather's answers) are not
        digest = hashlib.sha1(message.body)
        for k, v in sorted(message.properties.items()):
            digest.update(f"\x1f{k}={v}".encode())
        key = f"{message.message_id}:{digest.hexdigest()[:16]}"
        if tx.get_state(self.part("counted"), [key], lock=True):
            return False
        self.put(tx, "counted", {key: b""}, ttl=COUNTED_RETENTION)
        return True


__all__ = ["COUNTED_RETENTION", "StepState"]
