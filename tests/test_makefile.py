"""``make venv`` (and so ``make demo`` / ``make test`` on a fresh clone) says what it does in
each of its phases instead of minutes of silence."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_phase_of_the_venv_install_is_announced() -> None:
    # what make would run for a fresh .venv (-B: as if nothing were installed; -n: run nothing)
    plan = subprocess.run(["make", "-n", "-B", "-C", str(REPO), ".venv/.installed"], capture_output=True, text=True,
                          timeout=60, check=True).stdout.splitlines()
    slow = [i for i, line in enumerate(plan) if re.search(r"-m (venv|pip install)", line)]
    assert len(slow) == 3, plan
    for i in slow:  # each slow command follows a line telling what it is about to do
        assert plan[i - 1].lstrip("@ ").startswith("echo \"venv: ") or "echo \"venv: " in plan[i], (plan[i - 1], plan[i])
    assert any("venv: ready" in line for line in plan)
