"""The adapter contract: the :class:`Adapter` base class, its halves (:class:`InboundAdapter`,
a source polled by the bus's :class:`~coupler.bus.model.polling.Poller`;
:class:`OutboundAdapter`, a sink with ``deliver``) and the :class:`AdapterContext` the daemon
gives each adapter (re-exported to adapters by :mod:`coupler.bus.api`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from coupler.bus.model.commands import Command, CommandFault, Reply
from coupler.bus.model.files import FileState
from coupler.bus.model.polling import Polled, Poller
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.options import OptionsModel, validate_options

#: values of ``health()["status"]``, from good to bad
HEALTH_STATES = ("ok", "degraded", "down")


class AdapterContext(Protocol):
    """What the bus gives an adapter: publish, reply, request, logger, config, data dir."""

    name: str
    #: the adapter's options (``[adapters.options]`` of site.toml)
    config: dict[str, Any]
    #: a directory of its own for state (offsets, temporary files)
    data_dir: Path
    #: the directory of site.toml: relative paths in options are relative to it
    site_dir: Path
    logger: logging.Logger
    #: where common commands go (site.toml ``commands.channel``)
    command_channel: str

    def publish(self, envelope: Envelope, channel: str | None = None) -> str:
        """Send a message durably (to ``channel`` or the adapter's channel); returns its id.

        The body is what the adapter read from its legacy system; when site.toml declares
        ``wrappers`` or a ``mapping`` for the adapter, the bus unwraps and translates it to
        the canonical entity first. Raises :class:`InvalidMessage` when it cannot (the message
        is then in the Invalid Message Channel with the reason)."""
        ...

    def publish_many(self, envelopes: Sequence[Envelope], channel: str | None = None, *,
                     reasons: list[str] | None = None, recorded: list[bool] | None = None) -> list[str | None]:
        """:meth:`publish` for a batch, in one transaction of the store (one disk sync for
        all): every message is durable when it returns, or none is (it raises). An envelope
        the bus cannot translate is in the Invalid Message Channel and its entry is None (its
        reason appended to ``reasons`` when given; to ``recorded`` whether this call made its
        dead letter, False when a refusal of the same unit read before made it: an adapter
        that reads a unit again after a rollback counts it once); the others are the message
        ids, in order.
        For adapters that read many units at once (rows of a table) and remember their
        progress per batch, or that gather concurrent requests into one commit (http)."""
        ...

    def durable_later(self) -> AbstractContextManager[Callable[[], None]]:
        """``with context.durable_later() as durable: context.publish_many(...)``: the
        publishes inside the block may return once the store committed them, before they are
        on disk; ``durable()`` (from any thread, after the block) returns once they all are.
        For an adapter that remembers its progress elsewhere (rows marked in its database):
        it waits for ``durable()`` before it commits that, and reads what comes next meanwhile.
        Stores whose publishes are durable on return give a ``durable`` that returns at once."""
        ...

    def reply(self, request: Envelope, reply: Envelope) -> None:
        """Send ``reply`` to ``request``'s return address, correlated to it."""
        ...

    def request(self, envelope: Envelope, channel: str, timeout: float | None = None) -> Envelope:
        """Request-reply: send ``envelope`` to ``channel`` and wait for the correlated reply."""
        ...

    def heartbeat(self) -> None:
        """Record that the adapter is alive (shown by ``coupler ctl adapters``)."""
        ...

    def invalid(self, message: Envelope | bytes, reason: str) -> int:
        """Send what the adapter cannot read (an envelope, or the raw bytes it received) to the
        Invalid Message Channel with ``reason``; returns the dead letter's id."""
        ...

    def invalid_once(self, message: Envelope | bytes, reason: str, key: str) -> int | None:
        """:meth:`invalid`, unless this adapter recorded ``key`` with an earlier call within
        the store's idempotency window (``store.idempotency_window_seconds``): then nothing,
        and None. The dead letter and ``key`` are one transaction of the store, so a unit the
        adapter reads again because its own progress was rolled back after the dead letter
        was made (a table's rows whose transaction failed) is in the Invalid Message Channel
        once. ``key`` names the unit and its content (a changed unit is a new key)."""
        ...

    def resolve_path(self, path: str | Path) -> Path:
        """``path`` (``~`` expanded) made absolute against :attr:`site_dir`."""
        ...

    def file_state(self, name: str | None = None) -> FileState:
        """The durable seen-state of adapter ``name`` (default: this one); the caller closes
        it. Every daemon of a multi-node site shares it (PostgreSQL); else it is
        ``files.db`` in the adapter's :attr:`data_dir`."""
        ...

    def remember(self, scope: str, key: str, ttl: float) -> bool:
        """A replay cache in the site's store: record ``key`` in ``scope`` (site-wide, shared
        by every adapter and every daemon of the site) for ``ttl`` seconds; False when it was
        recorded within the last ``ttl`` seconds (e.g. a WS-Security nonce used twice)."""
        ...


class Adapter:
    """Base class of Channel Adapters.

    ``commands`` are the common commands it serves; ``directions`` is a subset of
    ``{"inbound", "outbound"}``. Serve a command by overriding ``on_<command>`` (``on_send``
    delivers the command's document through :meth:`deliver` by default).
    """

    type_name: ClassVar[str] = ""
    commands: ClassVar[tuple[str, ...]] = ("ping", "describe")
    directions: ClassVar[tuple[str, ...]] = ()
    #: option keys holding file or directory paths, dotted for nested tables (``"tls.cert"``);
    #: the daemon makes relative ones absolute against the directory of site.toml
    path_options: ClassVar[tuple[str, ...]] = ()
    #: the model of the type's ``[adapters.options]`` (a :class:`coupler.canonical.options.OptionsModel`):
    #: the site loader checks every adapter's options against it, so that a misspelled or wrong
    #: option is reported when the site loads, with the site's other problems; the generated
    #: configuration reference lists its fields. :meth:`parse_options` gives the typed options.
    options_model: ClassVar[type[OptionsModel] | None] = None

    #: which way documents flow for this instance: ``inbound``, ``outbound`` or ``both``
    #: (site.toml ``direction``, the one source of it; the daemon sets it before ``start``)
    direction: str = "both"
    #: command targets it serves besides its name (site.toml ``targets``)
    targets: tuple[str, ...] = ()
    #: application identity ``{class, provider, name, version}`` (site.toml ``identity``)
    identity: dict[str, str] | None = None
    #: inbound: where it publishes; outbound: whose documents it delivers
    channel: str | None = None
    #: format indicator of the documents it produces or reads (site.toml ``format``)
    format: FormatIndicator | None = None

    def __init__(self, name: str, options: dict[str, Any], context: AdapterContext | None = None):
        self.name = name
        self.options = dict(options)
        self.context = context

    @classmethod
    def parse_options(cls, name: str, options: dict[str, Any]) -> Any:
        """``options`` as the type's :attr:`options_model`, or an :class:`OptionsError` listing
        every problem with its key path (``adapters[NAME].options.KEY``)."""
        if cls.options_model is None:
            raise TypeError(f"{cls.__name__} declares no options_model")
        return validate_options(cls.options_model, options, prefix=f"adapters[{name}].options")

    # -- lifecycle ---------------------------------------------------------------------------

    def supported_directions(self) -> tuple[str, ...]:
        """The directions this instance can take (its type's ``directions``; a type whose
        mode decides, such as a server or a client, narrows them). The daemon refuses a
        site.toml ``direction`` outside them at load."""
        return tuple(self.directions)

    def start(self) -> None:
        """Open connections and start work; raise :class:`CouplerError` when it cannot."""

    def stop(self) -> None:
        """Finish in-flight work and release resources."""

    def stop_inbound(self) -> None:  # noqa: B027 - optional for adapters with an inbound side
        """Stop taking anything new from the legacy side (pollers, listeners), first thing when
        the daemon drains; deliveries go on until :meth:`stop`. (Whatever an adapter's own
        threads publish during a drain is refused anyway.)"""

    # -- commands ----------------------------------------------------------------------------

    def handle(self, command: Command) -> Reply:
        """Carry out a common command; the base class calls ``on_<command.name>``."""
        if command.name not in self.commands:
            raise CommandFault(f"adapter {self.name!r} does not serve {command.name!r}", code="unsupported")
        method = getattr(self, f"on_{command.name}", None)
        if method is None:
            raise CommandFault(f"adapter {self.name!r} declares {command.name!r} but has no on_{command.name}", code="unsupported")
        return method(command)

    def on_ping(self, command: Command) -> Reply:
        """Health check; override to exercise the legacy system (a Test Message)."""
        return Reply(details={"status": "ok", "payload": command.payload})

    def on_describe(self, command: Command) -> Reply:
        return Reply(details={"description": json.dumps(self.describe(), sort_keys=True)})

    def on_send(self, command: Command) -> Reply:
        assert command.document is not None
        self.deliver(command.document.to_envelope(origin=command.envelope.origin))
        return Reply(details={"status": "delivered"})

    def deliver(self, envelope: Envelope) -> str | None:
        """Outbound: hand one document to the legacy system (raise to have it redelivered).

        May return where it went (the file written, the URL posted to): journaled with the
        message's acknowledgement, the trace shows it as a hop."""
        raise CommandFault(f"adapter {self.name!r} cannot deliver documents", code="unsupported")

    def health(self) -> dict[str, Any]:
        """How the adapter is doing, for ``coupler ctl status`` and ``ctl adapters``.

        ``status`` is ``ok``, ``degraded`` (working, but something needs a look: a poll taking
        too long, failing polls) or ``down`` (it cannot reach its legacy system); ``problems``
        says what, one line each. Adapter types add details of their own (connection, poll).
        Called from the Control Bus thread: keep it cheap and never block on I/O.
        """
        return {"status": "ok", "problems": []}

    def describe(self) -> dict[str, Any]:
        """What this adapter can do (the ``describe`` command's reply)."""
        return {
            "name": self.name,
            "type": self.type_name,
            "commands": list(self.commands),
            "directions": list(self.directions),
            "direction": self.direction,
            "targets": [self.name, *self.targets],
            "identity": dict(self.identity) if self.identity else None,
            "channel": self.channel,
            "format": str(self.format) if self.format else None,
            "health": self.health(),
        }


class InboundAdapter(Adapter):
    """The inbound half of the adapter contract: a source that polls its legacy system and
    publishes what it finds (``context.publish``).

    Implement :meth:`poll` (one pass: take what is ready, publish it, return what it did as a
    :class:`~coupler.bus.model.polling.Polled`, e.g. ``PollOutcome(taken=3)``); the bus's
    :class:`~coupler.bus.model.polling.Poller` calls it every ``poll_interval`` seconds from a
    thread of its own, backs off up to ``max_interval`` while polls find nothing, contains a
    failing poll (logged, counted in :meth:`health`, retried after the back-off) and wakes
    at once for the ``fetch`` command. One unit that fails inside a poll (a file, a row) must
    not stop the others: catch, send it to the Invalid Message Channel (``context.invalid``)
    and go on, as the built-in file and database adapters do.
    """

    commands: ClassVar[tuple[str, ...]] = ("ping", "describe", "fetch")
    directions: ClassVar[tuple[str, ...]] = ("inbound",)
    poll_interval: float = 5.0
    max_interval: float = 60.0
    idle_backoff: float = 2.0

    def poll(self) -> Polled:
        """One pass over the legacy system (see the class documentation)."""
        raise NotImplementedError

    def start(self) -> None:
        heartbeat = self.context.heartbeat if self.context is not None else None
        self.poller = Poller(self.name, self.poll, interval=self.poll_interval, max_interval=self.max_interval,
                             idle_backoff=self.idle_backoff, heartbeat=heartbeat)
        self.poller.start()

    def stop(self) -> None:
        poller = getattr(self, "poller", None)
        if poller is not None:
            poller.stop()

    def on_fetch(self, command: Command) -> Reply:
        """Poll now (the Polling Consumer's ``fetch``), in the caller's thread."""
        return Reply(details={"status": "polled", "taken": str(self.poll().taken)})

    def health(self) -> dict[str, Any]:
        poller = getattr(self, "poller", None)
        if poller is None:
            return super().health()
        figures = poller.health()
        problems = [f"the last poll failed: {figures['last_error']}"] if figures["last_error"] else []
        return {"status": "degraded" if problems else "ok", "problems": problems, **figures}


@dataclass(frozen=True)
class PollOutcome:
    """What a poll did: ``taken`` units, ``waiting`` seconds until one it saw may be ready."""

    taken: int = 0
    waiting: float | None = None


class OutboundAdapter(Adapter):
    """The outbound half of the adapter contract: a sink. Implement :meth:`deliver` (hand one
    document to the legacy system; raise to have it redelivered, :class:`CommandFault` with
    ``code="invalid"`` when it can never be delivered); the ``send`` command delivers through
    it too."""

    commands: ClassVar[tuple[str, ...]] = ("ping", "describe", "send")
    directions: ClassVar[tuple[str, ...]] = ("outbound",)

    def deliver(self, envelope: Envelope) -> str | None:
        raise NotImplementedError


def resolve_path(base: Path, path: str | Path) -> Path:
    """``path`` with ``~`` expanded, made absolute against ``base`` when it is relative."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else base / p


def resolve_path_options(options: dict[str, Any], keys: tuple[str, ...], base: Path) -> dict[str, Any]:
    """A copy of ``options`` whose ``keys`` (dotted for nested tables) hold absolute paths.

    A key that is absent or not a string (or a list of strings) is left as it is; the
    adapter's own option checks report bad values.
    """
    out = dict(options)
    for key in keys:
        head, _, rest = key.partition(".")
        value = out.get(head)
        if rest:
            if isinstance(value, dict):
                out[head] = resolve_path_options(value, (rest,), base)
        elif isinstance(value, str) and value:
            out[head] = str(resolve_path(base, value))
        elif isinstance(value, list) and all(isinstance(v, str) and v for v in value):
            out[head] = [str(resolve_path(base, v)) for v in value]
    return out


# -- the command codec, for adapters that issue commands themselves ---------------------------
