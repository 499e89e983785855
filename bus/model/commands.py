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

import functools
import io
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import fastavro

from coupler.bus.api import COMMON_COMMANDS, Command, CommandFault, Document, Reply
from coupler.canonical import Envelope, FormatIndicator, MessageKind
from coupler.canonical.errors import CouplerError
from coupler.schemas import SCHEMA_DIR

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
        record = fastavro.schemaless_reader(stream, _schema(kind), None)
    except (EOFError, ValueError, UnicodeDecodeError, IndexError, OverflowError, TypeError) as exc:
        raise CommandFault(f"body is not a valid {kind} record: {exc or type(exc).__name__}", code="invalid") from exc
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
    return Envelope(
        format=COMMAND_FORMATS[name],
        body=_encode(name, record),
        kind=MessageKind.COMMAND,
        return_address=return_address,
        origin=origin,
        properties={PROP_COMMAND: name, PROP_TARGET: target},
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
            data["details"] = dict(self.details)
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


# -- dispatching ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Servant:
    """What the dispatcher knows of an adapter: the commands it serves and for which targets."""

    name: str
    commands: tuple[str, ...]
    targets: tuple[str, ...] = ()

    def serves(self, command: str, target: str) -> bool:
        return command in self.commands and (target == self.name or target in self.targets)


class Dispatcher:
    """Message Dispatcher of the common command set: which adapters a command goes to.

    A command goes to every adapter that declares the command for the target (its name or
    one of its ``targets``). When none does, ``resolve_identity`` (Application Identity
    addressing) may name adapters whose identity matches the target.
    """

    def __init__(
        self,
        servants: Callable[[], Iterable[Servant]],
        resolve_identity: Callable[[str], list[str]] | None = None,
    ):
        self._servants = servants
        self._resolve_identity = resolve_identity

    def recipients(self, command: str, target: str) -> list[str]:
        servants = list(self._servants())
        names = [s.name for s in servants if s.serves(command, target)]
        if names or self._resolve_identity is None:
            return names
        by_name = {s.name: s for s in servants}
        return [n for n in self._resolve_identity(target) if n in by_name and command in by_name[n].commands]

    def unserved_reason(self, command: str, target: str) -> str:
        servants = list(self._servants())
        for_target = [s.name for s in servants if target == s.name or target in s.targets]
        if for_target:
            return (
                f"no adapter serves {command!r} for target {target!r} "
                f"(adapters for that target: {', '.join(for_target)}; none declares {command!r})"
            )
        known = sorted({t for s in servants for t in (s.name, *s.targets)})
        return f"no adapter serves {command!r} for target {target!r} (known targets: {', '.join(known) or 'none'})"
