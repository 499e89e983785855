"""A site at run time: its transport, its plugins, its daemon lock.

Shared by the daemon and the command-line tools that work with or without a running daemon.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import os
import time
from pathlib import Path
from typing import Any

import pluggy

from coupler.bus.config.loader import ConfigError, SiteConfig, backoff_policy
from coupler.bus.plugins.manager import plugin_manager
from coupler.bus.transport.base import ChannelConfig, Transport
from coupler.canonical.errors import CouplerError

#: extra plugin objects to load, ``module[:attribute]`` separated by commas (tests, embedding)
EXTRA_PLUGINS_ENV = "COUPLER_EXTRA_PLUGINS"


class DaemonLockError(CouplerError):
    """Another daemon already runs for this data directory."""


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


def _sqlite_transport(site: SiteConfig) -> Transport:
    from coupler.bus.transport.sqlite.transport import SqliteTransport

    store = site.store
    return SqliteTransport(
        site.data_dir,
        filename=store["path"],
        synchronous=store["synchronous"],
        sync_acks=store["sync_acks"],
        backoff=backoff_policy(store["redelivery"]),
        lease_seconds=store["lease_seconds"],
        claim_threshold=store["claim_check_bytes"],
        journal_retention=store["journal_retention_days"] * 86400.0,
        idempotency_retention=store["idempotency_window_seconds"],
        dead_letter=store["dead_letter_channel"],
        invalid=store["invalid_channel"],
    ).open()


def open_transport(site: SiteConfig) -> Transport:
    """The site's transport, opened, with the channels of ``[[channels]]`` declared."""
    store = site.store
    if store["type"] == "amqp":
        from coupler.bus.transport.amqp.transport import amqp_transport_for_site

        transport: Transport = amqp_transport_for_site(site)
    elif store["type"] != "sqlite":  # pragma: no cover - the schema admits sqlite and amqp
        raise ConfigError([f"store.type: unknown transport {store['type']!r}"], where=str(site.path))
    else:
        transport = _sqlite_transport(site)
    try:
        for ch in site.channels:
            transport.declare(
                ch.name,
                ChannelConfig(
                    kind=ch.kind,  # type: ignore[arg-type]
                    dead_letter=ch.dead_letter_channel,
                    format=ch.format,
                    backoff=backoff_policy(store["redelivery"], ch.max_attempts) if ch.max_attempts else None,
                ),
            )
    except BaseException:
        transport.close()
        raise
    return transport


class DaemonLock:
    """One daemon per data directory: an exclusive ``flock`` on ``DATA_DIR/daemon.lock``.

    The lock file holds the daemon's pid. The kernel releases the lock when the process
    dies, however it dies, so a stale file never blocks a new daemon.
    """

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        # a channel tool checking for a daemon holds a shared lock for an instant: retry briefly
        for attempt in range(10):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt < 9:
                    time.sleep(0.05)
        else:
            os.close(fd)
            pid = read_pid(self.path)
            raise DaemonLockError(
                f"another coupler daemon{f' (pid {pid})' if pid else ''} already runs for data directory {self.path.parent}",
                hint="stop it first (`coupler ctl --site SITE.toml stop`) or give this site another data_dir",
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def daemon_running(site: SiteConfig) -> bool:
    """Whether a daemon holds this site's data directory lock right now."""
    if not site.lock_path.exists():
        return False
    fd = os.open(site.lock_path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also drops our shared lock
    return False
