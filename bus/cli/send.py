"""``coupler send``: issue a common command through the bus and print its replies."""

from __future__ import annotations

import argparse
import base64
import json
import sys
from pathlib import Path

from coupler.bus.cli.channel import DEFAULT_FORMAT, check_format, parse_properties
from coupler.bus.cli.site import add_site_argument
from coupler.bus.config.loader import load_site, site_path
from coupler.bus.model.commands import COMMON_COMMANDS
from coupler.bus.runtime.control import ControlClient, encode_envelope, site_service
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError, UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("send", help="issue a command (send, fetch, request, ping, describe) and print the replies")
    add_site_argument(p)
    p.add_argument("--command", "-c", required=True, choices=COMMON_COMMANDS, help="the common command to issue")
    p.add_argument("--target", "-t", required=True, help="adapter name, declared target or identity pattern (class/provider/name@version)")
    p.add_argument("file", metavar="FILE", nargs="?", help="the document of send/request ('-': standard input)")
    p.add_argument("--format", default=DEFAULT_FORMAT, help=f"format indicator of the document (default {DEFAULT_FORMAT})")
    p.add_argument("--unregistered", action="store_true",
                   help="accept a --format that names no registered schema (by default an error naming the known ones)")
    p.add_argument("--property", "-p", action="append", default=[], metavar="KEY=VALUE", help="a document property (repeatable)")
    p.add_argument("--query", "-q", action="append", default=[], metavar="KEY=VALUE", help="fetch: selection (repeatable)")
    p.add_argument("--max", type=int, help="fetch: at most N documents")
    p.add_argument("--operation", default="", help="request: the operation name")
    p.add_argument("--timeout", type=float, help="seconds to wait for replies (default: commands.reply_timeout_seconds)")
    p.add_argument("--json", action="store_true", help="the replies as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    site = load_site(site_path(args.site))
    document = None
    if args.command in ("send", "request"):
        if args.file is None:
            raise UsageError(f"the {args.command} command needs a document: give FILE or '-' for standard input")
        fmt = FormatIndicator.parse(args.format)
        if not args.unregistered:
            check_format(fmt, site)
        try:
            body = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
        except OSError as exc:
            raise CouplerError(f"cannot read {args.file}: {exc.strerror}", where=args.file) from exc
        env = Envelope(format=fmt, body=body, properties=parse_properties(args.property))
        document = encode_envelope(env)
    elif args.file is not None:
        raise UsageError(f"the {args.command} command takes no document")
    timeout = site.reply_timeout if args.timeout is None else args.timeout
    with site_service(site, need_daemon=True) as service:
        if isinstance(service, ControlClient):
            service.timeout = timeout + 30
        replies = service.call(
            "command",
            command=args.command,
            target=args.target,
            document=document,
            query=parse_properties(args.query),
            max=args.max,
            operation=args.operation,
            timeout=timeout,
        )
    if args.json:
        print(json.dumps(replies, indent=2, sort_keys=True))
    else:
        for r in replies:
            if not r["ok"]:
                print(f"{r['adapter'] or 'bus'}: fault {r['code']}: {r['reason']}")
                continue
            details = f" {json.dumps(r['details'], sort_keys=True)}" if r["details"] else ""
            print(f"{r['adapter']}: ok{details}")
            for i, d in enumerate(r["documents"]):
                body = d["body"].get("text")
                if body is None:
                    body = f"<{len(base64.b64decode(d['body']['base64']))} bytes>"
                print(f"--- document {i + 1} ({d['format']})")
                print(body)
    return 0 if all(r["ok"] for r in replies) else 1
