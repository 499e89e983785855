"""pluggy hook specifications: what a Coupler plugin can contribute.

Plugins are found through the entry-point group ``coupler``; built-in adapters and
translators are registered through the same entry points as third-party ones. A plugin
module implements any of these hooks with ``@coupler.bus.plugins.hookspecs.hookimpl``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pluggy

PROJECT = "coupler"
ENTRY_POINT_GROUP = "coupler"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def coupler_adapter_types() -> dict[str, type]:
    """Adapter types this plugin provides: ``{type name: Adapter subclass}``.

    The type name is what a site's ``[[adapters]] type = "..."`` refers to.
    """


@hookspec
def coupler_translator_types() -> dict[str, Any]:
    """Translator types this plugin provides: ``{type name: translator factory}``."""


@hookspec
def coupler_schema_dirs() -> list[Path]:
    """Directories of Avro schema files (``<name>/v<N>.avsc``) this plugin contributes."""


@hookspec
def coupler_commands() -> dict[str, str]:
    """Commands this plugin adds beyond the common command set: ``{name: description}``."""


@hookspec
def coupler_mapping_functions() -> dict[str, Any]:
    """Custom transforms for field mappings: ``{name: callable}``.

    A mapping rule names one with ``function = "name"`` (and its inverse with
    ``inverse = "name"``); it is called with the source field values and returns the
    target value (or a tuple, one value per target field). See ``docs/mappings.md``.
    """
