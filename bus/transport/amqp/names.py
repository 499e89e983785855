"""Names and arguments of the broker objects of one site (all under one prefix)."""

from __future__ import annotations

import hashlib
import math
from typing import Any

#: delay queues: one per bucket, the buckets ``DELAY_BASE_MS * DELAY_RATIO ** k`` apart
DELAY_BASE_MS = 10
DELAY_RATIO = 1.25


class Names:
    """Where a site's channels, topics, dead letters and delays live on the broker."""

    def __init__(self, prefix: str, delivery_limit: int):
        self.prefix = prefix
        self.delivery_limit = delivery_limit
        #: messages the broker dead-letters (TTL, delivery limit) gather here for the transport
        self.expired = f"{prefix}expired"

    def queue(self, channel: str) -> str:
        """The quorum queue of a Point-to-Point channel (or of a durable subscription)."""
        return f"{self.prefix}q:{channel}"

    def channel_of(self, queue: str) -> str | None:
        head = f"{self.prefix}q:"
        return queue[len(head):] if queue.startswith(head) else None

    def topic(self, topic: str) -> str:
        """The topic exchange of a Publish-Subscribe channel."""
        return f"{self.prefix}t:{topic}"

    def dead(self, name: str) -> str:
        """The queue of a Dead Letter (or Invalid Message) Channel."""
        return f"{self.prefix}dl:{name}"

    @staticmethod
    def selector_key(subscription: str) -> str:
        """The routing key of the copies meant for a subscription with a selector."""
        return "sel." + hashlib.sha1(subscription.encode()).hexdigest()

    #: routing key of a topic message for every subscription without a selector
    ALL_KEY = "all"
    ALL_BINDING = "all.#"

    @staticmethod
    def delay_bucket(seconds: float) -> int:
        """The delay (ms) of the bucket closest to ``seconds`` (buckets are 25 % apart)."""
        ms = max(seconds * 1000.0, DELAY_BASE_MS)
        k = round(math.log(ms / DELAY_BASE_MS, DELAY_RATIO))
        return int(round(DELAY_BASE_MS * DELAY_RATIO**k))

    def delay(self, bucket_ms: int) -> str:
        """Exchange and queue of one delay bucket: messages wait there, then go back."""
        return f"{self.prefix}delay:{bucket_ms}"

    # -- arguments -------------------------------------------------------------------------

    def channel_arguments(self) -> dict[str, Any]:
        return {
            "x-queue-type": "quorum",
            "x-dead-letter-exchange": self.expired,
            "x-dead-letter-strategy": "at-least-once",
            "x-overflow": "reject-publish",
            "x-delivery-limit": self.delivery_limit,
        }

    @staticmethod
    def dead_arguments() -> dict[str, Any]:
        return {"x-queue-type": "quorum"}

    @staticmethod
    def delay_arguments(bucket_ms: int) -> dict[str, Any]:
        # dead-lettered through the default exchange with the routing key the message was
        # published with: the name of the channel's queue
        return {
            "x-queue-type": "quorum",
            "x-message-ttl": bucket_ms,
            "x-dead-letter-exchange": "",
            "x-dead-letter-strategy": "at-least-once",
            "x-overflow": "reject-publish",
        }
