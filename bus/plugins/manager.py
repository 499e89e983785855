"""The plugin manager: loads every plugin of the entry-point group ``coupler``."""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from coupler.bus.plugins import hookspecs
from coupler.canonical.errors import CouplerError


class PluginError(CouplerError):
    """A plugin that cannot be loaded or that contributes something twice."""


def plugin_manager(*, entry_points: bool = True, extra: tuple[Any, ...] = ()) -> pluggy.PluginManager:
    """A plugin manager with the hook specifications and the installed plugins.

    ``extra`` registers plugin objects directly (tests, embedded use).
    """
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    if entry_points:
        try:
            pm.load_setuptools_entrypoints(hookspecs.ENTRY_POINT_GROUP)
        except Exception as exc:  # a broken third-party plugin must not hide behind a traceback
            raise PluginError(f"a plugin of entry-point group 'coupler' failed to load: {exc!r}") from exc
    for plugin in extra:
        pm.register(plugin)
    return pm


def _merge(pm: pluggy.PluginManager, hook: str) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    owners: dict[str, str] = {}
    for plugin in pm.get_plugins():
        impl = getattr(plugin, hook, None)
        if impl is None:
            continue
        for name, value in (impl() or {}).items():
            if name in merged and merged[name] is not value:
                raise PluginError(
                    f"{hook}: {name!r} is contributed by both {owners[name]} and {pm.get_name(plugin)}",
                    hint="uninstall one of the two plugins",
                )
            merged[name] = value
            owners[name] = pm.get_name(plugin) or repr(plugin)
    return merged


def adapter_types(pm: pluggy.PluginManager) -> dict[str, type]:
    return _merge(pm, "coupler_adapter_types")


def translator_types(pm: pluggy.PluginManager) -> dict[str, Any]:
    return _merge(pm, "coupler_translator_types")


def mapping_functions(pm: pluggy.PluginManager) -> dict[str, Any]:
    """Custom mapping transforms of every plugin (``coupler_mapping_functions``)."""
    return _merge(pm, "coupler_mapping_functions")


def schema_dirs(pm: pluggy.PluginManager) -> list[Path]:
    dirs: list[Path] = []
    for result in pm.hook.coupler_schema_dirs():
        dirs.extend(Path(d) for d in result or ())
    return dirs


@dataclass
class PluginInfo:
    """One installed plugin and what it contributes (``coupler plugins``)."""

    name: str
    distribution: str | None
    version: str | None
    adapter_types: list[str] = field(default_factory=list)
    translator_types: list[str] = field(default_factory=list)
    schema_dirs: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)

    def contributes(self) -> dict[str, list[str]]:
        return {
            "adapter_types": self.adapter_types,
            "translator_types": self.translator_types,
            "schema_dirs": self.schema_dirs,
            "commands": self.commands,
        }


def describe_plugins(pm: pluggy.PluginManager) -> list[PluginInfo]:
    dists = {id(plugin): dist for plugin, dist in pm.list_plugin_distinfo()}
    infos = []
    for plugin in pm.get_plugins():
        if plugin is hookspecs:
            continue
        dist = dists.get(id(plugin))
        info = PluginInfo(
            name=pm.get_name(plugin) or repr(plugin),
            distribution=dist.metadata["name"] if dist else None,
            version=dist.version if dist else None,
        )
        call = {
            "adapter_types": "coupler_adapter_types",
            "translator_types": "coupler_translator_types",
            "schema_dirs": "coupler_schema_dirs",
            "commands": "coupler_commands",
        }
        for attr, hook in call.items():
            impl = getattr(plugin, hook, None)
            if impl is not None:
                getattr(info, attr).extend(str(x) for x in (impl() or ()))
        infos.append(info)
    return sorted(infos, key=lambda i: i.name)


#: extra plugin objects to load, ``module[:attribute]`` separated by commas (tests, embedding)
EXTRA_PLUGINS_ENV = "COUPLER_EXTRA_PLUGINS"


def extra_plugins(spec: str | None = None) -> tuple[Any, ...]:
    """The plugin objects named by ``spec`` (default: ``$COUPLER_EXTRA_PLUGINS``)."""
    spec = os.environ.get(EXTRA_PLUGINS_ENV, "") if spec is None else spec
    plugins = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        module_name, _, attr = item.partition(":")
        try:
            obj: Any = importlib.import_module(module_name)
            for part in filter(None, attr.split(".")):
                obj = getattr(obj, part)
        except (ImportError, AttributeError) as exc:
            raise CouplerError(
                f"cannot load plugin {item!r}: {exc}", where=f"${EXTRA_PLUGINS_ENV}",
                hint="use module or module:attribute, importable from the Python path",
            ) from exc
        plugins.append(obj)
    return tuple(plugins)


def site_plugin_manager(extra: tuple[Any, ...] = ()) -> pluggy.PluginManager:
    """Installed plugins, those named by ``$COUPLER_EXTRA_PLUGINS``, and ``extra``."""
    return plugin_manager(extra=(*extra_plugins(), *extra))
