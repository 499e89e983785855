"""File names from templates over a message's headers and properties.

A template is text with ``{field}`` placeholders: ``{message_id}``, ``{correlation_id}``,
``{origin}``, ``{kind}``, ``{format}`` (``name@version``), ``{format_name}``,
``{format_version}``, ``{date}`` (``YYYYMMDD`` of the message timestamp, UTC), ``{time}``
(``HHMMSSmmm``), ``{timestamp}`` (ISO 8601 without separators), ``{sequence}`` (its number in
its sequence, from 1), ``{prop.NAME}`` / ``{properties.NAME}`` for a property and
``{body.FIELD}`` (``{body.customer.id}``) for a field of the message's record (a canonical
Avro or JSON body: :func:`coupler.bus.api.record_of`). ``{{`` and ``}}`` are literal braces. A value that contains ``/`` or ``..`` is not rejected here: the result goes
through the directory jail (:mod:`.jail`) which refuses any name leaving the root.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from coupler.bus.api import record_of
from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError

from .errors import AdapterConfigError

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_FIELDS = (
    "message_id", "correlation_id", "origin", "kind", "format", "format_name", "format_version",
    "date", "time", "timestamp", "sequence", "name",
)


def check_template(template: str, *, where: str) -> None:
    """Raise :class:`AdapterConfigError` for an unknown placeholder or an unbalanced brace."""
    for m in _PLACEHOLDER.finditer(template):
        token = m.group(0)
        if token in ("{{", "}}"):
            continue
        field = m.group(1)
        if field is None:
            raise AdapterConfigError(f"unbalanced brace in template {template!r}", where=where, hint="write {{ or }} for a literal brace")
        if field.startswith(("prop.", "properties.", "body.")) and field.split(".", 1)[1]:
            continue
        if field not in _FIELDS:
            raise AdapterConfigError(
                f"unknown placeholder {{{field}}} in template {template!r}",
                where=where,
                hint="use one of " + ", ".join("{" + f + "}" for f in _FIELDS) + ", {prop.NAME} or {body.FIELD}",
            )


def render(template: str, envelope: Envelope, *, extra: dict[str, str] | None = None, where: str = "template",
           record: Callable[[Envelope], Mapping[str, Any]] | None = None) -> str:
    """``template`` with its placeholders replaced by the envelope's values; ``record`` reads
    the message's record for ``{body.FIELD}`` (once, when the template has one)."""
    fields: list[Mapping[str, Any]] = []

    def body_field(path: str) -> str:
        if not fields:
            try:
                fields.append((record or record_of)(envelope))
            except CouplerError as exc:
                raise AdapterConfigError(f"template {template!r} needs the body's fields: {exc}", where=where) from None
        value: Any = fields[0]
        for step in path.split("."):
            if not isinstance(value, Mapping) or value.get(step) is None:
                raise AdapterConfigError(
                    f"template {template!r} needs field {path!r}, which message {envelope.message_id} lacks",
                    where=where,
                )
            value = value[step]
        return str(value)

    ts = envelope.timestamp
    values = {
        "message_id": envelope.message_id,
        "correlation_id": envelope.correlation_id or "",
        "origin": envelope.origin or "",
        "kind": str(envelope.kind),
        "format": envelope.format.ref,
        "format_name": envelope.format.name,
        "format_version": str(envelope.format.version),
        "date": ts.strftime("%Y%m%d"),
        "time": ts.strftime("%H%M%S") + f"{ts.microsecond // 1000:03d}",
        "timestamp": ts.strftime("%Y%m%dT%H%M%S") + f"{ts.microsecond // 1000:03d}Z",
        # numbered from 1, as records are everywhere a user reads them (the Message Sequence's
        # own position counts from 0)
        "sequence": str(envelope.sequence.position + 1) if envelope.sequence else "",
        **(extra or {}),
    }

    def sub(m: re.Match[str]) -> str:
        token = m.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        field = m.group(1)
        if field is None:
            raise AdapterConfigError(f"unbalanced brace in template {template!r}", where=where)
        if field.startswith("body."):
            return body_field(field.split(".", 1)[1])
        if field.startswith(("prop.", "properties.")):
            key = field.split(".", 1)[1]
            if key not in envelope.properties:
                raise AdapterConfigError(
                    f"template {template!r} needs property {key!r}, which message {envelope.message_id} lacks",
                    where=where,
                )
            return envelope.properties[key]
        if field not in values:
            raise AdapterConfigError(f"unknown placeholder {{{field}}} in template {template!r}", where=where)
        return values[field]

    return _PLACEHOLDER.sub(sub, template)
