"""SOAP faults of both versions, and their mapping to error replies on the bus."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from lxml import etree

from coupler.canonical.envelope import Envelope, MessageKind
from coupler.canonical.format import FormatIndicator
from coupler.canonical.textformats import json_loads

SOAP11 = "http://schemas.xmlsoap.org/soap/envelope/"
SOAP12 = "http://www.w3.org/2003/05/soap-envelope"
FAULT_FORMAT = "coupler.SoapFault@1"
#: SOAP 1.1 fault codes <-> SOAP 1.2 ones
CODES_11_TO_12 = {"Client": "Sender", "Server": "Receiver", "VersionMismatch": "VersionMismatch", "MustUnderstand": "MustUnderstand"}
CODES_12_TO_11 = {v: k for k, v in CODES_11_TO_12.items()}


@dataclass
class SoapFault:
    """A fault: ``code`` is the local name in the version-neutral 1.2 vocabulary (Sender, Receiver...)."""

    code: str
    reason: str
    actor: str | None = None
    detail: str | None = None  # the detail element's content as XML text
    subcode: str | None = None

    def to_element(self, version: str) -> Any:
        env_ns = SOAP11 if version == "1.1" else SOAP12
        fault = etree.Element(f"{{{env_ns}}}Fault")
        if version == "1.1":
            code = etree.SubElement(fault, "faultcode")
            code.text = f"{_prefix(fault, env_ns)}:{CODES_12_TO_11.get(self.code, self.code)}"
            etree.SubElement(fault, "faultstring").text = self.reason
            if self.actor:
                etree.SubElement(fault, "faultactor").text = self.actor
            if self.detail:
                _append_detail(etree.SubElement(fault, "detail"), self.detail)
            return fault
        code = etree.SubElement(fault, f"{{{env_ns}}}Code")
        etree.SubElement(code, f"{{{env_ns}}}Value").text = f"{_prefix(fault, env_ns)}:{CODES_11_TO_12.get(self.code, self.code)}"
        if self.subcode:
            sub = etree.SubElement(code, f"{{{env_ns}}}Subcode")
            etree.SubElement(sub, f"{{{env_ns}}}Value").text = self.subcode
        reason = etree.SubElement(fault, f"{{{env_ns}}}Reason")
        text = etree.SubElement(reason, f"{{{env_ns}}}Text")
        text.text = self.reason
        text.set("{http://www.w3.org/XML/1998/namespace}lang", "en")
        if self.actor:
            etree.SubElement(fault, f"{{{env_ns}}}Role").text = self.actor
        if self.detail:
            _append_detail(etree.SubElement(fault, f"{{{env_ns}}}Detail"), self.detail)
        return fault

    @classmethod
    def from_element(cls, fault: Any) -> SoapFault:
        if fault.tag == f"{{{SOAP11}}}Fault":
            raw = (fault.findtext("faultcode") or "").strip()
            local = raw.rpartition(":")[2]
            detail = fault.find("detail")
            return cls(
                code=CODES_11_TO_12.get(local, local),
                reason=(fault.findtext("faultstring") or "").strip(),
                actor=fault.findtext("faultactor"),
                detail=_inner(detail),
            )
        ns = SOAP12
        value = (fault.findtext(f"{{{ns}}}Code/{{{ns}}}Value") or "").strip().rpartition(":")[2]
        sub = fault.findtext(f"{{{ns}}}Code/{{{ns}}}Subcode/{{{ns}}}Value")
        return cls(
            code=value,
            reason=(fault.findtext(f"{{{ns}}}Reason/{{{ns}}}Text") or "").strip(),
            actor=fault.findtext(f"{{{ns}}}Role"),
            detail=_inner(fault.find(f"{{{ns}}}Detail")),
            subcode=sub.strip() if sub else None,
        )

    def to_reply(self, request: Envelope) -> Envelope:
        """The error reply on the bus, correlated to ``request``."""
        body = json.dumps({"code": self.code, "reason": self.reason, "actor": self.actor,
                           "detail": self.detail, "subcode": self.subcode}).encode()
        fmt = FormatIndicator.parse(FAULT_FORMAT, "application/json")
        return request.reply(body, fmt, properties={"error": "true", "fault_code": self.code})

    @classmethod
    def from_reply(cls, reply: Envelope) -> SoapFault:
        """The fault for an error reply (a Coupler error reply becomes a Receiver fault)."""
        if reply.format.name == FAULT_FORMAT.split("@")[0]:
            try:
                data = json_loads(reply.body)
            except (ValueError, UnicodeDecodeError):
                data = None
            if isinstance(data, dict) and isinstance(data.get("code"), str) and isinstance(data.get("reason"), str):
                fields = [data.get(k) for k in ("actor", "detail", "subcode")]
                return cls(data["code"], data["reason"], *(f if isinstance(f, str) else None for f in fields))
            # a reply that says it is a fault but is not one a SOAP adapter wrote: a Receiver
            # fault with what it holds, not an exception in the adapter answering the client
        return cls("Receiver", reply.properties.get("error_message") or reply.body.decode("utf-8", "replace")[:2000])


def is_error_reply(envelope: Envelope) -> bool:
    return envelope.kind == MessageKind.REPLY and envelope.properties.get("error") == "true"


def _prefix(elem: Any, uri: str) -> str:
    for prefix, bound in elem.nsmap.items():
        if bound == uri and prefix:
            return prefix
    return "soapenv" if uri == SOAP11 else "soap12"


def _append_detail(holder: Any, detail: str) -> None:
    from coupler.translators.xml.security import safe_parser

    wrapper = etree.fromstring(f"<d>{detail}</d>".encode(), safe_parser())
    holder.text = wrapper.text
    for child in wrapper:
        holder.append(child)


def _inner(elem: Any) -> str | None:
    """The content of a detail element as an XML fragment (its text escaped, as its children's
    tails are: it is parsed again by :func:`_append_detail`; ``a &amp; b`` kept as its text
    failed that parse)."""
    if elem is None:
        return None
    parts = [escape(elem.text or "")] + [etree.tostring(c, encoding="unicode") for c in elem]
    text = "".join(parts).strip()
    return text or None
