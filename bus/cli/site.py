"""``coupler init DIR`` (a new site) and ``coupler daemon --site SITE.toml`` (run it)."""

from __future__ import annotations

import argparse
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from coupler.bus.cli.main import owns_signals
from coupler.bus.config.doc import render_template
from coupler.bus.config.loader import SiteConfig, load_site, site_path
from coupler.bus.plugins.manager import site_plugin_manager
from coupler.bus.transport.private import private_dir
from coupler.canonical.errors import CouplerError

if TYPE_CHECKING:
    from coupler.bus.runtime.daemon import Daemon


def add_site_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--site",
        metavar="SITE.toml",
        help="the site file (default: $COUPLER_SITE, else ./site.toml)",
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "init",
        help="create a new site: site.toml (embedded store, commented examples) and its data directory",
    )
    p.add_argument("dir", metavar="DIR", help="directory of the new site (created when missing)")
    p.add_argument("--name", help="site name (default: the directory's name)")
    p.add_argument("--force", action="store_true", help="overwrite an existing site.toml")
    p.set_defaults(func=run_init)

    p = sub.add_parser("daemon", help="run a site: transport, routes, adapters, control endpoint")
    add_site_argument(p)
    p.add_argument("--log-format", choices=("text", "json"), help="text for people (default) or JSON lines")
    p.add_argument("--log-level", choices=("DEBUG", "INFO", "WARNING", "ERROR"), help="default: the site's [logging] level")
    p.add_argument(
        "--check", action="store_true",
        help="report whether the site runs with every adapter started: asks the running daemon, else starts "
             "the adapters paused and stops them (and then warns, as the daemon would, when its open-files limit "
             "is below what the HTTP servers may hold); exit 0 when all run, 3 when the site is degraded",
    )
    p.set_defaults(func=run_daemon)


def run_init(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    site_file = root / "site.toml"
    if site_file.exists() and not args.force:
        raise CouplerError(f"{site_file} already exists", hint="use --force to overwrite it")
    name = args.name or re.sub(r"[^A-Za-z0-9_.\-]+", "-", root.resolve().name) or "coupler-site"
    made = [p for p in (root, *root.parents) if not p.exists()]  # the directories this creates
    had_site = site_file.exists()
    partial = site_file.with_name(site_file.name + ".part")  # an earlier site.toml stays whole if this fails
    try:
        root.mkdir(parents=True, exist_ok=True)
        partial.write_text(render_template(name), encoding="utf-8")
        os.replace(partial, site_file)
        site = load_site(site_file)  # what we wrote must load
        private_dir(site.data_dir)
    except BaseException as exc:  # a full disk, Ctrl-C: no half site (a re-run would find its site.toml)
        partial.unlink(missing_ok=True)
        if made:
            shutil.rmtree(made[-1], ignore_errors=True)
        elif not had_site:
            site_file.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise CouplerError(f"cannot create the site: {exc.strerror}; nothing was kept",
                               where=str(exc.filename or root)) from exc
        raise
    print(f"created site {name!r}: {site_file}")
    print(f"  data directory: {site.data_dir}")
    print(f"next: coupler daemon --site {site_file}")
    return 0


@owns_signals  # SIGTERM drains (bus/runtime/daemon.py)
def run_daemon(args: argparse.Namespace) -> int:
    from coupler.bus.runtime.daemon import Daemon
    from coupler.bus.runtime.logs import configure_logging
    pm = site_plugin_manager()
    site = load_site(site_path(args.site), pm=pm)  # adapter types and options too, every problem at once
    configure_logging(
        "DEBUG" if args.debug else (args.log_level or site.logging.level),
        args.log_format or site.logging.format,
    )
    os.umask(0o077)  # the store, claim checks and the socket are the site owner's only
    if args.check:
        return check_site(site, Daemon(site, pm=pm))
    return Daemon(site, pm=pm).run()


#: exit code of ``coupler daemon --check`` when an adapter does not run
DEGRADED_EXIT = 3


def check_site(site: SiteConfig, daemon: Daemon) -> int:
    """``coupler daemon --check``: the running daemon's state, else a paused start-up's."""
    from coupler.bus.runtime.control import ControlClient, ControlError

    try:
        status = ControlClient(site.control_socket, timeout=10).call("status")
        failed = {a["adapter"]: a["alert"] for a in status["alerts"] if "adapter" in a and a["alert"].startswith("failed to start")}
        how = f"the running daemon (pid {status['pid']})"
    except ControlError:  # no daemon runs: start the adapters (paused) to see
        failed = {name: f"failed to start: {why}" for name, why in daemon.check().items()}
        how = "a start-up with every adapter paused"
    count = sum(1 for ad in site.adapters if ad.enabled)
    if not failed:
        print(f"site {site.name}: running: {count} adapter(s) started ({how})")
    else:
        print(f"site {site.name}: degraded: {len(failed)} of {count} adapter(s) do not run ({how})")
        for name, why in failed.items():
            print(f"ALERT adapter {name}: {why}")
    if daemon.open_files_warning is not None:  # a paused start-up's (a running daemon logged it at start)
        print(f"WARNING {daemon.open_files_warning}")
    return DEGRADED_EXIT if failed else 0
