"""Any record format to any other through the canonical model, streamed.

:func:`plan` puts the stages in order: read the input, map legacy -> canonical with a
mapping whose legacy side is the input's schema, convert between versions of the
canonical entity when two stages meet at different versions, map canonical -> legacy
with a mapping whose legacy side is the output's schema, write. :class:`Translation`
runs them record by record; a record that fails is reported (with its number) and
skipped, the others go on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coupler.canonical.errors import CouplerError

from .avrotypes import SchemaTypes, strip_docs
from .errors import MappingError, TranslateError
from .formats import InputError, RecordFormat
from .jsonvalues import coerce
from .mapping import TO_CANONICAL, TO_LEGACY, Mapping

log = logging.getLogger(__name__)

Stage = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Summary:
    """Counters of a translation."""

    read: int = 0
    written: int = 0
    errors: int = 0
    messages: list[str] = field(default_factory=list)


@dataclass
class Translation:
    """The stages between a source and a sink format."""

    source: RecordFormat
    sink: RecordFormat
    stages: list[tuple[str, Stage]]
    summary: Summary = field(default_factory=Summary)

    def describe(self) -> list[str]:
        return [name for name, _ in self.stages]

    def records(self, path: Path, report: Callable[[int, CouplerError | str], None],
                tick: Callable[[int], None] | None = None) -> Iterator[dict[str, Any]]:
        """The translated records of the input at ``path`` (bad ones reported, skipped);
        ``tick(n)`` is called after each input record (progress)."""
        for n, item in enumerate(self.source.read(path), 1):
            self.summary.read = n
            if tick is not None:
                tick(n)
            if isinstance(item, InputError):
                report(n, item.message)
                continue
            try:
                record = item
                for _name, stage in self.stages:
                    record = stage(record)
            except CouplerError as exc:
                report(n, exc)
                continue
            yield record

    def run(self, path: Path, output: Path, report: Callable[[int, CouplerError | str], None] | None = None,
            tick: Callable[[int], None] | None = None) -> Summary:
        """Translate the file at ``path`` into ``output``."""

        def counted(n: int, error: CouplerError | str) -> None:
            self.summary.errors += 1
            if report is not None:
                report(n, error)
            else:
                log.warning("record %d: %s", n, error)

        def at_input(_n: int, error: CouplerError | str) -> None:
            # a record the sink refuses is numbered as the input record it came from (the
            # sinks check each record as it is pulled, so the one read last)
            counted(self.summary.read, error)

        self.summary.written = self.sink.write(self.records(path, counted, tick), output, at_input)
        return self.summary


def plan(source: RecordFormat, sink: RecordFormat, mappings: Sequence[Mapping], *, registry: Any = None) -> Translation:
    """Order the stages between ``source`` and ``sink`` with ``mappings`` (0, 1 or 2)."""
    forward: Mapping | None = None
    backward: Mapping | None = None
    for mapping in mappings:
        direction = _direction_of(mapping, source, sink, forward, backward, len(mappings))
        if direction == TO_CANONICAL:
            forward = mapping
        else:
            backward = mapping
    stages: list[tuple[str, Stage]] = []
    # where the records are, as (schema, canonical ref or None)
    schema, ref = source.schema, source.spec.ref
    if schema is None:  # JSON lines: typed by the schema of the first stage that has one
        target = forward.legacy_schema if forward else backward.canonical_schema if backward else sink.schema
        if target is not None:
            types = SchemaTypes(target)
            stages.append(("coerce JSON", _coercer(types)))
    if forward is not None:
        stages.append((f"map {Path(forward.file).name} legacy -> canonical", forward.direction(TO_CANONICAL).apply))
        schema, ref = forward.canonical_schema, forward.canonical_ref
    meets = backward.canonical_ref if backward else (sink.spec.ref if sink.spec.kind == "avro" else None)
    if ref and meets and ref != meets:
        stages.append((f"convert {ref} -> {meets}", _converter(registry, ref, meets)))
    elif backward is not None and schema is not None and strip_docs(schema) != strip_docs(backward.canonical_schema) and not (ref and ref == meets):
        raise TranslateError(
            f"the records reach {Path(backward.file).name} as {ref or 'a different schema'}, "
            f"but it maps {backward.canonical_ref or 'another entity'}",
            hint="the two mappings must share the canonical entity",
        )
    if backward is not None:
        stages.append((f"map {Path(backward.file).name} canonical -> legacy", backward.direction(TO_LEGACY).apply))
    return Translation(source, sink, stages)


def _direction_of(mapping: Mapping, source: RecordFormat, sink: RecordFormat, forward: Mapping | None,
                  backward: Mapping | None, count: int) -> str:
    legacy = strip_docs(mapping.legacy_schema)
    from_matches = source.schema is not None and strip_docs(source.schema) == legacy
    to_matches = sink.schema is not None and strip_docs(sink.schema) == legacy
    if from_matches and forward is None:
        return TO_CANONICAL
    if to_matches and backward is None:
        return TO_LEGACY
    subject = (mapping.canonical_ref or "").split("@")[0]
    if source.spec.kind in ("avro", "jsonl") and backward is None and (
        source.spec.kind == "jsonl" or (source.spec.ref or "").split("@")[0] == subject
    ) and count == 1:
        return TO_LEGACY
    if sink.spec.kind in ("avro", "jsonl") and forward is None and (
        sink.spec.kind == "jsonl" or (sink.spec.ref or "").split("@")[0] == subject
    ):
        return TO_CANONICAL
    raise MappingError(
        f"its legacy side ({mapping.legacy_spec or 'the schema given'}) is neither the records of "
        f"--from {source.spec.text} nor of --to {sink.spec.text}",
        where=mapping.file,
        hint="a mapping applies where its legacy schema is the input's or the output's",
    )


def _coercer(types: SchemaTypes) -> Stage:
    def stage(record: dict[str, Any]) -> dict[str, Any]:
        try:
            return coerce(record, types.root, types)
        except ValueError as exc:
            raise TranslateError(f"the JSON record does not fit the schema: {exc}") from None

    return stage


def _converter(registry: Any, from_ref: str, to_ref: str) -> Stage:
    if registry is None:
        from coupler.canonical.registry import SchemaRegistry

        registry = SchemaRegistry.default()
    return lambda record: registry.convert(record, from_ref, to_ref)
