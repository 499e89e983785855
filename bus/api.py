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

A route step type (``coupler_step_types``) is a subclass of :class:`Step` answering typed
outcomes (:class:`Continue`, :class:`Deliver`, :class:`Discard`, :class:`Retry`,
:class:`DeadLetter`, :class:`Invalid`); :func:`try_step` runs one on a message in a test. See
:mod:`coupler.bus.runtime.steps` and ``examples/plugin-step``.

Relative file paths in options are relative to the directory of site.toml: an adapter type
names its path options in :attr:`Adapter.path_options` (``"wsdl"``, ``"tls.cert"``) and the
daemon resolves them before the adapter is created; other paths can be resolved with
``context.resolve_path``.
"""

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from coupler.bus.config.loader import site_schema_roots as _site_schema_roots
from coupler.bus.messaging.idempotency import IdempotentReceiver
from coupler.bus.model.adapter import (
    HEALTH_STATES,
    Adapter,
    AdapterContext,
    InboundAdapter,
    OutboundAdapter,
    PollOutcome,
    resolve_path,
    resolve_path_options,
)
from coupler.bus.model.commands import (
    COMMON_COMMANDS,
    FAULT_CODES,
    Command,
    CommandFault,
    Document,
    InvalidMessage,
    Reply,
    ReplyInfo,
    command_envelope,
    parse_reply,
)
from coupler.bus.model.files import (
    DONE,
    FAILED,
    FINAL_STATES,
    PROCESSING,
    PUBLISHED,
    STAGED,
    FileClaimLost,
    FileKey,
    FileRecord,
    FileState,
    path_shown,
    path_text,
)
from coupler.bus.model.httpserver import (
    DEFAULT_MAX_CONNECTIONS,
    BodyRefused,
    ConnectionLimit,
    bound_address,
    listen,
    read_body,
    refuse_declared,
)
from coupler.bus.model.loop import LoopThread
from coupler.bus.model.polling import Polled, Poller
from coupler.bus.model.requests import (
    DEFAULT_COMMAND_CHANNEL,
    Answer,
    request_channel,
    request_command,
)
from coupler.bus.plugins.hookspecs import hookimpl
from coupler.bus.runtime.steps import (
    Continue,
    DeadLetter,
    Deliver,
    Discard,
    Invalid,
    Outcome,
    Retry,
    Step,
    StepContext,
    StepError,
    StepSetup,
)
from coupler.bus.runtime.steps.pipeline import try_step
from coupler.bus.transport.sqlite.file_state import embedded_file_state
from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError
from coupler.canonical.options import (
    Bool,
    Int,
    Num,
    OptionsError,
    OptionsModel,
    Str,
    option,
    validate_options,
)

__all__ = [
    "COMMON_COMMANDS", "DONE", "FAILED", "FAULT_CODES", "FINAL_STATES", "HEALTH_STATES",
    "PROCESSING", "PUBLISHED", "STAGED", "Adapter", "AdapterContext", "Command",
    "CommandFault", "Document", "FileClaimLost", "FileKey", "FileRecord", "FileState", "path_shown", "path_text",
    "IdempotentReceiver", "InvalidMessage", "OptionsError", "OptionsModel", "Bool", "Int", "Num", "Str", "option", "validate_options", "Reply", "ReplyInfo", "command_envelope", "embedded_file_state",
    "hookimpl", "parse_reply", "record_of", "resolve_path", "resolve_path_options", "site_registry",
    "site_schema_roots",
    # the helpers of request-reply adapters: an event loop on a thread, asking the bus
    "DEFAULT_COMMAND_CHANNEL", "Answer", "LoopThread", "request_channel", "request_command",
    # what the HTTP servers hold every client to: a body read within its size and time, a
    # connection limit
    "DEFAULT_MAX_CONNECTIONS", "BodyRefused", "ConnectionLimit", "bound_address", "listen", "read_body",
    "refuse_declared",
    # the adapter contract's halves and the polling helper of inbound sources
    "InboundAdapter", "OutboundAdapter", "PollOutcome", "Polled", "Poller",
    # route pipelines: step types (coupler_step_types) and their outcomes
    "Continue", "DeadLetter", "Deliver", "Discard", "Invalid", "Outcome", "Retry", "Step", "StepContext",
    "StepError", "StepSetup", "try_step",
    # AMQP bridges: a message whose content header pika cannot decode, delivered with its cause
    "tolerate_undecodable_amqp_headers", "undecodable_amqp_header",
]


#: content types whose bodies are canonical Avro binary (decoded by the message's format)
AVRO_TYPES = ("avro/binary", "application/avro")


def site_registry(context: Any = None) -> Any:
    """The schema registry an adapter resolves formats with: the site's (built-in, plugin and
    ``[schemas] paths`` schemas) when ``context`` is the adapter's context, else the built-in
    and plugin schemas only (an adapter used without a daemon)."""
    registry = getattr(context, "schema_registry", None)
    if registry is None:
        from coupler.canonical.registry import SchemaRegistry

        registry = SchemaRegistry.default()
    return registry


def site_schema_roots(context: Any = None) -> list[Path]:
    """The directories an XSD or WSDL named by the site's configuration may read besides its own
    (``schema_roots`` of :func:`coupler.translators.xml.load_schema` and ``read_wsdl``): the
    site's folder (the directory of site.toml) and its ``[schemas] paths``, when ``context`` is
    the adapter's context (:func:`coupler.bus.config.loader.site_schema_roots`, as for the
    site's wrappers and mappings); none for an adapter used without a daemon (only what its
    options add)."""
    site_dir = getattr(context, "site_dir", None)
    if site_dir is None:
        return []
    return _site_schema_roots(site_dir, getattr(context, "schema_dirs", ()))


def tolerate_undecodable_amqp_headers(connection: Any) -> Any:
    """Make the pika ``BlockingConnection`` ``connection`` deliver a message whose content
    header (properties, headers table) pika cannot decode, instead of dropping the connection
    (the message would come back first on every new one: a poison message). Its properties are
    those pika can read, and :func:`undecodable_amqp_header` gives the cause: file the message
    in the Invalid Message Channel with it and acknowledge it. Returns ``connection``."""
    # imported here: pika is imported only by a site that uses AMQP
    from coupler.bus.transport.amqp.frames import tolerate_undecodable_headers

    return tolerate_undecodable_headers(connection)


def undecodable_amqp_header(properties: Any) -> str | None:
    """The cause (one line, naming the header) when ``properties`` are those of a delivery
    whose content header pika could not decode (:func:`tolerate_undecodable_amqp_headers`),
    else None."""
    from coupler.bus.transport.amqp.frames import undecodable

    return undecodable(properties)


def record_of(envelope: Envelope, context: Any = None) -> dict[str, Any]:
    """The body of ``envelope`` as a record: a canonical Avro body decoded with the schema of
    its format (``name@version`` from the site's registry when ``context`` is the adapter's
    context, else from the built-in and plugin schemas), a JSON body parsed (numbers with a
    point as exact decimals). :class:`CouplerError` when the body is neither, or does not
    decode."""
    content_type = envelope.format.content_type
    if content_type in AVRO_TYPES:
        record = site_registry(context).decode(envelope.body, envelope.format.ref)
    elif content_type == "application/json" or content_type.endswith("+json"):
        try:
            record = json.loads(envelope.body, parse_float=Decimal)
        except ValueError as exc:
            raise CouplerError(f"message {envelope.message_id}: the body is not JSON: {exc}") from None
    else:
        raise CouplerError(
            f"message {envelope.message_id} is {content_type}, not a record",
            hint="only canonical Avro (avro/binary) and JSON bodies have fields",
        )
    if not isinstance(record, dict):
        raise CouplerError(f"message {envelope.message_id}: the body is not a record")
    return record
