"""File names from templates over a message's headers and properties.

A template is text with ``{field}`` placeholders: ``{message_id}``, ``{correlation_id}``,
``{origin}``, ``{kind}``, ``{format}`` (``name@version``), ``{format_name}``,
``{format_version}``, ``{date}`` (``YYYYMMDD`` of the message timestamp, UTC), ``{time}``
(``HHMMSSmmm``), ``{timestamp}`` (ISO 8601 without separators), ``{sequence}`` (its number in
its sequence, from 1) and ``{prop.NAME}`` / ``{properties.NAME}`` for a property. ``{{`` and ``}}`` are
literal braces. A value that contains ``/`` or ``..`` is not rejected here: the result goes
through the directory jail (:mod:`.jail`) which refuses any name leaving the root.
"""

from __future__ import annotations

import re

from coupler.canonical import Envelope

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
        if field.startswith(("prop.", "properties.")) and field.split(".", 1)[1]:
            continue
        if field not in _FIELDS:
            raise AdapterConfigError(
                f"unknown placeholder {{{field}}} in template {template!r}",
                where=where,
                hint="use one of " + ", ".join("{" + f + "}" for f in _FIELDS) + " or {prop.NAME}",
            )


def render(template: str, envelope: Envelope, *, extra: dict[str, str] | None = None, where: str = "template") -> str:
    """``template`` with its placeholders replaced by the envelope's values."""
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
