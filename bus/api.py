"""The thin, stable surface adapters program against.

Adapters import this module and ``coupler.canonical`` / ``coupler.translators`` only, never
the daemon or a transport (DESIGN.md). An adapter type is a subclass of :class:`Adapter`
contributed through the ``coupler_adapter_types`` hook.

Lifecycle, as the daemon drives it::

    adapter = AdapterType(name, options, context)   # options: the site's [adapters.options],
                                                    # path options resolved (see path_options)
    adapter.direction, adapter.targets, adapter.identity, adapter.channel, adapter.format = ...
                                                    # from the [[adapters]] entry of site.toml
    adapter.start()            # open connections, start polling threads (inbound)
    adapter.handle(command)    # a common command for it -> Reply (or raise CommandFault)
    adapter.deliver(envelope)  # outbound: a document from its channel, to the legacy system
    adapter.stop()             # close; called once, also after a failed start

``handle`` and ``deliver`` of one adapter are called from one thread at a time. An inbound
adapter publishes what it reads with ``context.publish(envelope)`` and sends what it cannot
read to the Invalid Message Channel with ``context.invalid(payload, reason)``.

Adapters stay transport- and format-agnostic: the envelope wrapper chain and the field
mapping of site.toml (``wrappers``, ``mapping``) are applied by the bus, on ``publish``
(unwrap, legacy -> canonical) and before ``deliver`` / ``handle`` (canonical -> legacy,
wrap); see :mod:`coupler.bus.runtime.stages`.

Relative file paths in options are relative to the directory of site.toml: an adapter type
names its path options in :attr:`Adapter.path_options` (``"wsdl"``, ``"tls.cert"``) and the
daemon resolves them before the adapter is created; other paths can be resolved with
``context.resolve_path``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from coupler.bus.plugins.hookspecs import hookimpl  # noqa: F401  (re-exported: plugins mark their hooks with it)
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError

if TYPE_CHECKING:
    from coupler.bus.model.commands import ReplyInfo

#: the common command set (DESIGN.md)
COMMON_COMMANDS = ("send", "fetch", "request", "ping", "describe")

#: values of ``health()["status"]``, from good to bad
HEALTH_STATES = ("ok", "degraded", "down")

#: fault codes of a :class:`CommandFault` (the ``code`` of a ``coupler.commands.Fault`` reply)
FAULT_CODES = ("unserved", "unsupported", "invalid", "failed", "paused", "timeout")


@dataclass
class Document:
    """A document carried inside a command or a reply."""

    format: FormatIndicator
    body: bytes
    properties: dict[str, str] = field(default_factory=dict)

    def to_envelope(self, **headers: Any) -> Envelope:
        return Envelope(format=self.format, body=self.body, properties=dict(self.properties), **headers)

    @classmethod
    def from_envelope(cls, envelope: Envelope) -> Document:
        return cls(envelope.format, envelope.body, dict(envelope.properties))


@dataclass
class Command:
    """A common command addressed to an adapter (decoded from its Command Message).

    Which fields are set depends on ``name``: ``document`` for send and request, ``query``
    and ``max`` for fetch, ``operation`` and ``timeout`` for request, ``payload`` for ping.
    """

    name: str
    target: str
    envelope: Envelope
    document: Document | None = None
    query: dict[str, str] = field(default_factory=dict)
    max: int | None = None
    operation: str = ""
    timeout: float | None = None
    payload: str = ""


@dataclass
class Reply:
    """What an adapter answers to a command: documents and command-specific details."""

    documents: list[Document] = field(default_factory=list)
    details: dict[str, str] = field(default_factory=dict)


class CommandFault(CouplerError):
    """An adapter cannot carry out a command; becomes a Fault reply with ``code``."""

    def __init__(self, message: str, *, code: str = "failed", where: str | None = None, hint: str | None = None):
        if code not in FAULT_CODES:
            raise ValueError(f"unknown fault code {code!r}")
        self.code = code
        super().__init__(message, where=where, hint=hint)


class InvalidMessage(CommandFault):
    """``context.publish`` refused a message the bus cannot translate (site.toml ``wrappers``
    or ``mapping`` of the adapter): it is in the Invalid Message Channel with the reason
    already. An adapter goes on with its next message (and may tell its peer, e.g. an HL7
    ``AR``)."""

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None):
        super().__init__(message, code="invalid", where=where, hint=hint)


# -- the durable per-file seen-state of polling adapters ---------------------------------------

#: states of a file in a :class:`FileState`
PROCESSING, PUBLISHED, DONE, FAILED, STAGED = "PROCESSING", "PUBLISHED", "DONE", "FAILED", "STAGED"
FINAL_STATES = (DONE, FAILED, STAGED)


@dataclass(frozen=True)
class FileKey:
    """A file as a polling adapter saw it: path, size, mtime and (optionally) its SHA-256."""

    path: str
    size: int
    mtime_ns: int
    checksum: str = ""

    def __str__(self) -> str:
        text = f"{self.path} ({self.size} bytes, mtime {self.mtime_ns})"
        return text + (f" sha256 {self.checksum[:12]}" if self.checksum else "")


@dataclass(frozen=True)
class FileRecord:
    key: FileKey
    state: str
    published: int
    detail: str | None
    updated: float


class FileClaimLost(CouplerError):
    """Another daemon took over a file this one was processing (its claim ran out): this
    daemon stops working on the file; the other one finishes it."""


class FileState(Protocol):
    """The durable seen-state of one polling adapter (``context.file_state()``).

    A file goes ``PROCESSING`` (``published`` counts the messages already sent) →
    ``PUBLISHED`` → ``DONE``; or → ``FAILED``; or → ``STAGED``. A changed file (size, mtime,
    checksum) is a new key. The embedded implementation is a SQLite file in the adapter's
    data directory; a multi-node site keeps it in PostgreSQL, shared by every daemon, where
    :meth:`begin` is a claim: only one daemon at a time works on a file.
    """

    def get(self, key: FileKey) -> FileRecord | None:
        """The record of ``key``, if any."""
        ...

    def find(self, path: str, size: int, mtime_ns: int) -> list[FileRecord]:
        """Every record of this path, size and mtime (whatever their checksum), newest first."""
        ...

    def begin(self, key: FileKey) -> FileRecord | None:
        """Claim the file: its record (created ``PROCESSING`` when it has none), or None when
        another live daemon holds it (shared state only; the embedded state never says None).
        A claim whose holder made no progress for the lease time is taken over."""
        ...

    def progress(self, key: FileKey, published: int) -> None:
        """``published`` messages of the file are durably on the bus (renews the claim;
        raises :class:`FileClaimLost` when another daemon took the file over)."""
        ...

    def set_state(self, key: FileKey, state: str, detail: str | None = None) -> None:
        """Move the file to ``state`` (raises :class:`FileClaimLost` like :meth:`progress`)."""
        ...

    def counts(self) -> dict[str, int]:
        """Number of files per state."""
        ...

    def prune(self, older_than_seconds: float) -> int:
        """Forget finished files not seen for ``older_than_seconds`` (and old delivery ids)."""
        ...

    def delivered(self, message_id: str) -> str | None:
        """Outbound: the name written for ``message_id`` ("" when none), None when not yet."""
        ...

    def mark_delivered(self, message_id: str, name: str | None) -> None:
        """Outbound: ``message_id`` was written (as ``name``): an Idempotent Receiver."""
        ...

    def close(self) -> None: ...


def embedded_file_state(path: Path, *, synchronous: str = "FULL") -> FileState:
    """The embedded seen-state: a SQLite database at ``path`` (WAL), for adapters run
    without a bus context (tests, tools) and on single-node sites."""
    from coupler.bus.transport.sqlite.file_state import SqliteFileState

    return SqliteFileState(path, synchronous=synchronous)


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

    def resolve_path(self, path: str | Path) -> Path:
        """``path`` (``~`` expanded) made absolute against :attr:`site_dir`."""
        ...

    def file_state(self, name: str | None = None) -> FileState:
        """The durable seen-state of adapter ``name`` (default: this one); the caller closes
        it. Every daemon of a multi-node site shares it (PostgreSQL); else it is
        ``files.db`` in the adapter's :attr:`data_dir`."""
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

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Open connections and start work; raise :class:`CouplerError` when it cannot."""

    def stop(self) -> None:
        """Finish in-flight work and release resources."""

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

    def deliver(self, envelope: Envelope) -> None:
        """Outbound: hand one document to the legacy system (raise to have it redelivered)."""
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


def command_envelope(name: str, target: str, **fields: Any) -> Envelope:
    """A Command Message (see :func:`coupler.bus.model.commands.command_envelope`)."""
    from coupler.bus.model.commands import command_envelope as make

    return make(name, target, **fields)


def parse_reply(envelope: Envelope) -> ReplyInfo:
    """Decode a Reply or Fault message (see :func:`coupler.bus.model.commands.parse_reply`)."""
    from coupler.bus.model.commands import parse_reply as parse

    return parse(envelope)
