"""Site configuration: load ``site.toml``, validate it against the schema, give it types.

Validation is driven by :data:`coupler.bus.config.schema.SITE_SCHEMA`; every problem names
the key path (``adapters[1].direction``) and what is wrong, and all problems of a file are
reported together in one :class:`ConfigError`.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coupler.bus.config.schema import (
    BOOLEAN,
    FREE_TABLE,
    INTEGER,
    NUMBER,
    SITE_SCHEMA,
    STRING,
    STRINGS,
    TABLE,
    TABLES,
    Field,
)
from coupler.bus.model.backoff import BackoffPolicy
from coupler.bus.model.selectors import Selector
from coupler.canonical.errors import CouplerError, FormatIndicatorError
from coupler.canonical.format import FormatIndicator

#: the environment variable naming the site file when ``--site`` is not given
SITE_ENV = "COUPLER_SITE"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_TOML_AT = re.compile(r" ?\(at line (\d+), column (\d+)\)")
_CHANNEL = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


class ConfigError(CouplerError):
    """A site file that cannot be read or does not validate; ``problems`` lists each one."""

    def __init__(self, problems: list[str], *, where: str | None = None, hint: str | None = None):
        self.problems = list(problems)
        if len(problems) == 1:
            message = problems[0]
        else:
            message = f"{len(problems)} problems: " + "; ".join(problems)
        super().__init__(message, where=where, hint=hint)


# -- typed view ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ChannelSettings:
    name: str
    kind: str = "queue"
    format: str | None = None
    dead_letter_channel: str | None = None
    max_attempts: int | None = None
    stuck_after_seconds: float | None = None


@dataclass(frozen=True)
class AdapterConfig:
    name: str
    type: str
    index: int = 0
    direction: str = "both"
    channel: str | None = None
    targets: tuple[str, ...] = ()
    commands: tuple[str, ...] | None = None
    identity: dict[str, str] | None = None
    format: str | None = None
    translator: str | None = None
    mapping: str | None = None
    enabled: bool = True
    options: dict[str, Any] = field(default_factory=dict)
    wrappers: list[dict[str, Any]] = field(default_factory=list)  # envelope wrapper chain (translators/wrappers)

    @property
    def key_path(self) -> str:
        return f"adapters[{self.index}]"


@dataclass(frozen=True)
class RouteRule:
    when: str | None
    to: tuple[str, ...]


@dataclass(frozen=True)
class RouteConfig:
    name: str
    source: str
    rules: tuple[RouteRule, ...]
    mode: str = "first"
    otherwise: str | None = None
    index: int = 0
    #: the version it reads (``NAME@V``): messages are converted to it (a Datatype Channel)
    format: str | None = None

    @property
    def key_path(self) -> str:
        return f"routes[{self.index}]"


@dataclass(frozen=True)
class BatchJobConfig:
    """A ``[[batch]]`` entry: when the daemon runs ``coupler batch ingest`` for ``source``."""

    source: str
    index: int = 0
    on_staged: bool = False
    interval_seconds: float | None = None
    at: tuple[str, ...] = ()
    poll_seconds: float = 5.0
    retry_seconds: float = 300.0
    timeout_seconds: float | None = None
    from_spec: str | None = None
    to_spec: str = "parquet"
    output: str | None = None
    channel: str | None = None
    mapping: Path | None = None
    master: str = "local[*]"
    options: dict[str, Any] = field(default_factory=dict)
    conf: dict[str, Any] = field(default_factory=dict)
    enabled: bool = True

    @property
    def key_path(self) -> str:
        return f"batch[{self.index}]"


@dataclass
class SiteConfig:
    """A validated site: every value has its default filled in and paths are absolute."""

    path: Path
    name: str
    data_dir: Path
    store: dict[str, Any]
    schema_paths: list[Path]
    command_channel: str
    reply_timeout: float
    control_socket: Path
    monitor: dict[str, Any]
    logging: dict[str, Any]
    channels: list[ChannelSettings]
    adapters: list[AdapterConfig]
    routes: list[RouteConfig]
    raw: dict[str, Any]
    #: ``[[batch]]``: batch ingestion jobs the daemon runs
    batch: list[BatchJobConfig] = field(default_factory=list)

    @property
    def lock_path(self) -> Path:
        return self.data_dir / "daemon.lock"

    @property
    def store_path(self) -> Path:
        return _resolve(self.data_dir, self.store["path"])

    def channel(self, name: str) -> ChannelSettings | None:
        for c in self.channels:
            if c.name == name:
                return c
        return None


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
) -> SiteConfig:
    """Read, validate and type a site file.

    ``check_selector`` parses a route condition and raises on a bad one (default: the message
    selector parser of :mod:`coupler.bus.model.selectors`).
    """
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
    return parse_site(text, path, check_selector=check_selector)


def parse_site(
    text: str,
    path: str | os.PathLike[str] = "site.toml",
    *,
    check_selector: Callable[[str], None] | None = None,
) -> SiteConfig:
    """Validate the TOML ``text`` of a site file located at ``path``."""
    path = Path(path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([_toml_message(exc)], where=_toml_where(path, exc)) from None
    problems: list[str] = []
    data = validate(raw, SITE_SCHEMA, "", problems)
    if not problems:
        _check_semantics(data, problems, check_selector or _default_selector_check())
    if problems:
        raise ConfigError(problems, where=str(path))
    return _typed(data, raw, path.resolve())


def validate(value: Any, spec: Field, path: str, problems: list[str]) -> Any:
    """``value`` checked against ``spec`` with defaults filled in; problems are appended."""
    kind = spec.kind
    where = path or "(top level)"
    if kind == TABLE:
        if not isinstance(value, dict):
            problems.append(f"{where}: expected a table, got {_describe(value)}")
            return None
        out: dict[str, Any] = {}
        known = {f.name for f in spec.fields}
        for key in value:
            if key not in known:
                close = difflib.get_close_matches(key, sorted(known), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f" (known keys: {', '.join(sorted(known))})"
                problems.append(f"{_join(path, key)}: unknown key{hint}")
        for f in spec.fields:
            sub = _join(path, f.name)
            if f.name in value:
                out[f.name] = validate(value[f.name], f, sub, problems)
            elif f.required:
                problems.append(f"{sub}: required key is missing ({f.doc.rstrip('.')})")
            elif f.kind == TABLE and f.default is not None:  # a section: its defaults
                out[f.name] = validate(f.default, f, sub, problems)
            else:
                out[f.name] = _copy(f.default)
        return out
    if kind == TABLES:
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            problems.append(f"{where}: expected an array of tables ([[{spec.name}]]), got {_describe(value)}")
            return []
        table = Field(spec.name, TABLE, spec.doc, fields=spec.fields)
        items = [validate(v, table, f"{path}[{i}]", problems) for i, v in enumerate(value)]
        if spec.required and not items:
            problems.append(f"{where}: needs at least one entry")
        return items
    if kind == FREE_TABLE:
        if not isinstance(value, dict):
            problems.append(f"{where}: expected a table, got {_describe(value)}")
            return {}
        return value
    if kind == STRINGS:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append(f"{where}: expected an array of strings, got {_describe(value)}")
            return []
        return list(value)
    if kind == STRING:
        if not isinstance(value, str):
            problems.append(f"{where}: expected a string, got {_describe(value)}")
            return spec.default
        if spec.choices and value not in spec.choices:
            problems.append(f"{where}: {value!r} is not one of {', '.join(spec.choices)}")
        elif not value and spec.required:
            problems.append(f"{where}: must not be empty")
        return value
    if kind == BOOLEAN:
        if not isinstance(value, bool):
            problems.append(f"{where}: expected true or false, got {_describe(value)}")
            return spec.default
        return value
    if kind in (INTEGER, NUMBER):
        ok = isinstance(value, int) if kind == INTEGER else isinstance(value, int | float)
        if isinstance(value, bool) or not ok:
            problems.append(f"{where}: expected {'an integer' if kind == INTEGER else 'a number'}, got {_describe(value)}")
            return spec.default
        if spec.minimum is not None and value < spec.minimum:
            problems.append(f"{where}: {value} is less than the minimum {spec.minimum:g}")
        return float(value) if kind == NUMBER else value
    raise AssertionError(f"schema field {path} has unknown kind {kind!r}")  # a bug, not a user error


def _check_semantics(data: dict[str, Any], problems: list[str], check_selector: Callable[[str], None] | None) -> None:
    for section, key in (("adapters", "name"), ("channels", "name"), ("routes", "name")):
        seen: dict[str, int] = {}
        for i, item in enumerate(data[section]):
            name = item.get(key)
            if name is None:
                continue
            if name in seen:
                problems.append(f"{section}[{i}].{key}: {name!r} is already used by {section}[{seen[name]}]")
            seen[name] = i
    try:
        BackoffPolicy(**data["store"]["redelivery"])
    except CouplerError as exc:
        problems.append(f"store.redelivery: {exc.message.removeprefix('bad backoff policy: ')}")
    for i, ch in enumerate(data["channels"]):
        _check_channel(ch["name"], f"channels[{i}].name", problems)
        if ch["format"] is not None and not _NAME.match(ch["format"]):
            problems.append(
                f"channels[{i}].format: {ch['format']!r} is not a canonical format name "
                "(a dotted name such as acme.Order, without @version)"
            )
    for i, ad in enumerate(data["adapters"]):
        if ad["channel"] is not None:
            _check_channel(ad["channel"], f"adapters[{i}].channel", problems)
        if ad["format"] is not None:
            try:
                FormatIndicator.parse(ad["format"])
            except FormatIndicatorError as exc:
                problems.append(f"adapters[{i}].format: {exc}")
        if ad["commands"] is not None:
            from coupler.bus.model.commands import COMMON_COMMANDS

            for j, c in enumerate(ad["commands"]):
                if c not in COMMON_COMMANDS:
                    problems.append(f"adapters[{i}].commands[{j}]: {c!r} is not one of {', '.join(COMMON_COMMANDS)}")
    _check_batch(data, problems)
    sources: dict[str, int] = {}
    for i, rt in enumerate(data["routes"]):
        _check_channel(rt["from"], f"routes[{i}].from", problems)
        if rt["from"] in sources:
            problems.append(
                f"routes[{i}].from: channel {rt['from']!r} is already routed by routes[{sources[rt['from']]}] "
                "(one route per input channel: add rules to that route)"
            )
        sources[rt["from"]] = i
        if rt["otherwise"] is not None:
            _check_channel(rt["otherwise"], f"routes[{i}].otherwise", problems)
        if rt["format"] is not None:
            try:
                FormatIndicator.parse(rt["format"])
            except FormatIndicatorError as exc:
                problems.append(f"routes[{i}].format: {exc}")
        for j, rule in enumerate(rt["rules"]):
            at = f"routes[{i}].rules[{j}]"
            if not rule["to"]:
                problems.append(f"{at}.to: needs at least one channel")
            for k, ch in enumerate(rule["to"]):
                _check_channel(ch, f"{at}.to[{k}]", problems)
                if ch == rt["from"]:
                    problems.append(f"{at}.to[{k}]: {ch!r} is the route's own input channel (a loop)")
            if rule["when"] is None:
                if rt["mode"] == "first" and j < len(rt["rules"]) - 1:
                    problems.append(
                        f"{at}: has no `when`, so the rules after it never match (put it last or add a condition)"
                    )
            elif check_selector is not None:
                try:
                    check_selector(rule["when"])
                except CouplerError as exc:
                    problems.append(f"{at}.when: {exc}")


_DAILY_TIME = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")


def _check_batch(data: dict[str, Any], problems: list[str]) -> None:
    adapters = {a["name"] for a in data["adapters"]}
    sources: dict[str, int] = {}
    for i, job in enumerate(data["batch"]):
        at = f"batch[{i}]"
        if job["source"] not in adapters:
            problems.append(
                f"{at}.source: no adapter named {job['source']!r} (adapters: {', '.join(sorted(adapters)) or 'none'})"
            )
        if job["source"] in sources:
            problems.append(f"{at}.source: {job['source']!r} is already ingested by batch[{sources[job['source']]}]")
        sources[job["source"]] = i
        if not (job["on_staged"] or job["interval_seconds"] or job["at"]):
            problems.append(f"{at}: no trigger (set on_staged = true, interval_seconds or at)")
        for j, t in enumerate(job["at"]):
            if not _DAILY_TIME.match(t):
                problems.append(f"{at}.at[{j}]: {t!r} is not a time of day HH:MM (24-hour, e.g. \"02:30\")")
        if job["channel"] is not None:
            _check_channel(job["channel"], f"{at}.channel", problems)


def _check_channel(name: str, where: str, problems: list[str]) -> None:
    if not _CHANNEL.match(name):
        problems.append(
            f"{where}: {name!r} is not a valid channel name (letters, digits, '_', '.', '-'; not starting with '.' or '-')"
        )


def _default_selector_check() -> Callable[[str], None] | None:
    return Selector.parse


def _typed(data: dict[str, Any], raw: dict[str, Any], path: Path) -> SiteConfig:
    root = path.parent
    data_dir = _resolve(root, data["site"]["data_dir"])
    return SiteConfig(
        path=path,
        name=data["site"]["name"],
        data_dir=data_dir,
        store=data["store"],
        schema_paths=[_resolve(root, p) for p in data["schemas"]["paths"]],
        command_channel=data["commands"]["channel"],
        reply_timeout=data["commands"]["reply_timeout_seconds"],
        control_socket=_resolve(data_dir, data["control"]["socket"]),
        monitor=data["monitor"],
        logging=data["logging"],
        channels=[ChannelSettings(**c) for c in data["channels"]],
        adapters=[
            AdapterConfig(
                index=i,
                **{
                    **a,
                    "targets": tuple(a["targets"]),
                    "commands": tuple(a["commands"]) if a["commands"] is not None else None,
                },
            )
            for i, a in enumerate(data["adapters"])
        ],
        routes=[
            RouteConfig(
                name=r["name"] or f"route-{i}",
                source=r["from"],
                rules=tuple(RouteRule(rule["when"], tuple(rule["to"])) for rule in r["rules"]),
                mode=r["mode"],
                otherwise=r["otherwise"],
                index=i,
                format=r["format"],
            )
            for i, r in enumerate(data["routes"])
        ],
        raw=raw,
        batch=[
            BatchJobConfig(
                index=i,
                **{k: v for k, v in b.items() if k not in ("from", "to", "at", "mapping")},
                at=tuple(b["at"]),
                from_spec=b["from"],
                to_spec=b["to"],
                mapping=_resolve(root, b["mapping"]) if b["mapping"] else None,
            )
            for i, b in enumerate(data["batch"])
        ],
    )


# -- helpers -------------------------------------------------------------------------------


def _resolve(base: Path, p: str) -> Path:
    q = Path(p).expanduser()
    return q if q.is_absolute() else (base / q)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _copy(value: Any) -> Any:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def _describe(value: Any) -> str:
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", list: "an array", dict: "a table"}
    return f"{names.get(type(value), type(value).__name__)} ({value!r})" if not isinstance(value, dict | list) else names[type(value)]


def _toml_message(exc: tomllib.TOMLDecodeError) -> str:
    msg = _TOML_AT.sub("", str(exc))
    return f"not valid TOML: {msg}"


def _toml_where(path: Path, exc: tomllib.TOMLDecodeError) -> str:
    m = _TOML_AT.search(str(exc))
    return f"{path}:{m.group(1)}:{m.group(2)}" if m else str(path)


def backoff_policy(settings: dict[str, Any], max_attempts: int | None = None) -> BackoffPolicy:
    try:
        policy = BackoffPolicy(**settings)
        if max_attempts is not None:
            policy = BackoffPolicy(**{**settings, "max_attempts": max_attempts})
    except CouplerError as exc:
        raise ConfigError([f"store.redelivery: {exc.message}"]) from exc
    return policy
