"""``coupler copybook``: layouts, Avro schemas, decoding and encoding of COBOL records.

* ``coupler copybook layout COPYBOOK [--json]`` - every item with its level, start, end
  (1-based, inclusive), length and attributes, as Cobrix prints layouts.
* ``coupler copybook schema COPYBOOK [-o KEY=VALUE ...]`` - the Avro schema.
* ``coupler copybook decode COPYBOOK DATA... [-o KEY=VALUE ...] [--to jsonl|avro|parquet]
  [--output FILE] [--errors FILE] [--strict] [--per-record]`` - records as JSON lines (or
  an Avro / Parquet file); fixed-length files go through the vectorised decoder when it
  serves the layout (same output); a summary on standard error, and a progress bar when
  standard error is a terminal.
* ``coupler copybook family FAMILY.toml [DATA...] [--json]`` - describe a layout family
  (several copybook versions of one record) or decode with it: one JSON line
  ``{"format": "name@version", "record": {...}}`` per record.
* ``coupler copybook encode COPYBOOK INPUT.jsonl --output DATA [-o KEY=VALUE ...]``.

Options use Cobrix's names (``-o ebcdic_code_page=cp273``).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from coupler.bus.cli import startup
from coupler.bus.cli.limits import (
    add_max_errors_option,
    check_max_errors,
    rejected_under_strict,
    too_many_errors,
)
from coupler.canonical.errors import UsageError


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("copybook", help="the copybook file")
    p.add_argument(
        "--source-format", choices=("fixed", "free"), default="fixed",
        help="fixed: columns 7-72 as on cards (default); free: whole lines",
    )
    p.add_argument("--tab-width", type=int, default=8, help="columns per tab stop (default 8)")
    p.add_argument(
        "--copy-path", action="append", default=[], metavar="DIR",
        help="directory searched for COPY members (repeatable)",
    )


def _options_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-o", "--option", action="append", default=[], metavar="KEY=VALUE",
        help="a Cobrix option, e.g. -o ebcdic_code_page=cp273 (repeatable)",
    )


#: the subcommands of ``coupler copybook`` (a command line naming one builds its arguments alone)
_SUBCOMMANDS = ("layout", "schema", "decode", "family", "encode")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("copybook", help="COBOL copybooks: layouts, Avro schemas, decode and encode records")
    csub = p.add_subparsers(dest="copybook_command", metavar="SUBCOMMAND", required=True)

    lay = csub.add_parser("layout", help="byte positions of every field")
    if startup.builds("copybook", "layout", _SUBCOMMANDS):  # only the one the command line names
        _common(lay)
        _options_arg(lay)
        lay.add_argument("--json", action="store_true", help="machine-readable output")
    lay.set_defaults(func=run_layout)

    sch = csub.add_parser("schema", help="the Avro schema of the decoded records")
    if startup.builds("copybook", "schema", _SUBCOMMANDS):
        _common(sch)
        _options_arg(sch)
        sch.add_argument("--name", help="name of the top-level record")
        sch.add_argument("--namespace", help="Avro namespace")
        sch.add_argument("--json", action="store_true", help="(the schema is always JSON)")
    sch.set_defaults(func=run_schema)

    dec = csub.add_parser(
        "decode", help="decode data files into JSON lines, Avro or Parquet",
        description="Decode data files. Records are numbered from 1 in every report, with the file"
        " byte offset. Exit status: 0 when the files were read (in lenient mode a field that"
        " cannot be decoded is null and counted, and a record that cannot be framed - a truncated"
        " last record, a corrupt RDW - is reported and skipped); 1 when a record was rejected under --strict,"
        " when --max-errors was exceeded, or on any other failure (copybook, options, files);"
        " 2 for a usage error.",
    )
    if startup.builds("copybook", "decode", _SUBCOMMANDS):
        _common(dec)
        dec.add_argument("data", nargs="+", help="data files")
        _options_arg(dec)
        dec.add_argument("--to", choices=("jsonl", "avro", "parquet"), default="jsonl", help="output format")
        dec.add_argument("--output", help="output file (default: standard output for jsonl)")
        dec.add_argument(
            "--errors", metavar="FILE",
            help="write one JSON line per rejected record and per bad field to FILE: file, record (from 1),"
            " offset (file byte of the record, or of the field), field path (an OCCURS element with its subscript"
            " from 1: REC.DET.CELL[2]), raw_hex, reason",
        )
        dec.add_argument(
            "--strict", action="store_true",
            help="a field that cannot be decoded rejects its record (default: the field becomes null);"
            " exit status 1 when any record was rejected",
        )
        add_max_errors_option(dec)
        dec.add_argument(
            "--jobs", type=int, metavar="N",
            help="decode N chunks of records at once (default: the cores this process may use); the output,"
            " its order and the error reports are the same whatever N is (fixed-length records, vectorised"
            " decoder; other files are decoded on one core)",
        )
        dec.add_argument(
            "--parts", action="store_true",
            help="with --to parquet: --output is a directory (new or empty) of ordered part files"
            " part-00000.parquet, part-00001.parquet, ... (read in name order they hold the records in file order),"
            " written by the --jobs threads in parallel; each part is a contiguous range of records (fixed-length"
            " records, vectorised decoder; otherwise one part)",
        )
        dec.add_argument(
            "--per-record", action="store_true",
            help="use the per-record decoder even where the vectorised one applies (same output, slower)",
        )
    dec.set_defaults(func=run_decode)

    fam = csub.add_parser(
        "family", help="a layout family (copybook versions of one record): describe it, or decode with it",
    )
    if startup.builds("copybook", "family", _SUBCOMMANDS):
        fam.add_argument("family", help="the family declaration (TOML or JSON)")
        fam.add_argument("data", nargs="*", help="data files to decode (none: describe the family)")
        fam.add_argument("--output", help="output file for the JSON lines (default: standard output)")
        fam.add_argument("--errors", help="write bad-record reports (JSON lines) to this file")
        fam.add_argument("--strict", action="store_true", help="a field that cannot be decoded rejects its record")
        fam.add_argument("--json", action="store_true", help="machine-readable description")
    fam.set_defaults(func=run_family)

    enc = csub.add_parser("encode", help="encode JSON lines into fixed-layout records")
    if startup.builds("copybook", "encode", _SUBCOMMANDS):
        _common(enc)
        enc.add_argument("input", help="JSON lines file ('-' for standard input)")
        enc.add_argument("--output", required=True, help="the data file to write")
        _options_arg(enc)
    enc.set_defaults(func=run_encode)


def _layout(args: argparse.Namespace):
    from coupler.translators.copybook.layout import build_layout
    from coupler.translators.copybook.parser import parse_file

    return build_layout(
        parse_file(
            args.copybook, source_format=args.source_format, tab_width=args.tab_width,
            copy_paths=args.copy_path,
        ),
        pointer_size=_options(args).pointer_size if getattr(args, "option", None) else 4,
    )


def _options(args: argparse.Namespace) -> Any:
    from coupler.translators.copybook.decoder import parse_options

    pairs: dict[str, str] = {}
    for item in args.option:
        if "=" not in item:
            raise UsageError(f"option {item!r} is not KEY=VALUE", hint="e.g. -o ebcdic_code_page=cp273")
        key, value = item.split("=", 1)
        pairs[key.strip()] = value.strip()
    return parse_options(pairs)


def run_layout(args: argparse.Namespace) -> int:
    import json

    layout = _layout(args)
    if args.json:
        print(json.dumps(layout.rows(), indent=2))
    else:
        print(layout.layout_text())
    return 0


def run_schema(args: argparse.Namespace) -> int:
    import json

    from coupler.translators.copybook.avro import avro_schema

    layout = _layout(args)
    schema = avro_schema(layout, _options(args), name=args.name, namespace=args.namespace)
    print(json.dumps(schema, indent=2))
    return 0


@startup.ends_startup
@startup.logs_nothing
def run_decode(args: argparse.Namespace) -> int:
    startup.keep_freed_memory()  # before the decoder's imports load pyarrow
    from coupler.bus.cli.outputs import ReportFile
    from coupler.translators.copybook import decoder
    from coupler.translators.copybook.batch_files import batch_supported

    layout = _layout(args)
    options = _options(args)
    if args.to == "parquet":  # imported within the start-up (startup.py); it imports nothing more
        from coupler.translators.copybook import arrow_parquet  # noqa: F401
    startup.done()
    if args.to != "jsonl" and not args.output:
        raise UsageError(f"--to {args.to} needs --output FILE")
    if args.parts:
        _check_parts_dir(args)
    paths = [Path(p) for p in args.data]
    policy = "strict" if args.strict else "lenient"
    vectorised = not args.per_record and batch_supported(layout, options, paths)
    check_max_errors(args.max_errors)
    progress = _Progress(_total_size(paths), sys.stderr) if sys.stderr.isatty() else None
    errors_out = ReportFile(args.errors) if args.errors else None
    sink = _ErrorSink(errors_out, args.max_errors, progress)
    stats = decoder.DecodeStats(on_bad_field=sink.field)
    started = time.perf_counter()
    stopped = False
    try:
        with _published(args) as output:  # a failure or Ctrl-C leaves no partial output
            if vectorised:
                _decode_batches(args, output, layout, options, paths, policy, stats, sink, progress)
            else:
                _decode_records(args, output, layout, options, paths, policy, stats, sink, progress)
    except _TooManyErrors:
        stopped = True
    finally:
        if progress:
            progress.close()
        if errors_out:
            errors_out.close()
    elapsed = max(time.perf_counter() - started, 1e-9)
    mb = stats.bytes / 1e6
    sink.summary()
    print(
        f"{stats.records} records, {stats.errors} rejected, {stats.bad_fields} bad fields,"
        f" {mb:.1f} MB in {elapsed:.2f} s ({mb / elapsed:.1f} MB/s,"
        f" {'vectorised' if vectorised else 'per-record'} decoder)",
        file=sys.stderr,
    )
    if stopped:
        print(f"coupler: error: {too_many_errors(args.max_errors, sink.last)}", file=sys.stderr)
        return 1
    if args.strict and stats.errors:
        print(f"coupler: error: {rejected_under_strict(stats.errors, sink.first_rejected)}", file=sys.stderr)
        return 1
    return 0


class _TooManyErrors(Exception):
    """More errors than --max-errors: decoding stops."""


class _ErrorSink:
    """Where rejected records and bad fields go: JSON lines in the --errors file, else the
    first few on standard error; counts them against --max-errors."""

    PRINTED = 20

    def __init__(self, out: Any, max_errors: int | None, progress: Any):
        self.out = out
        self.max_errors = max_errors
        self.progress = progress
        self.count = 0
        self.unprinted = 0
        self.last: str | None = None  # where the last error was (FILE: record N at byte B)
        self.first_rejected: str | None = None

    def _take(self, error: Any, kind: str) -> None:
        self.count += 1
        self.last = getattr(error, "where", None)
        if kind == "record" and self.first_rejected is None:
            self.first_rejected = self.last
        if self.out is not None:
            import json  # a decode without --errors never needs it (start-up)

            self.out.write(json.dumps({"kind": kind, **error.to_dict()}) + "\n")
        elif self.count <= self.PRINTED:
            if self.progress:
                self.progress.close()
            label = "rejected record" if kind == "record" else "bad field"
            print(f"coupler: {label}: {error}", file=sys.stderr)
        else:
            self.unprinted += 1
        if self.max_errors is not None and self.count > self.max_errors:
            raise _TooManyErrors

    def record(self, bad: Any) -> None:
        self._take(bad.error, "record")

    def field(self, error: Any) -> None:
        self._take(error, "field")

    def summary(self) -> None:
        if self.unprinted:
            print(f"coupler: ... {self.unprinted} more errors (use --errors FILE to keep them all)", file=sys.stderr)


def _check_parts_dir(args: argparse.Namespace) -> None:
    if args.to != "parquet":
        raise UsageError("--parts writes Parquet part files", hint="add --to parquet")
    out = Path(args.output)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--output {out} must be a new or empty directory with --parts")


@contextlib.contextmanager
def _published(args: argparse.Namespace) -> Iterator[Path | None]:
    """Where the decoded records are written: the --output file (published when every record
    is written), the --parts directory, or None for standard output."""
    from coupler.bus.cli.outputs import output_directory, output_file

    if not args.output:
        yield None
        return
    with (output_directory if args.parts else output_file)(args.output) as output:
        yield output


def _part_path(directory: Path, number: int) -> Path:
    return directory / f"part-{number:05d}.parquet"


def _cores() -> int:
    """The cores this process may run on (``taskset`` and cgroups' CPU sets count)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _total_size(paths: list[Path]) -> int:
    total = 0
    for p in paths:
        try:
            total += p.stat().st_size
        except OSError:
            pass  # reported when the file is decoded
    return total


def _decode_records(args, output, layout, options, paths, policy, stats, sink, progress) -> None:
    """The per-record decoder (every layout and record format)."""
    from coupler.translators.copybook import decoder
    from coupler.translators.copybook.avro import avro_schema

    records = decoder.decode_files(layout, paths, options, stats=stats, policy=policy)
    if progress:
        records = progress.follow(records, stats)
    if args.to == "parquet" and args.parts:
        good = _only_good(records, sink)
        decoder.write_parquet(good, avro_schema(layout, options), _part_path(output, 0))
        return
    if args.to == "jsonl":
        out = open(output, "w", encoding="utf-8") if output else sys.stdout  # noqa: SIM115
        try:
            for rec in records:
                if isinstance(rec, decoder.BadRecord):
                    sink.record(rec)
                    continue
                out.write(decoder.to_json(rec))
                out.write("\n")
        finally:
            if out is not sys.stdout:
                out.close()
        return
    good = _only_good(records, sink)
    schema = avro_schema(layout, options)
    if args.to == "avro":
        decoder.write_avro(good, schema, output)
    else:
        decoder.write_parquet(good, schema, output)


def _decode_batches(args, output, layout, options, paths, policy, stats, sink, progress) -> None:
    """The vectorised decoder: Arrow batches written as JSON lines, Avro or Parquet."""
    from coupler.translators.copybook.arrow_json import json_lines
    from coupler.translators.copybook.batch_files import decode_file_batches

    jobs = args.jobs if args.jobs is not None else _cores()
    if jobs < 1:
        raise UsageError(f"--jobs must be 1 or more, not {jobs}")
    if args.parts:
        _decode_parts(args, output, layout, options, paths, policy, stats, sink, progress, jobs)
        return
    batches = decode_file_batches(layout, paths, options, stats=stats, policy=policy, jobs=jobs)

    def reported():
        for fb in batches:
            for bad in fb.bad:
                sink.record(bad)
            if progress:
                progress.advance(fb.bytes, stats.records)
            yield fb.batch

    if args.to == "jsonl":
        out = open(output, "w", encoding="utf-8") if output else sys.stdout  # noqa: SIM115
        try:
            for batch in reported():
                lines = json_lines(batch)
                if lines:
                    out.write("\n".join(lines))
                    out.write("\n")
        finally:
            if out is not sys.stdout:
                out.close()
    elif args.to == "parquet":
        from coupler.translators.copybook.arrow_parquet import ParquetBatchWriter
        from coupler.translators.copybook.batch import BatchDecoder

        schema = BatchDecoder(layout, options).decode(b"").batch.schema
        # one writer (pyarrow encodes one file on one thread; --parts is what spreads encoding
        # over the cores); with a second core, row groups are encoded on a thread of their own
        # while the next batches decode; on one core a thread only adds CPU time
        # (docs/performance.md)
        with ParquetBatchWriter(output, schema, background=_cores() > 1) as writer:
            for batch in reported():
                writer.write_batch(batch)
    else:
        from coupler.translators.copybook.arrow_avro import AvroBatchWriter
        from coupler.translators.copybook.avro import avro_schema

        with open(output, "wb") as out:
            avro_writer = AvroBatchWriter(out, avro_schema(layout, options))
            for batch in reported():
                avro_writer.write_batch(batch)


def _decode_parts(args, output, layout, options, paths, policy, stats, sink, progress, jobs: int) -> None:
    """Ordered Parquet part files, one per range of records, decoded and written by ``jobs``
    threads at once (the compiled kernel and Parquet encoding release the GIL): each thread
    has its own decoder and writer, so encoding, the larger part of the work, is parallel too.
    Reports go to ``sink`` in file order, as with one file: each part's are kept until the
    parts before it are done."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from coupler.translators.copybook import decoder
    from coupler.translators.copybook.arrow_parquet import ParquetBatchWriter
    from coupler.translators.copybook.batch import BatchDecoder
    from coupler.translators.copybook.batch_files import decode_file_batches, split_records

    schema = BatchDecoder(layout, options).decode(b"").batch.schema
    stop = threading.Event()
    drawing = threading.Lock()  # the progress bar is one line for all the threads

    def part(number: int, path: Path, first: int, count: int) -> tuple[decoder.DecodeStats, list[tuple[str, Any]]]:
        events: list[tuple[str, Any]] = []  # bad fields as found, rejected records after their batch
        own = decoder.DecodeStats(on_bad_field=lambda e: events.append(("field", e)))
        with ParquetBatchWriter(_part_path(output, number), schema) as writer:
            for fb in decode_file_batches(layout, [path], options, stats=own, policy=policy,
                                          records=(first, count)):
                events.extend(("record", bad) for bad in fb.bad)
                writer.write_batch(fb.batch)
                if progress:
                    with drawing:
                        progress.advance(fb.bytes, stats.records + own.records)
                if stop.is_set():
                    break
        return own, events

    ranges = split_records(layout, paths, options, jobs)
    with ThreadPoolExecutor(jobs, thread_name_prefix="copybook-part") as pool:
        futures = [pool.submit(part, n, *r) for n, r in enumerate(ranges)]
        try:
            for future in futures:
                own, events = future.result()
                stats.bytes += own.bytes
                stats.records += own.records
                stats.errors += own.errors
                stats.bad_fields += own.bad_fields
                for key, n in own.bad_field_names.items():
                    stats.bad_field_names[key] = stats.bad_field_names.get(key, 0) + n
                for kind, item in events:
                    if kind == "field":
                        sink.field(item)
                    else:
                        sink.record(item)
        finally:
            stop.set()
            for future in futures:
                future.cancel()


class _Progress:
    """A one-line progress bar on a terminal: bytes done of the total, records, MB/s."""

    WIDTH = 30

    def __init__(self, total: int, stream: Any):
        self.total = max(total, 1)
        self.stream = stream
        self.done = 0
        self.started = time.perf_counter()
        self.shown = 0.0
        self.drawn = False

    def advance(self, nbytes: int, records: int) -> None:
        self.done += nbytes
        self.show(records, force=self.done >= self.total)

    def follow(self, records: Any, stats: Any) -> Any:
        """Pass ``records`` through, redrawing from ``stats.bytes`` now and then."""
        for n, rec in enumerate(records):
            if n % 1000 == 0:
                self.done = stats.bytes
                self.show(stats.records)
            yield rec
        self.done = stats.bytes
        self.show(stats.records, force=True)

    def show(self, records: int, *, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self.shown < 0.1:
            return
        self.shown = now
        frac = min(self.done / self.total, 1.0)
        filled = int(frac * self.WIDTH)
        rate = self.done / 1e6 / max(now - self.started, 1e-9)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        self.stream.write(
            f"\r[{bar}] {frac * 100:5.1f}% {self.done / 1e6:.1f}/{self.total / 1e6:.1f} MB"
            f" {records} records {rate:.1f} MB/s"
        )
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")  # clear the bar; the summary follows
            self.stream.flush()


def _only_good(records, sink):
    from coupler.translators.copybook import decoder

    for rec in records:
        if isinstance(rec, decoder.BadRecord):
            sink.record(rec)
        else:
            yield rec


def _report(bad: Any, errors_out: Any) -> None:
    if errors_out is not None:
        import json

        errors_out.write(json.dumps(bad.error.to_dict()) + "\n")
    else:
        print(f"coupler: bad record: {bad.error}", file=sys.stderr)


def run_family(args: argparse.Namespace) -> int:
    import json

    from coupler.bus.cli.outputs import ReportFile, text_output
    from coupler.translators.copybook import decoder
    from coupler.translators.copybook.family import FieldSelector, LayoutFamily

    family = LayoutFamily.load(args.family)
    if not args.data:
        sel = family.selector
        info = {
            "name": family.name,
            "versions": [
                {"version": v, "format": family.format(v).ref, "copybook": family.layouts[v].file,
                 "record_size": family.layouts[v].size}
                for v in family.versions
            ],
            "selector": (
                {"field": sel.field, "values": dict(sel.values), "default": sel.default}
                if isinstance(sel, FieldSelector)
                else {"file_name": dict(sel.patterns), "default": sel.default}
            ),
        }
        if args.json:
            print(json.dumps(info, indent=2))
        else:
            print(f"{family.name}: {len(family.versions)} versions, selected by {sel.describe()}")
            for v in cast(list[dict[str, Any]], info["versions"]):
                print(f"  {v['format']:<30} {v['record_size']:>6} bytes  {v['copybook']}")
        return 0
    stats = decoder.DecodeStats()
    started = time.perf_counter()
    versions: dict[str, int] = {}
    errors_out = ReportFile(args.errors) if args.errors else None
    try:
        with contextlib.ExitStack() as stack:  # the --output file published when every record is written
            out = text_output(stack, args.output)
            for rec in family.decode_files(args.data, stats=stats, policy="strict" if args.strict else "lenient"):
                if isinstance(rec, decoder.BadRecord):
                    _report(rec, errors_out)
                    continue
                ref = rec.format.ref
                versions[ref] = versions.get(ref, 0) + 1
                out.write(f'{{"format":{json.dumps(ref)},"record":{decoder.to_json(rec.record)}}}\n')
    finally:
        if errors_out:
            errors_out.close()
    elapsed = max(time.perf_counter() - started, 1e-9)
    per_version = ", ".join(f"{n} {ref}" for ref, n in sorted(versions.items()))
    print(
        f"{stats.records} records ({per_version or 'none'}), {stats.errors} errors, {stats.bad_fields} bad fields,"
        f" {stats.bytes / 1e6:.1f} MB in {elapsed:.2f} s",
        file=sys.stderr,
    )
    return 0


def run_encode(args: argparse.Namespace) -> int:
    from coupler.bus.cli.inputs import text_lines
    from coupler.bus.cli.outputs import output_file
    from coupler.translators.copybook import encoder

    layout = _layout(args)
    options = _options(args)
    count = 0
    with (text_lines(args.input, "JSON lines, one record per line") as src, output_file(args.output) as partial,
          open(partial, "wb") as out):  # published when every record is written: no half file on an error
        for data in encoder.encode_json_lines(layout, src, options):
            out.write(data)
            count += 1
    print(f"{count} records written to {args.output}", file=sys.stderr)
    return 0
