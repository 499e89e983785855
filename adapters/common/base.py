"""What the file drop and SFTP adapters share as Channel Adapters: options, state, poller."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from coupler.bus.api import Adapter, AdapterContext, Bool, Command, CommandFault, Num, Reply, option
from coupler.canonical.errors import CouplerError

from .claims import prune_claims
from .errors import AdapterConfigError
from .inbound import InboundOptions, InboundPipeline, InboundSettings, read_inbound_settings
from .outbound import FileWriter, OutboundOptions, OutboundSettings, read_outbound_settings
from .poller import Poller
from .state import FileState, open_file_state

DIRECTIONS = ("inbound", "outbound", "both")


class FileAdapterOptions(InboundOptions, OutboundOptions):
    """The options the file drop and SFTP adapters share: inbound, outbound and polling."""

    poll_interval: Num = option("Seconds between polls.", default=5.0, ge=0.01)
    max_poll_interval: Num = option("Longest interval while polls find nothing.", default=60.0, ge=0.01)
    idle_backoff: Num = option("The interval is multiplied by this after an empty poll.", default=2.0, ge=1)
    autopoll: Bool = option("Poll on its own (off: only the `fetch` command polls).", default=True)
    poll_timeout: Num = option("A poll running longer is `poll overdue` in the adapter's health.",
                               default=600.0, ge=0.01)
    state_retention_days: Num = option("Finished files are forgotten after this.", default=30.0, ge=0)
    claim_retention_hours: Num = option("Claimed files older than this are removed at start.", default=168.0, ge=0)


class FileAdapterBase(Adapter):
    """A Channel Adapter moving files: an inbound poller and/or an outbound writer."""

    commands = ("send", "fetch", "ping", "describe")
    directions = ("inbound", "outbound")

    def __init__(self, name: str, options: dict[str, Any], context: AdapterContext | None = None):
        super().__init__(name, options, context)
        if "direction" in options:
            raise AdapterConfigError(
                "options.direction is not an option: the adapter's `direction` in site.toml says which way files flow",
                where=f"adapters[{name}].options.direction",
                hint="move it up to the [[adapters]] entry (direction = \"inbound\", \"outbound\" or \"both\")",
            )
        opts = self.parse_options(name, options)
        self.opts = opts
        self.inbound: InboundSettings = read_inbound_settings(opts, name)
        self.outbound: OutboundSettings = read_outbound_settings(opts, name)
        self.poll_interval = opts.poll_interval
        self.max_interval = opts.max_poll_interval
        self.idle_backoff = opts.idle_backoff
        self.autopoll = opts.autopoll
        self.poll_timeout = opts.poll_timeout
        self.state_retention = opts.state_retention_days * 86400
        self.claim_retention = opts.claim_retention_hours * 3600
        self.read_options(opts)
        self.state: FileState | None = None
        self.pipeline: InboundPipeline | None = None
        self.poller: Poller | None = None
        self.writer: FileWriter | None = None

    # -- to be provided by the adapter types ----------------------------------------------------

    def read_options(self, opts: Any) -> None:
        """Take the options of the adapter type (``opts``: its :attr:`options_model`, validated)."""

    def open_inbound(self) -> InboundPipeline:
        raise NotImplementedError

    def open_outbound(self) -> FileWriter:
        raise NotImplementedError

    def check(self) -> dict[str, str]:
        """Ping: exercise the legacy side; raise CommandFault when it is not healthy."""
        return {}

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def log(self) -> logging.Logger:
        return self.context.logger if self.context is not None else logging.getLogger(f"coupler.adapter.{self.name}")

    @property
    def data_dir(self) -> Path:
        if self.context is None:
            raise AdapterConfigError(f"adapter {self.name!r} runs without a bus context")
        return Path(self.context.data_dir)

    #: the option (and attribute) naming where the outbound side writes when it is not where
    #: the inbound side reads: direction "both" needs it, else the adapter would read back
    #: its own ``output_what``; None when the adapter has no such option
    output_option: str | None = None
    output_what: str = "output"

    def resolved_direction(self) -> str:
        """The direction of this instance (site.toml ``direction``, set by the daemon)."""
        if self.direction not in DIRECTIONS:
            raise AdapterConfigError(
                f"direction {self.direction!r} is not one of {', '.join(DIRECTIONS)}",
                where=f"adapters[{self.name}].direction",
            )
        option = self.output_option
        if self.direction == "both" and option is not None and getattr(self, option) is None:
            raise AdapterConfigError(
                f"direction \"both\" needs {option} (else the adapter would read its own {self.output_what})",
                where=f"adapters[{self.name}].options.{option}",
                hint='or set the direction of the adapter to "inbound" or "outbound" in site.toml',
            )
        return self.direction

    def start(self) -> None:
        direction = self.resolved_direction()
        self.state = open_file_state(self.name, self.context, self.data_dir)
        self.state.prune(self.state_retention)
        prune_claims(self.data_dir / "claims", self.claim_retention)
        if direction in ("outbound", "both"):
            self.writer = self.open_outbound()
            try:
                self.writer.recover()
            except (OSError, CouplerError) as exc:  # done before the first delivery instead
                self.log.warning("%s: cannot look for interrupted deliveries yet: %s", self.name, exc)
        if direction in ("inbound", "both"):
            if not self.channel and getattr(self.context, "channel", None) is None:
                raise AdapterConfigError(
                    "an inbound adapter needs a channel to publish to", where=f"adapters[{self.name}].channel"
                )
            self.pipeline = self.open_inbound()
            if not self.autopoll:  # polled by the fetch command only
                return
            heartbeat = self.context.heartbeat if self.context is not None else None
            self.poller = Poller(
                self.name, self.pipeline.poll, interval=self.poll_interval, max_interval=self.max_interval,
                idle_backoff=self.idle_backoff, heartbeat=heartbeat, logger=self.log,
            )
            self.poller.start()

    def stop_inbound(self) -> None:
        """The drain's first step: the poll in progress ends after its current file, no other starts."""
        if self.pipeline is not None:
            self.pipeline.halt.set()
        if self.poller is not None:
            self.poller.stop()
            self.poller = None

    def stop(self) -> None:
        if self.poller is not None:
            self.poller.stop()
            self.poller = None
        self.close_connections()
        if self.state is not None:
            self.state.close()
            self.state = None

    def close_connections(self) -> None:
        """Release the adapter type's own resources (connections)."""

    # -- commands -------------------------------------------------------------------------------

    def deliver(self, envelope: Any) -> str | None:
        """Write the message as a file; returns where (``ROOT/NAME``, for the trace), None when
        it was written before (a redelivery)."""
        if self.writer is None:
            raise CommandFault(f"adapter {self.name!r} is not an outbound adapter", code="unsupported")
        written = self.writer.deliver(envelope)
        return f"{self.writer.fs.label}/{written}" if written else None

    def on_send(self, command: Command) -> Reply:
        if self.writer is None:
            raise CommandFault(f"adapter {self.name!r} is not an outbound adapter", code="unsupported")
        if command.document is None:
            raise CommandFault("send without a document", code="invalid")
        envelope = command.document.to_envelope(origin=command.envelope.origin)
        envelope = envelope.replace(message_id=command.envelope.message_id)  # a resent command: written once
        written = self.writer.deliver(envelope)
        return Reply(details={"status": "delivered" if written else "skipped", "file": written or ""})

    def on_fetch(self, command: Command) -> Reply:
        if self.pipeline is None:
            raise CommandFault(f"adapter {self.name!r} is not an inbound adapter", code="unsupported")
        result = self.pipeline.poll(command.max)
        return Reply(details={"status": "polled", **{k: str(v) for k, v in result.to_json().items()}})

    def on_ping(self, command: Command) -> Reply:
        details = self.check()
        return Reply(details={"status": "ok", "payload": command.payload, **details})

    def health(self) -> dict[str, Any]:
        """The poll's health: ``poll_overdue`` when a poll runs longer than ``poll_timeout``,
        the last poll error; ``status`` degraded when either is the case."""
        health = super().health()
        problems: list[str] = health["problems"]
        if self.poller is not None:
            poll = self.poller.health()
            running = poll.get("poll_running_for")
            poll["poll_overdue"] = bool(running is not None and running > self.poll_timeout)
            poll["poll_timeout"] = self.poll_timeout
            if poll["poll_overdue"]:
                problems.append(f"poll overdue: running for {running:.1f} s (poll_timeout {self.poll_timeout:g} s)")
            if poll.get("last_error"):
                problems.append(f"last poll failed: {poll['last_error']}")
            health["poll"] = poll
        if problems:
            health["status"] = "degraded"
        return health

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        if self.pipeline is not None:
            info["inbound"] = self.pipeline.totals.to_json()
        if self.writer is not None:
            info["outbound"] = {"written": self.writer.written, "refused": self.writer.refused, "duplicates": self.writer.duplicates}
        if self.state is not None:
            info["files"] = self.state.counts()
        return json.loads(json.dumps(info, default=str))
