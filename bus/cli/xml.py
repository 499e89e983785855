"""``coupler xsd``, ``coupler xml`` and ``coupler wsdl``: the XML translator and WSDL reading."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from coupler.canonical.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    xsd = sub.add_parser("xsd", help="XSD schemas: the Avro schema of an element")
    xsd_sub = xsd.add_subparsers(dest="xsd_command", metavar="COMMAND", required=True)
    p = xsd_sub.add_parser("schema", help="print the Avro schema (JSON) of a global element")
    p.add_argument("xsd", type=Path, help="the XSD file")
    p.add_argument("--element", help="the global element (required when the XSD declares several)")
    p.add_argument("--json", action="store_true", help="machine-readable output (the default: JSON)")
    p.add_argument("--keep-xsi-types", action="store_true",
                   help="keep the xsi:type written on simple-typed elements (records get an xsi_types field)")
    _schema_loading(p)
    p.set_defaults(func=run_schema)

    xml = sub.add_parser("xml", help="XML documents <-> records")
    xml_sub = xml.add_subparsers(dest="xml_command", metavar="COMMAND", required=True)
    p = xml_sub.add_parser("decode", help="XML documents -> records (JSON lines or an Avro file)")
    p.add_argument("xsd", type=Path, help="the XSD file (its imports and includes are read under its directory, the current directory and --schema-root)")
    p.add_argument("xml", type=Path, nargs="+", help="XML documents")
    p.add_argument("--element", help="the root element (default: each document's root)")
    p.add_argument("--record-path", help="stream one record per repeated element, e.g. orders/order")
    p.add_argument("--to", choices=("jsonl", "avro"), default="jsonl",
                   help="output format (jsonl: decimals as JSON numbers with the digits of their scale, as copybook decode writes them)")
    p.add_argument("--output", type=Path, help="output file (default: standard output; required for avro)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar, even on a terminal")
    p.add_argument("--keep-xsi-types", action="store_true",
                   help="keep the xsi:type written on simple-typed elements (records get an xsi_types field)")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="with --record-path ROOT/ELEMENT: decode N parts of the files at once, in N worker processes"
                        " (default: the cores this process may use); a file is cut at record boundaries as Spark's"
                        " xml source cuts it (a file larger than a part, not UTF-16, whose records are the root's children;"
                        " other files are each one part), and the records, their order, the Avro file's blocks and"
                        " the errors are the same whatever N is; without --record-path, one process")
    p.add_argument("--split-size-mb", type=float, metavar="MB",
                   help="with --jobs: the size of a file's parts (default 16, as Spark's xml source's"
                        " input_split_size_mb; the last parts smaller, so that the workers finish together)")
    _schema_loading(p)
    p.set_defaults(func=run_decode)

    p = xml_sub.add_parser("encode", help="records (JSON lines or an Avro container file) -> an XML document that validates")
    p.add_argument("xsd", type=Path, help="the XSD file (its imports and includes are read under its directory, the current directory and --schema-root)")
    p.add_argument("input", type=Path, help="JSON lines, one record per line ('-' for standard input), or an Avro container file as `xml decode --to avro` writes it")
    p.add_argument("--output", type=Path, required=True, help="the XML file to write")
    p.add_argument("--element", help="the root element (required when the XSD declares several)")
    p.add_argument("--record-path", help="write each record as this repeated element, e.g. orders/order")
    p.add_argument("--keep-xsi-types", action="store_true",
                   help="keep the xsi:type written on simple-typed elements (records get an xsi_types field)")
    _schema_loading(p)
    p.set_defaults(func=run_encode)

    wsdl = sub.add_parser("wsdl", help="WSDL 1.1 service descriptions")
    wsdl_sub = wsdl.add_subparsers(dest="wsdl_command", metavar="COMMAND", required=True)
    p = wsdl_sub.add_parser("describe", help="services, ports, bindings and operations of a WSDL")
    p.add_argument("wsdl", type=Path, help="the WSDL file")
    p.add_argument("--catalog", type=Path,
                   help="an OASIS XML catalog mapping the http(s) locations the WSDL imports to local files")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _schema_loading(p, "WSDL")
    p.set_defaults(func=run_describe)


def _schema_loading(p: argparse.ArgumentParser, what: str = "schema") -> None:
    """The options of every command that loads an XSD or a WSDL: its bound and its roots."""
    p.add_argument("--max-model-particles", type=int, default=None, metavar="N",
                   help="refuse a schema content model of more particles than this (default 5000; 0: no limit): "
                        "xmlschema checks one in time quadratic in its particles")
    p.add_argument("--schema-root", type=Path, action="append", default=[], metavar="DIR",
                   help=f"a directory the {what}'s includes and imports may also read (repeatable), besides "
                        f"the {what}'s own directory and the current directory")


def _roots(args: argparse.Namespace) -> list[Path]:
    """The directories a schema's includes and imports may read besides its own: the current
    directory (a user working in a schema distribution's folder names its schemas from there, and
    they import ``../common/``) and ``--schema-root``."""
    return [Path.cwd(), *args.schema_root]


def _limit(args: argparse.Namespace) -> dict[str, int]:
    """``max_model_particles`` when ``--max-model-particles`` is given."""
    return {} if args.max_model_particles is None else {"max_model_particles": args.max_model_particles}


def run_schema(args: argparse.Namespace) -> int:
    from coupler.translators.xml import XsdModel

    model = XsdModel.load(args.xsd, keep_simple_xsi_types=args.keep_xsi_types, schema_roots=_roots(args),
                          **_limit(args))
    print(json.dumps(model.avro_schema(args.element), indent=2))
    return 0


class _Read:
    """How many bytes of the XML documents have been read: the finished ones and the
    position in the one being streamed (the progress bar's measure)."""

    def __init__(self) -> None:
        self.done = 0
        self.current: Any = None

    def __call__(self) -> int:
        return self.done + (self.current.tell() if self.current is not None and not self.current.closed else 0)


def _decoded(args: argparse.Namespace, read: _Read | None = None,
             avro_schema: Any = None, model: Any = None) -> tuple[Any, Iterator[dict[str, Any]]]:
    """The Avro schema and the records; with ``avro_schema`` (the records' own, for an Avro
    file) a record may come already encoded (``Decoder.iter_records``). ``model``: the
    schema's model when the caller loaded it."""
    from coupler.translators.xml.security import parse_document

    model = model or _load_model(args)
    read = read or _Read()
    if args.record_path:
        decoder = model.decoder(args.element or args.record_path.strip("/").split("/")[0])

        def streamed() -> Iterator[dict[str, Any]]:
            for path in args.xml:
                with open(path, "rb") as read.current:
                    yield from decoder.iter_records(read.current, args.record_path, name=str(path),
                                                    avro_schema=avro_schema)
                read.done += path.stat().st_size

        return model.avro_schema(decoder.element.name), streamed()
    element = args.element
    if element is None:
        element = parse_document(args.xml[0]).getroot().tag
    decoder = model.decoder(element)

    def documents() -> Iterator[dict[str, Any]]:
        for path in args.xml:
            record = decoder.decode_document(path)
            read.done += path.stat().st_size
            yield record

    return model.avro_schema(decoder.element.name), documents()


def run_decode(args: argparse.Namespace) -> int:
    from coupler.bus.cli.outputs import output_file, text_output
    from coupler.translators.xml.jsonio import dumps

    for path in args.xml:
        if not path.is_file():
            raise UsageError(f"input file {path} does not exist")
    jobs = args.jobs if args.jobs is not None else _cores()
    if jobs < 1:
        raise UsageError(f"--jobs must be 1 or more, not {jobs}")
    if args.split_size_mb is not None and args.split_size_mb <= 0:
        raise UsageError(f"--split-size-mb must be more than 0, not {args.split_size_mb}")
    if args.to == "avro" and args.output is None:
        raise UsageError("--to avro needs --output FILE")
    read = _Read()
    model = _load_model(args) if args.record_path else None
    record_schema = _record_schema(args, model) if args.record_path else None
    # a progress bar on a terminal (not when the records themselves go to it); nothing when piped
    show_progress = not args.no_progress and sys.stderr.isatty() and (args.output is not None or not sys.stdout.isatty())
    if args.record_path and jobs > 1:
        parallel = _parallel(args, jobs, record_schema, model)
        if parallel.worth_it():
            return _run_parallel(args, parallel, record_schema, show_progress)
    avro_schema, records = _decoded(args, read, record_schema if args.to == "avro" else None, model)
    if record_schema is not None:
        avro_schema = record_schema
    if show_progress:
        records = _with_progress(records, sum(p.stat().st_size for p in args.xml), read)
    if args.to == "avro":
        from coupler.translators.xml.avro import write_container

        with output_file(args.output) as partial, open(partial, "wb") as avro_out:
            write_container(avro_out, avro_schema, records)
        return 0
    with contextlib.ExitStack() as stack:  # the --output file published when every record is written
        out = text_output(stack, args.output)
        for record in records:
            out.write(dumps(record, decimal_numbers=True) + "\n")
    return 0


def _cores() -> int:
    """The cores this process may run on (``taskset`` and cgroups' CPU sets count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _parallel(args: argparse.Namespace, jobs: int, record_schema: Any, model: Any) -> Any:
    """The files' splits for ``jobs`` worker processes (:mod:`coupler.translators.xml.parallel`)."""
    from coupler.translators.xml.parallel import DecoderSpec, ParallelDecode
    from coupler.translators.xml.splits import XML_SPLIT_BYTES

    spec = DecoderSpec(
        # absolute: the workers are started by a fork server that keeps the directory it started in
        xsd=os.path.abspath(args.xsd), roots=tuple(os.path.abspath(r) for r in _roots(args)),
        keep_xsi_types=args.keep_xsi_types, limits=tuple(_limit(args).items()),
        element=args.element or args.record_path.strip("/").split("/")[0], record_path=args.record_path,
        avro_schema=record_schema if args.to == "avro" else None,
    )
    split_bytes = XML_SPLIT_BYTES if args.split_size_mb is None else max(1, int(args.split_size_mb * 1024 * 1024))
    return ParallelDecode(spec, args.xml, jobs, split_bytes=split_bytes, model=model)


def _run_parallel(args: argparse.Namespace, parallel: Any, record_schema: Any, show_progress: bool) -> int:
    """``xml decode --record-path --jobs N``: the splits decoded by the workers, written in order;
    a file a worker could not decode is decoded again here (its records after those written),
    so that the records written and the error raised are those of one process."""
    from coupler.bus.cli.outputs import output_file, text_output
    from coupler.translators.xml.jsonio import dumps

    def serial(path: Path, skip: int) -> Iterator[Any]:
        decoder = parallel.model.decoder(parallel.spec.element)
        with open(path, "rb") as fh:
            records = decoder.iter_records(fh, args.record_path, name=str(path),
                                               avro_schema=parallel.spec.avro_schema)
            yield from itertools.islice(records, skip, None)

    sys.stdout.flush()  # nothing buffered for the workers to inherit (they are forked at the first part)
    progress: Any = None
    position = [0, 0]  # bytes and records finished
    if show_progress:
        from coupler.bus.cli.translate import Progress

        progress = Progress(sys.stderr, sum(p.stat().st_size for p in args.xml), lambda: position[0])

    def done(nbytes: int, records: int) -> None:
        position[0] += nbytes
        position[1] += records
        if progress is not None:
            progress.tick(position[1])

    try:
        if args.to == "avro":
            from coupler.translators.xml.avro import ContainerWriter

            with output_file(args.output) as partial, open(partial, "wb") as avro_out:
                writer = ContainerWriter(avro_out, record_schema)
                # on an error the last block is not written, as by the one-process writer
                parallel.run(lambda result: writer.write_encoded(result[0], result[1]), serial, writer.write, done)
                writer.close()
            return 0
        with contextlib.ExitStack() as stack:  # the --output file published when every record is written
            out = text_output(stack, args.output)
            parallel.run(lambda result: out.write(result[0]), serial,
                         lambda record: out.write(dumps(record, decimal_numbers=True) + "\n"), done)
        return 0
    finally:
        if progress is not None:
            progress.close(position[1])


def _with_progress(records: Iterator[dict[str, Any]], total: int, read: _Read) -> Iterator[dict[str, Any]]:
    from coupler.bus.cli.translate import Progress

    progress = Progress(sys.stderr, total, read)
    count = 0
    try:
        for record in records:
            count += 1
            progress.tick(count)
            yield record
    finally:
        progress.close(count)


def _load_model(args: argparse.Namespace) -> Any:
    from coupler.translators.xml import XsdModel

    return XsdModel.load(args.xsd, keep_simple_xsi_types=args.keep_xsi_types, schema_roots=_roots(args),
                         **_limit(args))


def _record_schema(args: argparse.Namespace, model: Any = None) -> Any:
    """The Avro schema of the records at --record-path (the repeated element's value)."""
    from coupler.translators.xml.model import Poly, value_avro

    model = model or _load_model(args)
    steps = [p for p in args.record_path.strip("/").split("/") if p]
    value: Any = model.root_value(args.element or steps[0])
    for step in steps[1:]:
        records = value.branches if isinstance(value, Poly) else [value]
        matches = [f for r in records for f in r.fields if f.kind == "element" and (f.qname or "").rsplit("}", 1)[-1] == step.rsplit("}", 1)[-1]]
        if not matches:
            raise UsageError(f"--record-path {args.record_path}: no element {step!r}")
        value = matches[0].value
    return value_avro(value, set())


def run_encode(args: argparse.Namespace) -> int:
    from coupler.bus.cli.inputs import avro_records, is_avro_container, text_lines
    from coupler.bus.cli.outputs import output_file
    from coupler.translators.xml import XmlValidationError, XsdModel
    from coupler.translators.xml.jsonio import read_jsonl

    model = XsdModel.load(args.xsd, keep_simple_xsi_types=args.keep_xsi_types, schema_roots=_roots(args),
                          **_limit(args))
    element = args.element or (args.record_path.strip("/").split("/")[0] if args.record_path else None)
    encoder = model.encoder(element)
    expected = "JSON lines or an Avro container file as `xml decode --to avro` writes it"
    with contextlib.ExitStack() as stack:
        if str(args.input) != "-" and is_avro_container(args.input):
            records = avro_records(args.input)
        else:
            lines: Any = stack.enter_context(text_lines(args.input, expected))  # read_jsonl iterates lines
            records = read_jsonl(lines, name=str(args.input))
        output = stack.enter_context(output_file(args.output))  # published once every record is written
        if args.record_path:
            encoder.write_stream(records, output, args.record_path)
            return 0
        first = next(records, None)
        if first is None:
            raise XmlValidationError("no record to encode", source=str(args.input))
        if next(records, None) is not None:
            raise UsageError(
                f"{args.input} holds several records but an XML document has one root",
                hint="use --record-path ROOT/ELEMENT to write them as repeated elements",
            )
        output.write_bytes(encoder.encode(first, label=f"{args.input}:1"))
    return 0


def run_describe(args: argparse.Namespace) -> int:
    from coupler.translators.soap.wsdl import read_wsdl

    description = read_wsdl(args.wsdl, catalog=args.catalog, schema_roots=_roots(args),
                          **_limit(args))
    for warning in description.warnings:
        print(f"coupler: warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(description.to_dict(), indent=2))
        return 0
    print(description.render_text())
    return 0
