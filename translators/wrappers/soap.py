"""The SOAP envelope as a chain wrapper: an XML payload in the Body, WS-Addressing headers
(``MessageID``, ``RelatesTo``, ``ReplyTo``) <-> the envelope's message_id, correlation_id
and return_address. Options: ``version`` (``1.1`` or ``1.2``), ``action`` (the WS-Addressing
Action), ``to`` (the WS-Addressing To), ``return_addresses`` (the channels a partner's
``ReplyTo`` may name: any other is not used as the return address, so a partner's document
never chooses the bus channel a reply is put on; default none). A fault unwraps to its XML
with the property ``soap_fault`` set to the fault code."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from lxml import etree
from pydantic import BeforeValidator

from coupler.canonical.errors import CouplerError
from coupler.canonical.options import OptionsModel, Str, option
from coupler.translators.xml.decoder import xml_text

from .base import Headers, WrapperError, checked_return_address, wrapper_options


class SoapWrapperOptions(OptionsModel):
    """Options of the ``soap`` wrapper."""

    version: Annotated[Literal["1.1", "1.2"], BeforeValidator(lambda v: str(v) if isinstance(v, float) else v)] = (
        option("The SOAP version (1.1 or 1.2).", default="1.1"))
    action: Str | None = option("The WS-Addressing action.", default=None)
    to: Str | None = option("The WS-Addressing To.", default=None)
    return_addresses: list[Str] = option(
        "Channels a partner's WS-Addressing ReplyTo may name (glob patterns, such as `replies.*`); any other is "
        "not used as the return address (kept as the property `refused_return_address`). Empty: none is used.",
        default_factory=list)


@dataclass(frozen=True)
class SoapWrapper:
    version: str = "1.1"
    action: str | None = None
    to: str | None = None
    kind: str = "soap"
    return_addresses: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.version not in ("1.1", "1.2"):
            raise WrapperError(f"SOAP version must be 1.1 or 1.2, got {self.version!r}", where="version")

    @classmethod
    def from_options(cls, options: dict[str, Any], base_dir: Path) -> SoapWrapper:
        opts = wrapper_options(SoapWrapperOptions, options)
        return cls(opts.version, opts.action, opts.to, return_addresses=tuple(opts.return_addresses))

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
            headers = checked_return_address(
                Headers(**(message.addressing.envelope_headers() if message.addressing else {})), self.return_addresses)
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
