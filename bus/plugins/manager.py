"""The plugin manager: loads every plugin of the entry-point group ``coupler``.

Everything a plugin contributes is read by calling its hooks through pluggy
(``pm.hook.<name>``); to say which plugin contributed what (``coupler plugins``, two plugins
claiming one type name) a hook is called on one plugin at a time with
``pm.subset_hook_caller``.

A plugin that cannot be loaded (its entry point fails to import or to register, or one of its
type hooks raises) does not stop the others: it is recorded as a :class:`BrokenPlugin` naming
the entry point and its distribution, logged, listed as broken by ``coupler plugins``, and
named in the "no installed plugin provides ..." error of a site that uses a type it would
have provided (only such a site stops; the others run).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from coupler.bus.plugins import hookspecs
from coupler.canonical.errors import CouplerError, describe_exception

#: the hooks returning ``{type name: thing}`` that ``coupler plugins`` lists, by ``PluginInfo`` field
_TYPE_HOOKS = {
    "adapter_types": "coupler_adapter_types",
    "transport_types": "coupler_transport_types",
    "translator_types": "coupler_translator_types",
    "step_types": "coupler_step_types",
}


log = logging.getLogger("coupler.plugins")


class PluginError(CouplerError):
    """A plugin that cannot be loaded or that contributes something twice."""


@dataclass(frozen=True)
class BrokenPlugin:
    """An installed plugin that failed to load: its entry point, distribution and the cause."""

    entry_point: str
    value: str
    distribution: str | None
    version: str | None
    error: str

    def describe(self) -> str:
        dist = f"distribution {self.distribution} {self.version}" if self.distribution else "no distribution"
        return f"plugin entry point {self.entry_point!r} = {self.value!r} ({dist}) failed to load: {self.error}"


#: the plugins this process failed to load, by entry-point name (the entry points are the
#: process's, so one record serves every plugin manager it builds)
_BROKEN: dict[str, BrokenPlugin] = {}


def broken_plugins() -> list[BrokenPlugin]:
    """The installed plugins that failed to load, by entry-point name."""
    return [_BROKEN[name] for name in sorted(_BROKEN)]


def broken_note() -> str:
    """Appended to a "no installed plugin provides TYPE" error: the broken plugins, which may
    be the ones providing it ("" when none is broken)."""
    broken = broken_plugins()
    if not broken:
        return ""
    return "; it may come from a plugin that failed to load: " + "; ".join(b.describe() for b in broken)


def _record_broken(broken: BrokenPlugin) -> None:
    if broken.entry_point not in _BROKEN:
        log.error("%s; sites that use none of its types run without it (`coupler plugins` lists it)",
                  broken.describe())
    _BROKEN[broken.entry_point] = broken


def _load_entry_points(pm: pluggy.PluginManager, group: str) -> None:
    """``pm.load_setuptools_entrypoints(group)``: one pass over the installed distributions;
    when a plugin fails to load, the rest one entry point at a time, so that the one that
    fails is recorded as broken and the others load.

    Loading by name (``name=``) reads every distribution's entry points again for each
    plugin: 13 plugins made 1,567 metadata reads, 30 ms of CPU per call, on the driver of
    every ``batch translate`` to ``avro:`` (the registry loads the plugins' schemas)."""
    try:
        pm.load_setuptools_entrypoints(group)
    except (Exception, SystemExit):  # noqa: BLE001 - one plugin's import failed: recorded by the loop below
        pass
    else:
        for name in [n for n in _BROKEN if pm.get_plugin(n) is not None]:
            _BROKEN.pop(name, None)  # broken before, loads now
        return
    for ep in importlib.metadata.entry_points(group=group):
        if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
            continue
        try:
            pm.load_setuptools_entrypoints(group, name=ep.name)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure of a third party's import (sys.exit() too)
            dist = getattr(ep, "dist", None)
            _record_broken(BrokenPlugin(
                ep.name, ep.value, dist.metadata["name"] if dist is not None else None,
                dist.version if dist is not None else None, f"{type(exc).__name__}: {exc}",
            ))
        else:
            _BROKEN.pop(ep.name, None)


#: the bus's own plugins, by entry-point name: the schemas and translator types, the transports
#: (installed, they come through the entry points in pyproject.toml like any other plugin)
CORE_PLUGINS = {
    "builtin": "coupler.bus.plugins.builtin",
    "sqlite": "coupler.bus.transport.sqlite.plugin",
    "amqp": "coupler.bus.transport.amqp.plugin",
    "steps": "coupler.bus.runtime.steps.plugin",
}


def plugin_manager(
    *, entry_points: bool = True, extra: tuple[Any, ...] = (), core: bool = True
) -> pluggy.PluginManager:
    """A plugin manager with the hook specifications and the installed plugins.

    ``extra`` registers plugin objects directly (tests, embedded use). Without
    ``entry_points`` no installed plugin is loaded but, with ``core``, the bus's own
    (:data:`CORE_PLUGINS`: a site needs a transport).
    """
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    if entry_points:
        _load_entry_points(pm, hookspecs.ENTRY_POINT_GROUP)
    if core:
        for name, module in CORE_PLUGINS.items():
            if pm.get_plugin(name) is None:
                pm.register(importlib.import_module(module), name=name)
    for plugin in extra:
        if not pm.is_registered(plugin):
            pm.register(plugin)
    return pm


def _plugin_name(pm: pluggy.PluginManager, plugin: Any) -> str:
    return pm.get_name(plugin) or repr(plugin)


def _per_plugin(pm: pluggy.PluginManager, hook: str, **kwargs: Any) -> list[tuple[Any, Any]]:
    """``(plugin, result)`` of ``hook`` for each plugin implementing it, in registration order."""
    caller: pluggy.HookCaller = getattr(pm.hook, hook)
    plugins = [impl.plugin for impl in caller.get_hookimpls()]
    results = []
    for plugin in plugins:
        others = [p for p in pm.get_plugins() if p is not plugin]
        try:
            found = pm.subset_hook_caller(hook, remove_plugins=others)(**kwargs)
        except Exception as exc:  # noqa: BLE001 - a third party's hook: it is broken, the rest go on
            name = _plugin_name(pm, plugin)
            dist = dict((id(p), d) for p, d in pm.list_plugin_distinfo()).get(id(plugin))
            _record_broken(BrokenPlugin(
                name, getattr(plugin, "__name__", repr(plugin)), dist.project_name if dist else None,
                dist.version if dist else None, f"{hook}() raised {type(exc).__name__}: {exc}",
            ))
            pm.unregister(plugin)  # nothing more from it: a half-working plugin misleads
            continue
        for result in found:
            results.append((plugin, result))
    return results


def _merge_owned(pm: pluggy.PluginManager, hook: str) -> tuple[dict[str, Any], dict[str, str]]:
    """``({name: value}, {name: plugin name})`` of ``hook`` over every plugin."""
    merged: dict[str, Any] = {}
    owners: dict[str, str] = {}
    for plugin, result in _per_plugin(pm, hook):
        for name, value in (result or {}).items():
            if name in merged and merged[name] is not value and not (
                isinstance(value, str) and value == merged[name]
            ):
                raise PluginError(
                    f"{hook}: {name!r} is contributed by both {owners[name]} and {_plugin_name(pm, plugin)}",
                    hint="uninstall one of the two plugins",
                )
            merged[name] = value
            owners[name] = _plugin_name(pm, plugin)
    return merged, owners


def _merge(pm: pluggy.PluginManager, hook: str) -> dict[str, Any]:
    return _merge_owned(pm, hook)[0]


def _import_object(ref: str) -> Any:
    """The object ``"module[:attribute.path]"`` names, imported (ImportError, AttributeError and
    whatever the module's import raises, to the caller)."""
    module_name, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    return obj


def _resolve_reference(ref: str, kind: str, name: str, owner: str) -> Any:
    """The object ``"module:attribute"`` names (a type a plugin contributes by reference)."""
    try:
        return _import_object(ref)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure of a plugin's import (sys.exit() too)
        raise PluginError(
            f"{kind} {name!r} of plugin {owner}: cannot import {ref!r}: {describe_exception(exc)}",
            hint="reinstall the plugin or install what it needs (`coupler plugins` lists what is installed)",
        ) from None


class TypesByName(Mapping[str, Any]):
    """``{type name: type}`` whose types a plugin may contribute by reference,
    ``"module:attribute"``: such a type is imported when it is first looked up
    (``types[name]``, ``types.get(name)``), not when the plugins are loaded, so a site that
    does not name it does not import it. Its names (``in``, iteration) need no import."""

    def __init__(self, types: dict[str, Any], owners: dict[str, str], kind: str):
        self._types = types
        self._owners = owners
        self._kind = kind

    def __getitem__(self, name: str) -> Any:
        value = self._types[name]
        if isinstance(value, str):
            value = self._types[name] = _resolve_reference(value, self._kind, name, self._owners[name])
        return value

    def __contains__(self, name: object) -> bool:
        return name in self._types

    def __iter__(self) -> Iterator[str]:
        return iter(self._types)

    def __len__(self) -> int:
        return len(self._types)

    def __repr__(self) -> str:
        return f"TypesByName({self._types!r})"


def adapter_types(pm: pluggy.PluginManager) -> TypesByName:
    """``{type name: Adapter class}`` of every plugin (``coupler_adapter_types``); a class
    contributed as ``"module:Class"`` is imported when it is looked up (:class:`TypesByName`)."""
    return TypesByName(*_merge_owned(pm, "coupler_adapter_types"), kind="adapter type")


def translator_types(pm: pluggy.PluginManager) -> dict[str, Any]:
    """``{type name: translator type}`` of every plugin (``coupler_translator_types``)."""
    return _merge(pm, "coupler_translator_types")


def transport_types(pm: pluggy.PluginManager) -> dict[str, Any]:
    """``{type name: factory(site) -> opened Transport}`` of every plugin (``coupler_transport_types``)."""
    return _merge(pm, "coupler_transport_types")


def step_types(pm: pluggy.PluginManager) -> dict[str, type]:
    """``{type name: Step class}`` of every plugin (``coupler_step_types``)."""
    return _merge(pm, "coupler_step_types")


def mapping_functions(pm: pluggy.PluginManager) -> dict[str, Any]:
    """Custom mapping transforms of every plugin (``coupler_mapping_functions``)."""
    return _merge(pm, "coupler_mapping_functions")


def schema_dirs(pm: pluggy.PluginManager) -> list[Path]:
    dirs: list[Path] = []
    for result in pm.hook.coupler_schema_dirs():
        dirs.extend(Path(d) for d in result or ())
    return dirs


def add_cli_commands(
    pm: pluggy.PluginManager, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]
) -> dict[str, str]:
    """Let every plugin add its ``coupler`` subcommands (``coupler_cli_commands``).

    Returns ``{command: plugin name}``; a plugin adding a command that exists already is a
    :class:`PluginError` naming both.
    """
    added: dict[str, str] = {}
    caller: pluggy.HookCaller = pm.hook.coupler_cli_commands
    for impl in caller.get_hookimpls():
        plugin = impl.plugin
        before = set(subparsers.choices)
        others = [p for p in pm.get_plugins() if p is not plugin]
        try:
            pm.subset_hook_caller("coupler_cli_commands", remove_plugins=others)(subparsers=subparsers)
        except argparse.ArgumentError as exc:
            owner = next((f"plugin {added[c]}" for c in added if c in str(exc)), "coupler itself")
            raise PluginError(
                f"plugin {_plugin_name(pm, plugin)} adds a command that {owner} has already: {exc}",
                hint="uninstall one of the two plugins",
            ) from None
        for name in sorted(set(subparsers.choices) - before):
            added[name] = _plugin_name(pm, plugin)
    return added


@dataclass
class PluginInfo:
    """One installed plugin and what it contributes (``coupler plugins``)."""

    name: str
    distribution: str | None
    version: str | None
    adapter_types: list[str] = field(default_factory=list)
    transport_types: list[str] = field(default_factory=list)
    translator_types: list[str] = field(default_factory=list)
    step_types: list[str] = field(default_factory=list)
    schema_dirs: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    cli_commands: list[str] = field(default_factory=list)
    #: why it failed to load (None: it loaded)
    broken: str | None = None

    def contributes(self) -> dict[str, list[str]]:
        return {
            "adapter_types": self.adapter_types,
            "transport_types": self.transport_types,
            "translator_types": self.translator_types,
            "step_types": self.step_types,
            "schema_dirs": self.schema_dirs,
            "commands": self.commands,
            "cli_commands": self.cli_commands,
        }


def _check_references(pm: pluggy.PluginManager, plugin: Any, types: dict[str, Any], dist: Any) -> None:
    """Import the types ``plugin`` contributes by reference (``coupler plugins``): one that
    fails to import makes the plugin broken, as an import failure of the plugin itself does."""
    name = _plugin_name(pm, plugin)
    for type_name, value in types.items():
        if not isinstance(value, str):
            continue
        try:
            _resolve_reference(value, "adapter type", type_name, name)
        except PluginError as exc:
            _record_broken(BrokenPlugin(
                name, getattr(plugin, "__name__", repr(plugin)), dist.metadata["name"] if dist else None,
                dist.version if dist else None, exc.message,
            ))
            return


def describe_plugins(pm: pluggy.PluginManager) -> list[PluginInfo]:
    dists = {id(plugin): dist for plugin, dist in pm.list_plugin_distinfo()}
    infos: dict[int, PluginInfo] = {}
    for plugin in pm.get_plugins():
        if plugin is hookspecs:
            continue
        dist = dists.get(id(plugin))
        infos[id(plugin)] = PluginInfo(
            name=_plugin_name(pm, plugin),
            distribution=dist.metadata["name"] if dist else None,
            version=dist.version if dist else None,
        )
    hooks = {**_TYPE_HOOKS, "schema_dirs": "coupler_schema_dirs", "commands": "coupler_commands"}
    for attr, hook in hooks.items():
        for plugin, result in _per_plugin(pm, hook):
            getattr(infos[id(plugin)], attr).extend(str(x) for x in (result or ()))
            if hook == "coupler_adapter_types":
                _check_references(pm, plugin, result or {}, dists.get(id(plugin)))
    parser = argparse.ArgumentParser(prog="coupler", add_help=False)
    sub = parser.add_subparsers()
    for name, owner in add_cli_commands(pm, sub).items():
        for info in infos.values():
            if info.name == owner:
                info.cli_commands.append(name)
    listed = {info.name: info for info in infos.values()}
    for b in broken_plugins():
        info = listed.setdefault(b.entry_point, PluginInfo(b.entry_point, b.distribution, b.version))
        info.broken = b.error
        for names in info.contributes().values():
            names.clear()
    return sorted(listed.values(), key=lambda i: i.name)


#: extra plugin objects to load, ``module[:attribute]`` separated by commas (tests, embedding)
EXTRA_PLUGINS_ENV = "COUPLER_EXTRA_PLUGINS"


def extra_plugins(spec: str | None = None) -> tuple[Any, ...]:
    """The plugin objects named by ``spec`` (default: ``$COUPLER_EXTRA_PLUGINS``)."""
    spec = os.environ.get(EXTRA_PLUGINS_ENV, "") if spec is None else spec
    plugins = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        try:
            obj = _import_object(item)
        except (ImportError, AttributeError) as exc:
            raise CouplerError(
                f"cannot load plugin {item!r}: {exc}", where=f"${EXTRA_PLUGINS_ENV}",
                hint="use module or module:attribute, importable from the Python path",
            ) from exc
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure of a third party's import (sys.exit() too)
            raise CouplerError(
                f"cannot load plugin {item!r}: its import failed: {describe_exception(exc)}",
                where=f"${EXTRA_PLUGINS_ENV}", hint="fix the module or remove it from the variable",
            ) from exc
        plugins.append(obj)
    return tuple(plugins)


def site_plugin_manager(extra: tuple[Any, ...] = ()) -> pluggy.PluginManager:
    """Installed plugins, those named by ``$COUPLER_EXTRA_PLUGINS``, and ``extra``."""
    return plugin_manager(extra=(*extra_plugins(), *extra))
