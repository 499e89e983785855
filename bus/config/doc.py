"""Generated from the configuration models: the ``site.toml`` template and its reference.

``render_template`` writes the file ``coupler init`` creates: the embedded store, no
adapters, and every other section as commented examples (``## `` lines are documentation,
``# `` lines are settings to uncomment). ``render_markdown`` writes
``docs/configuration.md``; a test keeps the committed file equal to its output.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from coupler.bus.config.models import SiteModel

#: kinds of values a key holds
STRING, INTEGER, NUMBER, BOOLEAN = "string", "integer", "number", "boolean"
STRINGS = "array of strings"
TABLE = "table"  # a table of the keys listed in ``fields``
TABLES = "array of tables"  # ``[[name]]``, each with the keys listed in ``fields``
FREE_TABLE = "free-form table"  # any keys, passed through


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: the default of a key the site must set
REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Field:
    """One key of ``site.toml`` as the reference shows it, read off its model field."""

    name: str
    kind: str
    doc: str
    default: Any = None
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    #: values must be greater than this
    above: float | None = None
    fields: tuple[Field, ...] = ()
    #: a TOML snippet showing the key (or the whole section) in use
    example: str = ""


def describe(model: type[BaseModel], name: str = "") -> Field:
    """The keys of ``model`` (a table of site.toml), recursively."""
    return Field(name, TABLE, _text(model.__doc__ or ""), fields=tuple(_field(n, i) for n, i in model.model_fields.items()))


def _field(name: str, info: FieldInfo) -> Field:
    ann = _unwrap(info.annotation)
    key = info.alias or name
    text = _text(info.description or "")
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    example = str(extra.get("example") or "")
    default: Any = REQUIRED if info.is_required() else info.get_default(call_default_factory=True)
    if isinstance(default, BaseModel):
        default = {}
    elif isinstance(default, tuple):
        default = list(default)
    bound: Any = next((m.ge for m in info.metadata if isinstance(m, annotated_types.Ge)), None)
    minimum = float(bound) if bound is not None else None
    above: Any = next((m.gt for m in info.metadata if isinstance(m, annotated_types.Gt)), None)
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return Field(key, TABLE, text, default, fields=describe(ann).fields, example=example)
    if origin in (tuple, list):
        item = _unwrap(args[0]) if args else Any
        if isinstance(item, type) and issubclass(item, BaseModel):
            return Field(key, TABLES, text, default, fields=describe(item).fields, example=example)
        return Field(key, STRINGS, text, default, example=example)
    if origin is dict:
        return Field(key, FREE_TABLE, text, default, example=example)
    if origin is Literal:
        return Field(key, STRING, text, default, choices=tuple(str(a) for a in args), example=example)
    kind = {bool: BOOLEAN, int: INTEGER, float: NUMBER}.get(ann, STRING)
    return Field(key, kind, text, default, minimum=minimum, above=None if above is None else float(above),
                 example=example)


def _unwrap(ann: Any) -> Any:
    while True:
        origin = typing.get_origin(ann)
        if origin is Annotated:
            ann = typing.get_args(ann)[0]
        elif origin in (typing.Union, types.UnionType):
            ann = next(a for a in typing.get_args(ann) if a is not type(None))
        else:
            return ann


def _text(doc: str) -> str:
    return " ".join(doc.split())


#: every key of site.toml
SITE_SCHEMA = describe(SiteModel)


def walk(root: Field = SITE_SCHEMA, prefix: str = "") -> list[tuple[str, Field]]:
    """Every key with its dotted path (``adapters[].identity.class``), depth first."""
    rows: list[tuple[str, Field]] = []
    for f in root.fields:
        path = f"{prefix}{f.name}"
        rows.append((path, f))
        if f.kind == TABLE:
            rows.extend(walk(f, path + "."))
        elif f.kind == TABLES:
            rows.extend(walk(f, path + "[]."))
    return rows

#: settings written uncommented into a new site
_ACTIVE = {("site", "name"), ("site", "data_dir"), ("store", "type"), ("store", "synchronous")}


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }" if value else "{}"
    return str(value)


def _wrap(text: str, prefix: str = "## ", width: int = 92) -> list[str]:
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width - len(prefix):
            lines.append(prefix + line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    if line:
        lines.append(prefix + line)
    return lines


def _table_lines(section: Field, header: str, site_name: str) -> list[str]:
    out = _wrap(section.doc)
    keys = [f for f in section.fields if f.kind not in (TABLE, TABLES)]
    active = [f for f in keys if (header, f.name) in _ACTIVE]
    out.append(f"[{header}]" if active else f"# [{header}]")
    for f in keys:
        value = site_name if (header, f.name) == ("site", "name") else f.default
        if value is None:
            value = f.example or None  # a setting that is off by default, shown with an example
        if value is None:
            continue
        setting = f"{f.name} = {toml_value(value)}"
        choices = f" ({' | '.join(f.choices)})" if f.choices else ""
        prefix = "" if (header, f.name) in _ACTIVE else "# "
        out.append(f"{prefix}{setting:<40} ## {f.doc.split('. ')[0].rstrip('.')}{choices}")
    for f in section.fields:
        if f.kind == TABLE:
            out.append("")
            out.extend(_table_lines(f, f"{header}.{f.name}", site_name))
    return out


def render_template(site_name: str = "coupler-site") -> str:
    """The commented ``site.toml`` of a new site."""
    lines = [
        "## Coupler site configuration. Reference: docs/configuration.md.",
        "## Lines starting with '## ' explain; lines starting with '# ' are settings to uncomment.",
        "## Relative paths are relative to this file.",
        "",
    ]
    for section in SITE_SCHEMA.fields:
        if section.kind == TABLE:
            lines.extend(_table_lines(section, section.name, site_name))
        else:
            lines.extend(_wrap(section.doc))
            lines.extend("# " + line if line else "#" for line in section.example.rstrip("\n").split("\n"))
        lines.append("")
    return "\n".join(lines)


def render_markdown(adapter_types: dict[str, type] | None = None) -> str:
    """``docs/configuration.md``: every key of ``site.toml`` (and the options the built-in
    adapter types, or ``adapter_types``, document)."""
    out = [
        "# Site configuration (`site.toml`)",
        "",
        "<!-- Generated from bus/config/models.py and the options models of the built-in adapter types by "
        "`python -m coupler.bus.config.doc`; do not edit by hand. -->",
        "",
        "A site is one TOML file. `coupler init DIR` writes a commented one; `coupler daemon --site",
        "site.toml` validates it on load, the options of each adapter against its type included, and",
        "reports every problem at once with its line and key path, e.g.",
        "`site.toml:14: adapters[orders-in].direction: 'in' is not one of inbound, outbound, both`",
        "(an entry of `[[adapters]]`, `[[channels]]`, `[[routes]]` or `[[batch]]` is named by its",
        "`name` (`source`), else by its position: `routes[0].rules[1].to[0]`). Relative paths are",
        "relative to the site file. Unknown keys are errors, with the nearest known key suggested.",
        "",
    ]
    for section in SITE_SCHEMA.fields:
        header = f"[[{section.name}]]" if section.kind == TABLES else f"[{section.name}]"
        out += [f"## `{header}`", "", section.doc, ""]
        if section.example:
            out += ["```toml", section.example.rstrip("\n"), "```", ""]
        out += ["| key | type | default | description |", "|---|---|---|---|"]
        prefix = f"{section.name}[]." if section.kind == TABLES else f"{section.name}."
        for path, f in walk(section, prefix):
            if f.kind == TABLE and not f.fields:
                continue
            out.append(f"| `{path}` | {_kind(f)} | {_default(f)} | {_doc(f)} |")
        out.append("")
    out += _transport_options()
    out += _adapter_options(adapter_types)
    out += _step_options()
    return "\n".join(out)


def _transport_options() -> list[str]:
    """The options models of the built-in transport types (``[store.<type>]``)."""
    from coupler.bus.plugins.manager import plugin_manager, transport_types

    kinds = {
        name: kind for name, kind in transport_types(plugin_manager()).items()
        if getattr(kind, "options_model", None) is not None
        and kind.options_model.__module__.startswith("coupler.bus.transport.")  # built-ins only
    }
    out = [
        "## Transport options (`[store.<type>]`)",
        "",
        "Each transport type declares the options of its table `[store.<type>]` as a model (its",
        "plugin's `TransportType.options_model`); the site loader checks them with the site's other",
        "keys. These are the options of the built-in types with options (`sqlite` has none beyond",
        "`[store]`'s own; `memory` none).",
        "",
    ]
    for name in sorted(kinds):
        model = kinds[name].options_model
        section = describe(model)
        out += [f"### `[store.{name}]`", "", section.doc, ""]
        extra = model.model_config.get("json_schema_extra")
        example = extra.get("example") if isinstance(extra, dict) else None
        if example:
            out += ["```toml", str(example).rstrip("\n"), "```", ""]
        out += ["| key | type | default | description |", "|---|---|---|---|"]
        for path, f in walk(section, f"store.{name}."):
            out.append(f"| `{path}` | {_kind(f)} | {_default(f)} | {_doc(f)} |")
        out.append("")
    return out


def _adapter_options(adapter_types: dict[str, type] | None) -> list[str]:
    """The options models of the built-in adapter types."""
    if adapter_types is None:
        from coupler.bus.plugins.manager import adapter_types as installed
        from coupler.bus.plugins.manager import plugin_manager

        adapter_types = {
            name: cls for name, cls in installed(plugin_manager()).items()
            if cls.__module__.startswith("coupler.adapters.")  # built-ins only: the file must not
        }  # depend on which third-party plugins are installed
    out = [
        "## Adapter options (`[adapters.options]`)",
        "",
        "Each adapter type declares its options as a model; the site loader checks every adapter's",
        "options against it (an unknown or wrong option is reported with the site's other problems).",
        "These are the options of the built-in types (docs/adapters/ explains them in context).",
        "",
    ]
    for name in sorted(adapter_types):
        cls = adapter_types[name]
        model = getattr(cls, "options_model", None)
        if model is None:
            continue
        out += [f"### `type = \"{name}\"`", "", "| key | type | default | description |", "|---|---|---|---|"]
        for path, f in walk(describe(model), "options."):
            out.append(f"| `{path}` | {_kind(f)} | {_default(f)} | {_doc(f)} |")
        out.append("")
    return out


def _step_options() -> list[str]:
    """The keys of the built-in step types (``[[routes.steps]]``)."""
    from coupler.bus.plugins.manager import plugin_manager, step_types

    types = {name: cls for name, cls in step_types(plugin_manager()).items()
             if cls.__module__.startswith("coupler.bus.")}  # built-ins only
    out = [
        "## Step types (`[[routes.steps]]`)",
        "",
        "A route's steps run in order on every message (docs/patterns.md shows them in use; the",
        "conditions and fields are written in the expression language of docs/expressions.md). Each",
        "step table has `type` (and an optional `name`) and the keys of its type, checked like an",
        "adapter's options. These are the built-in types; plugins add others (`coupler plugins`).",
        "",
    ]
    for name in sorted(types):
        cls = types[name]
        summary = " ".join((cls.__doc__ or "").split())
        out += [f"### `type = \"{name}\"`", "", summary, ""]
        fields = walk(describe(getattr(cls, "options_model")), "")  # noqa: B009 - a Step class, typed `type` by the hook
        if not fields:
            out += ["No keys of its own.", ""]
            continue
        out += ["| key | type | default | description |", "|---|---|---|---|"]
        for path, f in fields:
            out.append(f"| `{path}` | {_kind(f)} | {_default(f)} | {_doc(f)} |")
        out.append("")
    return out


def _kind(f: Field) -> str:
    return {TABLES: "array of tables", FREE_TABLE: "table (any keys)"}.get(f.kind, f.kind)


def _default(f: Field) -> str:
    if f.default is REQUIRED:
        return "**required**"
    if f.kind == TABLE:
        return "—" if f.default is None else "(section)"
    if f.default is None:
        return "not set"
    return f"`{toml_value(f.default)}`"


def _doc(f: Field) -> str:
    text = f.doc.replace("|", "\\|")
    if f.choices:
        text += " One of " + ", ".join(f"`{c}`" for c in f.choices) + "."
    if f.minimum is not None:
        text += f" Minimum {f.minimum:g}."
    if f.above is not None:
        text += f" Greater than {f.above:g}."
    return text


if __name__ == "__main__":  # pragma: no cover - `python -m coupler.bus.config.doc > docs/configuration.md`
    import sys

    sys.stdout.write(render_markdown())
