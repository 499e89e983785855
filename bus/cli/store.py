"""``coupler store backup``: an online backup of an embedded site's data directory."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from coupler.bus.cli.site import add_site_argument
from coupler.bus.config.loader import load_site, site_path
from coupler.bus.transport.sqlite.backup import backup_site


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("store", help="the site's store: backup")
    s = p.add_subparsers(dest="store_command", metavar="SUBCOMMAND", required=True)
    b = s.add_parser(
        "backup", help="copy the data directory (databases through SQLite's online backup)",
        description="Back up an embedded site's data directory while the daemon runs or not: "
        "every SQLite database from a consistent snapshot, the other files copied. Restore by "
        "stopping the daemon and putting the backup in place of the data directory.",
    )
    add_site_argument(b)
    b.add_argument("destination", type=Path, metavar="DIR", help="a new or empty directory")
    b.add_argument("--json", action="store_true", help="machine-readable output")
    b.set_defaults(func=run_backup)


def run_backup(args: argparse.Namespace) -> int:
    report = backup_site(load_site(site_path(args.site)), args.destination)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(f"backed up {len(report.databases)} databases ({', '.join(report.databases)}) and "
              f"{len(report.files)} files to {report.destination}")
        if report.vanished:
            print(f"removed while the backup ran (not needed by it): {', '.join(report.vanished)}")
    return 0
