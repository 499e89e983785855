"""How many examples a Hypothesis property test runs.

``make test`` runs each property at a count that proves its point in a fraction of the time
(the test's docstring or comment says what the count covers); ``COUPLER_PROPERTY_FULL=1``
runs the full count the test was written with:
``COUPLER_PROPERTY_FULL=1 make test PYTEST_ARGS='tests/translators/copybook'``."""

from __future__ import annotations

import os

FULL = os.environ.get("COUPLER_PROPERTY_FULL") == "1"


def examples(quick: int, full: int) -> int:
    """``full`` with ``COUPLER_PROPERTY_FULL=1``, else ``quick``."""
    return full if FULL else quick
