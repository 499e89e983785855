"""The third-party import rules of DESIGN.md's layout table, checked on the source.

| folder | may import |
|---|---|
| canonical/ | stdlib, fastavro, pydantic (the options models of canonical/options.py), the data of coupler.schemas |
| schemas/ | data only |

The rules between Coupler's own packages (translators never the bus, adapters only through
``coupler.bus.api``, the rooms of ``bus/``, no cycles) are import-linter contracts in
pyproject.toml, checked by ``make lint``.

Every ``import`` is read with :mod:`ast`, including those inside functions and under
``TYPE_CHECKING``: a lazy import breaks the layering as much as a top-level one.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}

#: (file, imported module) pairs that break a rule on purpose, each with its reason
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("canonical/registry.py", "coupler.bus.plugins.manager"): (
        "SchemaRegistry.default() adds the schema directories of installed plugins; the bus owns "
        "the plugin manager, so this one constructor imports it lazily (from_dirs() needs no bus)"
    ),
}


def _package_of(path: Path) -> str:
    """The dotted module a source file is, under the installed ``coupler`` package."""
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["coupler", *parts])


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    module = _package_of(path)
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                drop = node.level - (1 if is_package else 0)
                base = base[: len(base) - drop] if drop else base
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            yield node.lineno, name
            if node.level and not node.module:  # from . import x: x may be a module
                for alias in node.names:
                    yield node.lineno, f"{name}.{alias.name}"


def _sources(folder: str) -> list[Path]:
    return sorted(p for p in (REPO / folder).rglob("*.py") if "__pycache__" not in p.parts)


def _top(name: str) -> str:
    return name.split(".")[0]


def _within(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def canonical_rule(name: str) -> str | None:
    if _top(name) in STDLIB or _top(name) == "fastavro":
        return None
    if _top(name) == "pydantic":
        return None  # options models shared by site, adapter and translator options (canonical/options.py)
    if _within(name, "coupler.canonical", "coupler.schemas"):
        return None
    return "canonical/ imports only the stdlib, fastavro, pydantic, coupler.canonical and coupler.schemas"


def schemas_rule(name: str) -> str | None:
    if _top(name) in STDLIB or _within(name, "coupler.schemas"):
        return None
    return "schemas/ is data: it imports only the stdlib"


RULES = {
    "canonical": canonical_rule,
    "schemas": schemas_rule,
}


@pytest.mark.parametrize("folder", sorted(RULES))
def test_imports_follow_the_layout_table(folder: str) -> None:
    rule = RULES[folder]
    files = _sources(folder)
    assert files, f"no sources under {folder}/"
    broken = []
    used = set()
    for path in files:
        rel = path.relative_to(REPO).as_posix()
        for line, name in _imports(path):
            problem = rule(name)
            if problem is None:
                continue
            if (rel, name) in EXCEPTIONS:
                used.add((rel, name))
                continue
            broken.append(f"{rel}:{line}: imports {name}: {problem}")
    assert not broken, "\n".join(broken)
    stale = [k for k in EXCEPTIONS if k[0].startswith(folder + "/") and k not in used]
    assert not stale, f"exceptions that no longer apply (remove them): {stale}"


def test_the_rules_catch_what_they_forbid() -> None:
    assert canonical_rule("lxml.etree") is not None
    assert canonical_rule("coupler.translators.copybook") is not None
    assert canonical_rule("fastavro.schema") is None


def test_relative_imports_are_resolved() -> None:
    names = {n for _, n in _imports(REPO / "translators" / "wrappers" / "chain.py")}
    assert "coupler.translators.wrappers.base" in names
    names = {n for _, n in _imports(REPO / "adapters" / "socket" / "__init__.py")}
    assert "coupler.adapters.socket.adapter" in names


def test_the_bus_tests_mirror_the_rooms_of_the_bus_package() -> None:
    """``tests/bus/<room>/`` holds the tests of ``bus/<room>/`` (transport, runtime, cli, ...),
    so the tests of a module are found beside its room's name; shared helpers stay at the top."""
    rooms = {p.name for p in (REPO / "bus").iterdir() if (p / "__init__.py").exists()}
    tests = REPO / "tests" / "bus"
    misplaced = [str(p.relative_to(REPO)) for p in tests.rglob("test_*.py") if p.relative_to(tests).parts[0] not in rooms]
    assert not misplaced, f"put these under tests/bus/<room>/, the room of bus/ they test: {misplaced}"
