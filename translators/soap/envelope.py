"""The SOAP Envelope Wrapper and Unwrapper, versions 1.1 and 1.2.

:func:`wrap` puts payload elements (a document/literal body, e.g. from the XML translator's
encoder) and header blocks (WS-Addressing, WS-Security, binding headers) into an envelope;
:func:`unwrap` parses an envelope safely and returns its parts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from coupler.canonical.errors import CouplerError
from coupler.translators.xml.errors import XmlError
from coupler.translators.xml.security import parse_document

from .addressing import Addressing
from .faults import SOAP11, SOAP12, SoapFault
from .wssecurity import UsernameToken

VERSIONS = {"1.1": SOAP11, "1.2": SOAP12}
CONTENT_TYPES = {"1.1": "text/xml; charset=utf-8", "1.2": "application/soap+xml; charset=utf-8"}
PREFIXES = {"1.1": "soapenv", "1.2": "soap12"}


class SoapError(XmlError):
    """Bytes that are not a SOAP envelope (or a malformed one)."""


@dataclass
class SoapMessage:
    """An unwrapped SOAP message."""

    version: str
    body: list[Any] = field(default_factory=list)  # the Body's child elements
    headers: list[Any] = field(default_factory=list)  # the Header's child elements
    fault: SoapFault | None = None
    addressing: Addressing | None = None
    security: UsernameToken | None = None

    @property
    def payload(self) -> Any:
        """The single body element (document/literal), or ``None`` for an empty body."""
        if len(self.body) > 1:
            raise SoapError(f"the SOAP body holds {len(self.body)} elements, expected one")
        return self.body[0] if self.body else None

    def header(self, qname: str) -> Any:
        for elem in self.headers:
            if elem.tag == qname:
                return elem
        return None


def wrap(
    body: Any | list[Any] | bytes | None = None,
    *,
    version: str = "1.1",
    headers: list[Any] | None = None,
    addressing: Addressing | None = None,
    security: UsernameToken | None = None,
    fault: SoapFault | None = None,
) -> bytes:
    """A SOAP envelope (UTF-8 bytes) around ``body`` (elements or XML bytes) or a ``fault``."""
    if version not in VERSIONS:
        raise SoapError(f"unknown SOAP version {version!r}", hint="use 1.1 or 1.2")
    ns = VERSIONS[version]
    envelope = etree.Element(f"{{{ns}}}Envelope", nsmap={PREFIXES[version]: ns})
    blocks = list(headers or [])
    if addressing is not None:
        blocks = addressing.to_elements() + blocks
    if security is not None:
        blocks.insert(0, security.to_element())
    if blocks:
        header = etree.SubElement(envelope, f"{{{ns}}}Header")
        for block in blocks:
            header.append(_element(block))
    body_elem = etree.SubElement(envelope, f"{{{ns}}}Body")
    if fault is not None:
        body_elem.append(fault.to_element(version))
    elif body is not None:
        for item in body if isinstance(body, list) else [body]:
            body_elem.append(_element(item))
    return etree.tostring(envelope, xml_declaration=True, encoding="UTF-8")


def unwrap(data: bytes | Any, *, name: str = "<soap message>") -> SoapMessage:
    """Parse an envelope of either version (no DTDs, no entities) into its parts; only
    :class:`~coupler.canonical.errors.CouplerError` subclasses escape."""
    try:
        return _unwrap(data, name)
    except CouplerError:
        raise
    except Exception as exc:  # noqa: BLE001 - e.g. a WS-Security nonce that is not base64
        text = (str(exc).strip().splitlines() or [""])[0][:200]
        raise SoapError(f"malformed SOAP message: {type(exc).__name__}: {text}", where=name,
                        hint="check the envelope's headers") from None


def _unwrap(data: bytes | Any, name: str) -> SoapMessage:
    if isinstance(data, bytes | bytearray):
        root = parse_document(bytes(data), name=name).getroot()
    else:
        root = data.getroot() if hasattr(data, "getroot") else data
    version = next((v for v, ns in VERSIONS.items() if root.tag == f"{{{ns}}}Envelope"), None)
    if version is None:
        raise SoapError(f"root element {root.tag!r} is not a SOAP 1.1 or 1.2 Envelope", where=name)
    ns = VERSIONS[version]
    header = root.find(f"{{{ns}}}Header")
    body = root.find(f"{{{ns}}}Body")
    if body is None:
        raise SoapError("the envelope has no Body", where=name)
    for part in ("Header", "Body"):  # one of each: a second one is another message smuggled in
        if len(root.findall(f"{{{ns}}}{part}")) > 1:
            raise SoapError(f"the envelope has more than one {part}", where=name)
    children = [c for c in body if isinstance(c.tag, str)]
    fault = None
    if len(children) > 1 and any(c.tag == f"{{{ns}}}Fault" for c in children):  # is it a fault or an answer?
        raise SoapError("the Body holds a Fault beside other elements (a Fault is the Body's only child)", where=name)
    if len(children) == 1 and children[0].tag == f"{{{ns}}}Fault":
        fault = SoapFault.from_element(children[0])
        children = []
    return SoapMessage(
        version=version,
        body=children,
        headers=[c for c in header if isinstance(c.tag, str)] if header is not None else [],
        fault=fault,
        addressing=Addressing.from_header(header),
        security=UsernameToken.from_header(header),
    )


def _element(item: Any) -> Any:
    if isinstance(item, bytes | bytearray):
        return parse_document(bytes(item)).getroot()
    return item
