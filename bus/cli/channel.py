"""``coupler channel put|get|purge``: channel tools that work with or without a daemon.

When the site's daemon runs they go through its control endpoint; otherwise they open the
store directly.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from coupler.bus.cli.site import add_site_argument
from coupler.bus.config.loader import load_site, site_path
from coupler.bus.runtime.control import decode_envelope, encode_envelope, site_service
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError, UsageError

#: the format of a body put without ``--format``: opaque bytes
DEFAULT_FORMAT = "coupler.Bytes@1;application/octet-stream"
_PUT_BATCH = 500


class _IntermixedParser(argparse.ArgumentParser):
    """Options may follow ``CHANNEL FILE...`` (``put q --format X a.txt``)."""

    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def]
        if self._intermixing:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("channel", help="put messages on a channel, get them, purge it")
    ops = p.add_subparsers(dest="channel_command", metavar="ACTION", required=True, parser_class=_IntermixedParser)

    q = ops.add_parser("put", help="send messages: one per FILE, or one per line of standard input with --lines")
    add_site_argument(q)
    q.add_argument("channel", metavar="CHANNEL", help="the channel's name")
    q.add_argument("files", metavar="FILE", nargs="*", help="one message per file ('-' or none: standard input)")
    q.add_argument("--format", default=DEFAULT_FORMAT, help=f"format indicator NAME@V[;content/type] (default {DEFAULT_FORMAT})")
    q.add_argument("--lines", action="store_true", help="one message per line of standard input")
    q.add_argument("--property", "-p", action="append", default=[], metavar="KEY=VALUE", help="a message property (repeatable)")
    q.add_argument("--json", action="store_true", help="print the message ids as JSON")
    q.set_defaults(func=run_put)

    q = ops.add_parser("get", help="receive and acknowledge messages (--peek: look without receiving)")
    add_site_argument(q)
    q.add_argument("channel", metavar="CHANNEL", help="the channel's name")
    q.add_argument("--max", type=int, default=1, help="at most N messages (default 1)")
    q.add_argument("--wait", type=float, default=0.0, metavar="SECONDS", help="wait up to SECONDS for a first message")
    q.add_argument("--peek", action="store_true", help="leave the messages on the channel")
    q.add_argument("--json", action="store_true", help="one JSON object per message, headers and body")
    q.add_argument("--raw", action="store_true", help="the body's bytes as they are, also on a terminal "
                   "(default on a terminal: decoded through the format indicator, never binary)")
    q.set_defaults(func=run_get)

    q = ops.add_parser("purge", help="delete every message of a channel (Channel Purger)")
    add_site_argument(q)
    q.add_argument("channel", metavar="CHANNEL", help="the channel's name")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=run_purge)


def parse_properties(items: list[str]) -> dict[str, str]:
    props = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"bad property {item!r}", hint="use KEY=VALUE")
        props[key] = value
    return props


def _bodies(args: argparse.Namespace) -> Iterator[bytes]:
    if args.lines:
        if args.files and args.files != ["-"]:
            raise UsageError("--lines reads standard input; give no FILE")
        for line in sys.stdin.buffer:
            line = line.rstrip(b"\r\n")
            if line:
                yield line
        return
    if not args.files or args.files == ["-"]:
        yield sys.stdin.buffer.read()
        return
    for name in args.files:
        try:
            yield Path(name).read_bytes()
        except OSError as exc:
            raise CouplerError(f"cannot read {name}: {exc.strerror}", where=name) from exc


def run_put(args: argparse.Namespace) -> int:
    site = load_site(site_path(args.site))
    fmt = FormatIndicator.parse(args.format)
    props = parse_properties(args.property)
    ids: list[str] = []
    with site_service(site) as service:
        batch: list[str] = []
        for body in _bodies(args):
            batch.append(encode_envelope(Envelope(format=fmt, body=body, properties=dict(props), origin="cli")))
            if len(batch) >= _PUT_BATCH:
                ids += service.call("channel.put", channel=args.channel, envelopes=batch)["message_ids"]
                batch = []
        if batch:
            ids += service.call("channel.put", channel=args.channel, envelopes=batch)["message_ids"]
    if args.json:
        print(json.dumps({"channel": args.channel, "message_ids": ids}))
    else:
        print(f"put {len(ids)} message(s) on {args.channel}")
    return 0


def envelope_json(env: Envelope) -> dict[str, Any]:
    """An envelope for people and scripts: headers, and the body as text or base64."""
    data: dict[str, Any] = {
        "message_id": env.message_id,
        "timestamp": env.timestamp.isoformat(),
        "kind": env.kind.value,
        "format": str(env.format),
        "correlation_id": env.correlation_id,
        "return_address": env.return_address,
        "expires_at": env.expires_at.isoformat() if env.expires_at else None,
        "attempt": env.attempt,
        "origin": env.origin,
        "properties": dict(env.properties),
        "history": [{"component": h.component, "action": h.action, "timestamp": h.timestamp.isoformat()} for h in env.history],
    }
    try:
        data["body"] = env.body.decode("utf-8")
    except UnicodeDecodeError:
        data["body_base64"] = base64.b64encode(env.body).decode("ascii")
    return data


def run_get(args: argparse.Namespace) -> int:
    if args.max < 1:
        raise UsageError("--max must be at least 1")
    site = load_site(site_path(args.site))
    with site_service(site) as service:
        if hasattr(service, "timeout"):
            service.timeout = max(service.timeout, args.wait + 30)
        encoded = service.call("channel.get", channel=args.channel, max=args.max, wait=args.wait, peek=args.peek)
    envelopes = [decode_envelope(e) for e in encoded]
    readable = sys.stdout.isatty() and not args.raw and not args.json
    registry = None
    for env in envelopes:
        if args.json:
            print(json.dumps(envelope_json(env), sort_keys=True))
        elif readable:  # a person reads it: decoded through the format indicator
            from coupler.bus.runtime.bodies import decode_body

            if env.format.content_type == "avro/binary" and registry is None:
                from coupler.canonical.registry import SchemaRegistry

                registry = SchemaRegistry.default(site.schema_paths)
            shown = decode_body(env, site, registry)
            note = f"; {shown['error']}" if shown.get("error") else ""
            print(f"# {env.message_id} {env.format.ref} {env.format.content_type} (shown as {shown['as']}{note})")
            print(shown["text"])
        else:
            sys.stdout.buffer.write(env.body)
            if not env.body.endswith(b"\n"):
                sys.stdout.buffer.write(b"\n")
    sys.stdout.flush()
    if not envelopes and not args.json:
        print(f"no message on {args.channel}", file=sys.stderr)
    return 0


def run_purge(args: argparse.Namespace) -> int:
    site = load_site(site_path(args.site))
    with site_service(site) as service:
        result = service.call("channel.purge", channel=args.channel)
    if args.json:
        print(json.dumps({"channel": args.channel, **result}))
    else:
        print(f"purged {result['purged']} message(s) from {args.channel}")
    return 0
