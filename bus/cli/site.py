"""``coupler init DIR`` (a new site) and ``coupler daemon --site SITE.toml`` (run it)."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from coupler.bus.config.doc import render_template
from coupler.bus.config.loader import load_site, site_path
from coupler.bus.plugins.manager import site_plugin_manager
from coupler.canonical.errors import CouplerError


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
    p.set_defaults(func=run_daemon)


def run_init(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    site_file = root / "site.toml"
    if site_file.exists() and not args.force:
        raise CouplerError(f"{site_file} already exists", hint="use --force to overwrite it")
    name = args.name or re.sub(r"[^A-Za-z0-9_.\-]+", "-", root.resolve().name) or "coupler-site"
    try:
        root.mkdir(parents=True, exist_ok=True)
        site_file.write_text(render_template(name), encoding="utf-8")
        site = load_site(site_file)  # what we wrote must load
        site.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise CouplerError(f"cannot create the site: {exc.strerror}", where=str(exc.filename or root)) from exc
    print(f"created site {name!r}: {site_file}")
    print(f"  data directory: {site.data_dir}")
    print(f"next: coupler daemon --site {site_file}")
    return 0


def run_daemon(args: argparse.Namespace) -> int:
    from coupler.bus.runtime.daemon import Daemon, configure_logging
    pm = site_plugin_manager()
    site = load_site(site_path(args.site), pm=pm)  # adapter types and options too, every problem at once
    configure_logging(
        "DEBUG" if args.debug else (args.log_level or site.logging.level),
        args.log_format or site.logging.format,
    )
    os.umask(0o077)  # the store, claim checks and the socket are the site owner's only
    return Daemon(site, pm=pm).run()
