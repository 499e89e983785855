"""``coupler channel put|get|purge``: channel tools that work with or without a daemon.

When the site's daemon runs they go through its control endpoint; otherwise they open the
store directly.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import signal
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, BinaryIO

from coupler.bus.cli.main import owns_signals
from coupler.bus.cli.site import add_site_argument
from coupler.bus.config.loader import load_site, site_path
from coupler.bus.runtime import control
from coupler.bus.runtime.control import decode_envelope, encode_envelope, site_service
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.claimcheck import (
    CLAIM_PROPERTY,
    CLAIM_SIZE_PROPERTY,
    CLAIMS_DIR_NAME,
    write_claim,
)
from coupler.canonical.envelope import utc_now
from coupler.canonical.errors import CouplerError, UsageError

#: the format of a body put without ``--format``: opaque bytes
DEFAULT_FORMAT = "coupler.Bytes@1;application/octet-stream"
#: formats of Coupler's own opaque bodies: no schema describes them
OPAQUE_FORMATS = frozenset({"coupler.Bytes", "coupler.File", "coupler.Raw", "coupler.SoapFault"})


def check_format(fmt: FormatIndicator, site: Any) -> None:
    """A format indicator names a registered schema version (Coupler's, a plugin's or one of
    the site's ``schemas`` folders) or one of Coupler's opaque formats; else a one-line error
    naming the known subjects."""
    if fmt.name in OPAQUE_FORMATS:
        return
    from coupler.canonical.registry import SchemaRegistry

    try:
        SchemaRegistry.default(site.schema_paths).resolve(fmt)
    except CouplerError as exc:
        raise UsageError(
            f"format {fmt.ref}: {exc.message}" + (f"; {exc.hint}" if exc.hint else ""),
            hint="register the schema in a folder of the site's `schemas`, or pass --unregistered",
        ) from None
_PUT_BATCH = 500


class _IntermixedParser(argparse.ArgumentParser):
    """Options may follow ``CHANNEL FILE...`` (``put q --format X a.txt``)."""

    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):
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
    q.add_argument("--ttl", type=float, metavar="SECONDS",
                   help="Message Expiration: the messages expire SECONDS from now (never handed to a consumer after that)")
    q.add_argument("--property", "-p", action="append", default=[], metavar="KEY=VALUE", help="a message property (repeatable)")
    q.add_argument(
        "--id-from", metavar="FIELD|hash",
        help="reproducible message ids: from a field of each JSON message (dotted path), or 'hash' of its bytes; "
             "ids put on the channel before are skipped, so a re-run after an interruption puts only the rest",
    )
    q.add_argument("--unregistered", action="store_true",
                   help="accept a format whose schema is not registered (by default an unknown NAME@V is an error)")
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


#: where ``channel put`` claims the files over the store's ``claim_check_bytes`` (under the data
#: directory; the store removes each when the last message referring to it is settled)
PUT_CLAIMS = Path("put") / CLAIMS_DIR_NAME
_CHUNK = 1 << 20


@dataclass
class _Claimed:
    """A body streamed into a claimed file (the message carries its path, not its bytes)."""

    path: Path
    size: int

    def chunks(self) -> Iterator[bytes]:
        with open(self.path, "rb") as f:
            while block := f.read(_CHUNK):
                yield block


def _read_body(stream: BinaryIO, threshold: int, claims_dir: Path) -> bytes | _Claimed:
    """The bytes of ``stream`` when they are at most ``threshold``; else streamed, in bounded
    memory, into a claimed file."""
    head = stream.read(threshold + 1)
    if len(head) <= threshold:
        return head

    def rest() -> Iterator[bytes]:
        yield head
        while block := stream.read(_CHUNK):
            yield block

    path, size = write_claim(claims_dir, rest())
    return _Claimed(path, size)


def _bodies(args: argparse.Namespace, threshold: int, claims_dir: Path) -> Iterator[bytes | _Claimed]:
    if args.lines:
        if args.files and args.files != ["-"]:
            raise UsageError("--lines reads standard input; give no FILE")
        for line in sys.stdin.buffer:
            line = line.rstrip(b"\r\n")
            if line:
                yield line
        return
    if not args.files or args.files == ["-"]:
        yield _read_body(sys.stdin.buffer, threshold, claims_dir)
        return
    for name in args.files:
        try:
            with open(name, "rb") as f:
                body = _read_body(f, threshold, claims_dir)
        except OSError as exc:
            raise CouplerError(f"cannot read {name}: {exc.strerror}", where=name) from exc
        yield body


#: message ids of ``--id-from``: name-based UUIDs of the channel and the message's key
_ID_NAMESPACE = uuid.UUID("0f1c2b7e-6a1d-4c2e-9d3b-2f8e6c4a5b17")


def message_id(channel: str, body: bytes | _Claimed, id_from: str, where: str) -> str:
    """The reproducible id of ``body`` put on ``channel``: from the JSON field ``id_from``
    (a dotted path), or from the SHA-256 of the bytes when ``id_from`` is ``hash``."""
    if id_from == "hash":
        digest = hashlib.sha256()
        for block in body.chunks() if isinstance(body, _Claimed) else [body]:
            digest.update(block)
        key = "sha256:" + digest.hexdigest()
    elif isinstance(body, _Claimed):
        raise CouplerError(f"{body.size} bytes is over the store's claim_check_bytes: the message is not read "
                           f"into memory, so it has no field {id_from!r} to take the id from", where=where,
                           hint="use --id-from hash for large messages")
    else:
        try:
            value: Any = json.loads(body)
        except ValueError as exc:
            raise CouplerError(f"not JSON, so it has no field {id_from!r}: {exc}", where=where,
                               hint="use --id-from hash for messages that are not JSON") from None
        for step in id_from.split("."):
            if not isinstance(value, dict) or step not in value:
                raise CouplerError(f"no field {id_from!r} to take the message id from", where=where)
            value = value[step]
        if value is None or isinstance(value, dict | list):
            raise CouplerError(f"field {id_from!r} is {json.dumps(value)}, not a value to make an id of", where=where)
        key = "field:" + json.dumps(value, sort_keys=True)
    return str(uuid.uuid5(_ID_NAMESPACE, f"{channel}\n{key}"))


class _Interrupted(Exception):  # noqa: N818 - a signal, not an error
    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _Put:
    """What ``channel put`` committed so far, and the signals that end it early."""

    def __init__(self, service: Any, args: argparse.Namespace):
        self.service = service
        self.args = args
        self.ids: list[str] = []
        self.skipped = 0
        self.committing = False
        self.pending: int | None = None  # a signal that came while a batch was committing

    def on_signal(self, signum: int, frame: Any) -> None:
        if self.committing:  # let the commit finish: the count must stay exact
            self.pending = signum
            return
        raise _Interrupted(signum)

    def commit(self, batch: list[str], claimed: list[tuple[Path, str]]) -> None:
        """Put ``batch``; the files it claimed are the store's once it is committed, else removed."""
        self.committing = True
        try:
            result = self.service.call("channel.put", channel=self.args.channel, envelopes=batch,
                                       skip_put=self.args.id_from is not None)
        except BaseException:
            for path, _ in claimed:
                path.unlink(missing_ok=True)
            raise
        finally:
            self.committing = False
        for path, claimed_id in claimed:
            if claimed_id not in result["message_ids"]:  # put before (--id-from): no message refers to it
                path.unlink(missing_ok=True)
        self.ids += result["message_ids"]
        self.skipped += result.get("skipped", 0)
        if self.pending is not None:
            raise _Interrupted(self.pending)

    def summary(self) -> str:
        skipped = f" ({self.skipped} put before, skipped)" if self.skipped else ""
        return f"{len(self.ids)} message(s) on {self.args.channel}{skipped}"


@owns_signals  # SIGTERM and SIGINT end it between two commits (_Put.on_signal)
def run_put(args: argparse.Namespace) -> int:
    site = load_site(site_path(args.site))
    if args.ttl is not None and not args.ttl > 0:
        raise CouplerError(f"--ttl {args.ttl:g}: give a number of seconds above 0", where="--ttl")
    fmt = FormatIndicator.parse(args.format)
    if not args.unregistered:
        check_format(fmt, site)
    props = parse_properties(args.property)
    with site_service(site) as service:
        put = _Put(service, args)
        main = threading.current_thread() is threading.main_thread()  # signals reach the main thread only
        previous = {sig: signal.signal(sig, put.on_signal) for sig in (signal.SIGINT, signal.SIGTERM)} if main else {}
        batch: list[str] = []
        batch_bytes = 0
        max_batch_bytes = min(control.PUT_BATCH_BYTES, control.MAX_REQUEST_BYTES // 2)
        claimed: list[tuple[Path, str]] = []
        try:
            threshold = site.store.claim_check_bytes
            for n, body in enumerate(_bodies(args, threshold, site.data_dir / PUT_CLAIMS), 1):
                headers: dict[str, Any] = {}
                if args.ttl is not None:
                    headers["expires_at"] = utc_now() + timedelta(seconds=args.ttl)
                if args.id_from:
                    where = f"{'line' if args.lines else 'message'} {n}"
                    headers["message_id"] = message_id(args.channel, body, args.id_from, where)
                properties = dict(props)
                if isinstance(body, _Claimed):  # the message carries where its body is
                    properties |= {CLAIM_PROPERTY: str(body.path), CLAIM_SIZE_PROPERTY: str(body.size)}
                data = body if isinstance(body, bytes) else b""
                env = Envelope(format=fmt, body=data, properties=properties, origin="cli", **headers)
                encoded = encode_envelope(env)
                if batch and batch_bytes + len(encoded) > max_batch_bytes:  # the request would be too large
                    put.commit(batch, claimed)
                    batch, claimed, batch_bytes = [], [], 0
                if isinstance(body, _Claimed):
                    claimed.append((body.path, env.message_id))
                batch.append(encoded)
                batch_bytes += len(encoded)
                if len(batch) >= _PUT_BATCH or claimed:
                    put.commit(batch, claimed)
                    batch, claimed, batch_bytes = [], [], 0
                    if len(put.ids) + put.skipped >= _PUT_BATCH:
                        print(f"committed {put.summary()}", file=sys.stderr, flush=True)
            if batch:
                put.commit(batch, claimed)
                batch, claimed = [], []
        except _Interrupted as sig:
            again = "; run it again with the same --id-from to put the rest" if args.id_from else ""
            print(f"coupler: interrupted ({sig}): committed {put.summary()}{again}", file=sys.stderr, flush=True)
            return 128 + sig.signum
        finally:
            for path, _ in claimed:  # read, not committed: no message refers to it
                path.unlink(missing_ok=True)
            for sig_number, handler in previous.items():
                signal.signal(sig_number, handler)
    if args.json:
        print(json.dumps({"channel": args.channel, "message_ids": put.ids, "skipped": put.skipped}))
    else:
        print(f"put {put.summary()}")
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
