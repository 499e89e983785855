"""An XML envelope described by an XSD: header elements and the payload in one document.

Options::

    xsd = "envelope.xsd"                 # required
    element = "Message"                  # the root element (when the XSD declares several)
    payload = "Body.Data"                # the field holding the payload (required)
    correlation_id = "Header.CorrelationId"
    return_address = "Header.ReplyTo"
    message_id = "Header.MessageId"
    properties = { txn = "Header.Transaction" }
    constants = { "Header.Version" = "2" }

The payload field may be ``xs:base64Binary``/``xs:hexBinary`` (any bytes), ``xs:string``
(UTF-8 text) or ``xs:any`` (an XML payload embedded as elements).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from coupler.canonical.errors import CouplerError
from coupler.canonical.options import Str, option
from coupler.translators.mapping.avrotypes import AType, SchemaTypes, parse_path
from coupler.translators.mapping.casts import CastUnsupported, make_cast
from coupler.translators.mapping.jsonvalues import coerce
from coupler.translators.mapping.records import complete, get_path, set_path

from .base import HeaderFields, Headers, WrapperError, checked_return_address, wrapper_options

_STRING = AType("string", "string")


class XmlWrapperOptions(HeaderFields):
    """Options of the ``xml`` wrapper (an XML envelope document around the payload)."""

    xsd: Str = option("The envelope's XSD (relative to site.toml).")
    payload: Str = option("The element holding the payload.")
    element: Str | None = option("The envelope's root element (default: the XSD's).", default=None)
    properties: dict[str, Str] = option("Message properties carried in fields: `{ NAME = PATH }`.",
                                        default_factory=dict)
    constants: dict[str, Any] = option("Fields written with a constant value: `{ PATH = VALUE }`.",
                                       default_factory=dict)


class XmlWrapper:
    """A document of an XSD element carrying header fields and the payload."""

    kind = "xml"
    #: channels a return address read from a document may name (:func:`checked_return_address`)
    return_addresses: tuple[str, ...] = ()

    def __init__(self, xsd: Path, payload: str, *, element: str | None = None,
                 headers: dict[str, str] | None = None, constants: dict[str, Any] | None = None,
                 schema_roots: Sequence[str | Path] = ()):
        from coupler.translators.xml import XsdModel

        try:
            model = XsdModel.load(xsd, schema_roots=schema_roots)
            names = model.global_elements() if element is None else []
        except CouplerError as exc:
            raise WrapperError(f"envelope XSD: {exc}", where="xsd") from None
        if len(names) > 1:  # the option to set, not the command line's --element
            raise WrapperError(f"envelope XSD {xsd} declares several global elements ({', '.join(names)})",
                               where="element", hint=f"name the envelope's root element in the wrapper's options: "
                                                     f"element = \"{names[0]}\" (one of {', '.join(names)})")
        try:
            self.encoder = model.encoder(element)
            self.decoder = model.decoder(element)
            self.types = SchemaTypes(model.avro_schema(element))
        except CouplerError as exc:
            raise WrapperError(f"envelope XSD: {exc}", where="xsd") from None
        self.xsd = xsd
        self.payload_steps, self.payload_type = self._resolve(payload, "payload")
        if self.payload_type.kind not in ("bytes", "string"):
            raise WrapperError(f"payload field {payload!r} is {self.payload_type.describe()}; it must hold bytes or text", where="payload")
        self.slots = {}
        for name, path in (headers or {}).items():
            steps, atype = self._resolve(path, name)
            try:
                self.slots[name] = (steps, make_cast(_STRING, atype), make_cast(atype, _STRING))
            except CastUnsupported as exc:
                raise WrapperError(f"field {path!r} cannot hold a header value: {exc}", where=name) from None
        self.constants = []
        for path, value in (constants or {}).items():
            steps, atype = self._resolve(path, f"constants.{path}")
            try:
                self.constants.append((steps, coerce(value, atype, self.types)))
            except ValueError as exc:
                raise WrapperError(f"constant {value!r} does not fit {path}: {exc}", where=f"constants.{path}") from None

    @classmethod
    def from_options(cls, options: dict[str, Any], base_dir: Path,
                     schema_roots: Sequence[str | Path] = ()) -> XmlWrapper:
        """The wrapper of site.toml's ``options``; the XSD (relative to ``base_dir``) may read
        files under its own directory and ``schema_roots`` (a site's folder and ``[schemas] paths``)."""
        opts = wrapper_options(XmlWrapperOptions, options)
        headers = opts.header_paths()
        headers.update(opts.properties)
        wrapper = cls(base_dir / opts.xsd, opts.payload, element=opts.element, headers=headers,
                      constants=dict(opts.constants), schema_roots=schema_roots)
        wrapper.return_addresses = tuple(opts.return_addresses)
        return wrapper

    def _resolve(self, path: str, where: str) -> tuple[Any, AType]:
        try:
            atype, steps = self.types.resolve(parse_path(path))
        except (ValueError, LookupError) as exc:
            raise WrapperError(f"field {path!r}: {exc}", where=where) from None
        return steps, atype

    def wrap(self, payload: bytes, headers: Headers) -> bytes:
        record: dict[str, Any] = {}
        for steps, value in self.constants:
            set_path(record, steps, value)
        for name, (steps, to_field, _) in self.slots.items():
            value = headers.get(name)
            if value is not None:
                set_path(record, steps, to_field(value))
        if self.payload_type.kind == "bytes":
            set_path(record, self.payload_steps, payload)
        else:
            try:
                set_path(record, self.payload_steps, payload.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise WrapperError(f"the payload is not UTF-8 text (byte {exc.start}); use a base64Binary payload field") from None
        complete(record, self.types.root, self.types)
        try:
            return self.encoder.encode(record, label="envelope")
        except CouplerError as exc:
            raise WrapperError(f"cannot write the envelope: {exc}") from None

    def unwrap(self, data: bytes) -> tuple[bytes, Headers]:
        try:
            record = self.decoder.decode_document(data, name="envelope")
        except CouplerError as exc:
            raise WrapperError(f"not an envelope of {self.xsd.name}: {exc}") from None
        headers = Headers()
        for name, (steps, _, from_field) in self.slots.items():
            value = get_path(record, steps)
            if value is not None and value != "":
                headers.set(name, from_field(value))
        payload = get_path(record, self.payload_steps)
        if payload is None:
            return b"", checked_return_address(headers, self.return_addresses)
        return (payload if isinstance(payload, bytes) else payload.encode("utf-8")), checked_return_address(
            headers, self.return_addresses)
