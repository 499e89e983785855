"""``coupler schema``: list, show, check and convert canonical schemas."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from coupler.canonical.errors import SchemaError, UsageError
from coupler.canonical.registry import SchemaRegistry, fullname_of, read_schema_file


def add_schemas_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--schemas", metavar="DIR", action="append", default=[], type=Path,
        help="also load the schemas in DIR (repeatable)",
    )


def registry_for(args: argparse.Namespace) -> SchemaRegistry:
    return SchemaRegistry.default(extra_dirs=args.schemas)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schema", help="canonical schemas: list, show, check, convert")
    s = p.add_subparsers(dest="schema_command", metavar="SUBCOMMAND", required=True)

    ls = s.add_parser("list", help="every subject with its versions")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    add_schemas_option(ls)
    ls.set_defaults(func=run_list)

    show = s.add_parser("show", help="print one schema version (the latest without @V)")
    show.add_argument("ref", metavar="NAME[@V]", help="subject, optionally with a version")
    add_schemas_option(show)
    show.set_defaults(func=run_show)

    check = s.add_parser(
        "check", help="check that FILE.avsc can be the next version of a subject",
        description="Exit 0 when FILE is compatible with every existing version the mode "
        "requires; exit 1 with one line per incompatibility otherwise.",
    )
    check.add_argument("file", type=Path, metavar="FILE.avsc", help="the candidate next version")
    check.add_argument("--subject", required=True, metavar="NAME", help="the subject it would join")
    check.add_argument("--mode", choices=("backward", "forward", "full", "none"), default="backward",
                       help="compatibility mode, checked against every existing version")
    check.add_argument("--json", action="store_true", help="machine-readable output")
    add_schemas_option(check)
    check.set_defaults(func=run_check)

    conv = s.add_parser("convert", help="convert a JSON record between versions of an entity")
    conv.add_argument("--from", dest="from_ref", required=True, metavar="NAME@V", help="the record's version")
    conv.add_argument("--to", dest="to_ref", required=True, metavar="NAME@W", help="the version to convert to")
    conv.add_argument("file", type=Path, metavar="FILE.json", help="the record as JSON ('-' for standard input)")
    add_schemas_option(conv)
    conv.set_defaults(func=run_convert)


def run_list(args: argparse.Namespace) -> int:
    reg = registry_for(args)
    rows = [{"subject": s, "versions": reg.versions(s)} for s in reg.subjects()]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            print(f"{row['subject']}  versions {', '.join(map(str, row['versions']))}")
    return 0


def run_show(args: argparse.Namespace) -> int:
    sv = registry_for(args).resolve(args.ref)
    print(sv.text())
    return 0


def run_check(args: argparse.Namespace) -> int:
    reg = registry_for(args)
    schema = read_schema_file(args.file)
    try:
        fullname_of(schema)
    except SchemaError as exc:
        raise SchemaError(exc.message, where=str(args.file)) from None
    problems = reg.check(args.subject, schema, args.mode)
    if args.json:
        print(json.dumps({"subject": args.subject, "mode": args.mode, "compatible": not problems, "problems": problems}, indent=2))
    else:
        for problem in problems:
            print(problem)
        if not problems:
            existing = reg.versions(args.subject) if args.subject in reg.subjects() else []
            print(f"compatible ({args.mode}) with {args.subject} versions {', '.join(map(str, existing)) or 'none'}")
    return 1 if problems else 0


def run_convert(args: argparse.Namespace) -> int:
    import sys

    text = sys.stdin.read() if str(args.file) == "-" else _read_text(args.file)
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"not valid JSON: {exc.msg}", where=f"{args.file}:{exc.lineno}:{exc.colno}") from None
    converted = registry_for(args).convert(record, args.from_ref, args.to_ref)
    print(json.dumps(converted, default=str))
    return 0


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text (byte 0x{exc.object[exc.start]:02X} at {exc.start})",
                         hint="pass the record as JSON") from None
