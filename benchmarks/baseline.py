"""Run older code of this repository beside the current code, in the same benchmark run.

``checkout(ref)`` puts the code of a git commit in a temporary worktree (``checkout_built(ref)``
with its compiled copybook kernel); ``use_code(path)``, called in a (fresh) process before
anything imports ``coupler``, makes ``import coupler.<folder>`` load that worktree's folders
instead of the installed (editable) package. Used by the ``--baseline-ref`` of
``xml_translate.py``, ``bus_throughput.py``, ``copybook_decode.py`` and ``cli_startup.py``.
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


@contextlib.contextmanager
def checkout_built(ref: str) -> Iterator[Path]:
    """``checkout(ref)`` with the commit's compiled copybook kernel (``translators/copybook/_fused``,
    not in git) built in the worktree, as at install; a commit whose build fails runs without it
    (the pure-Python kernels), with a warning."""
    with checkout(ref) as old:
        built = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=old,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
        if built.returncode:
            print(f"warning: building {ref}'s compiled kernel failed, it runs without: "
                  f"{built.stderr.strip()[-300:]}", file=sys.stderr)
        yield old
