"""A plugin using the other extension points, for the plugin-hook tests
(``COUPLER_EXTRA_PLUGINS=tests.bus.plugin_extensions``), written as a third party would.

* transport type ``mirror``: the SQLite store in ``DATA_DIR/mirror.db`` (``[store] type = "mirror"``);
* translator type ``shout``: a mapped legacy record as upper-case JSON lines (``translator = "shout"``);
* ``coupler hello NAME``: a command of the plugin's own.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from coupler.bus.plugins.hookspecs import hookimpl
from coupler.bus.transport.sqlite.transport import SqliteTransport
from coupler.translators.mapping.writers import TranslatorType

#: the names of the sites the ``mirror`` factory opened
OPENED: list[str] = []


def open_mirror(site: Any) -> SqliteTransport:
    OPENED.append(site.name)
    return SqliteTransport(site.data_dir, filename="mirror.db", synchronous="NORMAL").open()


def _shout(mapping: Any) -> Any:
    return lambda record: (json.dumps(record, sort_keys=True, default=str).upper() + "\n").encode()


@hookimpl
def coupler_transport_types() -> dict[str, Any]:
    return {"mirror": open_mirror}


@hookimpl
def coupler_translator_types() -> dict[str, Any]:
    return {"shout": TranslatorType("shout", "text/plain", _shout)}


def _hello(args: argparse.Namespace) -> int:
    print(f"hello, {args.name}!")
    return 3 if args.name == "three" else 0


@hookimpl
def coupler_cli_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("hello", help="greet NAME (a command added by a plugin)")
    p.add_argument("name", metavar="NAME")
    p.set_defaults(func=_hello)
