"""The built-in step types (registered through ``coupler_step_types`` by
:mod:`coupler.bus.runtime.steps.plugin`, like a third party's)."""

from __future__ import annotations

from typing import Any

from coupler.bus.config.models import Channel
from coupler.bus.model.selectors import SelectorError
from coupler.canonical import Envelope
from coupler.canonical.options import OptionsModel, Str, option

from .base import Step, StepContext, StepError, StepSetup
from .outcomes import Continue, Deliver, Discard, Outcome


class FilterOptions(OptionsModel):
    when: Str = option("Condition (expression language): a message that matches goes on.")
    otherwise: Channel | None = option(
        "Where a message that does not match goes (default: it is discarded, counted as `discarded` in /metrics).",
        default=None,
    )


class Filter(Step):
    """Message Filter: messages matching ``when`` go on; the others are discarded (counted) or
    go to ``otherwise``."""

    type_name = "filter"
    options_model = FilterOptions

    def __init__(self, options: FilterOptions, setup: StepSetup):
        super().__init__(options, setup)
        self.when = setup.condition(options.when)
        self.otherwise = options.otherwise

    def process(self, message: Envelope, ctx: StepContext) -> Outcome:
        if self.when(message):
            return Continue.one(message, "passed")
        if self.otherwise:
            return Deliver(((self.otherwise, message),), f"did not match: to {self.otherwise}")
        return Discard(f"did not match {self.when.text!r}")


class SetPropertiesOptions(OptionsModel):
    properties: dict[str, Str] = option(
        "Property name -> expression (a header, `properties.X`, `body.a.b`, `xpath('...')`); the value "
        "becomes the property's text.",
        example='properties = { region = "body.customer.region", order_no = "xpath(\'/order/@no\')" }',
    )
    required: bool = option(
        "A message lacking a field (or whose body cannot be read for it) goes to the Invalid Message Channel "
        "(false: the property is left unset).",
        default=False,
    )


class SetProperties(Step):
    """Set properties from fields of the message (body fields included), for the steps and
    consumers after it (selectors, correlation, idempotent keys)."""

    type_name = "set_properties"
    options_model = SetPropertiesOptions

    def __init__(self, options: SetPropertiesOptions, setup: StepSetup):
        super().__init__(options, setup)
        self.fields = [(name, setup.expression(text, f"properties.{name}")) for name, text in options.properties.items()]

    def process(self, message: Envelope, ctx: StepContext) -> Outcome:
        props = dict(message.properties)
        for name, expr in self.fields:
            try:
                value = expr.text_of(message)
            except SelectorError:  # a body of another kind has no such field
                if self.options.required:
                    raise
                value = None
            if value is None:
                if self.options.required:
                    raise StepError(f"message {message.message_id} has no {expr.text}")
                continue
            props[name] = value
        out = message.replace(properties=props)
        return Continue.one(out, ", ".join(f"{n}={props.get(n)}" for n, _ in self.fields))


class WireTapOptions(OptionsModel):
    to: Channel = option("The channel a copy of every message goes to.")
    when: Str | None = option("Only copy the messages matching this condition.", default=None)


class WireTap(Step):
    """Wire Tap: a copy of each message to another channel; the message goes on unchanged. The
    copy is sent in the same transaction, so it never fails the main flow on its own."""

    type_name = "wire_tap"
    options_model = WireTapOptions

    def __init__(self, options: WireTapOptions, setup: StepSetup):
        super().__init__(options, setup)
        self.when = setup.condition(options.when) if options.when else None

    def process(self, message: Envelope, ctx: StepContext) -> Outcome:
        if self.when is None or self.when(message):
            ctx.send(self.options.to, message.replace(), f"route:{ctx.route}:wire-tap")
            return Continue.one(message, f"copy to {self.options.to}")
        return Continue.one(message, "not copied")


BUILTIN_STEPS: dict[str, type[Step]] = {cls.type_name: cls for cls in (Filter, SetProperties, WireTap)}


def builtin_steps() -> dict[str, Any]:
    return dict(BUILTIN_STEPS)


__all__ = ["BUILTIN_STEPS", "Filter", "SetProperties", "WireTap"]
