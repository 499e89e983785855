"""pluggy hook specifications: what a Coupler plugin can contribute.

Plugins are found through the entry-point group ``coupler``; built-in adapters and
translators are registered through the same entry points as third-party ones. A plugin
module implements any of these hooks with ``@coupler.bus.plugins.hookspecs.hookimpl``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pluggy
from pydantic import BaseModel

PROJECT = "coupler"
ENTRY_POINT_GROUP = "coupler"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class TransportFactory(Protocol):
    """Opens the transport of a site: ``(site, options) -> Transport``, opened. ``site`` is the
    loaded :class:`coupler.bus.config.loader.SiteConfig`; ``options`` the validated
    ``[store.<type>]`` table (an instance of the type's ``options_model``, or None)."""

    def __call__(self, site: Any, options: Any, /) -> Any: ...


@dataclass(frozen=True)
class TransportType:
    """A transport type a plugin provides (``coupler_transport_types``).

    ``open`` opens it for a site; ``options_model`` (a pydantic model, usually a
    :class:`coupler.canonical.options.OptionsModel`) declares the keys of the site's
    ``[store.<type>]`` table: the site loader checks them with the site's other keys and the
    configuration reference documents them.
    """

    open: TransportFactory
    options_model: type[BaseModel] | None = None


@hookspec
def coupler_adapter_types() -> dict[str, type | str]:
    """Adapter types this plugin provides: ``{type name: Adapter subclass}``.

    The type name is what a site's ``[[adapters]] type = "..."`` refers to. The class may be
    given as ``"module:Class"``: it is then imported only when a site names the type (or by
    ``coupler plugins`` and the configuration reference), so a daemon whose site does not use
    the type does not pay for importing it (see ``coupler.bus.plugins.manager.TypesByName``).
    """


@hookspec
def coupler_translator_types() -> dict[str, Any]:
    """Translator types this plugin provides: ``{type name: translator factory}``.

    The type name is what an adapter's ``translator = "..."`` in site.toml refers to: how an
    outbound adapter with a ``mapping`` gets each mapped document. The factory is called with
    the loaded mapping (:class:`coupler.translators.mapping.Mapping`) and returns a callable
    turning a mapped legacy record (a dict) into the bytes the adapter is handed.
    """


@hookspec
def coupler_transport_types() -> dict[str, TransportType]:
    """Transport types this plugin provides: ``{type name: TransportType}``.

    The type name is what a site's ``[store] type = "..."`` refers to; its options are the
    site's ``[store.<type name>]`` table. :class:`TransportType` ``.open(site, options)``
    returns the site's transport (a :class:`coupler.bus.transport.base.Transport`), opened.
    (A plain ``factory(site)`` is still accepted, for a transport without options.)
    """


@hookspec
def coupler_cli_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``coupler`` subcommands: ``subparsers.add_parser(NAME, help=...)`` and
    ``.set_defaults(func=RUN)``, where ``RUN(args)`` returns the exit code (a ``CouplerError``
    it raises is printed as one line). The name must not be one of ``coupler``'s own commands.
    """


@hookspec
def coupler_step_types() -> dict[str, type]:
    """Step types of route pipelines this plugin provides: ``{type name: Step subclass}``.

    The type name is what a site's ``[[routes.steps]] type = "..."`` refers to; the class
    derives from :class:`coupler.bus.runtime.steps.Step` (its docstring says how one is written).
    """


@hookspec
def coupler_aggregation_strategies() -> dict[str, Any]:
    """Aggregation strategies of the ``aggregate`` step: ``{name: callable}``.

    A site's ``strategy = "name"`` picks one; it is called with the completed group
    (:class:`coupler.bus.runtime.steps.aggregate.Group`: ``key``, ``members`` envelopes in
    order, ``reason``, ``options``, ``records()``) and returns ``(body bytes, FormatIndicator)``
    of the aggregate.
    """


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
