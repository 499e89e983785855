"""The :class:`~coupler.bus.api.AdapterContext` the daemon gives each adapter, and statistics."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from coupler.bus.messaging.request_reply import request_reply
from coupler.bus.model.adapter import Adapter
from coupler.bus.model.adapter import resolve_path as _resolve_path
from coupler.bus.model.commands import InvalidMessage
from coupler.bus.model.files import FileState
from coupler.bus.runtime.supervision import in_flight
from coupler.bus.runtime.trace import via
from coupler.bus.transport.base import Transport
from coupler.bus.transport.sqlite.file_state import embedded_file_state
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.envelope import utc_now
from coupler.canonical.errors import CouplerError, UnitError
from coupler.canonical.tracecontext import TRACEPARENT, ensure_trace, trace_id_of, trace_of

#: the channel on which an adapter's ``context.request`` waits for replies
REPLY_CHANNEL_PREFIX = "coupler.replies."


@dataclass
class AdapterStats:
    """Counters of one adapter (``coupler ctl adapters``)."""

    name: str
    type: str
    state: str = "created"  # created | running | paused | failed | stopped (| degraded: see to_json)
    received: int = 0  # in: commands and documents it took from the bus
    #: out: what it passed on: messages put on the bus (published, replies) and documents
    #: delivered to its legacy system
    sent: int = 0
    failed: int = 0
    last_heartbeat: float | None = None
    error: str | None = None
    #: a worker of the adapter died: shown ``degraded`` (with why) until this time
    degraded_until: float | None = None
    degraded_reason: str | None = None
    worker_deaths: int = 0

    def to_json(self, now: float | None = None) -> dict[str, Any]:
        now = time.time() if now is None else now
        degraded = self.state == "running" and self.degraded_until is not None and now < self.degraded_until
        return {
            "name": self.name,
            "type": self.type,
            "state": "degraded" if degraded else self.state,
            "degraded": self.degraded_reason if degraded else None,
            "worker_deaths": self.worker_deaths,
            "in": self.received,
            "out": self.sent,
            "failed": self.failed,
            "last_heartbeat_age": None if self.last_heartbeat is None else round(now - self.last_heartbeat, 3),
            "error": self.error,
        }


@dataclass
class Statistics:
    """Thread-safe counters of every adapter."""

    adapters: dict[str, AdapterStats] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, name: str, type_name: str) -> AdapterStats:
        with self._lock:
            self.adapters[name] = AdapterStats(name, type_name)
            return self.adapters[name]

    def count(self, adapter: str, what: str, n: int = 1) -> None:
        with self._lock:
            stats = self.adapters.get(adapter)
            if stats is not None:
                setattr(stats, what, getattr(stats, what) + n)
                stats.last_heartbeat = time.time()

    def beat(self, adapter: str) -> None:
        with self._lock:
            if adapter in self.adapters:
                self.adapters[adapter].last_heartbeat = time.time()

    def set_state(self, adapter: str, state: str, error: str | None = None) -> None:
        with self._lock:
            stats = self.adapters[adapter]
            stats.state = state
            stats.error = error

    def degrade(self, adapter: str, reason: str, seconds: float) -> None:
        """A worker of ``adapter`` died (and was restarted): ``degraded`` for ``seconds``."""
        with self._lock:
            stats = self.adapters.get(adapter)
            if stats is not None:
                stats.worker_deaths += 1
                stats.degraded_reason = reason
                stats.degraded_until = time.time() + seconds

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            now = time.time()
            return [s.to_json(now) for s in self.adapters.values()]


def expiring(envelope: Envelope, ttl: float | None) -> Envelope:
    """``envelope`` expiring ``ttl`` seconds from now (Message Expiration), unless it expires
    sooner already; as it is without a ``ttl``."""
    if ttl is None:
        return envelope
    expires = utc_now() + timedelta(seconds=ttl)
    if envelope.expires_at is not None and envelope.expires_at <= expires:
        return envelope
    return envelope.replace(expires_at=expires)


class BusContext:
    """What one adapter gets from the bus (implements :class:`~coupler.bus.api.AdapterContext`)."""

    def __init__(
        self,
        *,
        name: str,
        config: dict[str, Any],
        data_dir: Path,
        transport: Transport,
        statistics: Statistics,
        channel: str | None = None,
        paused: threading.Event | None = None,
        stopping: threading.Event | None = None,
        reply_timeout: float = 30.0,
        command_channel: str = "coupler.commands",
        site_dir: Path | None = None,
        inbound: Callable[[Envelope], Envelope] | None = None,
        registry: Callable[[], Any] | None = None,
        channel_ttls: dict[str, float] | None = None,
        schema_dirs: Sequence[Path] = (),
    ):
        self.name = name
        self._registry = registry
        #: the directory of site.toml (default: the working directory, for embedding)
        self.site_dir = (site_dir or Path.cwd()).resolve()
        #: the site's ``[schemas] paths`` (absolute): with :attr:`site_dir`, directories the XSDs and
        #: WSDLs its options name may read (see :func:`coupler.bus.api.site_schema_roots`)
        self.schema_dirs = [Path(d).resolve() for d in schema_dirs]
        self.command_channel = command_channel
        self.config = config
        self.data_dir = data_dir
        self.logger = logging.getLogger(f"coupler.adapter.{name}")
        self.channel = channel
        self._transport = transport
        self._stats = statistics
        self._paused = paused or threading.Event()
        self._stopping = stopping or threading.Event()
        self._reply_timeout = reply_timeout
        #: unwrap and translate what the adapter publishes (bus/runtime/stages.py), if declared
        self._inbound = inbound
        #: who stores what it publishes, for the journal: the adapter, and the mapping it went through
        mapping_name = getattr(inbound, "mapping_name", None)
        self._stored_by = via(self.component, mapping_name) if mapping_name else self.component
        #: Message Expiration: channel -> its ``ttl_seconds`` (what is published there expires)
        self._ttls = channel_ttls or {}

    @property
    def component(self) -> str:
        return f"adapter:{self.name}"

    @property
    def inbound_stage(self) -> Callable[[Envelope], Envelope] | None:
        """What every publish runs (unwrap, the inbound mapping: bus/runtime/stages.py), if
        declared; a replayed invalid record runs it again."""
        return self._inbound

    @property
    def paused_event(self) -> threading.Event:
        """Set while the adapter is paused (the daemon's pause switch of this adapter)."""
        return self._paused

    @property
    def schema_registry(self) -> Any:
        """The site's schema registry (``[schemas] paths`` included), or None when embedded
        without one (see :func:`coupler.bus.api.record_of`)."""
        return self._registry() if self._registry is not None else None

    def _wait_while_paused(self) -> None:
        """Before a publish: wait while the adapter is paused; refused while the daemon drains
        (nothing new is received), unless it finishes a delivery in progress."""
        while self._paused.is_set():
            if self._stopping.is_set():
                raise CouplerError(f"adapter {self.name!r} is paused and the daemon is stopping")
            self._stopping.wait(0.05)
        if self._stopping.is_set() and not in_flight():
            raise CouplerError(f"adapter {self.name!r}: the daemon is stopping, nothing new is received",
                               hint="it is taken again after the restart")

    def publish(self, envelope: Envelope, channel: str | None = None) -> str:
        """Send durably to ``channel`` or the adapter's channel (blocks while it is paused)."""
        target = self._target(channel)
        self._wait_while_paused()
        envelope = expiring(self._prepare(envelope), self._ttls.get(target))
        (message_id,) = self._transport.send(target, envelope, component=self._stored_by)
        self._stats.count(self.name, "sent")
        return message_id

    def publish_many(self, envelopes: Sequence[Envelope], channel: str | None = None, *,
                     reasons: list[str] | None = None, recorded: list[bool] | None = None) -> list[str | None]:
        """Send a batch durably in one transaction (one disk sync); an envelope the inbound
        stage cannot translate is in the Invalid Message Channel and gets None (and, when
        ``reasons`` is given, its reason appended there, in order; when ``recorded`` is given,
        whether this call made its dead letter: False for a unit refused before)."""
        target = self._target(channel)
        self._wait_while_paused()
        prepared: list[Envelope | None] = []
        ttl = self._ttls.get(target)
        if ttl is None and self._inbound is None:
            # nothing to translate or expire: nothing can refuse a message (an envelope with its
            # origin and trace goes as it is)
            prepared += [self._prepare(e) for e in envelopes]
        else:
            for envelope in envelopes:
                try:
                    prepared.append(expiring(self._prepare(envelope), ttl))
                except InvalidMessage as refused:
                    prepared.append(None)
                    if reasons is not None:
                        reasons.append(refused.message)
                    if recorded is not None:
                        recorded.append(refused.recorded)
        good = [e for e in prepared if e is not None]
        ids = iter(self._transport.send(target, good, component=self._stored_by) if good else [])
        self._stats.count(self.name, "sent", len(good))
        return [None if e is None else next(ids) for e in prepared]

    @contextlib.contextmanager
    def durable_later(self) -> Iterator[Callable[[], None]]:
        """Publishes of this thread inside the block may return before their messages are on
        disk; the function yielded returns once they all are (see
        :meth:`coupler.bus.model.adapter.AdapterContext.durable_later`)."""
        with self._transport.durable_later() as durable:
            yield durable

    def _target(self, channel: str | None) -> str:
        target = channel or self.channel
        if not target:
            raise CouplerError(
                f"adapter {self.name!r} published without a channel",
                where=f"adapter {self.name}",
                hint="set `channel` of the adapter in site.toml",
            )
        return target

    def _prepare(self, envelope: Envelope) -> Envelope:
        """Origin and trace set, the inbound stage applied (InvalidMessage when it cannot)."""
        if envelope.origin is None:
            envelope = envelope.replace(origin=self.name)
        if trace_id_of(envelope) is None:  # the adapter starts a trace (or joins the current one)
            envelope = ensure_trace(envelope.replace())
        if self._inbound is not None:
            envelope = self._translate(envelope)
        return envelope

    def _translate(self, envelope: Envelope) -> Envelope:
        """The inbound stage; what it cannot translate goes to the Invalid Message Channel."""
        assert self._inbound is not None
        try:
            return self._inbound(envelope)
        except Exception as exc:  # any exception: this message is the unit that failed
            error = UnitError.of(exc)
            if not isinstance(exc, CouplerError):
                self.logger.debug("adapter %s: translating %s raised", self.name, envelope.message_id, exc_info=True)
            reason = f"cannot translate {envelope.format.ref} from adapter {self.name}{unit_place(envelope)}: {error}"
            # once: an adapter publishing inside a transaction of its own (the database
            # adapter's batch of rows) reads the same unit again when that rolls back; its
            # message id and body are the key (an adapter with random ids: one key per refusal)
            dead_id = self.invalid_once(envelope, reason,
                                        f"{envelope.message_id}:{hashlib.sha256(envelope.body).hexdigest()[:32]}")
            raise InvalidMessage(reason, hint=error.hint, recorded=dead_id is not None) from None

    def reply(self, request: Envelope, reply: Envelope) -> None:
        """Send ``reply`` to ``request.return_address``, correlated to ``request``."""
        if not request.return_address:
            raise CouplerError(
                f"message {request.message_id} has no return address to reply to", where=f"adapter {self.name}"
            )
        reply = reply.replace(correlation_id=request.message_id, origin=reply.origin or self.name)
        if trace_of(reply) is None and trace_of(request) is not None:
            reply.properties[TRACEPARENT] = trace_of(request).child().header  # type: ignore[union-attr]
        self._transport.send(request.return_address, reply, component=self.component)
        self._stats.count(self.name, "sent")

    def request(self, envelope: Envelope, channel: str, timeout: float | None = None) -> Envelope:
        """Request-Reply: send to ``channel`` with a return address, wait for the correlated reply."""
        return request_reply(
            self._transport,
            envelope,
            channel,
            reply_channel=REPLY_CHANNEL_PREFIX + self.name,
            consumer=self.name,
            timeout=self._reply_timeout if timeout is None else timeout,
            component=self.component,
            stopping=self._stopping,
        )[0]

    def heartbeat(self) -> None:
        self._stats.beat(self.name)

    def invalid(self, message: Envelope | bytes, reason: str) -> int:
        """Move what the adapter cannot read to the Invalid Message Channel with ``reason``.

        ``message`` is an envelope, or the raw bytes received from the legacy system. The dead
        letter records the adapter as the failing component and its channel, if it has one.
        """
        if isinstance(message, Envelope) and message.origin is None:
            message = message.replace(origin=self.name)
        payload = message if isinstance(message, Envelope) else bytes(message)
        dead_id = self._transport.invalid(payload, reason, self.component, channel=self.channel)
        self._stats.count(self.name, "failed")
        self.logger.warning(
            "adapter %s: message sent to the Invalid Message Channel: %s", self.name, reason,
            extra={"adapter": self.name, "dead_letter": dead_id},
        )
        return dead_id

    def invalid_once(self, message: Envelope | bytes, reason: str, key: str) -> int | None:
        """:meth:`invalid` unless ``key`` is among the keys this adapter's dead letters
        recorded (see :meth:`coupler.bus.model.adapter.AdapterContext.invalid_once`): the key
        is checked and recorded in one step (``mark_new``) of the transaction that makes the
        dead letter, so two threads or daemons with the same key make one."""
        if isinstance(message, Envelope) and message.origin is None:
            message = message.replace(origin=self.name)
        payload = message if isinstance(message, Envelope) else bytes(message)
        recorded_by = f"invalid:{self.component}"
        with self._transport.transaction() as tx:
            # checked and recorded at once: a concurrent call with the key waits for this one;
            # the dead letter's id is read after the commit (a store may send the move with it)
            new = tx.mark_new(recorded_by, [key])
            dead_id_of = tx.invalid_later(payload, reason, self.component, channel=self.channel) if new else None
        dead_id = dead_id_of() if dead_id_of is not None else None
        if dead_id is None:
            self.logger.info("adapter %s: already in the Invalid Message Channel, not again: %s", self.name, reason,
                             extra={"adapter": self.name})
            return None
        self._stats.count(self.name, "failed")
        self.logger.warning(
            "adapter %s: message sent to the Invalid Message Channel: %s", self.name, reason,
            extra={"adapter": self.name, "dead_letter": dead_id},
        )
        return dead_id

    def resolve_path(self, path: str | Path) -> Path:
        """``path`` (``~`` expanded) made absolute against the directory of site.toml."""
        return _resolve_path(self.site_dir, path)

    def remember(self, scope: str, key: str, ttl: float) -> bool:
        """Record ``key`` in the site-wide ``scope`` of the store's replay cache (see
        :meth:`coupler.bus.model.adapter.AdapterContext.remember`)."""
        return self._transport.remember(f"remember:{scope}", key, ttl)

    def file_state(self, name: str | None = None) -> FileState:
        """The seen-state of adapter ``name`` (default: this one): shared by every daemon when
        the transport keeps one (a multi-node site), else ``files.db`` in its data directory.

        Claims are made as this host and data directory: one daemon per data directory, so a
        restarted daemon resumes its own files at once."""
        name = name or self.name
        data_dir = Path(self.data_dir) if name == self.name else Path(self.data_dir).parent / name
        owner = f"{socket.gethostname()}:{data_dir.resolve()}"
        shared = self._transport.file_state(name, owner)
        return shared if shared is not None else embedded_file_state(data_dir / "files.db")


def build_adapter(
    cls: type[Adapter],
    name: str,
    options: dict[str, Any],
    context: BusContext,
    *,
    direction: str,
    targets: tuple[str, ...] | list[str] = (),
    identity: dict[str, str] | None = None,
    channel: str | None = None,
    format: str | FormatIndicator | None = None,
) -> Adapter:
    """An adapter of type ``cls`` created the way the daemon creates it: with its name, its
    options (path options already resolved) and its context, then given what its
    ``[[adapters]]`` entry says (``direction``, ``targets``, ``identity``, ``channel``,
    ``format``). ``start()`` is the caller's (the daemon, or :mod:`coupler.bus.testing`)."""
    adapter = cls(name, dict(options), context)
    adapter.direction = direction
    adapter.targets = tuple(targets)
    adapter.identity = identity
    adapter.channel = channel
    adapter.format = FormatIndicator.parse(format) if isinstance(format, str) else format
    return adapter


#: envelope properties that say where a unit of work came from, in the order they are named
_PLACE_PROPERTIES = ("file.source", "file.path", "record.number", "record.offset", "socket.peer", "soap.operation")


def unit_place(envelope: Envelope) -> str:
    """`` (file.path=in/a.dat, record.number=3, record.offset=44)``: where the unit in ``envelope`` came from ("" if unknown)."""
    found = [f"{k}={envelope.properties[k]}" for k in _PLACE_PROPERTIES if envelope.properties.get(k)]
    return f" ({', '.join(found)})" if found else ""
