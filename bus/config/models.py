"""The schema of ``site.toml``, as typed models (pydantic v2).

Every key a site can set is a field of a model here: its type, default, allowed values and
documentation. :mod:`coupler.bus.config.loader` validates a site file with them (unknown
keys are errors, every problem is reported with its key path and line), ``coupler init``
writes the commented template from them and :mod:`coupler.bus.config.doc` generates
``docs/configuration.md`` from them, so the three cannot drift apart.

Values are checked strictly, as TOML types them: ``"10"`` is not a number and ``1`` is not
``true``; an integer is accepted where a number is expected. Per-value checks (a channel
name, a format indicator) are validators of the value's type, so that they are reported
together with the other problems; checks across entries (unique names, routing loops) are
in the loader.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, PrivateAttr, StrictStr

from coupler.bus.model.commands import COMMON_COMMANDS
from coupler.bus.model.httpserver import DEFAULT_MAX_CONNECTIONS
from coupler.bus.model.names import CHANNEL_NAME_RULE, is_channel_name
from coupler.bus.model.selectors import field_list
from coupler.canonical.errors import CouplerError, FormatIndicatorError
from coupler.canonical.format import FormatIndicator
from coupler.canonical.options import Bool, Int, Num, OptionsModel, Str, option

# -- value types ---------------------------------------------------------------------------


def _channel(value: str) -> str:
    if not is_channel_name(value):
        raise ValueError(f"{value!r} is not a valid channel name ({CHANNEL_NAME_RULE})")
    return value


def _entry_name(value: str) -> str:
    if not is_channel_name(value):
        raise ValueError(f"{value!r} is not a valid name ({CHANNEL_NAME_RULE})")
    return value


def _format_indicator(value: str) -> str:
    try:
        FormatIndicator.parse(value)
    except FormatIndicatorError as exc:
        raise ValueError(str(exc)) from None
    return value


_FORMAT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _format_name(value: str) -> str:
    if not _FORMAT_NAME.match(value):
        raise ValueError(
            f"{value!r} is not a canonical format name (a dotted name such as acme.Order, without @version)"
        )
    return value


def _command(value: str) -> str:
    if value not in COMMON_COMMANDS:
        raise ValueError(f"{value!r} is not one of {', '.join(COMMON_COMMANDS)}")
    return value


_DAILY_TIME = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")


def _time_of_day(value: str) -> str:
    if not _DAILY_TIME.match(value):
        raise ValueError(f'{value!r} is not a time of day HH:MM (24-hour, e.g. "02:30")')
    return value


def _business_key(value: str) -> str:
    if value.strip() != "message_id":
        try:
            field_list(value)
        except CouplerError as exc:
            raise ValueError(exc.message) from None
    return value


Channel = Annotated[StrictStr, AfterValidator(_channel)]
BusinessKey = Annotated[StrictStr, AfterValidator(_business_key)]
EntryName = Annotated[StrictStr, AfterValidator(_entry_name)]
Indicator = Annotated[StrictStr, AfterValidator(_format_indicator)]
FormatName = Annotated[StrictStr, AfterValidator(_format_name)]
CommandName = Annotated[StrictStr, AfterValidator(_command)]
TimeOfDay = Annotated[StrictStr, AfterValidator(_time_of_day)]
#: a table of any keys, passed through (the options of a wrapper, Spark conf)
FreeTable = dict[str, Any]


class Section(OptionsModel):
    """A table of ``site.toml``: unknown keys are errors, values are immutable."""


doc = option


# -- [site] --------------------------------------------------------------------------------


class SiteSection(Section):
    """The site itself."""

    name: Str = doc("Name of the site, shown by `coupler ctl status`.", default="coupler-site")
    data_dir: Str = doc(
        "Directory of the store, the control socket, the daemon lock, claim-checked bodies and "
        "adapter state. Relative paths are relative to site.toml.",
        default="data",
    )
    drain_timeout_seconds: Num = doc(
        "On SIGTERM or `coupler ctl stop`, after every inbound side stopped: how long to wait for the "
        "deliveries in progress. What still runs then is named in the log and abandoned (its messages are "
        "delivered again after the restart) and the daemon exits 1.",
        default=60.0,
        ge=0,
    )
    raise_open_files_limit: Bool = doc(
        "At start, raise the daemon's soft open-files limit (`ulimit -n`, often 1024) to its hard limit, as "
        "the JVM does on Linux (`-XX:+MaxFDLimit`): every connection a server holds is a file descriptor. "
        "`false` keeps the limit the daemon was started with. The limit in effect is logged at start, with "
        "a WARNING when the HTTP servers' `max_connections` and listen backlogs do not fit under it.",
        default=True,
    )


# -- [store] -------------------------------------------------------------------------------


class RedeliverySection(Section):
    """Redelivery of messages that failed (a negative acknowledgement or an exception):
    exponential backoff, then the Dead Letter Channel."""

    initial_delay: Num = doc("Seconds before the first redelivery.", default=1.0, ge=0)
    multiplier: Num = doc("Each further delay is the previous one times this.", default=2.0, ge=1)
    max_delay: Num = doc("Upper bound of a delay, in seconds.", default=60.0, ge=0)
    max_attempts: Int = doc("Deliveries before a message goes to the dead letters.", default=5, ge=1)
    jitter: Num = doc("Random fraction (0..1) added to or taken from each delay.", default=0.1, ge=0)


class StoreSection(Section):
    """The messaging infrastructure: the embedded SQLite store by default. The keys below are
    common to every transport (`path`, `synchronous` and `sync_acks` are the embedded store's);
    a transport's own options are the table `[store.<type>]` its plugin declares (see
    "Transport options" below)."""

    # [store.<type>] tables: checked by the loader against the options model of the type
    model_config = ConfigDict(extra="allow")

    type: Str = doc(
        "Transport type: `sqlite`, the embedded store; `postgres`, PostgreSQL alone, or `amqp`, RabbitMQ + "
        "PostgreSQL, for multi-node sites; `memory` for tests; plugins may add others (`coupler plugins` "
        "lists them).",
        default="sqlite",
    )
    path: Str = doc("Database file name, in the data directory.", default="coupler.db")
    synchronous: Literal["FULL", "NORMAL"] = doc(
        "SQLite `synchronous` setting: FULL makes every send durable before it returns; NORMAL is "
        "faster and may lose the last commits on power loss.",
        default="FULL",
    )
    sync_acks: Bool = doc(
        "With FULL, also fsync every acknowledgement and negative acknowledgement before it returns. "
        "Off, they are written at once (a crashed process loses none) and reach the disk with the next "
        "send or background checkpoint, within a second: a power cut may deliver again what was "
        "acknowledged in that second, as RabbitMQ may; it never loses a message.",
        default=False,
    )
    lease_seconds: Num = doc(
        "How long a received, unacknowledged message stays invisible.", default=30.0, ge=0.001
    )
    claim_check_bytes: Int = doc(
        "Bodies larger than this are stored aside (Claim Check): as files in the data directory "
        "on the SQLite store, in PostgreSQL (shared by every host) on the broker transport.",
        default=262144,
        ge=1,
    )
    dead_letter_channel: Channel = doc("Site-wide Dead Letter Channel.", default="dead-letters")
    invalid_channel: Channel = doc("Invalid Message Channel.", default="invalid")
    idempotency_window_seconds: Num = doc(
        "How long an Idempotent Receiver remembers message ids.", default=604800.0, ge=0
    )
    journal_retention_days: Num = doc("Message Store journal retention.", default=7.0, ge=0)
    redelivery: RedeliverySection = doc(RedeliverySection.__doc__ or "", default_factory=RedeliverySection)

    def transport_settings(self) -> dict[str, Any]:
        """What every transport takes from the common keys: the keyword arguments of
        :class:`~coupler.bus.transport.storage.StorageTransport` (and of the SQLite and
        RabbitMQ transports)."""
        from coupler.bus.model.backoff import BackoffPolicy

        return {
            "backoff": BackoffPolicy(**self.redelivery.model_dump()),
            "lease_seconds": self.lease_seconds,
            "claim_threshold": self.claim_check_bytes,
            "journal_retention": self.journal_retention_days * 86400.0,
            "idempotency_retention": self.idempotency_window_seconds,
            "dead_letter": self.dead_letter_channel,
            "invalid": self.invalid_channel,
        }


# -- the other sections --------------------------------------------------------------------


class SchemasSection(Section):
    """Canonical schemas of this site, in addition to the built-in ones and those of plugins."""

    paths: list[Str] = doc("Directories of `<name>/v<N>.avsc` files, relative to site.toml. With the site's "
                           "folder, also the directories every XSD and WSDL the site names (adapters' WSDLs and "
                           "XSDs, `xml` envelope wrappers, mappings of adapters and transform steps) may "
                           "include and import from besides its own.", default_factory=list)


class CommandsSection(Section):
    """The common command set (send, fetch, request, ping, describe)."""

    channel: Channel = doc("Channel the command dispatcher consumes.", default="coupler.commands")
    reply_timeout_seconds: Num = doc(
        "How long `coupler send` and `ctl ping` wait for replies.", default=30.0, ge=0
    )


class ControlSection(Section):
    """The Control Bus endpoint."""

    socket: Str = doc(
        "Unix socket of the control endpoint (mode 0600), relative to the data directory.",
        default="control.sock",
    )
    request_timeout: Num = doc(
        "Seconds a connection to the control endpoint has to send its request line, however slowly it comes "
        "(then it is answered with an error and closed).", default=30.0, gt=0)


class MonitorSection(Section):
    """Stuck-message monitoring and heartbeats."""

    stuck_after_seconds: Num = doc(
        "Alert when a channel's oldest message is older than this.", default=300.0, ge=0
    )
    interval_seconds: Num = doc(
        "How often the daemon checks channels and records heartbeats.", default=5.0, ge=0.01
    )


class HttpSection(Section):
    """The daemon's HTTP endpoint: operator console, JSON API (token required), Prometheus
    `/metrics` and `/healthz`. Off unless `listen` is set."""

    listen: Str | None = doc(
        "`HOST:PORT` to serve on, for example `127.0.0.1:8780` (port 0: any free port).", default=None, example="127.0.0.1:8780"
    )
    tls_cert: Str | None = doc("PEM certificate chain for HTTPS, relative to site.toml.", default=None, example="tls/console.crt")
    tls_key: Str | None = doc("PEM private key of `tls_cert`, relative to site.toml.", default=None, example="tls/console.key")
    allow_plain_remote: Bool = doc(
        "Serve plain HTTP on a non-loopback address (refused otherwise: use TLS).", default=False
    )
    keepalive_timeout: Num = doc(
        "Seconds a connection may stay open without a request in progress: a new one to send its request "
        "line and headers, however slowly they come, a kept-alive one between requests (then closed; "
        "aiohttp's `web.run_app` default).", default=75.0, gt=0)
    max_body_bytes: Int = doc(
        "Largest body of a POST to the API, bytes; a larger one is answered 413 unread. The default holds "
        "the largest test message (10,000,000 characters, as JSON escapes them).", default=64 * 1024 * 1024, ge=1)
    read_timeout: Num = doc(
        "Seconds a POST's body has to arrive, however slowly it comes (then 408 and the connection "
        "closed).", default=30.0, gt=0)
    max_connections: Int = doc(
        "Connections open at once; a new one beyond is answered 503 and closed at once, so the clients "
        "connected go on being served (one WARNING line every 10 s while it lasts).",
        default=DEFAULT_MAX_CONNECTIONS, ge=1)


class TracingSection(Section):
    """Message tracing: every envelope carries a W3C `traceparent`; with `otlp_endpoint` set
    (and the `otlp` extra installed: `pip install 'coupler[otlp]'`), the daemon exports a span
    per hop."""

    otlp_endpoint: Str | None = doc(
        "OTLP/HTTP endpoint of a trace collector, e.g. `http://127.0.0.1:4318/v1/traces`.", default=None,
        example="http://127.0.0.1:4318/v1/traces",
    )
    service_name: Str | None = doc("`service.name` of the exported spans (default: the site's name).", default=None,
                                   example="acme-claims")


class LoggingSection(Section):
    """Daemon logs (the `--log-format` and `--log-level` options override these)."""

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = doc("Log level.", default="INFO")
    format: Literal["text", "json"] = doc("`text` for people, `json` for JSON lines.", default="text")


class ChannelSettings(Section):
    """Channels with settings of their own. Channels not listed here are point-to-point queues
    created on first use."""

    name: Channel = doc("Channel name.")
    kind: Literal["queue", "topic"] = doc("`queue` (point-to-point) or `topic` (publish-subscribe).", default="queue")
    format: FormatName | None = doc(
        "Datatype Channel: the canonical format name it carries (without version). An outbound adapter "
        "reading it that declares a `format` (NAME@V) receives every message converted to that version by "
        "the schema registry (Avro binary bodies); a message that cannot be converted goes to the Invalid "
        "Message Channel with the reason.",
        default=None,
    )
    dead_letter_channel: Channel | None = doc(
        "Dead Letter Channel of this channel (default: the site-wide one).", default=None
    )
    max_attempts: Int | None = doc("Overrides store.redelivery.max_attempts for this channel.", default=None, ge=1)
    stuck_after_seconds: Num | None = doc(
        "Overrides monitor.stuck_after_seconds for this channel.", default=None, ge=0
    )
    reassemble: Bool = doc(
        "Message Sequence: the parts of a split document (messages with a `sequence` header) are held "
        "until all arrived and the channel's consumers get the whole document; the parts never reach them.",
        default=False,
    )
    ttl_seconds: Num | None = doc(
        "Message Expiration: what an adapter publishes or a route sends to this channel expires this many "
        "seconds later (unless it expires sooner); an expired message is never handed to a consumer (dead "
        "letters, reason `expired`, counted as expired in /metrics).",
        default=None, gt=0,
    )
    sequence_timeout_seconds: Num = doc(
        "With `reassemble`: a sequence still incomplete this long after its first part arrived goes to "
        "the Invalid Message Channel.",
        default=300.0, gt=0,
    )


# -- messaging patterns on a consumer (routes and outbound adapters) ---------------------------

IDEMPOTENT_KEY_DOC = (
    "Idempotent Receiver: drop (acknowledge without handling) a message this consumer already handled "
    "within `store.idempotency_window_seconds`. `message_id` drops resends of the same message; a "
    "business key (fields of the expression language separated by commas: headers, properties and body "
    "fields, `origin, properties.order_no` or `body.order.id`) also drops another message with the same values. A message lacking "
    "a field of the key goes to the Invalid Message Channel."
)


class ThrottleConfig(Section):
    """Message Throttle: how fast this consumer takes messages from its channel, whatever the
    channel's depth."""

    rate: Num | None = doc("At most this many messages per second on average (no limit when not set).",
                           default=None, gt=0)
    burst: Int = doc("Messages that may start at once after a quiet period.", default=1, ge=1)
    concurrency: Int = doc("Messages handled at the same time (worker threads).", default=1, ge=1)


class Identity(Section):
    """Application identity for queue-less addressing (class, provider, name, version)."""

    class_: Str = doc("Application class.", alias="class")
    provider: Str = doc("Provider name.", default="")
    name: Str = doc("Application name.", default="")
    version: Str = doc("Application version.", default="")

    def as_dict(self) -> dict[str, str]:
        return {"class": self.class_, "provider": self.provider, "name": self.name, "version": self.version}


class WrapperConfig(Section):
    """One envelope wrapper of an adapter's chain."""

    type: Str = doc("Wrapper type.")
    options: FreeTable = doc("Options of the wrapper type.", default_factory=dict)


class AdapterConfig(Section):
    """Channel Adapters connecting legacy systems. The type comes from an installed plugin
    (`coupler plugins` lists them)."""

    name: EntryName = doc("Unique adapter name.")
    type: Str = doc("Adapter type, from a plugin.")
    direction: Literal["inbound", "outbound", "both"] = doc("Which way documents flow.", default="both")
    channel: Channel | None = doc(
        "Inbound: where the adapter publishes; outbound: the channel whose documents it delivers.",
        default=None,
    )
    targets: tuple[Str, ...] = doc("Command targets it serves (its name is always one).", default=())
    commands: tuple[CommandName, ...] | None = doc(
        "Restrict the commands it serves (default: all its type supports).", default=None
    )
    identity: Identity | None = doc(Identity.__doc__ or "", default=None)
    format: Indicator | None = doc(
        "Format indicator (NAME@V) of the documents it produces or reads. On a Datatype Channel this is "
        "the version the adapter reads (it must exist in the schema registry); an outbound adapter also "
        "gets command documents of another version of that entity converted to it. An inbound adapter "
        "with a `mapping` publishes this version of the mapping's entity (default: the mapping's own).",
        default=None,
    )
    translator: Str | None = doc(
        "How an outbound adapter with a `mapping` gets each mapped document: `copybook` (fixed-width "
        "record bytes), `xml` (an XML document validated against the XSD) or `json` (the legacy record as "
        "JSON, for adapters that encode it themselves: SOAP, the socket adapter's copybook translator). "
        "Default: the kind of the mapping's legacy side. Plugins may add translator types "
        "(`coupler plugins` lists them).",
        default=None,
    )
    mapping: Str | None = doc(
        "The field mapping file (docs/mappings.md), relative to site.toml, between the adapter's legacy "
        "records and a canonical entity; the bus applies it, the adapter only moves bytes. Inbound: each "
        "message the adapter publishes (the record's bytes, read by the mapping's `legacy` spec, or the "
        "record as JSON) is mapped legacy -> canonical and goes on the channel as the entity in Avro binary "
        "(NAME@V); one that cannot be mapped goes to the Invalid Message Channel with the reason. Outbound: "
        "each document of its canonical entity (a command's document or a channel message; other versions "
        "are converted first) is mapped into the legacy record before the adapter gets it; one that cannot "
        "be mapped gets a fault `invalid` (commands) or goes to the Invalid Message Channel (channel messages).",
        default=None,
    )
    wrappers: tuple[WrapperConfig, ...] = doc(
        "Envelope wrapper chain around the payload, innermost first, applied by the bus: what an inbound "
        "adapter publishes is unwrapped (the chain backwards, before the `mapping`), what an outbound "
        "adapter is handed is wrapped (after the `mapping`); see docs/mappings.md. Types: copybook, xml, "
        "soap, length, delimited, mllp, stx_etx. Relative files in their options are relative to site.toml.",
        example=(
            "[[adapters.wrappers]]\n"
            'type = "copybook"\n'
            'options = { copybook = "txn-header.cpy", correlation_id = "CORR-ID", length = "DATA-LEN" }\n'
            "[[adapters.wrappers]]\n"
            'type = "length"\n'
            "options = { size = 4 }\n"
        ),
        default=(),
    )
    idempotent_key: BusinessKey | None = doc(
        IDEMPOTENT_KEY_DOC + " The key is claimed before the delivery, until the message's lease ends (shared by "
        "every daemon of the site), and recorded for good in the transaction that acknowledges the message: a copy "
        "that another worker or daemon is delivering at that moment is given back for the channel's lease (an attempt), then "
        "dropped; a delivery that fails gives up its claim. (Outbound: its delivery worker.)", default=None)
    select: Str | None = doc(
        "Selective Consumer (outbound): the adapter is handed only the messages of its channel matching this "
        "selector (docs/expressions.md); the others stay on the channel for other consumers.",
        default=None,
    )
    throttle: ThrottleConfig | None = doc(ThrottleConfig.__doc__ or "", default=None)
    enabled: Bool = doc("Start this adapter with the daemon.", default=True)
    options: FreeTable = doc(
        "Options of the adapter type, checked against the options model the type declares (see the "
        "adapter's documentation; an unknown option is an error). Relative file and directory paths in "
        "options (those the adapter type declares as paths, such as `wsdl`, `copybook`, `tls.cert`) are "
        "relative to the directory of site.toml.",
        default_factory=dict,
    )
    #: position in ``[[adapters]]`` (set by the loader)
    _index: int = PrivateAttr(default=0)

    @property
    def index(self) -> int:
        return self._index

    @property
    def key_path(self) -> str:
        return f"adapters[{self.name}]"

    @property
    def identity_dict(self) -> dict[str, str] | None:
        return self.identity.as_dict() if self.identity is not None else None


class RouteRule(Section):
    """One rule of a route."""

    when: Str | None = doc("Message selector; a rule without one always matches.", default=None)
    to: tuple[Channel, ...] = doc("Channels the message goes to (a Recipient List when several).")


class StepConfig(Section):
    """One step of a route's pipeline (Pipes and Filters), run in order on every message. `type`
    names a step type (built-in or from a plugin: `coupler plugins` lists them); the other keys of
    the table are the step type's own (see "Step types" below)."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    type: Str = doc("Step type: filter, split, transform, set_properties, wire_tap, ... or a plugin's.")
    name: EntryName | None = doc("Step name (default: TYPE-INDEX), used by `coupler ctl detour` and in traces.",
                                 default=None)

    @property
    def options(self) -> dict[str, Any]:
        """The step type's own keys."""
        return dict(self.model_extra or {})


class RouteConfig(Section):
    """Routes: pipelines from one channel to others (Pipes and Filters). A route reads `from` a
    channel, runs its `steps` in order, and sends what comes out `to` channels or through its
    `rules` (Content-Based Router / Recipient List). Conditions are written in the expression
    language (docs/expressions.md): headers (`format`, `kind`, `origin`, ...),
    `properties.NAME`, `body.FIELD` and `xpath('...')`."""

    name: EntryName | None = doc("Route name (default: route-<index>).", default=None)
    source: Channel = doc("Input channel.", alias="from")
    format: Indicator | None = doc(
        "The version the route reads (NAME@V), as an outbound adapter declares it: every message of "
        "entity NAME is converted to version V by the schema registry before the rules see it (the input "
        "channel becomes a Datatype Channel of NAME); a message that cannot be converted goes to the "
        "Invalid Message Channel with the reason.",
        default=None,
    )
    mode: Literal["first", "all"] = doc(
        "`first`: Content-Based Router, the first matching rule wins; `all`: every matching rule's "
        "channels (Recipient List).",
        default="first",
    )
    otherwise: Channel | None = doc(
        "Channel for messages no rule matches (default: the dead letters, reason `unroutable`).", default=None
    )
    idempotent_key: BusinessKey | None = doc(
        IDEMPOTENT_KEY_DOC + " The key is checked and recorded in one step at the start of the transaction that "
        "handles and acknowledges the message: a copy handled at that moment by another worker or daemon waits for "
        "it, then is dropped; a handling that fails records no key.", default=None)
    throttle: ThrottleConfig | None = doc(ThrottleConfig.__doc__ or "", default=None)
    steps: tuple[StepConfig, ...] = doc(
        StepConfig.__doc__ or "",
        example=(
            "[[routes.steps]]\n"
            'type = "filter"\n'
            "when = \"body.amount > 0\"\n"
            "[[routes.steps]]\n"
            'type = "set_properties"\n'
            'properties = { region = "body.customer.region" }\n'
        ),
        default=(),
    )
    to: tuple[Channel, ...] = doc(
        "Channels every message leaving the steps goes to (with `rules`: before the rules are looked at, "
        "these channels get every message too).",
        default=(),
    )
    rules: tuple[RouteRule, ...] = doc("The rules, in order (Content-Based Router / Recipient List).", default=())
    ttl_seconds: Num | None = doc(
        "Message Expiration: what the route sends expires this many seconds later (unless it already "
        "expires sooner); an expired message is never handed to a consumer: it goes to the dead letters "
        "with reason `expired`, counted as `expired` in /metrics.",
        default=None, gt=0,
    )
    select: Str | None = doc(
        "Selective Consumer: the route takes only the messages matching this selector and leaves the others "
        "on the channel for other consumers.",
        default=None,
    )
    _index: int = PrivateAttr(default=0)
    #: whether the site names the route (else the loader names it ``route-<index>``)
    _named: bool = PrivateAttr(default=True)

    @property
    def index(self) -> int:
        return self._index

    @property
    def label(self) -> str:
        """Its name (the loader names an unnamed route ``route-<index>``)."""
        return self.name or f"route-{self.index}"

    @property
    def key_path(self) -> str:
        """``routes[NAME]`` when the site names it with a valid name, else ``routes[INDEX]``."""
        named = self._named and self.name is not None and is_channel_name(self.name)
        return f"routes[{self.name if named else self.index}]"


class BatchJobConfig(Section):
    """Batch ingestion run by the daemon (docs/batch.md): `coupler batch ingest` of the files an
    inbound adapter staged for batch (its `batch_dir`), when files are staged and/or on a schedule.
    Each run is a child process (Spark's JVM never lives in the daemon), one at a time per source,
    and only when something is staged; `coupler ctl status` shows the last run. Give at least one
    trigger: `on_staged`, `interval_seconds` or `at`."""

    source: Str = doc("The inbound adapter whose `batch_dir` is ingested (one [[batch]] per adapter).")
    on_staged: Bool = doc(
        "Run as soon as files are staged: `batch_dir` is checked every `poll_seconds`, and a run starts "
        "once what is staged has not changed between two checks.",
        default=False,
    )
    interval_seconds: Num | None = doc(
        "Run every this many seconds (counted from the last run's start).", default=None, ge=1
    )
    at: tuple[TimeOfDay, ...] = doc(
        "Run daily at these local times of the daemon's host (`HH:MM`, 24-hour).", default=()
    )
    poll_seconds: Num = doc("How often `on_staged` looks at `batch_dir`.", default=5.0, ge=0.05)
    retry_seconds: Num = doc(
        "After a failed run, how long to wait before running again while files are still staged "
        "(whatever the triggers say).",
        default=300.0,
        ge=0,
    )
    timeout_seconds: Num | None = doc(
        "A run taking longer is killed (and counts as failed; its inputs stay staged).", default=None, ge=1
    )
    from_spec: Str | None = doc(
        "What the staged files are, a SPEC (default: `copybook:` the adapter's copybook); a relative file "
        "in it is relative to site.toml.",
        alias="from",
        default=None,
    )
    to_spec: Str = doc(
        "The output format, a SPEC (`parquet`, `avro:NAME@V`, `jsonl`, ...).", alias="to", default="parquet"
    )
    output: Str | None = doc(
        "Output folder (relative to site.toml) or URI; each batch writes BATCH_ID in it (default: "
        "DATA_DIR/batch/SOURCE/BATCH_ID/data).",
        default=None,
    )
    channel: Channel | None = doc(
        "Where `coupler.BatchCompleted@1` goes (default: the adapter's channel).", default=None
    )
    mapping: Str | None = doc("Field mapping applied to every record, relative to site.toml.", default=None)
    master: Str = doc("Spark master of the job.", default="local[*]")
    options: FreeTable = doc(
        "Reader options (the copybook options for copybook input), as `-o KEY=VALUE`.", default_factory=dict
    )
    conf: FreeTable = doc("Spark configuration of the job, as `--conf KEY=VALUE`.", default_factory=dict)
    enabled: Bool = doc("Let the daemon run this job.", default=True)
    _index: int = PrivateAttr(default=0)

    @property
    def index(self) -> int:
        return self._index

    @property
    def key_path(self) -> str:
        return f"batch[{self.source}]"


_CHANNELS_EXAMPLE = '[[channels]]\nname = "orders"\nkind = "queue"\nformat = "acme.Order"\nstuck_after_seconds = 600\n'
_ADAPTERS_EXAMPLE = (
    "[[adapters]]\n"
    'name = "orders-in"\n'
    'type = "filedrop"\n'
    'direction = "inbound"\n'
    'channel = "orders"\n'
    'targets = ["orders"]\n'
    'identity = { class = "orders", provider = "acme", name = "orders-in", version = "1" }\n'
    "[adapters.options]\n"
    'directory = "/srv/drop/orders"\n'
)
_ROUTES_EXAMPLE = (
    "[[routes]]\n"
    'name = "orders-by-region"\n'
    'from = "orders"\n'
    'mode = "first"\n'
    'otherwise = "orders.other"\n'
    "[[routes.steps]]\n"
    'type = "filter"\n'
    "when = \"body.status != 'CANCELLED'\"\n"
    "[[routes.rules]]\n"
    "when = \"properties.region = 'EU'\"\n"
    'to = ["orders.eu", "orders.audit"]\n'
)
_BATCH_EXAMPLE = (
    "[[batch]]\n"
    'source = "orders-in"\n'
    "on_staged = true\n"
    'at = ["02:30"]\n'
    'to = "parquet"\n'
    'options = { record_format = "F" }\n'
)


class SiteModel(Section):
    """A Coupler site: one store, the adapters connecting legacy systems, the routes between channels."""

    site: SiteSection = doc(SiteSection.__doc__ or "", default_factory=SiteSection)
    store: StoreSection = doc(StoreSection.__doc__ or "", default_factory=StoreSection)
    schemas: SchemasSection = doc(SchemasSection.__doc__ or "", default_factory=SchemasSection)
    commands: CommandsSection = doc(CommandsSection.__doc__ or "", default_factory=CommandsSection)
    control: ControlSection = doc(ControlSection.__doc__ or "", default_factory=ControlSection)
    monitor: MonitorSection = doc(MonitorSection.__doc__ or "", default_factory=MonitorSection)
    http: HttpSection = doc(HttpSection.__doc__ or "", default_factory=HttpSection)
    tracing: TracingSection = doc(TracingSection.__doc__ or "", default_factory=TracingSection)
    logging: LoggingSection = doc(LoggingSection.__doc__ or "", default_factory=LoggingSection)
    channels: tuple[ChannelSettings, ...] = doc(
        ChannelSettings.__doc__ or "", example=_CHANNELS_EXAMPLE, default=()
    )
    adapters: tuple[AdapterConfig, ...] = doc(AdapterConfig.__doc__ or "", example=_ADAPTERS_EXAMPLE, default=())
    routes: tuple[RouteConfig, ...] = doc(RouteConfig.__doc__ or "", example=_ROUTES_EXAMPLE, default=())
    batch: tuple[BatchJobConfig, ...] = doc(BatchJobConfig.__doc__ or "", example=_BATCH_EXAMPLE, default=())
