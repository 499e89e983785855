"""The SOAP envelope as a chain wrapper: an XML payload in the Body, WS-Addressing headers
(``MessageID``, ``RelatesTo``, ``ReplyTo``) <-> the envelope's message_id, correlation_id
and return_address. Options: ``version`` (``1.1`` or ``1.2``), ``action`` (the WS-Addressing
Action), ``to`` (the WS-Addressing To). A fault unwraps to its XML with the property
``soap_fault`` set to the fault code."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lxml import etree

from coupler.canonical.errors import CouplerError
from coupler.translators.xml.decoder import xml_text

from .base import Headers, WrapperError, no_more, take


@dataclass(frozen=True)
class SoapWrapper:
    version: str = "1.1"
    action: str | None = None
    to: str | None = None
    kind: str = "soap"

    def __post_init__(self) -> None:
        if self.version not in ("1.1", "1.2"):
            raise WrapperError(f"SOAP version must be 1.1 or 1.2, got {self.version!r}", where="version")

    @classmethod
    def from_options(cls, options: dict[str, Any], base_dir: Path) -> SoapWrapper:
        opts = dict(options)
        wrapper = cls(str(take(opts, "version", (str, float), "1.1")), take(opts, "action", str), take(opts, "to", str))
        no_more(opts, ("version", "action", "to"))
        return wrapper

    def wrap(self, payload: bytes, headers: Headers) -> bytes:
        from coupler.translators.soap import Addressing, wrap

        addressing = None
        if headers.message_id or headers.correlation_id or headers.return_address or self.action:
            from coupler.translators.soap.addressing import _uri

            addressing = Addressing(
                message_id=_uri(headers.message_id) if headers.message_id else None,
                relates_to=_uri(headers.correlation_id) if headers.correlation_id else None,
                reply_to=headers.return_address, action=self.action, to=self.to,
            )
        try:
            return wrap(payload if payload.strip() else None, version=self.version, addressing=addressing)
        except CouplerError as exc:
            raise WrapperError(f"the payload is not an XML element: {exc}") from None

    def unwrap(self, data: bytes) -> tuple[bytes, Headers]:
        from coupler.translators.soap import unwrap

        try:
            message = unwrap(data)
            headers = Headers(**(message.addressing.envelope_headers() if message.addressing else {}))
            if message.fault is not None:
                headers.properties["soap_fault"] = str(message.fault.code)
                body = message.fault.to_element(message.version)
                return etree.tostring(body, encoding="UTF-8"), headers
            element = message.payload
        except CouplerError as exc:
            raise WrapperError(f"not a SOAP envelope: {exc}") from None
        if element is None:
            return b"", headers
        return xml_text(element).encode("utf-8"), headers
