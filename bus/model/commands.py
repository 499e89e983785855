"""The common command set as Command Messages, their replies and the command dispatcher.

A command is an envelope of kind ``command`` whose format is ``coupler.commands.<Name>@1``
(``Send``, ``Fetch``, ``Request``, ``Ping``, ``Describe``) and whose body is the Avro record
of ``schemas/coupler/commands/<name>/v1.avsc``. Every command gets an answer on its return
address: one ``coupler.commands.Reply@1`` per adapter that served it, or a
``coupler.commands.Fault@1`` (when nobody serves it, when it is invalid, when the adapter
fails). Replies carry ``correlation_id`` = the command's ``message_id``, the command's
``expires_at`` (a reply nobody waits for any more expires) and the property
``coupler.reply-count``: how many replies the command gets in all.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
from dataclasses import dataclass, field
from typing import Any

import fastavro

from coupler.canonical import Envelope, FormatIndicator, MessageKind
from coupler.canonical.errors import CouplerError
from coupler.canonical.tracecontext import TRACEPARENT
from coupler.schemas import SCHEMA_DIR

#: the common command set (DESIGN.md)
COMMON_COMMANDS = ("send", "fetch", "request", "ping", "describe")

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
    ``AR``). ``recorded``: False when the dead letter was made by an earlier refusal of the
    same unit (read again after its batch rolled back), not by this one."""

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None, recorded: bool = True):
        super().__init__(message, code="invalid", where=where, hint=hint)
        self.recorded = recorded


NAMESPACE = "coupler.commands"
COMMAND_FORMATS = {c: FormatIndicator(f"{NAMESPACE}.{c.capitalize()}", 1) for c in COMMON_COMMANDS}
REPLY_FORMAT = FormatIndicator(f"{NAMESPACE}.Reply", 1)
FAULT_FORMAT = FormatIndicator(f"{NAMESPACE}.Fault", 1)
_BY_FORMAT = {f.name: c for c, f in COMMAND_FORMATS.items()}

#: property: how many replies a command gets (set on each reply)
REPLY_COUNT = "coupler.reply-count"
#: property: the command name and target, copied onto the command message for selectors
PROP_COMMAND = "coupler.command"
PROP_TARGET = "coupler.target"


@functools.cache
def _schema(kind: str) -> Any:
    text = (SCHEMA_DIR / "coupler" / "commands" / kind / "v1.avsc").read_text()
    return fastavro.parse_schema(json.loads(text))


def _encode(kind: str, record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    try:
        fastavro.schemaless_writer(out, _schema(kind), record)
    except (ValueError, TypeError, OverflowError) as exc:
        raise CommandFault(f"cannot encode a {kind} record: {exc}", code="invalid") from exc
    return out.getvalue()


def _decode(kind: str, body: bytes) -> dict[str, Any]:
    stream = io.BytesIO(body)
    try:
        record: Any = fastavro.schemaless_reader(stream, _schema(kind), None)
    except (EOFError, ValueError, UnicodeDecodeError, IndexError, OverflowError, TypeError) as exc:
        raise CommandFault(f"body is not a valid {kind} record: {str(exc) or type(exc).__name__}", code="invalid") from exc
    if stream.tell() != len(body):
        raise CommandFault(f"{len(body) - stream.tell()} trailing bytes after the {kind} record", code="invalid")
    return record


def _doc_record(doc: Document) -> dict[str, Any]:
    return {"format": str(doc.format), "body": doc.body, "properties": dict(doc.properties)}


def _doc_from(record: dict[str, Any]) -> Document:
    try:
        fmt = FormatIndicator.parse(record["format"])
    except CouplerError as exc:
        raise CommandFault(f"document format: {exc}", code="invalid") from exc
    return Document(fmt, record["body"], dict(record.get("properties") or {}))


# -- commands ------------------------------------------------------------------------------


def command_envelope(
    name: str,
    target: str,
    *,
    document: Document | None = None,
    query: dict[str, str] | None = None,
    max: int | None = None,
    operation: str = "",
    timeout: float | None = None,
    payload: str = "",
    return_address: str | None = None,
    origin: str | None = None,
    **headers: Any,
) -> Envelope:
    """A Command Message for one of the common commands."""
    if name not in COMMAND_FORMATS:
        raise CouplerError(f"unknown command {name!r}", hint=f"the common commands are {', '.join(COMMON_COMMANDS)}")
    record: dict[str, Any] = {"target": target}
    if name in ("send", "request"):
        if document is None:
            raise CouplerError(f"the {name} command needs a document")
        record["document"] = _doc_record(document)
    if name == "fetch":
        record.update(query=dict(query or {}), max=max)
    if name == "request":
        record.update(operation=operation, timeout_ms=None if timeout is None else int(timeout * 1000))
    if name == "ping":
        record["payload"] = payload
    properties = {PROP_COMMAND: name, PROP_TARGET: target}
    if document is not None and document.properties.get(TRACEPARENT):  # the document's trace
        properties[TRACEPARENT] = document.properties[TRACEPARENT]
    return Envelope(
        format=COMMAND_FORMATS[name],
        body=_encode(name, record),
        kind=MessageKind.COMMAND,
        return_address=return_address,
        origin=origin,
        properties=properties,
        **headers,
    )


def command_name(envelope: Envelope) -> str | None:
    """The common command an envelope carries, or None when it is not one."""
    return _BY_FORMAT.get(envelope.format.name)


def parse_command(envelope: Envelope) -> Command:
    """Decode a Command Message; :class:`CommandFault` (``invalid``) when it is not one."""
    name = command_name(envelope)
    if name is None or envelope.kind is not MessageKind.COMMAND:
        raise CommandFault(
            f"message {envelope.message_id} ({envelope.kind}, {envelope.format}) is not a common command",
            code="invalid",
        )
    if envelope.format.version != 1:
        raise CommandFault(f"{envelope.format}: unsupported command version", code="invalid")
    rec = _decode(name, envelope.body)
    cmd = Command(name=name, target=rec["target"], envelope=envelope)
    if "document" in rec:
        cmd.document = _doc_from(rec["document"])
    if name == "fetch":
        cmd.query, cmd.max = dict(rec["query"]), rec["max"]
    if name == "request":
        cmd.operation = rec["operation"]
        cmd.timeout = None if rec["timeout_ms"] is None else rec["timeout_ms"] / 1000
    if name == "ping":
        cmd.payload = rec["payload"]
    return cmd


def _target_of(envelope: Envelope) -> str:
    return envelope.properties.get(PROP_TARGET, "")


# -- replies -------------------------------------------------------------------------------


def reply_envelope(command: Command, reply: Reply, adapter: str, *, count: int = 1) -> Envelope:
    """The Reply Message of ``adapter`` to ``command``."""
    body = _encode(
        "reply",
        {
            "command": command.name,
            "target": command.target,
            "adapter": adapter,
            "documents": [_doc_record(d) for d in reply.documents],
            "details": {str(k): str(v) for k, v in reply.details.items()},
        },
    )
    return command.envelope.reply(
        body, REPLY_FORMAT, origin=adapter, expires_at=command.envelope.expires_at, properties={REPLY_COUNT: str(count)}
    )


def fault_envelope(
    command: Envelope,
    code: str,
    reason: str,
    *,
    adapter: str | None = None,
    count: int = 1,
) -> Envelope:
    """A Fault reply to ``command`` (which may not even be a valid command)."""
    name = command_name(command) or str(command.format)
    body = _encode(
        "fault",
        {"command": name, "target": _target_of(command), "adapter": adapter, "code": code, "reason": reason},
    )
    return command.reply(
        body, FAULT_FORMAT, origin=adapter or "dispatcher", expires_at=command.expires_at, properties={REPLY_COUNT: str(count)}
    )


@dataclass
class ReplyInfo:
    """A decoded Reply or Fault message."""

    ok: bool
    command: str
    target: str
    adapter: str | None
    correlation_id: str | None
    count: int
    documents: list[Document] = field(default_factory=list)
    details: dict[str, str] = field(default_factory=dict)
    code: str | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "ok": self.ok,
            "command": self.command,
            "target": self.target,
            "adapter": self.adapter,
            "correlation_id": self.correlation_id,
        }
        if self.ok:
            details: dict[str, Any] = dict(self.details)
            if self.command == "describe" and "description" in details:
                # the Reply schema carries strings; the description is an object to its reader
                with contextlib.suppress(ValueError):
                    details["description"] = json.loads(details["description"])
            data["details"] = details
            data["documents"] = [
                {"format": str(d.format), "properties": d.properties, "body": _text_or_b64(d.body)}
                for d in self.documents
            ]
        else:
            data.update(code=self.code, reason=self.reason)
        return data


def _text_or_b64(body: bytes) -> dict[str, str]:
    try:
        return {"text": body.decode("utf-8")}
    except UnicodeDecodeError:
        import base64

        return {"base64": base64.b64encode(body).decode("ascii")}


def parse_reply(envelope: Envelope) -> ReplyInfo:
    """Decode a Reply or Fault message."""
    ok = envelope.format.name == REPLY_FORMAT.name
    if not ok and envelope.format.name != FAULT_FORMAT.name:
        raise CommandFault(f"message {envelope.message_id} ({envelope.format}) is not a command reply", code="invalid")
    rec = _decode("reply" if ok else "fault", envelope.body)
    common = {
        "ok": ok, "command": rec["command"], "target": rec["target"], "adapter": rec["adapter"],
        "correlation_id": envelope.correlation_id,
        "count": int(envelope.properties.get(REPLY_COUNT, "1") or 1),
    }
    if ok:
        return ReplyInfo(**common, documents=[_doc_from(d) for d in rec["documents"]], details=dict(rec["details"]))
    return ReplyInfo(**common, code=rec["code"], reason=rec["reason"])
