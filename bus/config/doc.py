"""Generated from the configuration schema: the ``site.toml`` template and its reference.

``render_template`` writes the file ``coupler init`` creates: the embedded store, no
adapters, and every other section as commented examples (``## `` lines are documentation,
``# `` lines are settings to uncomment). ``render_markdown`` writes
``docs/configuration.md``; a test keeps the committed file equal to its output.
"""

from __future__ import annotations

import json
from typing import Any

from coupler.bus.config.schema import FREE_TABLE, REQUIRED, SITE_SCHEMA, TABLE, TABLES, Field, walk

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
        "<!-- Generated from bus/config/schema.py and the built-in adapter types (option_docs) by "
        "`python -m coupler.bus.config.doc`; do not edit by hand. -->",
        "",
        "A site is one TOML file. `coupler init DIR` writes a commented one; `coupler daemon --site",
        "site.toml` validates it on load and reports every problem with its key path, e.g.",
        "`site.toml: adapters[1].direction: 'in' is not one of inbound, outbound, both`.",
        "Relative paths are relative to the site file. Unknown keys are errors.",
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
    out += _adapter_options(adapter_types)
    return "\n".join(out)


def _adapter_options(adapter_types: dict[str, type] | None) -> list[str]:
    """The options the built-in adapter types list in ``option_docs``."""
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
        "Each adapter type documents its options in docs/adapters/. These are the options that",
        "bound what a peer can make an adapter do (connections, timeouts, authentication, TLS).",
        "",
    ]
    for name in sorted(adapter_types):
        docs = getattr(adapter_types[name], "option_docs", ())
        if not docs:
            continue
        out += [f"### `type = \"{name}\"`", "", "| key | type | default | description |", "|---|---|---|---|"]
        for o in docs:
            default = "not set" if o.default is None else f"`{toml_value(o.default)}`"
            out.append(f"| `options.{o.key}` | {o.kind} | {default} | {o.doc.replace('|', chr(92) + '|')} |")
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
    return text


if __name__ == "__main__":  # pragma: no cover - `python -m coupler.bus.config.doc > docs/configuration.md`
    import sys

    sys.stdout.write(render_markdown())
