"""Transform: Message Translator, Content Filter and Normalizer as one step type.

A transform does one of (or, for a Normalizer, chooses by ``cases``):

* ``to_format = "NAME@V"``: a format conversion between versions of a canonical entity by the
  schema registry (Avro or JSON bodies);
* ``mapping = "FILE"``: a field mapping (docs/mappings.md), ``direction = "to_canonical"``
  (a legacy record -> the canonical entity in Avro binary, as an inbound adapter's mapping does)
  or ``"to_legacy"`` (canonical -> the legacy record, written by ``translator``, as an outbound
  adapter's mapping does);
* ``fields = [...]``: Content Filter: only these fields of the body are kept (a JSON body, or
  an Avro body converted to JSON).

The same stages run the mappings of adapters (:mod:`coupler.bus.runtime.stages`,
:mod:`coupler.bus.runtime.translation`); a message they cannot translate is invalid.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from coupler.bus.config.loader import AdapterConfig, ConfigError
from coupler.bus.config.models import Indicator
from coupler.bus.model.commands import CommandFault
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError
from coupler.canonical.options import OptionsModel, Str, option

from .base import Step, StepContext, StepError, StepSetup
from .outcomes import Continue, Outcome

_DIRECTION_DOC = "With `mapping`: `to_legacy` (canonical -> legacy record) or `to_canonical` (legacy record -> canonical)."


class TransformCase(OptionsModel):
    """One case of a Normalizer: the first case whose `when` matches transforms the message."""

    when: Str | None = option("Condition (expression language); a case without one always matches.", default=None)
    to_format: Indicator | None = option("Convert to this version of the entity (NAME@V).", default=None)
    mapping: Str | None = option("Field mapping file, relative to site.toml.", default=None)
    direction: Literal["to_legacy", "to_canonical"] = option(_DIRECTION_DOC, default="to_legacy")
    translator: Str | None = option("With `mapping` to_legacy: how the legacy record is written (copybook, xml, json).",
                                    default=None)
    fields: tuple[Str, ...] | None = option("Content Filter: keep only these (dotted) body fields.", default=None)


class TransformOptions(TransformCase):
    cases: tuple[TransformCase, ...] = option(
        "Normalizer: several transforms, the first case whose `when` matches applies (a message no case "
        "matches goes on unchanged).",
        example=(
            "[[routes.steps.cases]]\n"
            "when = \"format.name = 'partner_a.Order'\"\n"
            'mapping = "partner-a.toml"\n'
            'direction = "to_canonical"\n'
        ),
        default=(),
    )


class Transform(Step):
    """Message Translator / Content Filter / Normalizer."""

    type_name = "transform"
    options_model = TransformOptions

    def __init__(self, options: TransformOptions, setup: StepSetup):
        super().__init__(options, setup)
        self.cases: list[tuple[Any, Callable[[Envelope], Envelope], str]] = []
        if options.cases:
            if _has_transform(options) or options.when:
                raise setup.problem("cases", "a transform with `cases` has its transforms in the cases only")
            for i, case in enumerate(options.cases):
                when = setup.condition(case.when, f"cases[{i}].when") if case.when else None
                self.cases.append((when, _compile(case, setup, f"cases[{i}]."), _describe(case)))
        else:
            if not _has_transform(options):
                raise setup.problem("type", "a transform needs `to_format`, `mapping`, `fields` or `cases`")
            when = setup.condition(options.when) if options.when else None
            self.cases.append((when, _compile(options, setup, ""), _describe(options)))

    def process(self, message: Envelope, ctx: StepContext) -> Outcome:
        for when, transform, what in self.cases:
            if when is None or when(message):
                return Continue.one(transform(message), what)
        return Continue.one(message, "no case matched: unchanged")


def _has_transform(case: TransformCase) -> bool:
    return bool(case.to_format or case.mapping or case.fields)


def _describe(case: TransformCase) -> str:
    if case.mapping:
        return f"mapping {case.mapping} {case.direction}"
    if case.to_format:
        return f"to {case.to_format}"
    return f"fields {', '.join(case.fields or ())}"


def _compile(case: TransformCase, setup: StepSetup, prefix: str) -> Callable[[Envelope], Envelope]:
    if sum(1 for x in (case.mapping, case.fields) if x) > 1:
        raise setup.problem(f"{prefix}fields", "a transform maps or filters fields, not both")
    if case.fields:
        return _content_filter(case.fields, setup, FormatIndicator.parse(case.to_format) if case.to_format else None)
    config = AdapterConfig.model_validate({
        "name": setup.name, "type": "transform", "mapping": case.mapping, "format": case.to_format,
        "translator": case.translator,
    })
    try:
        if case.mapping and case.direction == "to_canonical":
            from coupler.bus.plugins.manager import mapping_functions
            from coupler.bus.runtime.stages import InboundTranslation

            functions = mapping_functions(setup.plugins) if setup.plugins is not None else None
            inbound = InboundTranslation.for_adapter(config, setup.registry(), setup.site_dir, functions,
                                                     schema_dirs=setup.schema_dirs)
            assert inbound is not None
            return _guarded(inbound)
        from coupler.bus.plugins.manager import translator_types
        from coupler.bus.runtime.translation import OutboundTranslation
        from coupler.translators.mapping.writers import BUILTIN_TRANSLATORS

        translators = translator_types(setup.plugins) if setup.plugins is not None else dict(BUILTIN_TRANSLATORS)
        outbound = OutboundTranslation.for_adapter(config, setup.registry(), setup.site_dir, translators,
                                                   schema_dirs=setup.schema_dirs)
        assert outbound is not None
        return _guarded(outbound.envelope)
    except ConfigError as exc:  # its problems name adapters[NAME]: they are this step's keys
        here = f"adapters[{setup.name}]"
        raise ConfigError([str(p).replace(here, setup.key_path + (f".{prefix.rstrip('.')}" if prefix else ""))
                           for p in exc.problems]) from None


def _guarded(stage: Callable[[Envelope], Envelope]) -> Callable[[Envelope], Envelope]:
    def run(message: Envelope) -> Envelope:
        try:
            return stage(message)
        except CommandFault as exc:
            raise StepError(str(exc)) from None
        except CouplerError as exc:
            raise StepError(f"message {message.message_id} cannot be transformed: {exc}") from None

    return run


def _content_filter(fields: tuple[str, ...], setup: StepSetup, out: FormatIndicator | None) -> Callable[[Envelope], Envelope]:
    paths = [tuple(f.removeprefix("body.").split(".")) for f in fields]
    reader = setup.body_reader()

    def keep(message: Envelope) -> Envelope:
        record = reader.record(message)
        if not isinstance(record, dict):
            raise StepError(f"message {message.message_id}: its body is not a record")
        kept: dict[str, Any] = {}
        for path in paths:
            value: Any = record
            for part in path:
                value = value.get(part) if isinstance(value, dict) else None
            if value is None:
                continue
            node = kept
            for part in path[:-1]:
                node = node.setdefault(part, {})
            node[path[-1]] = value
        fmt = out or FormatIndicator(message.format.name, message.format.version, "application/json")
        if fmt.content_type == "avro/binary":
            body = setup.registry().encode(kept, fmt)
        else:
            body = json.dumps(kept, sort_keys=True, default=str).encode()
        return message.replace(format=fmt, body=body)

    return keep


__all__ = ["Transform"]
