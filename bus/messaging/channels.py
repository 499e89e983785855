"""Channels over a :class:`~coupler.bus.transport.base.Transport`.

* :class:`PointToPointChannel` — a queue; competing consumers each get different messages.
* :class:`PublishSubscribeChannel` — a topic; every durable subscription keeps its own copy.
* :class:`DatatypeChannel` — a channel bound to one canonical format name. Senders may send
  any version of that entity; each consumer declares the version it reads and receives the
  message converted to it by the schema registry. A message of another entity, or one whose
  version cannot be converted, goes to the Invalid Message Channel with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from coupler.bus.model.selectors import Selector
from coupler.bus.transport.base import Delivery, Transport, TransportError
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError
from coupler.canonical.format import AVRO_BINARY


class PointToPointChannel:
    """A queue: each message is processed by one consumer at a time."""

    def __init__(self, transport: Transport, name: str, **settings: Any):
        self.transport = transport
        self.name = name
        if settings:
            transport.declare(name, kind="queue", **settings)

    def send(self, envelopes: Envelope | Iterable[Envelope], *, component: str = "bus") -> list[str]:
        return self.transport.send(self.name, envelopes, component=component)

    def receive(
        self,
        consumer: str,
        *,
        max: int = 1,
        wait: float = 0.0,
        lease_seconds: float | None = None,
        selector: Selector | str | None = None,
    ) -> list[Delivery]:
        return self.transport.receive_wait(
            self.name, consumer, max=max, wait=wait, lease_seconds=lease_seconds, selector=selector
        )


class PublishSubscribeChannel:
    """A topic: every message goes to every durable subscription (matching its selector)."""

    def __init__(self, transport: Transport, name: str, **settings: Any):
        self.transport = transport
        self.name = name
        transport.declare(name, kind="topic", **settings)

    def publish(self, envelopes: Envelope | Iterable[Envelope], *, component: str = "bus") -> list[str]:
        return self.transport.send(self.name, envelopes, component=component)

    def subscribe(self, subscription: str, *, selector: str | None = None) -> PointToPointChannel:
        """A durable subscription: its messages wait in a queue of their own until consumed."""
        channel = self.transport.subscribe(self.name, subscription, selector=selector)
        return PointToPointChannel(self.transport, channel)

    def unsubscribe(self, subscription: str) -> None:
        self.transport.unsubscribe(self.name, subscription)


class DatatypeChannel:
    """A channel that carries one canonical entity (``format_name``), in any of its versions."""

    def __init__(self, transport: Transport, name: str, format_name: str, registry: Any, **settings: Any):
        """Bind ``name`` to ``format_name``; ``settings`` change the channel's other settings
        (``dead_letter``, ``backoff``...), the ones not given keep their current values."""
        self.transport = transport
        self.name = name
        self.format_name = format_name
        self.registry = registry
        try:
            registry.versions(format_name)
        except CouplerError as exc:
            raise TransportError(
                f"datatype channel {name}: unknown canonical format {format_name}: {exc}",
                hint="register the schema or bind the channel to a known format",
            ) from exc
        # merge with what the channel already is (kind, dead-letter queues, backoff, lease):
        # binding a format must not reset the rest of its configuration
        current = transport.channel_config(name)
        if settings or current.format != format_name:
            transport.declare(name, current, format=format_name, **settings)

    def send(self, envelopes: Envelope | Iterable[Envelope], *, component: str = "bus") -> list[str]:
        """Send; envelopes of another entity are refused (Invalid Message Channel) right away."""
        envs = [envelopes] if isinstance(envelopes, Envelope) else list(envelopes)
        good = []
        for env in envs:
            if env.format.name != self.format_name:
                self.transport.invalid(
                    env,
                    f"datatype channel {self.name} carries {self.format_name}, not {env.format.name}",
                    component,
                    channel=self.name,
                )
            else:
                good.append(env)
        self.transport.send(self.name, good, component=component)
        return [e.message_id for e in good]

    def receive(
        self,
        consumer: str,
        version: int,
        *,
        max: int = 1,
        wait: float = 0.0,
        lease_seconds: float | None = None,
        component: str | None = None,
        selector: Selector | str | None = None,
    ) -> list[Delivery]:
        """Receive messages converted to ``format_name@version`` (those matching ``selector``,
        a Selective Consumer: looked at before the conversion).

        A message that cannot be converted is moved to the Invalid Message Channel with the
        reason (and not returned), recorded as failed in ``component`` (the consumer's name
        when not given; the daemon passes ``adapter:<name>``); the others come back
        converted, their format header set to the consumer's version and a Message History
        entry recording the conversion.
        """
        target = FormatIndicator(self.format_name, version)
        self.registry.get(self.format_name, version)  # the consumer's version must exist
        got = self.transport.receive_wait(
            self.name, consumer, max=max, wait=wait, lease_seconds=lease_seconds, selector=selector
        )
        out = []
        for delivery in got:
            env = delivery.envelope
            reason = self._convert(env, target)
            if reason is not None:
                self.transport.invalid(
                    env, reason, component or consumer, channel=self.name, delivery=delivery
                )
                continue
            out.append(delivery)
        return out

    def _convert(self, env: Envelope, target: FormatIndicator) -> str | None:
        if env.format.name != self.format_name:
            return f"datatype channel {self.name} carries {self.format_name}, not {env.format.name}"
        if env.format.version == target.version:
            return None
        if env.format.content_type != AVRO_BINARY:
            return (
                f"cannot convert {env.format} to version {target.version}: only avro/binary "
                f"bodies are converted, this one is {env.format.content_type}"
            )
        try:
            env.body = self.registry.convert_body(env.body, env.format, target)
        except CouplerError as exc:
            return f"incompatible version: {exc.message}"
        before = env.format
        env.format = target
        env.record_hop(f"datatype:{self.name}", f"convert {before.ref} -> {target.ref}")
        return None
