"""Run older code of this repository beside the current code, in the same benchmark run.

``checkout(ref)`` puts the code of a git commit in a temporary worktree; ``use_code(path)``,
called in a (fresh) process before anything imports ``coupler``, makes ``import
coupler.<folder>`` load that worktree's folders instead of the installed (editable) package.
Used by ``xml_translate.py --baseline-ref`` and ``bus_throughput.py --baseline-ref``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("bus", "adapters", "canonical", "translators", "schemas")


def use_code(code: Path) -> None:
    """Make ``import coupler.<folder>`` load ``code/<folder>`` (a worktree of another commit)
    instead of the installed package: a finder placed before the editable install's."""

    class Redirect:
        @staticmethod
        def find_spec(fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
            top, _, folder = fullname.partition(".")
            if top != "coupler" or folder not in FOLDERS:
                return None
            where = code / folder
            init = where / "__init__.py"
            if init.exists():
                return importlib.util.spec_from_file_location(fullname, init, submodule_search_locations=[str(where)])
            spec = ModuleSpec(fullname, None, is_package=True)
            spec.submodule_search_locations = [str(where)]
            return spec

    sys.meta_path.insert(0, Redirect)  # type: ignore[arg-type]


def describe(ref: str) -> str:
    """The short commit id of ``ref``."""
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", f"{ref}^{{commit}}"],
                          check=True, capture_output=True, text=True).stdout.strip()


def head() -> str:
    """What the working copy is (``git describe --always --dirty``)."""
    return subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                          check=True, capture_output=True, text=True).stdout.strip()


@contextlib.contextmanager
def checkout(ref: str) -> Iterator[Path]:
    """The code of ``ref`` in a temporary git worktree (removed afterwards)."""
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(old), describe(ref)],
                       check=True)
        try:
            yield old
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False)
