"""Custom mapping transforms come from plugins through ``coupler_mapping_functions``."""

from __future__ import annotations

import pytest

from coupler.bus.plugins.hookspecs import hookimpl
from coupler.bus.plugins.manager import PluginError, mapping_functions, plugin_manager
from coupler.translators.mapping import parse_mapping

LEGACY = {"type": "record", "name": "L", "fields": [{"name": "CODE", "type": ["null", "string"], "default": None}]}
CANONICAL = {"type": "record", "name": "C", "fields": [{"name": "code", "type": ["null", "string"], "default": None}]}


class Plugin:
    """A plugin object contributing mapping functions."""

    def __init__(self, functions: dict):
        self.functions = functions

    @hookimpl
    def coupler_mapping_functions(self) -> dict:
        return self.functions


def plugin(name: str, functions: dict) -> Plugin:
    return Plugin(functions)


def test_plugin_functions_are_used_by_a_mapping() -> None:
    pm = plugin_manager(entry_points=False, extra=(plugin("acme", {"acme.pad": lambda v: v.rjust(6, "0"), "acme.unpad": lambda v: v.lstrip("0")}),))
    functions = mapping_functions(pm)
    m = parse_mapping('[[field]]\nlegacy = "CODE"\ncanonical = "code"\nfunction = "acme.pad"\ninverse = "acme.unpad"\n',
                      legacy_schema=LEGACY, canonical_schema=CANONICAL, functions=functions)
    assert m.to_canonical({"CODE": "42"}) == {"code": "000042"}
    assert m.to_legacy({"code": "000042"}) == {"CODE": "42"}


def test_two_plugins_with_the_same_function_name_are_refused() -> None:
    pm = plugin_manager(entry_points=False, extra=(plugin("one", {"f": str.upper}), plugin("two", {"f": str.lower})))
    with pytest.raises(PluginError, match="'f' is contributed by both"):
        mapping_functions(pm)
