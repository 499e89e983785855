"""Batch jobs on Spark: bulk translation and batch ingestion.

:func:`spark_session` starts (or joins) a Spark session with Coupler's data sources
registered; :func:`translate` reads inputs in one format and writes them in another
(``coupler batch translate``); :func:`ingest` takes the files an adapter staged for batch,
translates them, archives the inputs after success and publishes ``coupler.BatchCompleted@1``
(``coupler batch ingest``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from coupler.canonical.errors import CouplerError

log = logging.getLogger(__name__)

#: Spark's JVM log configuration for Coupler's sessions: errors only, on standard error
LOG4J_PROPERTIES = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _log4j_config() -> Path:
    path = Path(tempfile.gettempdir()) / f"coupler-log4j2-{os.getuid()}.properties"
    if not path.exists() or path.read_text() != LOG4J_PROPERTIES:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(LOG4J_PROPERTIES)
        os.replace(tmp, path)
    return path

#: settings every Coupler Spark session gets unless the caller overrides them
DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.python.worker.reuse": "true",
}


#: JVM options of a local session that runs only split-task jobs (:func:`runs_as_split_tasks`):
#: its JVM schedules tasks and moves a few bytes per task, so the C2 compiler and G1's
#: concurrent threads are overhead taken from a task slot (a 200 MB copybook job on
#: ``local[2]``, loaded machine: 1.15 s of JVM CPU per job with the defaults, of which C2
#: 0.67-0.87 s; 0.32-0.41 s with these; docs/performance.md)
LEAN_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"


def spark_session(
    master: str | None = "local[*]",
    *,
    app_name: str = "coupler-batch",
    conf: Mapping[str, str] | None = None,
    log_level: str = "ERROR",
    lean_jvm: bool = False,
) -> Any:
    """A Spark session with Coupler's data sources (``copybook``, ``canonical-avro``) registered.

    Python workers run the interpreter running this (``PYSPARK_PYTHON`` wins when set), so
    they import the same Coupler. ``master=None`` leaves the master to ``spark-submit``.
    ``lean_jvm``: a local session for split-task jobs only gets :data:`LEAN_JVM_OPTIONS`
    (not when ``conf`` sets ``spark.driver.extraJavaOptions``).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master and master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from coupler.translators.spark import register_data_sources

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    quiet = f"-Dlog4j2.configurationFile=file:{_log4j_config()}"
    if lean_jvm and master and master.startswith("local"):
        quiet = f"{quiet} {LEAN_JVM_OPTIONS}"
    for key, value in {**DEFAULT_CONF, "spark.driver.extraJavaOptions": quiet, **dict(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    register_data_sources(spark)
    return spark


# ---------------------------------------------------------------------------------------
# format specs


class BatchError(CouplerError):
    """A batch job cannot run as asked (bad spec, missing input, unknown adapter)."""


SPEC_KINDS = ("copybook", "xml", "avro", "jsonl", "parquet")


@dataclass(frozen=True)
class Spec:
    """A data format: ``copybook:FILE.cpy``, ``xml:FILE.xsd[#element]``, ``avro:NAME@V``,
    ``jsonl`` or ``parquet``."""

    kind: str
    path: str | None = None
    element: str | None = None
    format: str | None = None

    @classmethod
    def parse(cls, text: str, *, where: str = "spec") -> Spec:
        kind, _, rest = text.partition(":")
        kind = kind.strip().lower()
        if kind not in SPEC_KINDS:
            raise BatchError(
                f"unknown format {text!r}", where=where,
                hint="use copybook:FILE.cpy, xml:FILE.xsd[#element], avro:NAME@VERSION, jsonl or parquet",
            )
        if kind in ("jsonl", "parquet"):
            if rest:
                raise BatchError(f"{kind} takes no argument (got {text!r})", where=where)
            return cls(kind)
        if not rest:
            raise BatchError(f"{kind} needs an argument: {kind}:...", where=where,
                             hint="copybook:FILE.cpy, xml:FILE.xsd[#element], avro:NAME@VERSION")
        if kind == "avro":
            from coupler.canonical.format import FormatIndicator

            return cls(kind, format=FormatIndicator.parse(rest).ref)
        path, _, element = rest.partition("#")
        if not Path(path).is_file():
            raise BatchError(f"{kind} file {path} does not exist", where=where)
        return cls(kind, path=str(Path(path).resolve()), element=element or None)

    def __str__(self) -> str:
        if self.kind == "avro":
            return f"avro:{self.format}"
        if self.path:
            return f"{self.kind}:{self.path}" + (f"#{self.element}" if self.element else "")
        return self.kind


def _xsd_global_elements(spec: Spec) -> list[str]:
    from lxml import etree

    tree = etree.parse(spec.path)  # noqa: S320 - the user's own XSD
    return [str(e.get("name")) for e in tree.getroot() if isinstance(e.tag, str) and e.tag.endswith("}element")]


def _xml_row_tag(spec: Spec) -> str:
    if spec.element:
        return spec.element
    names = _xsd_global_elements(spec)
    if len(names) != 1:
        raise BatchError(
            f"{spec.path} declares {len(names)} global elements; name the record element",
            where=str(spec.path), hint=f"use xml:{spec.path}#ELEMENT (one of: {', '.join(n for n in names if n)})",
        )
    return str(names[0])


def read_input(spark: Any, spec: Spec, inputs: Sequence[str], options: Mapping[str, str], *, errors_path: str | None = None) -> Any:
    """The DataFrame of ``inputs`` read as ``spec``."""
    paths = [str(Path(p).resolve()) if "://" not in p else p for p in inputs]
    for p in paths:
        if "://" not in p and not Path(p).exists():
            raise BatchError(f"input {p} does not exist", where=p)
    if spec.kind == "copybook":
        reader = spark.read.format("copybook").option("copybook", spec.path)
        if errors_path:
            reader = reader.option("errors_path", errors_path)
        return reader.options(**options).load(paths)
    if spec.kind == "xml":
        tag = _xml_row_tag(spec)
        # Spark validates rows (-o rowValidationXSDPath=...) as stand-alone documents, which
        # fails for namespaced vocabularies; so the XSD names the record element, and rows
        # are validated only when asked
        df = spark.read.format("xml").option("rowTag", tag).options(**options).load(paths)
        if df.columns == ["_corrupt_record"]:
            raise BatchError(
                f"no <{tag}> element of the input could be read", where=str(spec),
                hint="check the record element after # and that the files are valid against the XSD",
            )
        return df
    if spec.kind == "jsonl":
        return spark.read.options(**options).json(paths)
    if spec.kind == "parquet":
        return spark.read.options(**options).parquet(*paths)
    raise BatchError(
        "reading canonical Avro on Spark is not supported yet", where=str(spec),
        hint="decode it with `coupler schema`, or keep the data as parquet",
    )


def write_output(df: Any, spec: Spec, output: str, options: Mapping[str, str]) -> None:
    """Write ``df`` to ``output`` as ``spec``, replacing what was there.

    Avro, Parquet and copybook outputs go through Coupler's writers (published atomically);
    JSON lines and XML through Spark's, into a staging folder swapped in when the job has
    succeeded (:func:`_staged`): a job killed half-way leaves the old output whole.
    """
    writer = df.write.mode("overwrite").options(**options)
    if spec.kind in ("jsonl", "xml") and "://" not in output:
        with _staged(output) as staging:
            _spark_write(writer, spec, staging)
        return
    _spark_write(writer, spec, output)


@contextlib.contextmanager
def _staged(output: str) -> Iterator[str]:
    """A hidden folder beside ``output`` (``.NAME.staging/<id>``, as Coupler's writers use) to
    write into; when the block succeeds it replaces ``output`` by renames (Spark's overwrite
    deletes the old output first, so a killed job would leave neither). What a killed job
    left is removed by the next one."""
    out = Path(output)
    root = out.parent / f".{out.name}.staging"
    shutil.rmtree(root, ignore_errors=True)
    job = root / uuid.uuid4().hex[:12]
    root.mkdir(parents=True)
    try:
        yield str(job)
        old = root / f"old-{job.name}"
        if out.exists():
            os.replace(out, old)
        os.replace(job, out)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _spark_write(writer: Any, spec: Spec, output: str) -> None:
    if spec.kind == "avro":
        writer.format("canonical-avro").option("format", spec.format).save(output)
    elif spec.kind == "copybook":
        writer.format("copybook").option("copybook", spec.path).save(output)
    elif spec.kind == "parquet":
        writer.format("coupler-parquet").save(output)
    elif spec.kind == "jsonl":
        writer.json(output)
    elif spec.kind == "xml":
        writer.format("xml").option("rowTag", _xml_row_tag(spec)).save(output)


def count_output(spark: Any, spec: Spec, output: str) -> int:
    """Records in a committed output."""
    from coupler.translators.spark.commit import read_manifest

    if spec.kind in ("avro", "copybook", "parquet"):
        manifest = read_manifest(output)
        return int(manifest.get("records", 0)) if manifest else 0  # type: ignore[call-overload]
    if spec.kind == "jsonl":
        return int(spark.read.json(output).count())
    return int(spark.read.format("xml").option("rowTag", _xml_row_tag(spec)).load(output).count())


_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(\w+Error): (.+)$")


def spark_error(exc: BaseException, where: str) -> BatchError:
    """A failed Spark job as one line: the Coupler error raised in a task when there was one."""
    text = str(exc)
    found = [m for line in text.splitlines() if (m := _ERROR_LINE.match(line.strip()))]
    coupler = [m for m in found if m.group(1) != "PythonException"]
    message = (coupler or found)[-1].group(2) if (coupler or found) else text.strip().splitlines()[0]
    return BatchError(f"Spark job failed: {message}", where=where, hint="run with --debug for Spark's log")


_JAVA_ERROR_LINE = re.compile(r"^(?::\s*)?(?:[\w$]+\.)*(\w+(?:Error|Exception)): (.+)$")


def spark_start_error(exc: BaseException, master: str) -> BatchError:
    """Spark that did not start (a ``--py-files``/``spark.files`` file missing, a port taken)
    as one line: the first Java or Python exception of its message."""
    text = str(exc)
    found = [m for line in text.splitlines() if (m := _JAVA_ERROR_LINE.match(line.strip()))]
    message = f"{found[0].group(1)}: {found[0].group(2)}" if found else (text.strip().splitlines() or [type(exc).__name__])[0]
    return BatchError(f"Spark did not start: {message}", where=f"--master {master}",
                      hint="check --master, --conf and spark-submit's options; --verbose shows Spark's log")


@contextlib.contextmanager
def spark_errors(src: Spec, dst: Spec) -> Iterator[None]:
    """Around a Spark job of ``src -> dst``: an exception from PySpark or py4j becomes one
    :class:`BatchError` line (:func:`spark_error`); Coupler's own errors and any other
    exception pass as raised."""
    try:
        yield
    except CouplerError:
        raise
    except Exception as exc:
        if type(exc).__module__.startswith(("pyspark", "py4j")):
            raise spark_error(exc, f"{src} -> {dst}") from exc
        raise


def count_errors(errors_path: str | None) -> int:
    if not errors_path or not Path(errors_path).is_dir():
        return 0
    total = 0
    for f in Path(errors_path).glob("*.jsonl"):
        with open(f, "rb") as fh:
            total += sum(1 for _ in fh)
    return total


# ---------------------------------------------------------------------------------------
# bulk translation


@dataclass
class BatchResult:
    """What a batch job did."""

    inputs: list[str]
    from_spec: str
    to_spec: str
    output: str
    records: int = 0
    errors: int = 0
    errors_output: str | None = None
    bytes_in: int = 0
    duration: float = 0.0
    started_at: float = 0.0
    batch_id: str | None = None
    archived: list[str] = field(default_factory=list)
    event_id: str | None = None
    #: Spark tasks the input was cut into (0 where Spark chose the DataFrame's partitions)
    partitions: int = 0

    @property
    def mb_per_s(self) -> float:
        return self.bytes_in / 1e6 / self.duration if self.duration > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["mb_per_s"] = round(self.mb_per_s, 2)
        return data


class MapRows:
    """A mapping applied to the rows of a partition (picklable; loads the file once per task).

    Rows travel as Python objects (``rdd.mapPartitions``), which needs no pandas, unlike
    ``mapInArrow``."""

    def __init__(self, path: str, direction: str, schema_dirs: Sequence[str] = (), schema_roots: Sequence[str] = ()):
        self.path = path
        self.direction = direction
        self.schema_dirs = list(schema_dirs)
        self.schema_roots = list(schema_roots)

    def __call__(self, rows: Any) -> Any:
        from coupler.canonical.registry import SchemaRegistry
        from coupler.translators.mapping import load_mapping

        registry = SchemaRegistry.default(self.schema_dirs)
        mapped = load_mapping(self.path, registry=registry, schema_roots=self.schema_roots).direction(self.direction)
        for row in rows:
            yield mapped.apply(row.asDict(recursive=True))


def _mapping_direction(mapping: str, src: Spec, schema_dirs: Sequence[str],
                       schema_roots: Sequence[str] = ()) -> tuple[str, Any]:
    from coupler.canonical.registry import SchemaRegistry
    from coupler.translators.mapping import load_mapping

    direction = "to_canonical" if src.kind in ("copybook", "xml") else "to_legacy"
    loaded = load_mapping(mapping, registry=SchemaRegistry.default(list(schema_dirs)), schema_roots=schema_roots)
    return direction, loaded


def _apply_mapping(df: Any, mapping: str | None, src: Spec, schema_dirs: Sequence[str] = (),
                   schema_roots: Sequence[str] = ()) -> Any:
    """``df`` through the field mapping ``mapping`` (legacy -> canonical, or back)."""
    if not mapping:
        return df
    from coupler.translators.spark.types import arrow_schema, spark_schema

    direction, loaded = _mapping_direction(mapping, src, schema_dirs, schema_roots)
    target = spark_schema(arrow_schema(loaded.direction(direction).target_schema))
    rows = df.rdd.mapPartitions(MapRows(str(Path(mapping).resolve()), direction, schema_dirs, schema_roots))
    return df.sparkSession.createDataFrame(rows, target)


def check_job(
    src: Spec,
    dst: Spec,
    inputs: Sequence[str],
    *,
    options: Mapping[str, str] | None = None,
    mapping: str | None = None,
    schema_dirs: Sequence[str] = (),
    schema_roots: Sequence[str] = (),
) -> None:
    """What can be checked before Spark starts (seconds of JVM start-up and its banner): the
    inputs exist, and what :func:`check_specs` checks."""
    if not inputs:
        raise BatchError("no input files", hint="name the files to translate")
    for p in inputs:
        if "://" not in p and not Path(p).exists():
            raise BatchError(f"input {p} does not exist", where=p, hint="check the path (globs are expanded by your shell)")
    check_specs(src, dst, options=options, mapping=mapping, schema_dirs=schema_dirs, schema_roots=schema_roots)


def check_specs(
    src: Spec,
    dst: Spec,
    *,
    options: Mapping[str, str] | None = None,
    mapping: str | None = None,
    schema_dirs: Sequence[str] = (),
    schema_roots: Sequence[str] = (),
) -> None:
    """What a job loads before its records, loaded as its run loads it (no Spark): the
    mapping (its ``xml:`` XSD reading its directory and ``schema_roots``), the XSD of an
    ``xml:`` source (its directory and :func:`xml_source_roots`, as :func:`translate`), the copybook and its reader options, the canonical schema of an
    ``avro:`` spec. ``schema_roots``: a site's (``SiteConfig.schema_roots``); none on the
    command line."""
    from coupler.canonical.registry import SchemaRegistry

    loaded_options = dict(options or {})
    if mapping:
        _direction, loaded = _mapping_direction(mapping, src, schema_dirs, schema_roots)
        loaded_options = {**{k: str(v) for k, v in loaded.legacy_options.items()}, **loaded_options}
    if src.kind == "xml":
        from coupler.translators.xml import XsdModel

        XsdModel.load(str(src.path), schema_roots=xml_source_roots(schema_roots))
    if src.kind == "copybook":
        from coupler.translators.copybook.options import CopybookOptions
        from coupler.translators.copybook.parser import parse_file
        from coupler.translators.spark.codec import SPARK_ONLY_OPTIONS

        CopybookOptions.from_mapping(loaded_options, ignore=SPARK_ONLY_OPTIONS)
        parse_file(str(src.path))
    registry = None
    for spec in (src, dst):
        if spec.kind == "avro" and spec.format:
            registry = registry or SchemaRegistry.default(list(schema_dirs))
            registry.resolve(spec.format)


def translate(
    spark: Any,
    from_spec: Spec | str,
    to_spec: Spec | str,
    inputs: Sequence[str],
    output: str,
    *,
    options: Mapping[str, str] | None = None,
    write_options: Mapping[str, str] | None = None,
    mapping: str | None = None,
    errors_output: str | None = None,
    schema_dirs: Sequence[str] = (),
    schema_roots: Sequence[str] = (),
) -> BatchResult:
    """Read ``inputs`` as ``from_spec``, write them to ``output`` as ``to_spec``.

    Bad records (copybook input) go to ``errors_output`` (default ``OUTPUT.errors``) as JSON
    lines with file, record, byte offset, field, raw bytes and reason. The output is replaced
    as a whole; Coupler's own writers publish it atomically. A job that fails (or is
    interrupted) publishes nothing: the old output is left as it was, and ``errors_output``,
    emptied as the job started, is removed. ``mapping`` (a mapping TOML
    file) maps every record, legacy -> canonical (or back for canonical input); its
    ``legacy_options`` are the default reader options. ``schema_dirs`` add schema folders
    to the registry (canonical entities of ``avro:`` specs and mappings); ``schema_roots``
    are the directories the XSDs of the mapping and of an ``xml:`` source may read besides
    their own (a site's ``SiteConfig.schema_roots``; without them the XML source reads the
    working directory: :func:`xml_source_roots`).
    """
    src = from_spec if isinstance(from_spec, Spec) else Spec.parse(from_spec, where="--from")
    dst = to_spec if isinstance(to_spec, Spec) else Spec.parse(to_spec, where="--to")
    if not inputs:
        raise BatchError("no input files", hint="name the files to translate")
    started = time.time()
    schema_dirs = [str(Path(d).resolve()) for d in schema_dirs]
    # Spark's Python workers (and its own writers) take a relative path from the JVM's working
    # directory, the one the session started in: a program that changed its own since (or runs
    # `coupler` in a session it has) would read and write elsewhere. Local paths are made whole.
    given_output = output
    inputs, output = [_whole_path(p) for p in inputs], _whole_path(output)
    mapping = mapping and _whole_path(mapping)
    errors_output = errors_output and _whole_path(errors_output)
    if mapping and src.kind == "copybook":
        _direction, loaded = _mapping_direction(mapping, src, schema_dirs, schema_roots)
        options = {**{k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in loaded.legacy_options.items()}, **dict(options or {})}
    write_options = dict(write_options or {})
    if schema_dirs and dst.kind == "avro":
        write_options.setdefault("schema_dirs", os.pathsep.join(schema_dirs))
    errors_path = errors_folder(src, output, errors_output)
    discard_errors(errors_path)
    result = BatchResult(
        inputs=[str(p) for p in inputs], from_spec=str(src), to_spec=str(dst), output=given_output, started_at=started,
    )
    try:
        return _run_translate(spark, src, dst, inputs, output, result, options=options, write_options=write_options,
                              mapping=mapping, errors_path=errors_path, schema_dirs=schema_dirs,
                              schema_roots=schema_roots, started=started)
    except BaseException:  # a failed job (a full disk), SIGTERM, Ctrl-C: no output was published, nor its reports
        discard_unpublished(output, errors_path)
        raise


def errors_folder(src: Spec, output: str, errors_output: str | None = None) -> str | None:
    """Where :func:`translate` puts the bad records of ``src`` (``errors_output``, else
    ``OUTPUT.errors`` for copybook input; None: nowhere)."""
    if errors_output:
        return _whole_path(errors_output)
    return _whole_path(output).rstrip("/") + ".errors" if src.kind == "copybook" else None


def discard_errors(errors_path: str | None) -> None:
    """Remove the errors folder of a job that starts (it is replaced whole)."""
    if errors_path and "://" not in errors_path:
        shutil.rmtree(errors_path, ignore_errors=True)


def discard_unpublished(output: str, errors_path: str | None) -> None:
    """Remove what a job on ``output`` that published nothing (it failed, or was stopped) left:
    its errors folder (:func:`errors_folder`), and the staging folder beside the output (its
    tasks' files, ``.NAME.staging``, as the next job on ``output`` would). :func:`translate`
    calls it as the job fails; a caller that then stops the session calls it again once it
    has (a task that Spark was still stopping may have written a file meanwhile)."""
    from coupler.translators.spark.commit import OutputCommitter

    discard_errors(errors_path)
    if "://" not in output:
        shutil.rmtree(OutputCommitter(_whole_path(output)).staging_root, ignore_errors=True)


def _run_translate(
    spark: Any, src: Spec, dst: Spec, inputs: Sequence[str], output: str, result: BatchResult, *,
    options: Mapping[str, str] | None, write_options: dict[str, str], mapping: str | None, errors_path: str | None,
    schema_dirs: Sequence[str], schema_roots: Sequence[str], started: float,
) -> BatchResult:
    """The job of :func:`translate`, its output and reports published when it succeeds."""
    if runs_as_split_tasks(src, dst, output, options=options, mapping=mapping) and src.kind == "copybook":
        result.records, result.partitions = _translate_direct(
            spark, src, dst, inputs, output, dict(options or {}), write_options, errors_path)
        return _finish_result(result, errors_path, inputs, started)
    if runs_as_split_tasks(src, dst, output, options=options, mapping=mapping):
        done = _translate_xml_direct(spark, src, dst, inputs, output, write_options,
                                     (options or {}).get("input_split_size_mb"), schema_roots)
        if done is not None:  # None: records Parquet cannot hold, read by Spark's XML reader below
            result.records, result.partitions = done
            return _finish_result(result, errors_path, inputs, started)
    with spark_errors(src, dst):
        df = read_input(spark, src, inputs, dict(options or {}), errors_path=errors_path)
        if src.kind == "copybook" and "_corrupt_record" in df.columns:
            df = df.drop("_corrupt_record")
        df = _apply_mapping(df, mapping, src, schema_dirs, schema_roots)
        log.info("batch translate %s -> %s: %d inputs", src, dst, len(inputs))
        write_output(df, dst, output, write_options)
    result.records = count_output(spark, dst, output)
    return _finish_result(result, errors_path, inputs, started)


def xml_source_roots(schema_roots: Sequence[str] = ()) -> tuple[str, ...]:
    """The directories the XSD of an ``xml:`` source may read besides its own: a site's
    ``schema_roots`` (``SiteConfig.schema_roots``), else the working directory (the command
    line's)."""
    return tuple(map(str, schema_roots)) if schema_roots else (os.getcwd(),)


def runs_as_split_tasks(
    src: Spec, dst: Spec, output: str, *, options: Mapping[str, str] | None = None, mapping: str | None = None,
) -> bool:
    """Whether :func:`translate` runs the job as split tasks (no DataFrame rows): copybook or
    XML files to Parquet or canonical Avro in a local folder, without a mapping (XML: and
    without reader options but ``input_split_size_mb``). An XML job whose records Parquet
    cannot hold still falls back to DataFrames."""
    if mapping or dst.kind not in ("parquet", "avro") or "://" in output:
        return False
    if src.kind == "copybook":
        return True
    return src.kind == "xml" and set(options or {}) <= {"input_split_size_mb"}


def _translate_direct(
    spark: Any, src: Spec, dst: Spec, inputs: Sequence[str], output: str,
    options: dict[str, str], write_options: dict[str, str], errors_path: str | None,
) -> tuple[int, int]:
    """Copybook files to Parquet or canonical Avro split by split (no DataFrame rows);
    returns the records written and the number of splits."""
    from coupler.translators.spark.avro_writer import resolve_schema
    from coupler.translators.spark.codec import CopybookCodec
    from coupler.translators.spark.direct import translate_splits
    from coupler.translators.spark.reader import input_paths

    paths = input_paths({"paths": json.dumps([str(Path(p).resolve()) for p in inputs])})
    codec = CopybookCodec(src.path, {**options, **({"errors_path": errors_path} if errors_path else {})})
    avro = indicator = None
    if dst.kind == "avro":
        avro, indicator = resolve_schema({**write_options, "format": dst.format}, None)
    with spark_errors(src, dst):
        manifest = translate_splits(spark, codec, paths, output, kind=dst.kind, avro_schema=avro, indicator=indicator)
    log.info("batch translate %s -> %s: %d splits, %d records", src, dst, manifest["partitions"], manifest["records"])
    return int(manifest["records"]), int(manifest["partitions"])


def _translate_xml_direct(
    spark: Any, src: Spec, dst: Spec, inputs: Sequence[str], output: str, write_options: dict[str, str],
    split_mb: str | None, schema_roots: Sequence[str] = (),
) -> tuple[int, int] | None:
    """XML files to Parquet or canonical Avro split by split of whole records, decoded
    by Coupler's XML translator (no DataFrame rows); the records written and the splits, or
    None when the XSD's records cannot be Parquet columns (a type containing itself).
    ``split_mb``: the option ``input_split_size_mb`` (default 16 MB: ``xml_splits.XML_SPLIT_BYTES``)."""
    from coupler.translators.spark.avro_writer import resolve_schema
    from coupler.translators.spark.reader import input_paths
    from coupler.translators.spark.types import SchemaMappingError
    from coupler.translators.spark.xml_splits import translate_xml_splits

    paths = input_paths({"paths": json.dumps([str(Path(p).resolve()) for p in inputs])})
    avro = indicator = None
    if dst.kind == "avro":
        avro, indicator = resolve_schema({**write_options, "format": dst.format}, None)
    try:
        with spark_errors(src, dst):
            split_bytes = int(float(split_mb) * 1024 * 1024) if split_mb else None
            manifest = translate_xml_splits(spark, str(src.path), _xml_row_tag(src), paths, output, kind=dst.kind,
                                            avro_schema=avro, indicator=indicator, split_bytes=split_bytes,
                                            codec=str(write_options.get("codec", "deflate")),
                                            schema_roots=xml_source_roots(schema_roots))
    except SchemaMappingError as exc:
        log.info("%s: %s; reading with Spark's XML reader", src, exc.message)
        return None
    log.info("batch translate %s -> %s: %d splits, %d records", src, dst, manifest["partitions"], manifest["records"])
    return int(manifest["records"]), int(manifest["partitions"])


def _whole_path(path: str) -> str:
    """``path`` from this process's working directory, unless it is a URL (``hdfs://...``)."""
    return path if "://" in path else os.path.abspath(path)


def _finish_result(result: BatchResult, errors_path: str | None, inputs: Sequence[str], started: float) -> BatchResult:
    result.errors = count_errors(errors_path)
    result.errors_output = errors_path if result.errors else None
    if errors_path and not result.errors:
        shutil.rmtree(errors_path, ignore_errors=True)
    result.bytes_in = sum(Path(p).stat().st_size for p in inputs if "://" not in p and Path(p).is_file())
    result.duration = time.time() - started
    return result
