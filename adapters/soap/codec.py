"""The operations of a WSDL port, with their bodies translated to and from records.

document/literal: the body is one element declared in the WSDL's schemas; it is decoded and
encoded by the XML translator (:class:`coupler.translators.xml.XsdModel`) through its XSD
type. A message without parts is an empty body, and its record is ``{}``. rpc/literal: the body is a wrapper element named after the operation (``...Response``
for the answer) in the binding's namespace, holding one unqualified child per part; parts of
simple types are converted by their XSD type, parts of global element type by the XML
translator. A record is a dict; on the bus it travels as JSON (``translators.xml.jsonio``).

A binding that uses SOAP encoding (``use="encoded"``, rpc/encoded as NuSOAP and old Axis write
it) is refused by :func:`bind_port`: its bodies are not the XML its schemas describe.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lxml import etree

from coupler.bus.api import CommandFault, Document
from coupler.canonical import FormatIndicator
from coupler.canonical.errors import CouplerError
from coupler.canonical.textformats import json_loads
from coupler.translators.soap.wsdl import MessageInfo, Operation, Port, WsdlDescription
from coupler.translators.xml.jsonio import dumps

if TYPE_CHECKING:
    from coupler.translators.xml import XsdModel

JSON = "application/json"


class SoapCodecError(CouplerError):
    """A SOAP body or a document that does not fit the operation's message."""


def _local(qname: str) -> str:
    return qname.rsplit("}", 1)[-1]


class Schemas:
    """The XSD models of a WSDL's schemas, by global element."""

    def __init__(self, description: WsdlDescription):
        # imported here: it loads xmlschema, which a coupler command that runs no SOAP adapter
        # need not pay for at start-up
        from coupler.translators.xml import XsdModel

        self.description = description
        self._models = [XsdModel(s, description.source) for s in description.schemas]

    def model_for(self, element: str) -> XsdModel:
        for model in self._models:
            if element in model.schema.maps.elements:
                return model
        raise SoapCodecError(f"element {element} is not declared by the WSDL's schemas", where=self.description.source)

    def simple_type(self, qname: str) -> Any:
        for model in self._models:
            t = model.schema.maps.types.get(qname)
            if t is not None:
                return t
        raise SoapCodecError(f"type {qname} is not declared by the WSDL's schemas", where=self.description.source)


@dataclass
class MessageCodec:
    """Body elements of one message <-> a record."""

    schemas: Schemas
    message: MessageInfo
    style: str
    wrapper: str | None = None  # rpc: the Clark name of the wrapper element

    @property
    def empty(self) -> bool:
        """A document/literal message without parts: an empty SOAP body."""
        return self.style == "document" and not self.message.parts

    def decode(self, body: list[Any]) -> dict[str, Any]:
        if self.empty:
            if body:
                raise SoapCodecError(f"expected an empty body (message {_local(self.message.message)} has no part), got {body[0].tag}")
            return {}
        if self.style == "document":
            part = self.message.parts[0]
            elem = body[0] if body else None
            if elem is None or elem.tag != part.element:
                got = elem.tag if elem is not None else "an empty body"
                raise SoapCodecError(f"expected body element {part.element}, got {got}")
            model = self.schemas.model_for(part.element or "")
            try:  # converted, then validated; the first error only (linear time, never all of them)
                return model.decoder(part.element).decode_element(elem, source="SOAP body", validate=True)
            except CouplerError as exc:
                raise SoapCodecError(f"{_local(part.element or '')}: {getattr(exc, 'message', exc)}",
                                     where=getattr(exc, "path", None)) from None
        wrapper = body[0] if body else None
        if wrapper is None or wrapper.tag != self.wrapper:
            raise SoapCodecError(f"expected the rpc wrapper {self.wrapper}, got {wrapper.tag if wrapper is not None else 'nothing'}")
        record: dict[str, Any] = {}
        for part in self.message.parts:
            child = next((c for c in wrapper if isinstance(c.tag, str) and _local(c.tag) == part.name), None)
            if child is None:
                raise SoapCodecError(f"rpc part {part.name!r} is missing", where=f"{_local(self.wrapper or '')}/{part.name}")
            if part.type:
                try:
                    record[part.name] = self.schemas.simple_type(part.type).decode(child.text or "")
                except Exception as exc:  # xmlschema's decode errors have several classes
                    raise SoapCodecError(f"rpc part {part.name!r}: {exc}".splitlines()[0]) from None
            else:
                record[part.name] = self.schemas.model_for(part.element or "").decoder(part.element).decode_element(child)
        return record

    def encode(self, record: dict[str, Any]) -> list[Any]:
        if self.empty:
            if record:
                raise SoapCodecError(f"message {_local(self.message.message)} has no part (an empty SOAP body); "
                                     f"the record must be {{}}, it has {', '.join(map(repr, record))}")
            return []
        try:
            if self.style == "document":
                part = self.message.parts[0]
                model = self.schemas.model_for(part.element or "")
                encoder = model.encoder(part.element)
                elem = encoder.build(record, label=_local(part.element or ""))
                encoder.validate(elem, _local(part.element or ""))
                return [elem]
            wrapper = etree.Element(self.wrapper or "result")
            for part in self.message.parts:
                if part.name not in record:
                    raise SoapCodecError(f"the record has no field {part.name!r} for rpc part {part.name!r}")
                if part.type:
                    child = etree.SubElement(wrapper, part.name)
                    value = record[part.name]
                    child.text = value if isinstance(value, str) else self.schemas.simple_type(part.type).encode(value)
                else:
                    model = self.schemas.model_for(part.element or "")
                    wrapper.append(model.encoder(part.element).build(record[part.name], tag=part.name))
            return [wrapper]
        except SoapCodecError:
            raise
        except CouplerError as exc:
            raise SoapCodecError(exc.message, where=exc.where, hint=exc.hint) from None


@dataclass
class BoundOperation:
    """One operation of a port, ready to read requests and write responses."""

    operation: Operation
    port: Port
    input: MessageCodec | None
    output: MessageCodec | None
    faults: dict[str, tuple[str, XsdModel]]  # name -> (element, model)

    @property
    def name(self) -> str:
        return self.operation.name

    @property
    def empty_request(self) -> bool:
        """The request is an empty SOAP body: a server can route it only by SOAPAction."""
        return self.input is not None and self.input.empty

    @property
    def request_element(self) -> str | None:
        if self.input is None:
            return None
        if self.operation.style == "rpc":
            return self.input.wrapper
        return self.input.message.parts[0].element if self.input.message.parts else None

    def fault_detail(self, name: str, document: Document) -> str:
        """The detail XML of declared fault ``name`` from a JSON document."""
        if name not in self.faults:
            raise SoapCodecError(f"operation {self.name} declares no fault {name!r}", hint=f"declared: {', '.join(self.faults) or 'none'}")
        element, model = self.faults[name]
        record = json.loads(document.body)
        elem = model.encoder(element).build(record, label=name)
        return etree.tostring(elem, encoding="unicode")


def _refuse_encoded(port: Port) -> None:
    """A binding that uses SOAP encoding, refused with its first such operation."""
    encoded = [op for op in port.operations
               if any(m is not None and m.use == "encoded" for m in (op.input, op.output))]
    if not encoded:
        return
    op = encoded[0]
    raise SoapCodecError(
        f'binding {_local(port.binding)} operation {op.name} uses SOAP encoding (use="encoded"), '
        "which the SOAP adapters do not support",
        where=op.where,
        hint=f"{len(encoded)} of the binding's {len(port.operations)} operations do; the adapters read and write "
             "literal XML only, document/literal or rpc/literal: choose a port of the service whose binding is "
             "literal (option port) or ask the provider for one; coupler wsdl describe shows each port's binding",
    )


def bind_port(schemas: Schemas, port: Port) -> list[BoundOperation]:
    _refuse_encoded(port)
    out = []
    for op in port.operations:
        def codec(msg: MessageInfo | None, suffix: str, op: Operation = op) -> MessageCodec | None:
            if msg is None:
                return None
            if op.style == "rpc":
                return MessageCodec(schemas, msg, "rpc", f"{{{msg.namespace or ''}}}{op.name}{suffix}" if msg.namespace else f"{op.name}{suffix}")
            if msg.parts and (len(msg.parts) != 1 or not msg.parts[0].element):
                raise SoapCodecError(f"binding {_local(port.binding)} operation {op.name}: a document/literal message "
                                     "needs one element part (or none, for an empty body)", where=op.where)
            return MessageCodec(schemas, msg, "document")

        faults = {f.name: (f.element, schemas.model_for(f.element)) for f in op.faults if f.element}
        out.append(BoundOperation(op, port, codec(op.input, ""), codec(op.output, "Response"), faults))
    return out


def to_document(record: dict[str, Any], fmt: FormatIndicator) -> Document:
    return Document(fmt if fmt.content_type == JSON else fmt.with_content_type(JSON), dumps(record).encode("utf-8"))


def from_document(document: Document) -> dict[str, Any]:
    try:
        record = json_loads(document.body)
    except ValueError as exc:
        raise CommandFault(f"document {document.format} is not JSON: {exc}", code="invalid") from None
    if not isinstance(record, dict):
        raise CommandFault(f"document {document.format} is not a JSON object", code="invalid")
    return record
