"""``coupler plugins``: the installed plugins and what each contributes."""

from __future__ import annotations

import argparse
import dataclasses
import json

from coupler.bus.plugins.manager import describe_plugins, site_plugin_manager


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plugins", help="list installed plugins and what they contribute")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    infos = describe_plugins(site_plugin_manager())  # with $COUPLER_EXTRA_PLUGINS, as the daemon loads them
    if args.json:
        print(json.dumps([dataclasses.asdict(i) for i in infos], indent=2))
        return 0
    for info in infos:
        dist = f"{info.distribution} {info.version}" if info.distribution else "(not from a distribution)"
        if info.broken:
            print(f"{info.name}  [{dist}]  BROKEN: {info.broken}")
            continue
        print(f"{info.name}  [{dist}]")
        for what, names in info.contributes().items():
            if names:
                print(f"    {what.replace('_', ' ')}: {', '.join(names)}")
    return 0
