"""The schema of ``site.toml``, as data.

Every key a site can set is a :class:`Field` here: its type, default, allowed values and
documentation. :mod:`coupler.bus.config.loader` validates a site file against it, ``coupler init``
writes the commented template from it and :func:`coupler.bus.config.doc.render_markdown`
generates ``docs/configuration.md`` from it, so the three cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: kinds of values a field holds
STRING, INTEGER, NUMBER, BOOLEAN = "string", "integer", "number", "boolean"
STRINGS = "array of strings"
TABLE = "table"  # a table with the fields listed in ``fields``
TABLES = "array of tables"  # ``[[name]]``, each with the fields listed in ``fields``
FREE_TABLE = "free-form table"  # any keys, passed through (adapter options)


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: the default of a field the site must set
REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Field:
    """One key of ``site.toml``."""

    name: str
    kind: str
    doc: str
    default: Any = None
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    fields: tuple[Field, ...] = ()
    #: a TOML snippet showing the field (or the whole section) in use
    example: str = ""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def child(self, name: str) -> Field | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None


_REDELIVERY = Field(
    "redelivery",
    TABLE,
    "Redelivery of messages that failed (a negative acknowledgement or an exception): "
    "exponential backoff, then the Dead Letter Channel.",
    default={},
    fields=(
        Field("initial_delay", NUMBER, "Seconds before the first redelivery.", 1.0, minimum=0),
        Field("multiplier", NUMBER, "Each further delay is the previous one times this.", 2.0, minimum=1),
        Field("max_delay", NUMBER, "Upper bound of a delay, in seconds.", 60.0, minimum=0),
        Field("max_attempts", INTEGER, "Deliveries before a message goes to the dead letters.", 5, minimum=1),
        Field("jitter", NUMBER, "Random fraction (0..1) added to or taken from each delay.", 0.1, minimum=0),
    ),
)

_AMQP = Field(
    "amqp",
    TABLE,
    "The broker transport (`type = \"amqp\"`): channels on RabbitMQ, the state every daemon of "
    "a multi-node site shares (journal, idempotency keys, identities, configurations, the "
    "polling adapters' file seen-state) in "
    "PostgreSQL. See docs/operations.md.",
    default={},
    fields=(
        Field("url", STRING, "AMQP URL of the RabbitMQ broker (or of a load balancer in front of its cluster).",
              "amqp://guest:guest@127.0.0.1:5672/%2F"),
        Field("postgres", STRING, "PostgreSQL connection string (libpq DSN or URL) of the shared state.",
              "postgresql://127.0.0.1:5432/coupler"),
        Field("postgres_schema", STRING, "PostgreSQL schema holding the site's tables.", "coupler"),
        Field("prefix", STRING, "Prefix of the name of every queue and exchange of the site.", "coupler."),
        Field("delivery_limit", INTEGER,
              "Times the broker returns an unacknowledged message (crashed consumers) before dead-lettering it.",
              50, minimum=1),
        Field("reconnect_timeout_seconds", NUMBER,
              "How long an operation waits for the broker to come back before it fails.", 60.0, minimum=1),
        Field("file_lease_seconds", NUMBER,
              "How long a daemon's claim on a file it polls (file drop, SFTP) lasts without progress "
              "before another daemon may take the file over (a daemon that died in the middle of it).",
              300.0, minimum=1),
    ),
    example=(
        '[store]\ntype = "amqp"\n\n[store.amqp]\nurl = "amqp://coupler:secret@rabbit.example:5672/%2F"\n'
        'postgres = "postgresql://coupler@db.example:5432/coupler"'
    ),
)

_BATCH = Field(
    "batch",
    TABLES,
    "Batch ingestion run by the daemon (docs/batch.md): `coupler batch ingest` of the files an "
    "inbound adapter staged for batch (its `batch_dir`), when files are staged and/or on a "
    "schedule. Each run is a child process (Spark's JVM never lives in the daemon), one at a "
    "time per source, and only when something is staged; `coupler ctl status` shows the last "
    "run. Give at least one trigger: `on_staged`, `interval_seconds` or `at`.",
    default=[],
    example=(
        "[[batch]]\n"
        'source = "orders-in"\n'
        "on_staged = true\n"
        'at = ["02:30"]\n'
        'to = "parquet"\n'
        'options = { record_format = "F" }\n'
    ),
    fields=(
        Field("source", STRING, "The inbound adapter whose `batch_dir` is ingested (one [[batch]] per adapter).", REQUIRED),
        Field(
            "on_staged",
            BOOLEAN,
            "Run as soon as files are staged: `batch_dir` is checked every `poll_seconds`, and a run "
            "starts once what is staged has not changed between two checks.",
            False,
        ),
        Field("interval_seconds", NUMBER, "Run every this many seconds (counted from the last run's start).", None, minimum=1),
        Field("at", STRINGS, "Run daily at these local times of the daemon's host (`HH:MM`, 24-hour).", []),
        Field("poll_seconds", NUMBER, "How often `on_staged` looks at `batch_dir`.", 5.0, minimum=0.05),
        Field(
            "retry_seconds",
            NUMBER,
            "After a failed run, how long to wait before running again while files are still staged "
            "(whatever the triggers say).",
            300.0,
            minimum=0,
        ),
        Field(
            "timeout_seconds",
            NUMBER,
            "A run taking longer is killed (and counts as failed; its inputs stay staged).",
            None,
            minimum=1,
        ),
        Field("from", STRING, "What the staged files are, a SPEC (default: `copybook:` the adapter's copybook); "
              "a relative file in it is relative to site.toml.", None),
        Field("to", STRING, "The output format, a SPEC (`parquet`, `avro:NAME@V`, `jsonl`, ...).", "parquet"),
        Field("output", STRING, "Output folder (relative to site.toml) or URI; each batch writes BATCH_ID in it "
              "(default: DATA_DIR/batch/SOURCE/BATCH_ID/data).", None),
        Field("channel", STRING, "Where `coupler.BatchCompleted@1` goes (default: the adapter's channel).", None),
        Field("mapping", STRING, "Field mapping applied to every record, relative to site.toml.", None),
        Field("master", STRING, "Spark master of the job.", "local[*]"),
        Field("options", FREE_TABLE, "Reader options (the copybook options for copybook input), as `-o KEY=VALUE`.", {}),
        Field("conf", FREE_TABLE, "Spark configuration of the job, as `--conf KEY=VALUE`.", {}),
        Field("enabled", BOOLEAN, "Let the daemon run this job.", True),
    ),
)

SITE_SCHEMA = Field(
    "",
    TABLE,
    "A Coupler site: one store, the adapters connecting legacy systems, the routes between channels.",
    fields=(
        Field(
            "site",
            TABLE,
            "The site itself.",
            default={},
            fields=(
                Field("name", STRING, "Name of the site, shown by `coupler ctl status`.", "coupler-site"),
                Field(
                    "data_dir",
                    STRING,
                    "Directory of the store, the control socket, the daemon lock, claim-checked "
                    "bodies and adapter state. Relative paths are relative to site.toml.",
                    "data",
                ),
            ),
        ),
        Field(
            "store",
            TABLE,
            "The messaging infrastructure: the embedded SQLite store by default.",
            default={},
            fields=(
                Field("type", STRING, "Transport type: the embedded SQLite store, or RabbitMQ + PostgreSQL for "
                      "multi-node sites.", "sqlite", choices=("sqlite", "amqp")),
                Field("path", STRING, "Database file name, in the data directory.", "coupler.db"),
                Field(
                    "synchronous",
                    STRING,
                    "SQLite `synchronous` setting: FULL makes every send durable before it "
                    "returns; NORMAL is faster and may lose the last commits on power loss.",
                    "FULL",
                    choices=("FULL", "NORMAL"),
                ),
                Field(
                    "sync_acks",
                    BOOLEAN,
                    "With FULL, also fsync every acknowledgement and negative acknowledgement "
                    "before it returns. Off, they are written at once (a crashed process loses "
                    "none) and reach the disk with the next send or background checkpoint, "
                    "within a second: a power cut may deliver again what was acknowledged in "
                    "that second, as RabbitMQ may; it never loses a message.",
                    False,
                ),
                Field("lease_seconds", NUMBER, "How long a received, unacknowledged message stays invisible.", 30.0, minimum=0.001),
                Field(
                    "claim_check_bytes",
                    INTEGER,
                    "Bodies larger than this are stored aside (Claim Check): as files in the data directory "
                    "on the SQLite store, in PostgreSQL (shared by every host) on the broker transport.",
                    262144,
                    minimum=1,
                ),
                Field("dead_letter_channel", STRING, "Site-wide Dead Letter Channel.", "dead-letters"),
                Field("invalid_channel", STRING, "Invalid Message Channel.", "invalid"),
                Field(
                    "idempotency_window_seconds",
                    NUMBER,
                    "How long an Idempotent Receiver remembers message ids.",
                    604800.0,
                    minimum=0,
                ),
                Field("journal_retention_days", NUMBER, "Message Store journal retention.", 7.0, minimum=0),
                _REDELIVERY,
                _AMQP,
            ),
        ),
        Field(
            "schemas",
            TABLE,
            "Canonical schemas of this site, in addition to the built-in ones and those of plugins.",
            default={},
            fields=(
                Field(
                    "paths",
                    STRINGS,
                    "Directories of `<name>/v<N>.avsc` files, relative to site.toml.",
                    [],
                ),
            ),
        ),
        Field(
            "commands",
            TABLE,
            "The common command set (send, fetch, request, ping, describe).",
            default={},
            fields=(
                Field("channel", STRING, "Channel the command dispatcher consumes.", "coupler.commands"),
                Field("reply_timeout_seconds", NUMBER, "How long `coupler send` and `ctl ping` wait for replies.", 30.0, minimum=0),
            ),
        ),
        Field(
            "control",
            TABLE,
            "The Control Bus endpoint.",
            default={},
            fields=(
                Field(
                    "socket",
                    STRING,
                    "Unix socket of the control endpoint (mode 0600), relative to the data directory.",
                    "control.sock",
                ),
            ),
        ),
        Field(
            "monitor",
            TABLE,
            "Stuck-message monitoring and heartbeats.",
            default={},
            fields=(
                Field("stuck_after_seconds", NUMBER, "Alert when a channel's oldest message is older than this.", 300.0, minimum=0),
                Field("interval_seconds", NUMBER, "How often the daemon checks channels and records heartbeats.", 5.0, minimum=0.01),
            ),
        ),
        Field(
            "logging",
            TABLE,
            "Daemon logs (the `--log-format` and `--log-level` options override these).",
            default={},
            fields=(
                Field("level", STRING, "Log level.", "INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR")),
                Field("format", STRING, "`text` for people, `json` for JSON lines.", "text", choices=("text", "json")),
            ),
        ),
        Field(
            "channels",
            TABLES,
            "Channels with settings of their own. Channels not listed here are point-to-point "
            "queues created on first use.",
            default=[],
            example=(
                "[[channels]]\n"
                'name = "orders"\n'
                'kind = "queue"\n'
                'format = "acme.Order"\n'
                "stuck_after_seconds = 600\n"
            ),
            fields=(
                Field("name", STRING, "Channel name.", REQUIRED),
                Field("kind", STRING, "`queue` (point-to-point) or `topic` (publish-subscribe).", "queue", choices=("queue", "topic")),
                Field(
                    "format",
                    STRING,
                    "Datatype Channel: the canonical format name it carries (without version). An "
                    "outbound adapter reading it that declares a `format` (NAME@V) receives every "
                    "message converted to that version by the schema registry (Avro binary bodies); "
                    "a message that cannot be converted goes to the Invalid Message Channel with the reason.",
                    None,
                ),
                Field("dead_letter_channel", STRING, "Dead Letter Channel of this channel (default: the site-wide one).", None),
                Field("max_attempts", INTEGER, "Overrides store.redelivery.max_attempts for this channel.", None, minimum=1),
                Field("stuck_after_seconds", NUMBER, "Overrides monitor.stuck_after_seconds for this channel.", None, minimum=0),
            ),
        ),
        Field(
            "adapters",
            TABLES,
            "Channel Adapters connecting legacy systems. The type comes from an installed plugin "
            "(`coupler plugins` lists them).",
            default=[],
            example=(
                "[[adapters]]\n"
                'name = "orders-in"\n'
                'type = "filedrop"\n'
                'direction = "inbound"\n'
                'channel = "orders"\n'
                'targets = ["orders"]\n'
                'identity = { class = "orders", provider = "acme", name = "orders-in", version = "1" }\n'
                "[adapters.options]\n"
                'directory = "/srv/drop/orders"\n'
            ),
            fields=(
                Field("name", STRING, "Unique adapter name.", REQUIRED),
                Field("type", STRING, "Adapter type, from a plugin.", REQUIRED),
                Field("direction", STRING, "Which way documents flow.", "both", choices=("inbound", "outbound", "both")),
                Field(
                    "channel",
                    STRING,
                    "Inbound: where the adapter publishes; outbound: the channel whose documents it delivers.",
                    None,
                ),
                Field("targets", STRINGS, "Command targets it serves (its name is always one).", []),
                Field("commands", STRINGS, "Restrict the commands it serves (default: all its type supports).", None),
                Field(
                    "identity",
                    TABLE,
                    "Application identity for queue-less addressing (class, provider, name, version).",
                    None,
                    fields=(
                        Field("class", STRING, "Application class.", REQUIRED),
                        Field("provider", STRING, "Provider name.", ""),
                        Field("name", STRING, "Application name.", ""),
                        Field("version", STRING, "Application version.", ""),
                    ),
                ),
                Field(
                    "format",
                    STRING,
                    "Format indicator (NAME@V) of the documents it produces or reads. On a Datatype "
                    "Channel this is the version the adapter reads (it must exist in the schema registry); an "
                    "outbound adapter also gets command documents of another version of that entity converted to it. "
                    "An inbound adapter with a `mapping` publishes this version of the mapping's entity "
                    "(default: the mapping's own).",
                    None,
                ),
                Field(
                    "translator",
                    STRING,
                    "How an outbound adapter with a `mapping` gets each mapped document: `copybook` "
                    "(fixed-width record bytes), `xml` (an XML document validated against the XSD) or "
                    "`json` (the legacy record as JSON, for adapters that encode it themselves: SOAP, "
                    "the socket adapter's copybook translator). Default: the kind of the mapping's legacy side.",
                    None,
                ),
                Field(
                    "mapping",
                    STRING,
                    "The field mapping file (docs/mappings.md), relative to site.toml, between the adapter's "
                    "legacy records and a canonical entity; the bus applies it, the adapter only moves bytes. "
                    "Inbound: each message the adapter publishes (the record's bytes, read by the mapping's "
                    "`legacy` spec, or the record as JSON) is mapped legacy -> canonical and goes on the "
                    "channel as the entity in Avro binary (NAME@V); one that cannot be mapped goes to the "
                    "Invalid Message Channel with the reason. Outbound: each document of its canonical entity "
                    "(a command's document or a channel message; other versions are converted first) is "
                    "mapped into the legacy record before the adapter gets it; one that cannot be mapped gets "
                    "a fault `invalid` (commands) or goes to the Invalid Message Channel (channel messages).",
                    None,
                ),
                Field(
                    "wrappers",
                    TABLES,
                    "Envelope wrapper chain around the payload, innermost first, applied by the bus: what an "
                    "inbound adapter publishes is unwrapped (the chain backwards, before the `mapping`), what "
                    "an outbound adapter is handed is wrapped (after the `mapping`); see docs/mappings.md. "
                    "Types: copybook, xml, soap, length, delimited, mllp, stx_etx. Relative files in their "
                    "options are relative to site.toml.",
                    default=[],
                    example=(
                        "[[adapters.wrappers]]\n"
                        'type = "copybook"\n'
                        'options = { copybook = "txn-header.cpy", correlation_id = "CORR-ID", length = "DATA-LEN" }\n'
                        "[[adapters.wrappers]]\n"
                        'type = "length"\n'
                        "options = { size = 4 }\n"
                    ),
                    fields=(
                        Field("type", STRING, "Wrapper type.", REQUIRED),
                        Field("options", FREE_TABLE, "Options of the wrapper type.", {}),
                    ),
                ),
                Field("enabled", BOOLEAN, "Start this adapter with the daemon.", True),
                Field(
                    "options",
                    FREE_TABLE,
                    "Options of the adapter type (see the adapter's documentation). Relative file and "
                    "directory paths in options (those the adapter type declares as paths, such as "
                    "`wsdl`, `copybook`, `tls.cert`) are relative to the directory of site.toml.",
                    {},
                ),
            ),
        ),
        Field(
            "routes",
            TABLES,
            "Content-based routes and recipient lists from one channel to others. Conditions are "
            "message selectors over headers (`format`, `kind`, `origin`, ...), properties and the format.",
            default=[],
            example=(
                "[[routes]]\n"
                'name = "orders-by-region"\n'
                'from = "orders"\n'
                'mode = "first"\n'
                'otherwise = "orders.other"\n'
                "[[routes.rules]]\n"
                "when = \"region = 'EU'\"\n"
                'to = ["orders.eu", "orders.audit"]\n'
            ),
            fields=(
                Field("name", STRING, "Route name (default: route-<index>).", None),
                Field("from", STRING, "Input channel.", REQUIRED),
                Field(
                    "format",
                    STRING,
                    "The version the route reads (NAME@V), as an outbound adapter declares it: every "
                    "message of entity NAME is converted to version V by the schema registry before "
                    "the rules see it (the input channel becomes a Datatype Channel of NAME); a "
                    "message that cannot be converted goes to the Invalid Message Channel with the reason.",
                    None,
                ),
                Field(
                    "mode",
                    STRING,
                    "`first`: Content-Based Router, the first matching rule wins; `all`: every matching rule's channels (Recipient List).",
                    "first",
                    choices=("first", "all"),
                ),
                Field(
                    "otherwise",
                    STRING,
                    "Channel for messages no rule matches (default: the dead letters, reason `unroutable`).",
                    None,
                ),
                Field(
                    "rules",
                    TABLES,
                    "The rules, in order.",
                    REQUIRED,
                    fields=(
                        Field("when", STRING, "Message selector; a rule without one always matches.", None),
                        Field("to", STRINGS, "Channels the message goes to (a Recipient List when several).", REQUIRED),
                    ),
                ),
            ),
        ),
        _BATCH,
    ),
)


def walk(root: Field = SITE_SCHEMA, prefix: str = "") -> list[tuple[str, Field]]:
    """Every field with its dotted path (``adapters[].identity.class``), depth first."""
    rows: list[tuple[str, Field]] = []
    for f in root.fields:
        path = f"{prefix}{f.name}"
        rows.append((path, f))
        if f.kind == TABLE:
            rows.extend(walk(f, path + "."))
        elif f.kind == TABLES:
            rows.extend(walk(f, path + "[]."))
    return rows
