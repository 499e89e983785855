"""What a step answers for one message: typed outcomes, never fault-code strings."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from coupler.canonical import Envelope


class Outcome:
    """Base of the outcomes of :meth:`coupler.bus.runtime.steps.Step.process`."""


@dataclass(frozen=True)
class Continue(Outcome):
    """Go on with ``messages`` to the next step (or the route's end): none, one or many, an
    iterator to stream them one at a time (a splitter's parts)."""

    messages: Iterable[Envelope]
    #: what the step did, for the Message History hop and ``coupler ctl test`` ("passed", "3 parts")
    note: str = ""

    @classmethod
    def one(cls, message: Envelope, note: str = "") -> Continue:
        return cls((message,), note)


@dataclass(frozen=True)
class Deliver(Outcome):
    """End this message's path: send each ``(channel, message)`` (a router's choice, a filter's
    ``otherwise``)."""

    sends: tuple[tuple[str, Envelope], ...]
    note: str = ""


@dataclass(frozen=True)
class Discard(Outcome):
    """Drop the message on purpose (Message Filter, expired): acknowledged, counted, journaled."""

    reason: str
    #: the counter of ``/metrics`` it goes to (``discarded``, ``expired``)
    counter: str = "discarded"


@dataclass(frozen=True)
class Retry(Outcome):
    """Try the whole delivery again later (after ``delay`` seconds or the channel's backoff)."""

    reason: str
    delay: float | None = None


@dataclass(frozen=True)
class DeadLetter(Outcome):
    """Move the delivery to the Dead Letter Channel with ``cause``."""

    cause: str


@dataclass(frozen=True)
class Invalid(Outcome):
    """Move the delivery to the Invalid Message Channel with ``reason``."""

    reason: str


#: the outcomes that stop the whole delivery (nothing of it is sent)
FAILURES = (Retry, DeadLetter, Invalid)

__all__ = ["FAILURES", "Continue", "DeadLetter", "Deliver", "Discard", "Invalid", "Outcome", "Retry"]
