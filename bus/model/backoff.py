"""Redelivery with exponential backoff: how long a failed message waits before its next attempt."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any

from coupler.canonical.errors import CouplerError


@dataclass(frozen=True)
class BackoffPolicy:
    """Exponential backoff with jitter and a limit on the number of attempts.

    The delay before attempt ``n + 1`` after a failed attempt ``n`` (1-based) is
    ``min(max_delay, initial_delay * multiplier ** (n - 1))``, spread by ``± jitter``
    (a fraction, 0.1 = ±10 %). After ``max_attempts`` failed attempts the message goes to
    the Dead Letter Channel.
    """

    initial_delay: float = 1.0
    multiplier: float = 2.0
    max_delay: float = 300.0
    max_attempts: int = 5
    jitter: float = 0.1

    def __post_init__(self) -> None:
        problems = []
        if self.initial_delay < 0:
            problems.append(f"initial_delay must be >= 0, got {self.initial_delay}")
        if self.multiplier < 1:
            problems.append(f"multiplier must be >= 1, got {self.multiplier}")
        if self.max_delay < self.initial_delay:
            problems.append(f"max_delay {self.max_delay} is below initial_delay {self.initial_delay}")
        if self.max_attempts < 1:
            problems.append(f"max_attempts must be >= 1, got {self.max_attempts}")
        if not 0 <= self.jitter < 1:
            problems.append(f"jitter must be in [0, 1), got {self.jitter}")
        if problems:
            raise CouplerError("bad backoff policy: " + "; ".join(problems), where="backoff")

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based) before the next one."""
        base = min(self.max_delay, self.initial_delay * self.multiplier ** max(0, attempt - 1))
        if self.jitter:
            base *= 1 + (rng or random).uniform(-self.jitter, self.jitter)
        return max(0.0, base)

    def exhausted(self, attempt: int) -> bool:
        """True when ``attempt`` failed attempts leave no attempt to retry."""
        return attempt >= self.max_attempts

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BackoffPolicy:
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise CouplerError(
                f"unknown backoff setting(s) {', '.join(sorted(unknown))}",
                where="backoff",
                hint="known: " + ", ".join(cls.__dataclass_fields__),
            )
        return cls(**data)
