"""Site configuration: load ``site.toml``, validate it with the models, resolve its paths.

Validation is done by :class:`coupler.bus.config.models.SiteModel` (and, when the installed
adapter types are given, by the options model each adapter type declares). Every problem
names its key path in one format (``adapters[sftp-in].options.known_hosts``,
``routes[0].rules[1].to[0]``: an entry of ``[[adapters]]``, ``[[channels]]``, ``[[routes]]``
or ``[[batch]]`` by its name when it has a unique one, else by its position) and the line of
site.toml it is on; all problems of a file are reported together in one :class:`ConfigError`.
"""

from __future__ import annotations

import difflib
import os
import re
import typing
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy
from pydantic import BaseModel, ValidationError

from coupler.bus.config.models import (
    AdapterConfig,
    BatchJobConfig,
    ChannelSettings,
    HttpSection,
    LoggingSection,
    MonitorSection,
    RedeliverySection,
    RouteConfig,
    RouteRule,
    SiteModel,
    StoreSection,
    TracingSection,
)
from coupler.bus.model.backoff import BackoffPolicy
from coupler.bus.model.names import is_channel_name
from coupler.bus.model.selectors import Selector
from coupler.bus.plugins import manager as plugin_types
from coupler.canonical.errors import CouplerError
from coupler.canonical.options import Problem, key_path, problems
from coupler.canonical.textformats import TextFormatError, load_toml

__all__ = [
    "SITE_ENV",
    "AdapterConfig",
    "BatchJobConfig",
    "ChannelSettings",
    "ConfigError",
    "RouteConfig",
    "RouteRule",
    "SiteConfig",
    "load_site",
    "parse_site",
    "site_path",
]

#: the environment variable naming the site file when ``--site`` is not given
SITE_ENV = "COUPLER_SITE"
#: arrays of tables whose entries are named by a key in key paths
_NAMED = {"adapters": "name", "channels": "name", "routes": "name", "batch": "source"}


class ConfigError(CouplerError):
    """A site file that cannot be read or does not validate; ``problems`` lists each one.

    Each problem is ``KEY.PATH: what is wrong``; ``lines`` holds the line of site.toml of
    each (None when it has none). With one problem the line is part of ``where``
    (``site.toml:12``); with several, each problem says its line.
    """

    def __init__(
        self,
        problems: Sequence[str | Problem],
        *,
        where: str | None = None,
        hint: str | None = None,
    ):
        items = [p if isinstance(p, Problem) else Problem("", p) for p in problems]
        self.problems = [str(p) for p in items]
        self.lines = [p.line for p in items]
        if len(items) == 1:
            message = self.problems[0]
            if where and items[0].line and not _HAS_LINE.search(where):
                where = f"{where}:{items[0].line}"
        else:
            message = f"{len(items)} problems: " + "; ".join(
                f"line {p.line}: {p}" if p.line else str(p) for p in items
            )
        super().__init__(message, where=where, hint=hint)


_HAS_LINE = re.compile(r":\d+(:\d+)?$")


# -- the loaded site -------------------------------------------------------------------------


@dataclass
class SiteConfig:
    """A validated site: every value has its default filled in and paths are absolute."""

    path: Path
    model: SiteModel
    data_dir: Path
    schema_paths: list[Path]
    control_socket: Path
    adapters: list[AdapterConfig]
    routes: list[RouteConfig]
    batch: list[BatchJobConfig]
    raw: dict[str, Any]
    #: where each key is in the file (see :meth:`where`)
    lines: dict[tuple[str | int, ...], int] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.model.site.name

    @property
    def store(self) -> StoreSection:
        return self.model.store

    @property
    def monitor(self) -> MonitorSection:
        return self.model.monitor

    @property
    def logging(self) -> LoggingSection:
        return self.model.logging

    @property
    def channels(self) -> list[ChannelSettings]:
        return list(self.model.channels)

    @property
    def command_channel(self) -> str:
        return self.model.commands.channel

    @property
    def reply_timeout(self) -> float:
        return self.model.commands.reply_timeout_seconds

    @property
    def http(self) -> HttpSection:
        """``[http]``: the console, API and metrics endpoint (off without ``listen``)."""
        return self.model.http

    @property
    def tracing(self) -> TracingSection:
        """``[tracing]``: OTLP export of the message traces."""
        return self.model.tracing

    @property
    def schema_roots(self) -> list[Path]:
        """The directories the XSDs and WSDLs this site names may read besides their own
        (:func:`site_schema_roots`)."""
        return site_schema_roots(self.path.parent, self.schema_paths)

    @property
    def lock_path(self) -> Path:
        return self.data_dir / "daemon.lock"

    def store_table(self, name: str) -> dict[str, Any]:
        """The raw ``[store.<name>]`` table (the options of transport type ``name``; {} when
        absent): the transport's plugin validates it with its options model."""
        table = (self.model.store.model_extra or {}).get(name, {})
        return dict(table) if isinstance(table, dict) else {}

    @property
    def store_path(self) -> Path:
        return _resolve(self.data_dir, self.store.path)

    def channel(self, name: str) -> ChannelSettings | None:
        for c in self.model.channels:
            if c.name == name:
                return c
        return None

    def where(self, path: str) -> str:
        """``site.toml:LINE`` of a key path such as ``adapters[sftp-in].format`` (the file alone
        when the key is not written in it)."""
        line = _line_of(self.lines, _parse_key_path(path, self.raw))
        return f"{self.path}:{line}" if line else str(self.path)

    def config_error(self, problems: Sequence[str], *, hint: str | None = None) -> ConfigError:
        """A :class:`ConfigError` of this file for ``problems`` (``KEY.PATH: what is wrong``),
        each with the line of its key."""
        located = []
        for text in problems:
            path, sep, message = text.partition(": ")
            loc = _parse_key_path(path, self.raw) if sep else ()
            located.append(Problem(path, message, loc, _line_of(self.lines, loc)) if sep else Problem("", text))
        return ConfigError(located, where=str(self.path), hint=hint)


def site_schema_roots(site_dir: Path, schema_dirs: Sequence[Path] = ()) -> list[Path]:
    """The directories every XSD or WSDL a site names (an adapter's WSDL or endpoint XSD, an XML
    envelope wrapper, the ``xml:`` spec of an adapter's or a transform step's mapping, a body
    shown by the console) may read besides its own directory: the site's folder ``site_dir``
    (the directory of site.toml) and its ``[schemas] paths`` ``schema_dirs``. The one
    definition: the adapters reach it through ``coupler.bus.api.site_schema_roots``."""
    return list(dict.fromkeys([Path(site_dir), *(Path(d) for d in schema_dirs)]))


# -- loading -------------------------------------------------------------------------------


def site_path(arg: str | os.PathLike[str] | None) -> Path:
    """The site file: ``arg``, else ``$COUPLER_SITE``, else ``./site.toml``."""
    if arg:
        return Path(arg)
    env = os.environ.get(SITE_ENV)
    return Path(env) if env else Path("site.toml")


def load_site(
    path: str | os.PathLike[str],
    *,
    check_selector: Callable[[str], None] | None = None,
    adapter_types: Mapping[str, type] | None = None,
    transport_types: Mapping[str, Any] | Collection[str] | None = None,
    translator_types: Collection[str] | None = None,
    step_types: Mapping[str, type] | None = None,
    pm: pluggy.PluginManager | None = None,
) -> SiteConfig:
    """Read, validate and type a site file (see :func:`parse_site`).

    With the plugin manager ``pm`` the site is checked against what the installed plugins
    declare: each adapter's type and its options (the options model of the type), the
    transport type and the translator types.
    """
    if pm is not None:
        adapter_types = plugin_types.adapter_types(pm)
        transport_types = plugin_types.transport_types(pm)
        translator_types = plugin_types.translator_types(pm)
        step_types = plugin_types.step_types(pm)
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            [f"site file {str(path)!r} does not exist"],
            hint="create a site with `coupler init DIR` or pass --site",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([f"cannot read the site file: {exc}"], where=str(path)) from exc
    return parse_site(
        text,
        path,
        check_selector=check_selector,
        adapter_types=adapter_types,
        transport_types=transport_types,
        translator_types=translator_types,
        step_types=step_types,
    )


def parse_site(
    text: str,
    path: str | os.PathLike[str] = "site.toml",
    *,
    check_selector: Callable[[str], None] | None = None,
    adapter_types: Mapping[str, type] | None = None,
    transport_types: Mapping[str, Any] | Collection[str] | None = None,
    translator_types: Collection[str] | None = None,
    step_types: Mapping[str, type] | None = None,
) -> SiteConfig:
    """Validate the TOML ``text`` of a site file located at ``path``.

    ``check_selector`` parses a route condition and raises on a bad one (default: the router's).
    ``adapter_types`` (``{type name: Adapter class}``, the installed plugins') checks each
    adapter's type and its ``options`` against the options model the type declares;
    ``transport_types`` (names, or ``{name: TransportType}``) checks ``store.type`` and the
    ``[store.<type>]`` tables against the options models, ``translator_types`` each adapter's
    ``translator`` and ``step_types`` (``{type name: Step class}``) each route step's type and
    keys. Without them only the site's own keys are checked.
    """
    path = Path(path)
    try:
        raw = load_toml(text)
    except TextFormatError as exc:
        raise ConfigError([exc.reason], where=exc.at(path)) from None
    lines = locate_keys(text)
    render = _renderer(raw)
    found: list[Problem] = []
    data = raw
    model: SiteModel | None = None
    try:
        model = SiteModel.model_validate(data)
    except ValidationError as exc:
        found.extend(problems(exc, SiteModel, data, render=render))
    adapters_raw: list[Any] = data["adapters"] if isinstance(data.get("adapters"), list) else []
    if adapter_types is not None:
        found.extend(_check_adapter_types(adapters_raw, adapter_types, render))
    store: dict[str, Any] = data["store"] if isinstance(data.get("store"), dict) else {}
    if transport_types is not None:
        kind = store.get("type", "sqlite")
        if isinstance(kind, str) and kind not in transport_types:
            found.append(Problem(render(("store", "type")), _unknown("transport type", kind, transport_types),
                                 ("store", "type")))
    if step_types is not None:
        found.extend(_check_step_types(data.get("routes"), step_types, render))
    found.extend(_check_store_tables(store, transport_types, render))
    if translator_types is not None:
        for i, ad in enumerate(adapters_raw):
            name = ad.get("translator") if isinstance(ad, dict) else None
            if isinstance(name, str) and name not in translator_types:
                loc = ("adapters", i, "translator")
                found.append(Problem(render(loc), _unknown("translator type", name, translator_types), loc))
    if isinstance(data, dict):
        _check_semantics(data, found, check_selector or _default_selector_check(), render)
    if found:
        found = sorted(
            (Problem(p.path, p.message, p.loc, _line_of(lines, p.loc)) for p in found),
            key=lambda p: p.line or 0,
        )
        raise ConfigError(found, where=str(path))
    assert model is not None
    return _resolved(model, raw, path.resolve(), lines)


def _check_adapter_types(
    adapters: list[Any], types: Mapping[str, type], render: Callable[[tuple[str | int, ...]], str]
) -> list[Problem]:
    found: list[Problem] = []
    for i, ad in enumerate(adapters):
        if not isinstance(ad, dict) or not isinstance(ad.get("type"), str):
            continue
        loc: tuple[str | int, ...] = ("adapters", i, "type")
        try:
            cls = types.get(ad["type"])  # imports a type given by reference ("module:Class")
        except plugin_types.PluginError as exc:
            found.append(Problem(render(loc), f"{exc.message} ({exc.hint})" if exc.hint else exc.message, loc))
            continue
        if cls is None:
            found.append(Problem(render(loc), _unknown("adapter type", ad["type"], types), loc))
            continue
        model: type[BaseModel] | None = getattr(cls, "options_model", None)
        options = ad.get("options", {})
        if model is None or not isinstance(options, dict):
            continue
        try:
            model.model_validate(options)
        except ValidationError as exc:
            base: tuple[str | int, ...] = ("adapters", i, "options")
            for p in problems(exc, model, options):
                full = (*base, *p.loc)
                found.append(Problem(render(full), p.message, full))
    return found


def _check_step_types(
    routes: Any, types: Mapping[str, type], render: Callable[[tuple[str | int, ...]], str]
) -> list[Problem]:
    """Each ``[[routes.steps]]``: its type is installed and its keys fit the type's options model."""
    found: list[Problem] = []
    for i, rt in enumerate(routes if isinstance(routes, list) else []):
        steps = rt.get("steps") if isinstance(rt, dict) else None
        for j, step in enumerate(steps if isinstance(steps, list) else []):
            if not isinstance(step, dict) or not isinstance(step.get("type"), str):
                continue
            cls = types.get(step["type"])
            base: tuple[str | int, ...] = ("routes", i, "steps", j)
            if cls is None:
                found.append(Problem(render((*base, "type")), _unknown("step type", step["type"], types), (*base, "type")))
                continue
            model: type[BaseModel] | None = getattr(cls, "options_model", None)
            if model is None:
                continue
            options = {k: v for k, v in step.items() if k not in ("type", "name")}
            try:
                model.model_validate(options)
            except ValidationError as exc:
                for p in problems(exc, model, options):
                    full = (*base, *p.loc)
                    found.append(Problem(render(full), p.message, full))
    return found


def _check_store_tables(
    store: dict[str, Any], types: Mapping[str, Any] | Collection[str] | None,
    render: Callable[[tuple[str | int, ...]], str],
) -> list[Problem]:
    """The problems of the ``[store.<type>]`` tables: each must be a table named after a
    transport type (when the installed ones are known), its keys those of the type's options
    model."""
    found: list[Problem] = []
    for key, value in store.items():
        if key in StoreSection.model_fields:
            continue
        loc: tuple[str | int, ...] = ("store", key)
        known = sorted(StoreSection.model_fields) + sorted(types or ())
        if not isinstance(value, dict):
            close = difflib.get_close_matches(key, known, n=1)
            found.append(Problem(render(loc), "unknown key" + (f"; did you mean {close[0]!r}?" if close else ""), loc))
            continue
        if types is None:
            continue
        if key not in types:
            found.append(Problem(render(loc), f"no installed transport type {key!r} has options "
                                 f"(transport types: {', '.join(sorted(types))})", loc))
            continue
        model = getattr(types[key], "options_model", None) if isinstance(types, Mapping) else None
        if model is None:
            continue
        try:
            model.model_validate(value)
        except ValidationError as exc:
            for p in problems(exc, model, value):
                full = (*loc, *p.loc)
                found.append(Problem(render(full), p.message, full))
    return found


def _unknown(what: str, name: str, known: Collection[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1)
    installed = ", ".join(sorted(known)) or "none"
    hint = f"did you mean {close[0]!r}? " if close else ""
    return (f"no installed plugin provides {what} {name!r} ({hint}installed: {installed}; `coupler plugins` lists "
            f"them){plugin_types.broken_note()}")


def _valid_entries(data: dict[str, Any]) -> dict[str, list[tuple[int, Any]]]:
    """The entries of each array of tables that validate on their own, with their positions, and
    ``store.redelivery`` when it does: what the checks across entries can look at even when
    other parts of the file are wrong (so that all problems are reported together)."""
    out: dict[str, list[tuple[int, Any]]] = {}
    for section in _NAMED:
        item_model = typing.get_args(SiteModel.model_fields[section].annotation)[0]
        items = data.get(section)
        out[section] = []
        for i, item in enumerate(items if isinstance(items, list) else []):
            try:
                out[section].append((i, item_model.model_validate(item)))
            except ValidationError:
                continue
    store = data.get("store")
    redelivery = store.get("redelivery", {}) if isinstance(store, dict) else {}
    try:
        out["redelivery"] = [(0, RedeliverySection.model_validate(redelivery))]
    except ValidationError:
        out["redelivery"] = []
    return out


def _check_semantics(
    data: dict[str, Any],
    found: list[Problem],
    check_selector: Callable[[str], None] | None,
    render: Callable[[tuple[str | int, ...]], str],
) -> None:
    """Checks across entries (unique names, one route per channel, loops, batch sources)."""
    entries = _valid_entries(data)

    def problem(loc: tuple[str | int, ...], message: str) -> None:
        found.append(Problem(render(loc), message, loc))

    def raw(section: str, key: str) -> list[tuple[int, str]]:
        items = data.get(section)
        return [(i, it[key]) for i, it in enumerate(items if isinstance(items, list) else [])
                if isinstance(it, dict) and isinstance(it.get(key), str)]

    for section in ("adapters", "channels", "routes"):
        seen: dict[str, int] = {}
        for i, name in raw(section, "name"):
            if name in seen:
                problem((section, i, "name"), f"{name!r} is already used by {section}[{seen[name]}]")
            seen[name] = i
    for _, redelivery in entries["redelivery"]:
        try:
            BackoffPolicy(**redelivery.model_dump())
        except CouplerError as exc:
            problem(("store", "redelivery"), exc.message.removeprefix("bad backoff policy: "))
    adapters = {name for _, name in raw("adapters", "name")}
    sources: dict[str, int] = {}
    for i, source in raw("batch", "source"):
        if source not in adapters:
            known = ", ".join(sorted(adapters)) or "none"
            problem(("batch", i, "source"), f"no adapter named {source!r} (adapters: {known})")
        if source in sources:
            problem(("batch", i, "source"), f"{source!r} is already ingested by batch[{sources[source]}]")
        sources[source] = i
    for i, job in entries["batch"]:
        if not (job.on_staged or job.interval_seconds or job.at):
            problem(("batch", i), "no trigger (set on_staged = true, interval_seconds or at)")
    routed: dict[str, int] = {}
    for i, source in raw("routes", "from"):
        if source in routed:
            problem(
                ("routes", i, "from"),
                f"channel {source!r} is already routed by routes[{routed[source]}] "
                "(one route per input channel: add rules to that route)",
            )
        routed[source] = i
    for i, ad in entries["adapters"]:
        if ad.select is not None and check_selector is not None:
            try:
                check_selector(ad.select)
            except CouplerError as exc:
                problem(("adapters", i, "select"), str(exc))
    for i, rt in entries["routes"]:
        if not (rt.to or rt.rules or rt.steps):
            problem(("routes", i), "goes nowhere: give it `to` channels, `rules` or `steps`")
        for k, ch in enumerate(rt.to):
            if ch == rt.source:
                problem(("routes", i, "to", k), f"{ch!r} is the route's own input channel (a loop)")
        if rt.select is not None and check_selector is not None:
            try:
                check_selector(rt.select)
            except CouplerError as exc:
                problem(("routes", i, "select"), str(exc))
        for j, rule in enumerate(rt.rules):
            at = ("routes", i, "rules", j)
            if not rule.to:
                problem((*at, "to"), "needs at least one channel")
            for k, ch in enumerate(rule.to):
                if ch == rt.source:
                    problem((*at, "to", k), f"{ch!r} is the route's own input channel (a loop)")
            if rule.when is None:
                if rt.mode == "first" and j < len(rt.rules) - 1:
                    problem(at, "has no `when`, so the rules after it never match (put it last or add a condition)")
            elif check_selector is not None:
                try:
                    check_selector(rule.when)
                except CouplerError as exc:
                    problem((*at, "when"), str(exc))


def _default_selector_check() -> Callable[[str], None] | None:
    def check(text: str) -> None:
        Selector.parse(text, bare_properties=False)

    return check


def _resolved(model: SiteModel, raw: dict[str, Any], path: Path, lines: dict[tuple[str | int, ...], int]) -> SiteConfig:
    root = path.parent
    data_dir = _resolve(root, model.site.data_dir)
    adapters = []
    for i, a in enumerate(model.adapters):
        a._index = i
        adapters.append(a)
    routes = []
    for i, r in enumerate(model.routes):
        named = r.name is not None
        if not named:
            r = r.model_copy(update={"name": f"route-{i}"})
        r._index, r._named = i, named
        routes.append(r)
    batch = []
    for i, b in enumerate(model.batch):
        if b.mapping:
            b = b.model_copy(update={"mapping": str(_resolve(root, b.mapping))})
        b._index = i
        batch.append(b)
    return SiteConfig(
        path=path,
        model=model,
        data_dir=data_dir,
        schema_paths=[_resolve(root, p) for p in model.schemas.paths],
        control_socket=_resolve(data_dir, model.control.socket),
        adapters=adapters,
        routes=routes,
        batch=batch,
        raw=raw,
        lines=lines,
    )


# -- key paths and lines -------------------------------------------------------------------


def _renderer(raw: dict[str, Any]) -> Callable[[tuple[str | int, ...]], str]:
    """Renders a location as a key path, naming entries of named arrays by their unique name
    (when it is a valid name: an entry whose name is wrong is numbered)."""
    labels: dict[tuple[str, int], str] = {}
    for section, key in _NAMED.items():
        items = raw.get(section)
        if not isinstance(items, list):
            continue
        names = [it.get(key) if isinstance(it, dict) else None for it in items]
        for i, name in enumerate(names):
            if isinstance(name, str) and is_channel_name(name) and names.count(name) == 1:
                labels[(section, i)] = name

    def render(loc: tuple[str | int, ...]) -> str:
        if len(loc) >= 2 and isinstance(loc[0], str) and isinstance(loc[1], int) and (loc[0], loc[1]) in labels:
            return key_path(loc[2:], f"{loc[0]}[{labels[(loc[0], loc[1])]}]")
        return key_path(loc)

    return render


_SEGMENT = re.compile(r"\.?([^.\[\]]+)|\[([^\]]*)\]")


def _parse_key_path(path: str, raw: dict[str, Any]) -> tuple[str | int, ...]:
    """The location of a rendered key path (entries named or numbered)."""
    loc: list[str | int] = []
    holder: Any = raw
    for m in _SEGMENT.finditer(path):
        key, index = m.group(1), m.group(2)
        if key is not None:
            loc.append(key)
            holder = holder.get(key) if isinstance(holder, dict) else None
            continue
        if index.isdigit():
            i = int(index)
        else:
            section = loc[-1] if loc else ""
            by = _NAMED.get(str(section), "name")
            items = holder if isinstance(holder, list) else []
            i = next((n for n, it in enumerate(items) if isinstance(it, dict) and it.get(by) == index), -1)
            if i < 0:
                break
        loc.append(i)
        holder = holder[i] if isinstance(holder, list) and i < len(holder) else None
    return tuple(loc)


def _line_of(lines: dict[tuple[str | int, ...], int], loc: tuple[str | int, ...]) -> int | None:
    """The line of ``loc``, else of the nearest enclosing key or table that is written."""
    for n in range(len(loc), 0, -1):
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*(\]\]?)\s*(#.*)?$")
_KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=(.*)$""")
_DOTTED = re.compile(r"""\s*([A-Za-z0-9_-]+|"[^"]*"|'[^']*')\s*(?:\.|$)""")


def _key_parts(text: str) -> list[str]:
    return [p.strip("\"'") for p in _DOTTED.findall(text)]


def locate_keys(text: str) -> dict[tuple[str | int, ...], int]:
    """Where each table and key of a (valid) TOML document is: ``{location: line number}``.

    A location is the keys and array-of-tables indices leading to it (``("adapters", 1,
    "options", "port")``). Keys inside inline tables and multi-line values are found at the
    line of the key holding them.
    """
    lines: dict[tuple[str | int, ...], int] = {}
    counts: dict[tuple[str | int, ...], int] = {}  # array of tables -> entries so far
    current: tuple[str | int, ...] = ()
    pending: str | None = None  # closing delimiter of a multi-line value
    depth = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if pending is not None:
            if pending in line:
                pending = None
            continue
        if depth > 0:
            depth += _brackets(line)
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _HEADER.match(line)
        if m and _KEY.match(line) is None:
            parts = _key_parts(m.group(2))
            loc = _concrete(parts, counts)
            if m.group(1) == "[[":
                index = counts.get(loc, 0)
                counts[loc] = index + 1
                lines.setdefault(loc, number)
                loc = (*loc, index)
            lines.setdefault(loc, number)
            current = loc
            continue
        m = _KEY.match(line)
        if m is None:
            continue
        loc = (*current, *_key_parts(m.group(1)))
        lines.setdefault(loc, number)
        value = m.group(2).strip()
        for quote in ('"""', "'''"):
            if value.startswith(quote) and value.count(quote) == 1:
                pending = quote
        if pending is None:
            depth = max(_brackets(value), 0)
    return lines


def _concrete(parts: list[str], counts: dict[tuple[str | int, ...], int]) -> tuple[str | int, ...]:
    """A header's keys with the current index of each array of tables on the way."""
    loc: list[str | int] = []
    for i, part in enumerate(parts):
        loc.append(part)
        key = tuple(loc)
        if key in counts and i < len(parts) - 1:
            loc.append(counts[key] - 1)
    return tuple(loc)


def _brackets(text: str) -> int:
    """Open minus closed brackets and braces outside strings (a multi-line array or table)."""
    balance, quote = 0, ""
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            break
        elif ch in "[{":
            balance += 1
        elif ch in "]}":
            balance -= 1
    return balance


# -- helpers -------------------------------------------------------------------------------


def _resolve(base: Path, p: str) -> Path:
    q = Path(p).expanduser()
    return q if q.is_absolute() else (base / q)


