"""WS-Addressing 1.0 headers <-> the canonical envelope's message_id, correlation_id, return_address."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from lxml import etree

from coupler.canonical.envelope import Envelope

WSA = "http://www.w3.org/2005/08/addressing"
ANONYMOUS = f"{WSA}/anonymous"
#: "discard the reply": no address to send to
NONE = f"{WSA}/none"


@dataclass
class Addressing:
    """The WS-Addressing message information headers Coupler uses."""

    message_id: str | None = None
    relates_to: str | None = None
    reply_to: str | None = None
    action: str | None = None
    to: str | None = None
    #: where a fault is to go (read from a request; Coupler never writes it)
    fault_to: str | None = None

    @classmethod
    def from_envelope(cls, envelope: Envelope, *, action: str | None = None, to: str | None = None) -> Addressing:
        return cls(
            message_id=_uri(envelope.message_id),
            relates_to=_uri(envelope.correlation_id) if envelope.correlation_id else None,
            reply_to=envelope.return_address,
            action=action,
            to=to,
        )

    def envelope_headers(self) -> dict[str, Any]:
        """``message_id``, ``correlation_id`` and ``return_address`` for :class:`Envelope`."""
        headers: dict[str, Any] = {}
        if self.message_id:
            headers["message_id"] = _plain(self.message_id)
        if self.relates_to:
            headers["correlation_id"] = _plain(self.relates_to)
        if self.reply_to and self.reply_to != ANONYMOUS:
            headers["return_address"] = self.reply_to
        return headers

    def to_elements(self) -> list[Any]:
        out = []
        for tag, value in (("Action", self.action), ("MessageID", self.message_id), ("RelatesTo", self.relates_to), ("To", self.to)):
            if value:
                elem = etree.Element(f"{{{WSA}}}{tag}", nsmap={"wsa": WSA})
                elem.text = value
                out.append(elem)
        if self.reply_to:
            reply = etree.Element(f"{{{WSA}}}ReplyTo", nsmap={"wsa": WSA})
            etree.SubElement(reply, f"{{{WSA}}}Address").text = self.reply_to
            out.append(reply)
        return out

    @classmethod
    def from_header(cls, header: Any) -> Addressing | None:
        if header is None or header.find(f"{{{WSA}}}*") is None:
            return None

        def text(tag: str) -> str | None:
            elem = header.find(f"{{{WSA}}}{tag}")
            return elem.text.strip() if elem is not None and elem.text else None

        reply = header.find(f"{{{WSA}}}ReplyTo/{{{WSA}}}Address")
        fault = header.find(f"{{{WSA}}}FaultTo/{{{WSA}}}Address")
        return cls(
            message_id=text("MessageID"),
            relates_to=text("RelatesTo"),
            reply_to=reply.text.strip() if reply is not None and reply.text else None,
            action=text("Action"),
            to=text("To"),
            fault_to=fault.text.strip() if fault is not None and fault.text else None,
        )


def _uri(value: str) -> str:
    """A message id as a URI (``urn:uuid:`` for UUIDs)."""
    try:
        return f"urn:uuid:{uuid.UUID(value)}"
    except ValueError:
        return value


def _plain(value: str) -> str:
    return value[len("urn:uuid:"):] if value.startswith("urn:uuid:") else value
