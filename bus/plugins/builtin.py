"""The built-in plugin: Coupler's own schemas (envelope, common commands, examples).

Registered through the ``coupler`` entry-point group in pyproject.toml, like any
third-party plugin.
"""

from __future__ import annotations

from pathlib import Path

from coupler.bus.plugins.hookspecs import hookimpl
from coupler.schemas import SCHEMA_DIR


@hookimpl
def coupler_schema_dirs() -> list[Path]:
    return [SCHEMA_DIR]
