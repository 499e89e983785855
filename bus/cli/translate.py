"""``coupler translate``: any record format to any other through the canonical model.

``coupler translate --from SPEC --to SPEC [--map MAP.toml]... INPUT --output OUTPUT``
where SPEC is ``copybook:FILE.cpy`` (Cobrix options with ``-o KEY=VALUE``),
``xml:FILE.xsd[#ELEMENT][@ROOT/RECORD]``, ``avro:NAME@V`` or ``jsonl``
(:mod:`coupler.translators.mapping.formats`). Records are streamed; a record that fails
is reported (numbered from 1, with its byte offset for copybook input) and skipped. A
progress bar is drawn on a terminal; the summary (records read, written, rejected, and bad
fields of copybook input, as ``copybook decode`` counts them) goes to standard error. Exit
status as every decode path has it: 0 when the input was read (lenient: a failed record is
reported and skipped, a bad field of copybook input is null and counted); 1 when ``--strict``
stopped at a failed record, when ``--max-errors`` was exceeded, or on any other failure; 2
for a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import IO, Any

from coupler.bus.cli.limits import add_max_errors_option, check_max_errors, too_many_errors
from coupler.bus.cli.schema import add_schemas_option
from coupler.canonical.errors import CouplerError, UsageError

#: errors printed on standard error before the rest are only counted
MAX_PRINTED_ERRORS = 20


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "translate",
        help="translate records between copybook, XML, Avro and JSON lines through the canonical model",
        description="Translate INPUT into OUTPUT. SPEC: copybook:FILE.cpy, xml:FILE.xsd[#ELEMENT][@ROOT/RECORD], "
        "avro:NAME@V (an Avro container file of a canonical entity) or jsonl. A mapping (--map) applies where "
        "its legacy schema is the input's (legacy -> canonical) or the output's (canonical -> legacy). "
        "Records are numbered from 1 in every report, with the file byte offset for copybook input. Exit status, as"
        " copybook decode and batch translate have it: 0 when the input was read (lenient: a record that fails is"
        " reported and skipped, a field of copybook input that cannot be decoded is null and counted); 1 when"
        " --strict stopped at a record that failed, when --max-errors was exceeded, or on any other failure;"
        " 2 for a usage error.",
    )
    p.add_argument("--from", dest="from_spec", required=True, metavar="SPEC", help="format of INPUT: copybook:FILE.cpy, xml:FILE.xsd[#ELEMENT][@ROOT/RECORD], avro:NAME@V or jsonl")
    p.add_argument("--to", dest="to_spec", required=True, metavar="SPEC", help="format of OUTPUT, as --from")
    p.add_argument("--map", dest="maps", action="append", default=[], type=Path, metavar="MAP.toml",
                   help="a field mapping (repeatable: one for each legacy side)")
    p.add_argument("input", type=Path, metavar="INPUT", help="the file to translate")
    p.add_argument("--output", required=True, type=Path, metavar="OUTPUT", help="the file to write")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a copybook (Cobrix) option, e.g. -o encoding=ascii (repeatable)")
    add_schemas_option(p)
    p.add_argument("--errors", type=Path, metavar="FILE", help="write one JSON line per failed record to FILE")
    p.add_argument("--strict", action="store_true",
                   help="stop at the first record that fails, with exit status 1 (copybook input: a field that cannot"
                   " be decoded fails its record; default: the field becomes null)")
    add_max_errors_option(p, help="stop with exit status 1 once more than N errors (failed records, and bad"
                          " fields of copybook input) were found; 0 stops at the first (Cobrix's FAILFAST)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar, even on a terminal")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on standard output")
    p.set_defaults(func=run)


def _options(items: list[str]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"option {item!r} is not KEY=VALUE", hint="e.g. -o encoding=ascii")
        pairs[key.strip()] = value.strip()
    return pairs


class Progress:
    """A one-line progress bar on a terminal (records and bytes of the input)."""

    def __init__(self, stream: IO[str], total: int, position: Any):
        self.stream = stream
        self.total = max(total, 1)
        self.position = position
        self.started = self.last = time.monotonic()
        self.shown = False

    def tick(self, records: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.2:
            return
        self.last = now
        self.draw(records)

    def draw(self, records: int) -> None:
        done = min(self.position(), self.total)
        fraction = done / self.total
        width = 30
        bar = "#" * int(fraction * width) + "-" * (width - int(fraction * width))
        rate = records / max(time.monotonic() - self.started, 1e-9)
        self.stream.write(f"\r[{bar}] {fraction:6.1%} {records:,} records ({rate:,.0f}/s)")
        self.stream.flush()
        self.shown = True

    def close(self, records: int) -> None:
        self.draw(records)
        self.stream.write("\n")
        self.stream.flush()


def run(args: argparse.Namespace) -> int:
    from coupler.bus.cli.outputs import ReportFile, output_file
    from coupler.bus.plugins.manager import mapping_functions, site_plugin_manager
    from coupler.canonical.registry import SchemaRegistry
    from coupler.translators.mapping import load_mapping
    from coupler.translators.mapping.formats import parse_spec, record_format
    from coupler.translators.mapping.translate import plan

    if not args.input.is_file():
        raise UsageError(f"input file {args.input} does not exist")
    check_max_errors(args.max_errors)
    options = _options(args.option)
    roots = [Path.cwd()]  # an XSD's includes may read under the current directory (as `coupler xsd`)
    source_spec = parse_spec(args.from_spec, options=options, schema_roots=roots)
    sink_spec = parse_spec(args.to_spec, options=options, schema_roots=roots)
    if options and "copybook" not in (source_spec.kind, sink_spec.kind):
        raise UsageError("-o options are copybook options, but neither --from nor --to is a copybook")
    pm = site_plugin_manager()
    registry = SchemaRegistry.default(extra_dirs=args.schemas, pm=pm)
    functions = mapping_functions(pm)
    policy = "strict" if args.strict else "lenient"
    source = record_format(source_spec, registry=registry, policy=policy)
    sink = record_format(sink_spec, registry=registry, policy=policy)
    mappings = [load_mapping(m, registry=registry, functions=functions, schema_roots=roots) for m in args.maps]
    if len(mappings) > 2:
        raise UsageError("at most two mappings: one from the input's legacy format, one to the output's")
    translation = plan(source, sink, mappings, registry=registry)

    errors_out = ReportFile(args.errors) if args.errors else None
    printed = 0
    counted = 0
    last_where: str | None = None
    stats = getattr(source, "stats", None)  # copybook input: offsets and bad fields

    def locate(number: int) -> tuple[str, int | None]:
        """``record N at byte B`` of the record being read (the byte offset for copybook input)."""
        offset = stats.offset if stats is not None else None
        return f"record {number}" + (f" at byte {offset}" if offset is not None else ""), offset

    def count(where: str) -> None:
        nonlocal counted, last_where
        counted += 1
        last_where = where
        if args.max_errors is not None and counted > args.max_errors:
            raise _TooManyErrors

    def show(line: str) -> None:
        nonlocal printed
        if printed < MAX_PRINTED_ERRORS:
            _clear_line(progress)
            print(line, file=sys.stderr)
            printed += 1

    def report(number: int, error: CouplerError | str) -> None:
        label, offset = locate(number)
        text = str(error)
        line = text if label in text else f"{label}: {text}"  # a copybook reject names it already
        if args.strict:
            if isinstance(error, CouplerError):
                raise type(error)(f"{label}: {error.message}", where=error.where, hint=error.hint)
            raise CouplerError(line)
        if errors_out is not None:
            errors_out.write(json.dumps({"record": number, "offset": offset, "error": text}) + "\n")
        else:
            show(f"coupler: {line}")
        count(f"{args.input}: {label}")

    def bad_field(error: Any) -> None:  # lenient copybook input: a field decoded as null
        if errors_out is not None:
            errors_out.write(json.dumps({"kind": "field", **error.to_dict()}) + "\n")
        else:
            show(f"coupler: bad field: {error}")
        count(error.where)

    if stats is not None and not args.strict:
        stats.on_bad_field = bad_field

    progress = None
    if not args.no_progress and sys.stderr.isatty():
        progress = Progress(sys.stderr, os.path.getsize(args.input), source.position)
    started = time.monotonic()
    stopped = False
    try:
        with output_file(args.output) as output:  # published when every record is written
            summary = translation.run(args.input, output, report, progress.tick if progress else None)
    except _TooManyErrors:
        stopped = True
        summary = translation.summary
    finally:
        if errors_out is not None:
            errors_out.close()
        if progress is not None:
            progress.close(translation.summary.read)
    elapsed = time.monotonic() - started
    if counted > printed and errors_out is None:
        print(f"coupler: ... {counted - printed} more errors (use --errors FILE to keep them all)", file=sys.stderr)
    bad_fields = stats.bad_fields if stats is not None else 0
    print(  # counted as `copybook decode` counts: records rejected, bad fields made null
        f"{summary.read} records read, {summary.written} written, {summary.errors} rejected, {bad_fields} bad fields"
        f" ({source_spec.text} -> {sink_spec.text}, {elapsed:.2f} s)",
        file=sys.stderr,
    )
    if args.json:
        print(json.dumps({
            "read": summary.read, "written": summary.written, "errors": summary.errors, "bad_fields": bad_fields,
            "from": source_spec.text, "to": sink_spec.text, "stages": translation.describe(),
            "seconds": round(elapsed, 3),
        }))
    if stopped:
        print(f"coupler: error: {too_many_errors(args.max_errors, last_where)}", file=sys.stderr)
        return 1
    # lenient (Cobrix's PERMISSIVE): failed records were reported and skipped, as in every
    # decode path (`copybook decode`, `batch translate`); --strict raised at the first one
    return 0


class _TooManyErrors(Exception):
    """More errors than --max-errors: translating stops."""


def _clear_line(progress: Progress | None) -> None:
    if progress is not None and progress.shown:
        sys.stderr.write("\r\033[K")
