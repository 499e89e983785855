"""The random numbers of the chaos tests (SIGKILL at random moments): a seed of each run,
printed where the test's report shows it, so that a failure can be replayed with
``COUPLER_CHAOS_SEED=N``."""

from __future__ import annotations

import os
import random


def chaos_rng(test: str) -> random.Random:
    """A generator seeded from ``COUPLER_CHAOS_SEED`` (a replay) or at random (logged)."""
    seed = int(os.environ.get("COUPLER_CHAOS_SEED") or random.randrange(2**32))
    # captured by pytest and shown with the test's failure; -s shows it always
    print(f"{test}: COUPLER_CHAOS_SEED={seed} (set it to replay this run's random moments)")
    return random.Random(seed)
