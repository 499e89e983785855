"""The built-in plugin: Coupler's own schemas and translator types.

Registered through the ``coupler`` entry-point group in pyproject.toml, like any
third-party plugin. The transports have their own plugins (``coupler.bus.transport.sqlite.plugin``,
``coupler.bus.transport.amqp.plugin``) and so do the adapters (``coupler.adapters.*``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coupler.bus.plugins.hookspecs import hookimpl
from coupler.schemas import SCHEMA_DIR
from coupler.translators.mapping.writers import BUILTIN_TRANSLATORS


@hookimpl
def coupler_schema_dirs() -> list[Path]:
    return [SCHEMA_DIR]


@hookimpl
def coupler_translator_types() -> dict[str, Any]:
    return dict(BUILTIN_TRANSLATORS)
