"""``coupler ctl``: the operator's side of the Control Bus.

``adapters``, ``groups``, ``pause``, ``resume``, ``ping`` and ``stop`` talk to the running daemon;
``channels``, ``identities`` and ``dlq`` use the store directly when no daemon runs, and
``status`` then reports the site as ``stopped`` with the store's channel statistics.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from typing import Any

from coupler.bus.cli.site import add_site_argument
from coupler.bus.config.loader import load_site, site_path
from coupler.bus.runtime.control import ControlClient, ControlError, decode_envelope, site_service
from coupler.bus.runtime.site import daemon_running

_NEEDS_DAEMON = {"adapters", "pause", "resume", "ping", "stop", "detour", "test", "routes", "groups", "group.complete",
                 "group.discard"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ctl", help="operate a site through its Control Bus (status, dead letters, pause, ping, stop)")
    add_site_argument(p)
    ops = p.add_subparsers(dest="ctl_command", metavar="OPERATION", required=True)
    for name, text in (
        ("status", "the daemon, its adapters (state, health), batch jobs (last run), channels and alerts"),
        ("channels", "every channel: depth, oldest message age, counters"),
        ("adapters", "every adapter: state, health, in/out/failed counts, last heartbeat"),
        ("identities", "registered application identities"),
        ("routes", "every route pipeline: input channel, steps (detours on or off), end, messages its steps dropped"),
    ):
        q = ops.add_parser(name, help=text)
        q.add_argument("--json", action="store_true", help="machine-readable output")
        q.set_defaults(func=run, op=name)
    dlq = ops.add_parser("dlq", help="dead letters and invalid messages: list, show, replay, purge")
    dops = dlq.add_subparsers(dest="dlq_command", metavar="ACTION", required=True)
    q = dops.add_parser("list", help="dead letters, newest first")
    q.add_argument("--queue", help="one dead-letter queue only")
    q.add_argument("--kind", choices=("dead", "invalid"), help="dead letters or invalid messages only (default: both)")
    q.add_argument("--limit", type=int, default=100, help="at most this many, newest first")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=run, op="dlq.list")
    q = dops.add_parser("show", help="one dead letter with its message")
    q.add_argument("id", type=int, help="the dead letter's id (from `dlq list`)")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=run, op="dlq.show")
    q = dops.add_parser("replay", help="send a dead letter back to its channel")
    q.add_argument("id", type=int, help="the dead letter's id (from `dlq list`)")
    q.add_argument("--to", dest="channel", help="another channel")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=run, op="dlq.replay")
    q = dops.add_parser("purge", help="delete dead letters")
    q.add_argument("--queue", help="one dead-letter queue only")
    q.add_argument("--kind", choices=("dead", "invalid"), help="dead letters or invalid messages only (default: both)")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=run, op="dlq.purge")
    groups = ops.add_parser("groups", help="what the routes' stateful steps hold (aggregation groups, resequencer "
                                           "streams, enricher waits, process instances): list, complete, discard")
    gops = groups.add_subparsers(dest="groups_command", metavar="ACTION", required=True)
    q = gops.add_parser("list", help="every open group: route, step, type, key, size, age (as the console's Open groups page)")
    q.add_argument("--route", help="one route only")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=run, op="groups")
    for name, text in (("complete", "complete an aggregation group now (reason forced): its aggregate goes on "
                                    "from the next step of the route"),
                       ("discard", "drop an aggregation group and the messages it holds")):
        q = gops.add_parser(name, help=text)
        q.add_argument("route", metavar="ROUTE", help="the route's name")
        q.add_argument("step", metavar="STEP", help="the aggregate step's name (`groups list` shows it)")
        q.add_argument("key", metavar="KEY", help="the group's correlation key (`groups list` shows it)")
        q.add_argument("--json", action="store_true", help="machine-readable output")
        q.set_defaults(func=run, op=f"group.{name}")
    for name, text in (("pause", "hold an adapter's commands and documents"), ("resume", "resume a paused adapter")):
        q = ops.add_parser(name, help=text)
        q.add_argument("adapter", metavar="ADAPTER", help="the adapter's name")
        q.add_argument("--json", action="store_true", help="machine-readable output")
        q.set_defaults(func=run, op=name)
    q = ops.add_parser("ping", help="send a ping command (a Test Message) through the bus to TARGET")
    q.add_argument("target", metavar="TARGET", help="adapter name, target or identity pattern")
    q.add_argument("--timeout", type=float, help="seconds to wait for replies (default: commands.reply_timeout_seconds)")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=run, op="ping")
    q = ops.add_parser("trace", help="every hop of a message and its descendants (by message id, trace id, correlation id or business key)")
    q.add_argument("query", metavar="ID", help="a message id, trace id (or traceparent), correlation id or business key")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=run, op="trace")
    q = ops.add_parser("detour", help="show or switch a route's Detour steps (on: messages take the detour)")
    q.add_argument("route", metavar="ROUTE", help="the route's name")
    q.add_argument("state", nargs="?", choices=("on", "off"), help="switch on or off (default: show)")
    q.add_argument("--step", help="one detour step by name (default: every detour of the route)")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=run, op="detour")
    q = ops.add_parser("test", help="push a marked Test Message through a route and show what each step did "
                                     "(nothing is stored or delivered)")
    q.add_argument("route", metavar="ROUTE", help="the route's name")
    q.add_argument("--file", required=True, help="the message body")
    q.add_argument("--format", default="test.Message@1;application/octet-stream",
                   help="its format indicator NAME@V[;content-type] (default: %(default)s)")
    q.add_argument("-p", "--property", action="append", default=[], metavar="KEY=VALUE", help="a property (repeatable)")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=run, op="test")
    q = ops.add_parser("console", help="the URL of the daemon's web console, with its token")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=run_console, op="console")
    q = ops.add_parser("stop", help="drain and stop the daemon")
    q.add_argument("--no-wait", action="store_true", help="return without waiting for the daemon to exit")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=run, op="stop")


def run(args: argparse.Namespace) -> int:
    site = load_site(site_path(args.site))
    op: str = args.op
    call_args: dict[str, Any] = {}
    if op in ("dlq.list", "dlq.purge"):
        call_args = {"queue": args.queue, "kind": args.kind}
        if op == "dlq.list":
            call_args["limit"] = args.limit
    elif op in ("dlq.show", "dlq.replay"):
        call_args = {"id": args.id}
        if op == "dlq.replay":
            call_args["channel"] = args.channel
    elif op in ("group.complete", "group.discard"):
        call_args = {"route": args.route, "step": args.step, "key": args.key}
    elif op in ("pause", "resume"):
        call_args = {"adapter": args.adapter}
    elif op == "ping":
        call_args = {"target": args.target, "timeout": args.timeout}
    elif op == "trace":
        call_args = {"query": args.query}
    elif op == "detour":
        call_args = {"route": args.route, "step": args.step, "on": None if args.state is None else args.state == "on"}
    elif op == "test":
        call_args = {"route": args.route, "envelope": _test_envelope(args)}
    with site_service(site, need_daemon=op in _NEEDS_DAEMON) as service:
        if op == "ping" and isinstance(service, ControlClient):  # the daemon waits for replies first
            service.timeout = max(service.timeout, (args.timeout or site.reply_timeout) + 10)
        result = service.call(op, **call_args)
    if op == "groups" and args.route:
        result = [g for g in result if g["route"] == args.route]
    if op == "stop" and not args.no_wait:
        deadline = time.monotonic() + 300
        while daemon_running(site) and time.monotonic() < deadline:
            time.sleep(0.1)
        if daemon_running(site):
            raise ControlError("the daemon did not stop within 300 s", where=str(site.path))
        result = {"stopped": True}
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        _print_human(op, result)
    if op == "ping" and not all(r["ok"] for r in result):
        return 1
    return 0


def _test_envelope(args: argparse.Namespace) -> str:
    from coupler.bus.runtime.control import encode_envelope
    from coupler.canonical import Envelope

    try:
        body = open(args.file, "rb").read()  # noqa: SIM115 - read at once, closed by GC
    except OSError as exc:
        raise ControlError(f"cannot read {args.file}: {exc.strerror}", where="--file") from None
    props = {}
    for item in args.property:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ControlError(f"property {item!r} is not KEY=VALUE", where="--property")
        props[key] = value
    return encode_envelope(Envelope(format=args.format, body=body, origin="ctl-test", properties=props))


def run_console(args: argparse.Namespace) -> int:
    """Print the console URL of the running daemon, token included (keep it private)."""
    from coupler.bus.runtime.console.server import console_url

    site = load_site(site_path(args.site))
    if not daemon_running(site):
        raise ControlError(f"no daemon runs for site {site.path}", hint=f"start it with `coupler daemon --site {site.path}`")
    url = console_url(site)
    print(json.dumps({"url": url}) if args.json else url)
    return 0


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def _table(rows: list[list[str]], header: list[str]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    for row in [header, *rows]:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=False)).rstrip())


def _print_channels(channels: list[dict[str, Any]]) -> None:
    if not channels:
        print("no channels")
        return
    _table(
        [[c["channel"], c["kind"], c["depth"], c["in_flight"], _age(c["oldest_age"]), c["sent"], c["acked"], c["failed"], c["dead"]] for c in channels],
        ["CHANNEL", "KIND", "DEPTH", "IN-FLIGHT", "OLDEST", "IN", "OUT", "FAILED", "DEAD"],
    )


def _print_adapters(adapters: list[dict[str, Any]]) -> None:
    if not adapters:
        print("no adapters")
        return
    _table(
        [[a["name"], a["type"], a["state"], _health(a.get("health")), _count(a["in"]), _count(a["out"]), _count(a["failed"]),
          _age(a["last_heartbeat_age"]), a.get("error") or ""] for a in adapters],
        ["ADAPTER", "TYPE", "STATE", "HEALTH", "IN", "OUT", "FAILED", "HEARTBEAT", "ERROR"],
    )


def _print_batch(jobs: list[dict[str, Any]]) -> None:
    """The ``[[batch]]`` jobs: state, triggers and the last run's outcome."""
    rows = []
    for j in jobs:
        last = j.get("last_run") or {}
        duration = last.get("duration_seconds")
        rows.append([
            j["source"], j["state"], ", ".join(j["triggers"]), last.get("started") or "-",
            last.get("outcome") or "-", _count(last.get("records")), _count(last.get("errors")),
            "-" if duration is None else f"{duration:.1f}s", j.get("next_run") or "-", last.get("error") or "",
        ])
    _table(rows, ["BATCH", "STATE", "TRIGGERS", "LAST RUN", "OUTCOME", "RECORDS", "ERRORS", "DURATION", "NEXT", "ERROR"])


def _group_detail(group: dict[str, Any]) -> str:
    """What a step says of a group beyond route, step, type, key, size and age (``idle 1.2s``,
    ``next 4``, ``stage ask-b running``...)."""
    parts = []
    for key, value in group.items():
        if key in ("route", "step", "type", "key", "size", "age_seconds") or value is None:
            continue
        parts.append(f"{key.removesuffix('_seconds')} {_age(value) if key.endswith('_seconds') else value}")
    return ", ".join(parts)


def _health(health: dict[str, Any] | None) -> str:
    """``ok``, or the status with the first problem (``degraded: poll overdue: ...``)."""
    if not health:
        return "-"
    problems = health.get("problems") or []
    if not problems:
        return str(health.get("status", "ok"))
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{health.get('status', 'degraded')}: {problems[0]}{more}"


def _print_human(op: str, result: Any) -> None:
    if op == "status":
        if result["pid"] is None:
            print(f"site {result['site']}: {result['state']} (no daemon runs)")
        else:
            print(f"site {result['site']}: {result['state']} (pid {result['pid']}, up {_age(result['uptime_seconds'])})")
        print(f"data directory: {result['data_dir']}")
        for alert in result["alerts"]:
            kind = next((k for k in ("adapter", "batch", "channel") if k in alert), "channel")
            subject = f"{'batch job' if kind == 'batch' else kind} {alert.get(kind)}"
            print(f"ALERT {subject}: {alert['alert']}")
        print()
        _print_adapters(result["adapters"])
        if result.get("batch"):
            print()
            _print_batch(result["batch"])
        print()
        _print_channels(result["channels"])
    elif op == "channels":
        _print_channels(result)
    elif op == "adapters":
        _print_adapters(result)
    elif op == "identities":
        if not result:
            print("no registered identities")
        else:
            _table([[r["identity"], r["adapter"] or "", r["channel"]] for r in result], ["IDENTITY", "ADAPTER", "CHANNEL"])
    elif op == "dlq.list":
        if not result:
            print("no dead letters")
        else:
            _table(
                [[d["id"], d["kind"], d["channel"] or "", d["message_id"] or "", d["attempts"], d["component"], d["reason"]] for d in result],
                ["ID", "KIND", "CHANNEL", "MESSAGE", "ATTEMPTS", "COMPONENT", "REASON"],
            )
    elif op == "dlq.show":
        for key in ("id", "kind", "queue", "channel", "message_id", "format", "reason", "error", "component", "attempts", "dead_at"):
            print(f"{key}: {result[key]}")
        decoded = result.get("decoded")
        if decoded is not None and sys.stdout.isatty():
            print(f"body (decoded as {decoded['as']}{': ' + decoded['error'] if decoded.get('error') else ''}):")
            print(decoded["text"])
            return
        if result.get("envelope"):
            body = decode_envelope(result["envelope"]).body
        else:
            body = base64.b64decode(result["raw"] or "")
        print("body:")
        sys.stdout.flush()
        sys.stdout.buffer.write(body)
        sys.stdout.write("\n")
    elif op == "dlq.replay":
        print(f"replayed as message {result['message_id']}" + (f" through mapping {result['mapped']}" if result.get("mapped") else ""))
    elif op == "dlq.purge":
        print(f"purged {result['purged']} dead letter(s)")
    elif op == "groups":
        if not result:
            print("no open groups")
        else:
            _table([[g["route"], g["step"], g["type"], g["key"], _count(g.get("size")), _age(g.get("age_seconds")),
                     _group_detail(g)] for g in result],
                   ["ROUTE", "STEP", "TYPE", "KEY", "SIZE", "AGE", "DETAIL"])
    elif op == "group.complete":
        print(f"route {result['route']} step {result['step']}: group {result['key']} completed "
              f"as message {result['message_id']}")
    elif op == "group.discard":
        print(f"route {result['route']} step {result['step']}: group {result['key']} discarded "
              f"with {result['discarded']} message(s)")
    elif op in ("pause", "resume"):
        print(f"adapter {result['adapter']} {'paused' if result['paused'] else 'resumed'}")
    elif op == "ping":
        for r in result:
            if r["ok"]:
                print(f"{r['adapter']}: ok {json.dumps(r['details'], sort_keys=True)}")
            else:
                print(f"{r['adapter'] or 'bus'}: fault {r['code']}: {r['reason']}")
    elif op == "stop":
        print("daemon stopped" if result.get("stopped") else "daemon stopping")
    elif op == "trace":
        print_trace(result)
    elif op == "routes":
        if not result:
            print("no routes")
        else:
            _table([[r["route"], r["from"],
                     " > ".join(s["name"] + ("" if "on" not in s else f" ({'on' if s['on'] else 'off'})") for s in r["steps"]) or "-",
                     ", ".join(r["to"] + ([f"{r['rules']} rule(s)"] if r["rules"] else [])) or "-",
                     ", ".join(f"{k}: {v}" for k, v in r["dropped"].items()) or "-"] for r in result],
                   ["ROUTE", "FROM", "STEPS", "TO", "DROPPED"])
    elif op == "detour":
        for r in result:
            print(f"route {r['route']} detour {r['step']}: {'on' if r['on'] else 'off'}")
    elif op == "test":
        print(f"route {result['route']}: {result['result']} (test message: nothing stored or delivered)")
        _table([[r["step"], r["message_id"], r["outcome"], r["detail"]] for r in result["steps"]],
               ["STEP", "MESSAGE", "OUTCOME", "DETAIL"])
        for sent in result["sent"]:
            print(f"would send {sent['message_id']} ({sent['format']}, {sent['body_size']} bytes) to {sent['channel']}")


def print_trace(result: dict[str, Any]) -> None:
    """The hop list of a trace, as the console's trace page shows it."""
    if not result["hops"]:
        print(f"nothing in the journal for {result['query']}")
        return
    print(f"{len(result['messages'])} message(s) in trace {', '.join(result['trace_ids']) or '-'}")
    _table(
        [[h["at"], h["event"], h["outcome"], h["channel"] or "", h["message_id"] or "", h["by"] or ""] for h in result["hops"]],
        ["AT", "EVENT", "OUTCOME", "CHANNEL", "MESSAGE", "BY"],
    )
