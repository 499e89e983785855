"""The ``canonical-avro`` writer data source: a DataFrame as Avro container files.

``df.write.format("canonical-avro").option("format", "acme.Customer@2").save(OUT)`` writes
one Avro object container file per partition (fastavro; Spark's own Avro source is not
bundled with pyspark), with the canonical schema from the schema registry and the Format
Indicator in the file metadata (``coupler.format``). The output is committed atomically
(:mod:`.commit`): nothing is visible under ``OUT`` before every task has succeeded.

Options:

``format``
    the canonical entity ``name@version``; its schema comes from the registry (built-in
    schemas, plugin schema folders and ``schema_dirs``).
``schema_dirs``
    extra schema folders, separated by ``os.pathsep``.
``avro_schema``
    an Avro schema (JSON text) to use instead of a registered one (``format`` then only
    labels the files); without both, the schema is derived from the DataFrame.
``codec``
    ``deflate`` (default), ``null`` or any codec fastavro has.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

from coupler.canonical.errors import CouplerError
from coupler.canonical.format import FormatIndicator

from .commit import OutputCommitter, TaskFile, task_files
from .types import avro_schema_of_spark

FORMAT_METADATA_KEY = "coupler.format"


class AvroWriteError(CouplerError):
    """A DataFrame cannot be written as canonical Avro."""


class TaskFileMessage(TaskFile, WriterCommitMessage):
    """A task's staged file, as the commit message Spark collects."""


def output_path(options: Any, what: str) -> str:
    path = options.get("path")
    if not path:
        raise CouplerError(f"the {what} writer needs an output path", hint="call .save(PATH)")
    return str(path)


def write_mode(overwrite: bool) -> str:
    """Spark lets Python data sources write in ``append`` (its default) or ``overwrite`` mode."""
    return "overwrite" if overwrite else "append"


def resolve_schema(options: Any, spark_struct: Any) -> tuple[dict[str, Any], str | None]:
    """The Avro schema to write and the format indicator text (if any)."""
    fmt = options.get("format")
    indicator = FormatIndicator.parse(fmt).ref if fmt else None
    if options.get("avro_schema"):
        try:
            return json.loads(options["avro_schema"]), indicator
        except json.JSONDecodeError as exc:
            raise AvroWriteError(f"option avro_schema is not JSON: {exc}", where="avro_schema") from exc
    if fmt:
        from coupler.canonical.registry import SchemaRegistry

        dirs = [d for d in str(options.get("schema_dirs", "")).split(os.pathsep) if d]
        return SchemaRegistry.default(dirs).resolve(fmt).schema, indicator
    return avro_schema_of_spark(spark_struct, "Record"), None


class CanonicalAvroDataSource(DataSource):
    """Writer data source ``canonical-avro``."""

    @classmethod
    def name(cls) -> str:
        return "canonical-avro"

    def writer(self, schema: Any, overwrite: bool) -> CanonicalAvroWriter:
        avro, indicator = resolve_schema(self.options, schema)
        committer = OutputCommitter(output_path(self.options, "canonical-avro"), write_mode(overwrite), "avro")
        committer.check_target()
        return CanonicalAvroWriter(committer, avro, indicator, str(self.options.get("codec", "deflate")))


class CanonicalAvroWriter(DataSourceArrowWriter):
    def __init__(self, committer: OutputCommitter, schema: dict[str, Any], indicator: str | None, codec: str):
        self.committer = committer
        self.schema = schema
        self.indicator = indicator
        self.codec = codec

    def write(self, iterator: Iterator[Any]) -> TaskFileMessage:
        import fastavro

        parsed = fastavro.parse_schema(self.schema)
        path, final = self.committer.task_path()
        metadata = {FORMAT_METADATA_KEY: self.indicator} if self.indicator else {}
        count = 0

        def records() -> Iterator[dict[str, Any]]:
            nonlocal count
            for batch in iterator:
                rows = batch.to_pylist()
                count += len(rows)
                yield from rows

        with open(path, "wb") as fh:
            try:
                fastavro.writer(fh, parsed, records(), codec=self.codec, metadata=metadata, validator=False)
            except (ValueError, TypeError, KeyError) as exc:
                raise AvroWriteError(
                    f"a row does not fit the Avro schema {self.schema.get('name')}: {exc}",
                    where=self.indicator or str(self.schema.get("name")),
                    hint="map the data to the canonical schema first (--map)",
                ) from exc
        return TaskFileMessage(str(path), final, count, os.path.getsize(path))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self.committer.commit(task_files(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self.committer.abort()
