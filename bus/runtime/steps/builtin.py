"""The built-in step types (registered through ``coupler_step_types`` by
:mod:`coupler.bus.runtime.steps.plugin`, like a third party's)."""

from __future__ import annotations

import re

from coupler.bus.config.models import Channel
from coupler.bus.model.names import is_channel_name
from coupler.bus.model.selectors import SelectorError
from coupler.canonical import Envelope
from coupler.canonical.options import Bool, OptionsModel, Str, option

from .base import Step, StepContext, StepError, StepSetup
from .outcomes import Continue, Deliver, Discard, Invalid, Outcome


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
        out = message.replace()  # a copy; its properties are its own, and what is set is text
        props = out.properties
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




# -- routing -------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


class DynamicRouterOptions(OptionsModel):
    channel: Str | None = option(
        "The target channel, with `{expression}` placeholders computed from each message "
        "(`orders.{body.customer.region}`, `{properties.target}`).",
        example='channel = "orders.{body.customer.region}"',
        default=None,
    )
    identity: Str | None = option(
        "Instead of `channel`: an application identity pattern (`class/provider/name@version`, with "
        "placeholders: `crm/{body.provider}`) resolved in the identity registry; the message goes to the "
        "channel of the outbound adapter registered with the most specific matching identity.",
        default=None,
    )
    allowed: tuple[Channel, ...] = option(
        "When set, the only channels it may compute; any other goes to `otherwise` (or the dead letters).",
        default=(),
    )
    otherwise: Channel | None = option(
        "Where a message goes whose channel cannot be computed (a field missing, not an allowed or valid "
        "channel name, no adapter with that identity); default: the Invalid Message Channel.",
        default=None,
    )


class DynamicRouter(Step):
    """Dynamic Router: the target channel computed from the message, or found in the identity
    registry (Application identity addressing)."""

    type_name = "dynamic_router"
    options_model = DynamicRouterOptions

    def __init__(self, options: DynamicRouterOptions, setup: StepSetup):
        super().__init__(options, setup)
        if (options.channel is None) == (options.identity is None):
            raise setup.problem("channel", "a dynamic router needs `channel` or `identity` (one of them)")
        template = options.channel if options.channel is not None else options.identity
        assert template is not None
        key = "channel" if options.channel is not None else "identity"
        self.parts = _PLACEHOLDER.split(template)  # text, expression, text, ...
        self.fields = {text: setup.expression(text.strip(), key) for text in self.parts[1::2]}

    def process(self, message: Envelope, ctx: StepContext) -> Outcome:
        out = []
        for i, part in enumerate(self.parts):
            if i % 2 == 0:
                out.append(part)
                continue
            value = self.fields[part].text_of(message)
            if value is None:
                return self._cannot(message, f"message {message.message_id} has no {part.strip()}")
            out.append(value)
        text = "".join(out)
        if self.options.identity is not None:
            channel = self._by_identity(text)
            if channel is None:
                return self._cannot(message, f"no outbound adapter with a channel is registered for identity {text!r}")
        else:
            channel = text
        if not is_channel_name(channel) or (self.options.allowed and channel not in self.options.allowed):
            return self._cannot(message, f"{channel!r} is not a channel it may route to")
        return Deliver(((channel, message),), f"to {channel}")

    def _by_identity(self, text: str) -> str | None:
        from coupler.bus.model.identities import Identity, IdentityError

        transport = self.setup.transport
        if transport is None:
            return None
        try:
            pattern = Identity.parse(text)
        except IdentityError:
            return None
        for reg in transport.identities.matches(pattern):
            channel = self.setup.adapter_channels.get(reg.adapter or "")
            if channel:
                return channel
        return None

    def _cannot(self, message: Envelope, why: str) -> Outcome:
        if self.options.otherwise:
            return Deliver(((self.options.otherwise, message),), f"{why}: to {self.options.otherwise}")
        return Invalid(why)


#: the property carrying a Routing Slip (channels separated by commas)
ROUTING_SLIP = "coupler.routing-slip"


class RoutingSlipOptions(OptionsModel):
    attach: tuple[Channel, ...] = option(
        "The slip given to a message that carries none (the channels it is to visit, in order).", default=()
    )
    property: Str = option("The property holding the slip (channels separated by commas).", default=ROUTING_SLIP)


class RoutingSlip(Step):
    """Routing Slip: a message visits the channels of its slip in order. This step sends it to
    the next channel of its slip (and takes that channel off); a message whose slip is done goes
    on (to the route's `to`). Each route reading a channel of the slip ends with this step."""

    type_name = "routing_slip"
    options_model = RoutingSlipOptions

    def process(self, message: Envelope, ctx: StepContext) -> Outcome:
        key = self.options.property
        carried = message.properties.get(key)
        slip = [c.strip() for c in carried.split(",") if c.strip()] if carried is not None else list(self.options.attach)
        if not slip:
            props = {k: v for k, v in message.properties.items() if k != key}
            return Continue.one(message.replace(properties=props), "slip done")
        bad = [c for c in slip if not is_channel_name(c)]
        if bad:
            return Invalid(f"routing slip {', '.join(slip)}: {bad[0]!r} is not a channel name")
        following = slip[1:]
        props = dict(message.properties)
        if following:
            props[key] = ",".join(following)
        else:
            props[key] = ""
        return Deliver(((slip[0], message.replace(properties=props)),), f"to {slip[0]} (then {', '.join(following) or 'done'})")


class DetourOptions(OptionsModel):
    to: Channel = option("Where messages go while the detour is on (a route that inspects, tests or validates them).")
    on: Bool = option(
        "Whether it starts switched on; `coupler ctl detour ROUTE on|off --step NAME` switches it at run time.",
        default=False,
    )


class Detour(Step):
    """Detour: while switched on (Control Bus, CLI, console), messages go to `to` instead of on."""

    type_name = "detour"
    options_model = DetourOptions

    def __init__(self, options: DetourOptions, setup: StepSetup):
        super().__init__(options, setup)
        self.key = setup.state_scope
        setup.switches.set(self.key, setup.switches.get(self.key, options.on))

    def process(self, message: Envelope, ctx: StepContext) -> Outcome:
        if self.setup.switches.get(self.key, self.options.on):
            return Deliver(((self.options.to, message),), f"detour on: to {self.options.to}")
        return Continue.one(message, "detour off")


class ExpireOptions(OptionsModel):
    to: Channel | None = option(
        "Where expired messages go (default: they are dropped, counted as `expired` in /metrics).", default=None
    )


class Expire(Step):
    """Message Expiration: a message past its `expires_at` does not go on."""

    type_name = "expire"
    options_model = ExpireOptions

    def process(self, message: Envelope, ctx: StepContext) -> Outcome:
        if not message.is_expired():
            return Continue.one(message, "not expired")
        assert message.expires_at is not None
        if self.options.to:
            return Deliver(((self.options.to, message),), f"expired: to {self.options.to}")
        return Discard(f"expired at {message.expires_at.isoformat()}", counter="expired")


def _all_types() -> dict[str, type[Step]]:
    from .split import Split
    from .transform import Transform

    types: list[type[Step]] = [Filter, SetProperties, WireTap, Split, Transform, DynamicRouter, RoutingSlip, Detour, Expire]
    return {cls.type_name: cls for cls in types}


#: the built-in step types by name
BUILTIN_STEPS: dict[str, type[Step]] = _all_types()

__all__ = ["BUILTIN_STEPS", "Detour", "DynamicRouter", "Expire", "Filter", "RoutingSlip", "SetProperties", "WireTap"]
