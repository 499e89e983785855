"""``coupler batch``: bulk translation and batch ingestion on Spark.

* ``coupler batch translate --from SPEC --to SPEC INPUT... --output OUT [--master M] [-o K=V]``
* ``coupler batch ingest --site SITE.toml --source ADAPTER [--to SPEC] [--output OUT]``

SPEC: ``copybook:FILE.cpy``, ``xml:FILE.xsd[#element]``, ``avro:NAME@VERSION``, ``jsonl``,
``parquet``. ``-o KEY=VALUE`` are reader options (the copybook options for copybook input);
``-w KEY=VALUE`` writer options. A summary goes to standard error (``--json``: to standard
output as JSON); Spark's progress bar shows while a job runs on a terminal.

Exit status of ``batch translate``: 0 when the job ran (rejected records go to the errors
folder); 1 when a record was rejected under ``--strict``, when more than ``--max-errors N``
records were rejected, or on any other failure; 2 for a usage error. Spark runs a job's
tasks to their end, so these two are checked when the job has ended: the output is written.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import warnings
from collections.abc import Iterator
from typing import Any

from coupler.bus.cli.limits import (
    add_max_errors_option,
    check_max_errors,
    exceeded_at_the_end,
    record_where,
    rejected_under_strict,
)
from coupler.canonical.errors import CouplerError


def _pairs(values: list[str] | None, flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CouplerError(f"{flag} {item!r} is not KEY=VALUE", where=flag, hint=f"e.g. {flag} record_format=V")
        out[key.strip()] = value
    return out


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master", default="local[*]",
                   help="Spark master: local[*] (default), local[N], spark://HOST:PORT, yarn, k8s://...; "
                        "'submit' leaves it to spark-submit")
    p.add_argument("-o", "--option", action="append", metavar="KEY=VALUE", help="reader option (repeatable)")
    p.add_argument("-w", "--write-option", action="append", metavar="KEY=VALUE", help="writer option (repeatable)")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="Spark configuration (repeatable)")
    p.add_argument("--map", dest="mapping", metavar="MAP.toml", help="field mapping applied to every record")
    p.add_argument("--schemas", action="append", default=[], metavar="DIR",
                   help="extra schema folder for avro: specs and mappings (repeatable)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on standard output")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="show Spark's own output (banner, warnings, logs); without it only its progress bar")


def register(sub: argparse._SubParsersAction) -> None:
    batch = sub.add_parser("batch", help="bulk translation and batch ingestion on Spark")
    bsub = batch.add_subparsers(dest="batch_command", metavar="COMMAND", required=True)

    t = bsub.add_parser(
        "translate", help="translate files from one format to another on Spark",
        description="Translate files on Spark. Records are numbered from 1 in every report, with the file"
        " byte offset for copybook input. Exit status: 0 when the job ran (rejected records go to the errors"
        " folder); 1 when a record was rejected under --strict, when more than --max-errors N records were"
        " rejected (both checked when the job has ended: the output is written), or on any other failure;"
        " 2 for a usage error.",
    )
    t.add_argument("--from", dest="from_spec", required=True, metavar="SPEC", help="format of the input files: copybook:FILE.cpy, xml:FILE.xsd[#ELEMENT], avro:NAME@V, jsonl or parquet")
    t.add_argument("--to", dest="to_spec", required=True, metavar="SPEC", help="format of the output: parquet, avro:NAME@V, jsonl, copybook:FILE.cpy or xml:FILE.xsd[#ELEMENT]")
    t.add_argument("inputs", nargs="+", metavar="INPUT", help="input files, folders or glob patterns")
    t.add_argument("--output", required=True, metavar="OUT", help="output folder (replaced atomically)")
    t.add_argument("--errors", metavar="DIR", help="bad records as JSON lines (default OUT.errors)")
    t.add_argument(
        "--strict", action="store_true",
        help="copybook input: a field that cannot be decoded rejects its record (-o policy=strict; default: the"
        " field becomes null); exit status 1 when any record was rejected",
    )
    add_max_errors_option(
        t, help="exit status 1 when more than N records were rejected; 0: any (Cobrix's FAILFAST). Checked when"
        " the Spark job has ended (the output is written); the message names the first rejected record",
    )
    _common(t)
    t.set_defaults(func=run_translate)

    i = bsub.add_parser("ingest", help="translate the files an adapter staged for batch, then archive them")
    i.add_argument("--site", required=True, metavar="SITE.toml", help="the site whose adapter staged the files")
    i.add_argument("--source", required=True, metavar="ADAPTER", help="the adapter whose batch_dir to ingest")
    i.add_argument("--from", dest="from_spec", metavar="SPEC", help="default: copybook:<the adapter's copybook>")
    i.add_argument("--to", dest="to_spec", default="parquet", metavar="SPEC", help="default: parquet")
    i.add_argument("--output", metavar="OUT", help="default: DATA_DIR/batch/ADAPTER/<batch id>/data")
    i.add_argument("--channel", help="where BatchCompleted goes (default: the adapter's channel)")
    _common(i)
    i.set_defaults(func=run_ingest)


@contextlib.contextmanager
def _session(args: argparse.Namespace, name: str, *, lean_jvm: bool = False) -> Iterator[Any]:
    """The Spark session of one command, stopped at the end unless it was already running
    (``coupler`` called from a program that has a session); ``lean_jvm`` for a job that runs
    as split tasks (``jobs.runs_as_split_tasks``)."""
    from pyspark.sql import SparkSession

    from coupler.bus.batch.jobs import spark_session, spark_start_error

    conf = _pairs(args.conf, "--conf")
    if sys.stderr.isatty() and not args.json:
        conf.setdefault("spark.ui.showConsoleProgress", "true")
    existing = SparkSession.getActiveSession()
    try:
        with _jvm_output(show_all=args.verbose):
            spark = spark_session(None if args.master == "submit" else args.master, app_name=name, conf=conf,
                                  lean_jvm=lean_jvm)
    except Exception as exc:  # a SparkContext that could not start: one line, not an "internal error"
        if type(exc).__module__.startswith(("pyspark", "py4j")):
            raise spark_start_error(exc, args.master) from exc
        raise
    try:
        yield spark
    except BaseException:
        if existing is None:  # the error being raised says what happened, not a failure to stop
            # (a JVM that SIGTERM to the process group ended cannot be stopped cleanly)
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                spark.stop()
        raise
    if existing is None:
        spark.stop()


@contextlib.contextmanager
def _jvm_output(*, show_all: bool) -> Iterator[None]:
    """Start Spark's JVM with its standard error on a pipe: only its progress bar (on a
    terminal) reaches ours, unless ``show_all``. The JVM is started inside this block and
    keeps the pipe; Python's own standard error is back to normal after it."""
    if show_all:
        yield
        return
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    saved = os.dup(2)
    terminal = os.isatty(saved)

    def forward() -> None:
        with os.fdopen(read_fd, "rb", buffering=0) as jvm:
            while chunk := jvm.read(65536):
                if not terminal:
                    continue
                for part in chunk.split(b"\r"):
                    # the bar is redrawn after a carriage return, and wiped with spaces
                    if part.startswith(b"[Stage") or (part and not part.strip(b" ")):
                        os.write(saved, b"\r" + part.rstrip(b"\n"))

    threading.Thread(target=forward, name="spark-output", daemon=True).start()
    os.dup2(write_fd, 2)
    os.close(write_fd)
    try:
        yield
    finally:
        os.dup2(saved, 2)


def _summary(results: list[Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps([r.to_json() for r in results], indent=2, default=str))
        return
    if not results:
        print("nothing staged for batch", file=sys.stderr)
    for r in results:
        line = (
            f"{len(r.inputs)} input(s), {r.records} records, {r.errors} errors -> {r.output} "
            f"in {r.duration:.1f}s ({r.mb_per_s:.1f} MB/s)"
        )
        if r.errors_output:
            line += f"; bad records in {r.errors_output}"
        if r.batch_id:
            line = f"batch {r.batch_id}: " + line + (f"; event {r.event_id}" if r.event_id else "")
        print(line, file=sys.stderr)


def run_translate(args: argparse.Namespace) -> int:
    from coupler.bus.batch.jobs import (
        Spec,
        check_job,
        discard_unpublished,
        errors_folder,
        runs_as_split_tasks,
        translate,
    )
    from coupler.bus.cli.outputs import output_folder_error, refused_write

    src = Spec.parse(args.from_spec, where="--from")
    dst = Spec.parse(args.to_spec, where="--to")
    check_max_errors(args.max_errors)
    options = _pairs(args.option, "-o")
    if args.strict and src.kind == "copybook":
        options["policy"] = "strict"
    write_options = _pairs(args.write_option, "-w")
    check_job(src, dst, args.inputs, options=options, mapping=args.mapping, schema_dirs=args.schemas)
    lean = runs_as_split_tasks(src, dst, args.output, options=options, mapping=args.mapping)
    try:
        with _session(args, "coupler-batch-translate", lean_jvm=lean) as spark:
            result = translate(
                spark, src, dst, args.inputs, args.output, options=options, write_options=write_options,
                mapping=args.mapping, errors_output=args.errors, schema_dirs=args.schemas,
            )
    except BaseException as exc:
        discard_unpublished(args.output, errors_folder(src, args.output, args.errors))  # Spark stopped: no task writes
        code = refused_write(exc) if isinstance(exc, CouplerError) else None
        if code is None:
            raise
        # a full disk, in a Spark task: the output it could not write, not the job
        raise output_folder_error(args.output, code) from None
    _summary([result], args.json)
    if args.strict and result.errors:
        print(f"coupler: error: {rejected_under_strict(result.errors, _first_error(result.errors_output))}",
              file=sys.stderr)
        return 1
    if args.max_errors is not None and result.errors > args.max_errors:
        print(f"coupler: error: {exceeded_at_the_end(args.max_errors, result.errors, _first_error(result.errors_output))}",
              file=sys.stderr)
        return 1
    return 0


def _first_error(folder: str | None) -> str | None:
    """``FILE: record N at byte B`` of the first rejected record in the errors folder (the
    first file in name order, the lowest record number)."""
    from pathlib import Path

    if not folder or not Path(folder).is_dir():
        return None
    first: tuple[str, int, int | None] | None = None
    for part in sorted(Path(folder).glob("*.jsonl")):
        with open(part, encoding="utf-8") as fh:
            for line in fh:
                try:
                    e = json.loads(line)
                    key = (str(e["file"]), int(e["record"]), e.get("offset"))
                except (ValueError, KeyError, TypeError):
                    continue
                if first is None or key[:2] < first[:2]:
                    first = key
    return record_where(*first) if first else None


def run_ingest(args: argparse.Namespace) -> int:
    from coupler.bus.batch.ingest import ingest

    with contextlib.ExitStack() as stack:  # Spark starts only when something is staged
        results = ingest(
            args.site, args.source, session=lambda: stack.enter_context(_session(args, f"coupler-batch-ingest-{args.source}")),
            from_spec=args.from_spec, to_spec=args.to_spec, output=args.output, options=_pairs(args.option, "-o"),
            channel=args.channel, mapping=args.mapping, schema_dirs=args.schemas,
        )
    _summary(results, args.json)
    return 0
