"""What the chaos tests (SIGKILL at random moments) share: a seed of each run, printed where
the test's report shows it, so that a failure can be replayed with ``COUPLER_CHAOS_SEED=N``;
and their size.

``make test`` runs each crash test at a size that proves the point (a few kills, enough work
that every kill lands while the daemon is busy) so the suite stays within its time budget;
``COUPLER_CRASH_FULL=1`` runs them at the full size an issue's acceptance names (for example
30 SIGKILLs over 2,000 records): ``COUPLER_CRASH_FULL=1 make test PYTEST_ARGS='-k crash'``."""

from __future__ import annotations

import os
import random


def chaos_seed(test: str) -> int:
    """The seed of this run: ``COUPLER_CHAOS_SEED`` (a replay) or a random one, printed."""
    seed = int(os.environ.get("COUPLER_CHAOS_SEED") or random.randrange(2**32))
    # captured by pytest and shown with the test's failure; -s shows it always
    print(f"{test}: COUPLER_CHAOS_SEED={seed} (set it to replay this run's random moments)")
    return seed


def chaos_rng(test: str) -> random.Random:
    """A generator seeded from ``COUPLER_CHAOS_SEED`` (a replay) or at random (printed)."""
    return random.Random(chaos_seed(test))


FULL = os.environ.get("COUPLER_CRASH_FULL") == "1"


def crash_size(small: tuple[int, ...], full: tuple[int, ...]) -> tuple[int, ...]:
    """``full`` with ``COUPLER_CRASH_FULL=1`` (an issue's acceptance size), else ``small``."""
    return full if FULL else small
