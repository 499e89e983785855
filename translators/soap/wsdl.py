"""WSDL 1.1 reading: services, ports, bindings (SOAP 1.1/1.2, document or rpc, literal),
operations with their input, output and fault messages, SOAPAction, one-way operations and
the SOAP headers declared in the binding.

Imported WSDLs and XSDs are resolved relative to the WSDL file, or through an OASIS XML catalog
(``catalog=``, ``coupler wsdl describe --catalog``) for ``http(s)://`` locations, never over the
network; the schemas (inline and imported) are loaded with xmlschema so that a part naming an
element that no schema declares is an error naming the part. A schema inside ``wsdl:types``
inherits the namespace declarations of ``wsdl:definitions`` (``tns``, ``s``, ``xsd`` prefixes
declared only there), and the schemas of one ``wsdl:types`` are loaded together, so that one may
refer to another's components (``xs:import`` without ``schemaLocation``, as .NET writes them).

Lax WSDLs are read as zeep and .NET clients read them, each liberty a warning naming the line
(:attr:`WsdlDescription.warnings`): a schema that refers to the namespace of another schema of
the same ``wsdl:types`` without importing it (the import is implied), an ``xs:import`` written
directly in ``wsdl:types``, attributes XSD does not allow where a toolkit wrote them. Bindings
that no ``wsdl:service`` port uses (WS-Notification style services, whose address is learned at
run time) are listed in :attr:`WsdlDescription.unbound`, as ports without an address.

Only :class:`WsdlError` (a :class:`~coupler.canonical.errors.CouplerError`) escapes
:func:`read_wsdl`.
"""

from __future__ import annotations

import dataclasses
import io
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from lxml import etree

from coupler.canonical.errors import CouplerError
from coupler.translators.xml.catalog import XmlCatalog
from coupler.translators.xml.errors import XsdError
from coupler.translators.xml.security import (
    MAX_MODEL_PARTICLES,
    SchemaSandbox,
    element_line,
    load_sandboxed,
    own_directories,
    parse_document,
    safe_parser,
    schema_error_line,
    url_to_path,
)

WSDL = "http://schemas.xmlsoap.org/wsdl/"
SOAP11_BINDING = "http://schemas.xmlsoap.org/wsdl/soap/"
SOAP12_BINDING = "http://schemas.xmlsoap.org/wsdl/soap12/"
XS = "http://www.w3.org/2001/XMLSchema"
SOAP_NS = {SOAP11_BINDING: "1.1", SOAP12_BINDING: "1.2"}
_DECLARED = re.compile(r'\sxmlns(?::([^\s=]+))?\s*=')
#: schema attributes whose value is a QName (or a list of QNames)
#: a location that names a URI scheme (``https:``, Oracle MDS's ``oramds:``), not a relative path;
#: two letters at least, so that a Windows drive (``C:``) stays a path
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")
_QNAME_ATTRIBUTES = ("type", "ref", "base", "itemType", "memberTypes", "substitutionGroup", "refer")


class WsdlError(XsdError):
    """A WSDL that cannot be read: bad structure, unknown reference, blocked import."""


@dataclass
class Part:
    name: str
    element: str | None = None  # Clark name of the element (document style)
    type: str | None = None  # Clark name of the type (rpc style)


@dataclass
class HeaderInfo:
    message: str
    part: str
    element: str | None


@dataclass
class MessageInfo:
    message: str  # Clark name of the wsdl:message
    parts: list[Part] = field(default_factory=list)
    use: str = "literal"
    namespace: str | None = None  # rpc: the wrapper element's namespace
    headers: list[HeaderInfo] = field(default_factory=list)


@dataclass
class FaultInfo:
    name: str
    message: str
    element: str | None


@dataclass
class Operation:
    name: str
    soap_action: str | None
    style: str
    input: MessageInfo | None
    output: MessageInfo | None
    faults: list[FaultInfo] = field(default_factory=list)
    where: str | None = field(default=None, compare=False)  # FILE:LINE of the binding's wsdl:operation

    @property
    def one_way(self) -> bool:
        return self.output is None


@dataclass
class Port:
    name: str
    binding: str
    address: str | None
    soap_version: str
    style: str
    transport: str | None
    operations: list[Operation] = field(default_factory=list)
    bound: bool = True  # False: a binding no wsdl:service port uses (no address in the WSDL)


@dataclass
class Service:
    name: str
    ports: list[Port] = field(default_factory=list)


@dataclass
class WsdlDescription:
    source: str
    target_namespace: str | None
    services: list[Service] = field(default_factory=list)
    schemas: list[Any] = field(default_factory=list, repr=False)  # xmlschema schemas of the types
    #: SOAP bindings no service port uses, as ports without an address (``bound`` False)
    unbound: list[Port] = field(default_factory=list)
    #: liberties taken with a lax WSDL, one line each (``FILE:LINE: what``)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data.pop("schemas")
        data["unbound_bindings"] = data.pop("unbound")
        for port in [p for service in data["services"] for p in service["ports"]] + data["unbound_bindings"]:
            for op in port["operations"]:
                op["one_way"] = op["output"] is None
                op.pop("where")
        return data

    def callable_services(self) -> list[Service]:
        """The services with SOAP ports; when the WSDL has none, one unnamed service holding
        the unbound bindings (their address comes from the configuration)."""
        services = [s for s in self.services if s.ports]
        if not services and self.unbound:
            return [Service("", list(self.unbound))]
        return services

    def port(self, name: str) -> Port:
        for service in self.services:
            for port in service.ports:
                if port.name == name:
                    return port
        raise WsdlError(f"no port {name!r}", where=self.source)

    def render_text(self) -> str:
        lines = []
        for service in self.services:
            lines.append(f"service {service.name}")
            for port in service.ports:
                uses = sorted({m.use for op in port.operations for m in (op.input, op.output) if m is not None})
                lines.append(f"  port {port.name}: SOAP {port.soap_version}, {port.style}/{'+'.join(uses) or 'literal'}, "
                             f"binding {_short(port.binding)}")
                lines.append(f"    address {port.address}")
                for op in port.operations:
                    kind = "one-way" if op.one_way else "request-response"
                    lines.append(f"    operation {op.name} ({kind}, {op.style}) SOAPAction {op.soap_action!r}")
                    for label, msg in (("input", op.input), ("output", op.output)):
                        if msg is not None:
                            parts = ", ".join(f"{p.name}={_short(p.element or p.type or '')}" for p in msg.parts)
                            lines.append(f"      {label}: {parts}")
                            for h in msg.headers:
                                lines.append(f"      {label} header: {h.part}={_short(h.element or '')}")
                    for fault in op.faults:
                        lines.append(f"      fault {fault.name}: {_short(fault.element or '')}")
        if self.unbound:
            lines.append("bindings no service port uses (no address in the WSDL: give one in site.toml)")
            for port in self.unbound:
                lines.append(f"  binding {_short(port.binding)}: SOAP {port.soap_version}, {port.style}")
                for op in port.operations:
                    kind = "one-way" if op.one_way else "request-response"
                    lines.append(f"    operation {op.name} ({kind}, {op.style}) SOAPAction {op.soap_action!r}")
        return "\n".join(lines)


def _short(qname: str) -> str:
    return qname.rsplit("}", 1)[-1]


def read_wsdl(path: str | Path, *, catalog: str | Path | XmlCatalog | None = None,
              schema_roots: Iterable[str | Path] | None = None,
              max_model_particles: int = MAX_MODEL_PARTICLES) -> WsdlDescription:
    """Read a WSDL 1.1 file (and the WSDLs and XSDs it imports, from local files only; remote
    locations through the OASIS XML ``catalog``, when given). Local files are read under the
    WSDL's directory and the directories ``schema_roots`` only (and where the catalog maps a
    location): anything else named by an import or include is refused, not opened. A schema
    content model of more than ``max_model_particles`` particles is refused (0: no limit)."""
    path = Path(path)
    if not path.is_file():
        raise WsdlError(f"WSDL file not found: {path}")
    if catalog is not None and not isinstance(catalog, XmlCatalog):
        catalog = XmlCatalog(catalog)
    reader = _Reader(path, catalog, schema_roots, max_model_particles)
    try:
        return reader.read()
    except CouplerError:
        raise
    except Exception as exc:  # noqa: BLE001 - a structure this reader did not foresee
        text = (str(exc).strip().splitlines() or [""])[0][:200]
        raise WsdlError(f"cannot read the WSDL: {type(exc).__name__}: {text}", where=str(path),
                        hint="check that it is a WSDL 1.1 document") from None
    finally:
        reader.sandbox.close()


class _Reader:
    def __init__(self, path: Path, catalog: XmlCatalog | None = None,
                 schema_roots: Iterable[str | Path] | None = None, max_model_particles: int = MAX_MODEL_PARTICLES):
        self.path = path
        self.catalog = catalog
        self.sandbox = SchemaSandbox([*own_directories(path), *(schema_roots or [])], catalog, max_particles=max_model_particles)
        self.messages: dict[str, Any] = {}
        self.port_types: dict[str, Any] = {}
        self.bindings: dict[str, Any] = {}
        self.services: list[Any] = []
        self.schemas: list[Any] = []
        self.seen: set[Path] = set()
        self.warnings: list[str] = []

    def read(self) -> WsdlDescription:
        root = self._load(self.path)
        description = WsdlDescription(str(self.path), root.get("targetNamespace"), schemas=self.schemas,
                                      warnings=self.warnings)
        elements = self._declared_elements()
        used: set[str] = set()
        for service_elem in self.services:
            service = Service(service_elem.get("name"))
            for port_elem in service_elem.findall(f"{{{WSDL}}}port"):
                binding_name = self._qname(port_elem, port_elem.get("binding"))
                used.add(binding_name)
                port = self._port(port_elem, binding_name, elements)
                if port is not None:
                    service.ports.append(port)
            description.services.append(service)
        for name, binding in self.bindings.items():
            if name not in used:
                port = self._bind(binding, name, _short(name), None, elements)
                if port is not None:
                    port.bound = False
                    description.unbound.append(port)
        return description

    def _load(self, path: Path, namespace: str | None = None) -> Any:
        path = path.resolve()
        self.seen.add(path)
        root = parse_document(path).getroot()
        if root.tag != f"{{{WSDL}}}definitions":
            raise WsdlError(f"root element {root.tag} is not wsdl:definitions", where=str(path))
        # an imported WSDL without a targetNamespace takes the one its wsdl:import names
        tns = root.get("targetNamespace") or namespace or ""
        for imp in root.findall(f"{{{WSDL}}}import"):
            location = imp.get("location", "")
            target = self._local(location, path, "wsdl:import", imp)
            if target not in self.seen:
                if target.suffix.lower() == ".xsd" or _is_schema_file(target):
                    self.seen.add(target)
                    self.schemas.append(self._schema_file(target))
                else:
                    self._load(target, imp.get("namespace"))
        types = root.find(f"{{{WSDL}}}types")
        if types is not None:
            for imp in types.findall(f"{{{XS}}}import"):  # lax: an import outside any xs:schema
                location = imp.get("schemaLocation")
                if not location:
                    continue
                self.warnings.append(f"{path}:{imp.sourceline}: xs:import written directly in wsdl:types "
                                     "(not inside an xs:schema): the schema it names is read, as zeep does")
                target = self._local(location, path, "xs:import", imp)
                if target not in self.seen:
                    self.seen.add(target)
                    self.schemas.append(self._schema_file(target))
            inline = types.findall(f"{{{XS}}}schema")
            if inline:
                self.schemas.append(self._inline_schemas(inline, path))
        for kind, table in (("message", self.messages), ("portType", self.port_types), ("binding", self.bindings)):
            for elem in root.findall(f"{{{WSDL}}}{kind}"):
                table[f"{{{tns}}}{elem.get('name')}" if tns else elem.get("name")] = elem
        self.services += root.findall(f"{{{WSDL}}}service")
        return root

    def _local(self, location: str, base: Path, what: str, elem: Any = None) -> Path:
        where = f"{base}:{elem.sourceline}" if elem is not None else str(base)
        if _URI_SCHEME.match(location) and not location.startswith("file:"):
            mapped = self.catalog.resolve(location) if self.catalog is not None else None
            if mapped is None:
                needs = "needs the network" if "://" in location else "is not a file location"
                raise WsdlError(
                    f"{what} {location!r} {needs}; imports are resolved from local files only",
                    where=where,
                    hint="download it and map it in an OASIS XML catalog (--catalog, site key catalog), "
                         "or use a relative location" if self.catalog is None else
                         f"the catalog {self.catalog.path} does not map it: add an entry for it",
                )
            if not mapped.is_file():
                raise WsdlError(f"{what} {location!r}: the catalog maps it to {mapped}, which does not exist",
                                where=where)
            self.sandbox.add_mapped(mapped)
            return mapped.resolve()
        target = (base.parent / location.removeprefix("file://")).resolve()
        self.sandbox.check(target, location, where, what)  # before "not found": outside says nothing of it
        if not target.is_file():
            raise WsdlError(f"{what} {location!r}: file not found ({target})", where=where)
        return target

    def _schema_file(self, path: Path) -> Any:
        return load_sandboxed(path, self.sandbox, lax=self.warnings)

    def _inline_schemas(self, schema_elems: list[Any], base: Path) -> Any:
        """The schemas of one ``wsdl:types``, loaded together as one xmlschema schema; a
        reference to another of them without an import gets the import, and errors in the
        schemas' own constructs are warnings (lax, as zeep reads them)."""
        import xmlschema  # here, not at start-up: every coupler command imports this module

        targets = {s.get("targetNamespace") or "" for s in schema_elems}
        sources: list[bytes] = []
        lines: dict[str, int] = {}  # schemaLocation -> its line in the WSDL
        for schema_elem in schema_elems:
            self.sandbox.check_document(schema_elem, str(base))
            for imp in schema_elem.iter(f"{{{XS}}}import", f"{{{XS}}}include"):
                location = imp.get("schemaLocation")
                if location:
                    self._local(location, base, "xs:import" if imp.tag.endswith("import") else "xs:include", imp)
                    lines.setdefault(location, imp.sourceline)
            implied = self._implied_imports(schema_elem, targets, base)
            sources.append(_standalone(schema_elem, implied))
        options: dict[str, Any] = {"base_url": str(base.parent), **self.sandbox.options(), "validation": "lax"}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                streams: list[Any] = [io.BytesIO(data) for data in sources]
                # built once every document is read and no content model is over the bound
                schema = xmlschema.XMLSchema(streams if len(streams) > 1 else streams[0], build=False, **options)
                self.sandbox.check_models()
                schema.build()
            except (xmlschema.XMLSchemaException, ValueError, KeyError, TypeError) as exc:
                self.sandbox.raise_refused(base, lines)
                line = schema_elems[0].sourceline
                raise WsdlError(f"schema in wsdl:types: {str(exc).strip().splitlines()[0]}", where=f"{base}:{line}") from None
        self.sandbox.raise_refused(base, lines)
        self._lax_warnings(schema, sources, schema_elems, base)
        return schema

    def _lax_warnings(self, schema: Any, sources: list[bytes], schema_elems: list[Any], base: Path) -> None:
        """A warning per error of lax loading, at its WSDL line: xmlschema's elements carry no
        line, so the element is found by its position in the schema it belongs to."""
        errors = []
        for component in schema.maps.iter_schemas():
            for error in component.all_errors:
                url = getattr(component, "url", None)
                if url and url.startswith("file:"):  # a schema file the inline ones import
                    where = url_to_path(url)
                    self.warnings.append(schema_error_line(error, where, element_line(where, error)))
                else:
                    errors.append(error)
        if not errors:
            return
        parsed = [etree.fromstring(data, safe_parser()) for data in sources]
        for error in dict.fromkeys(errors):
            line = None
            elem = getattr(error, "elem", None)
            resource = getattr(error, "source", None)
            root = getattr(resource, "root", None)
            if elem is not None and root is not None:
                positions = {id(e): n for n, e in enumerate(root.iter())}
                position = positions.get(id(elem))
                for own, schema_elem in zip(parsed, schema_elems, strict=True):
                    elements = list(own.iter(etree.Element))
                    if position is not None and len(elements) == len(positions) and own.get("targetNamespace") == root.get("targetNamespace"):
                        line = schema_elem.sourceline + (elements[position].sourceline or 1) - 1
                        break
            self.warnings.append(schema_error_line(error, str(base), line))

    def _implied_imports(self, schema_elem: Any, targets: set[str], base: Path) -> list[str]:
        """Namespaces of the other schemas of the same ``wsdl:types`` that this one refers to
        (by a QName with a prefix in scope) without importing them: .NET and zeep resolve such
        references; here each gets an import, and a warning names the first reference's line."""
        own = schema_elem.get("targetNamespace") or ""
        imported = {imp.get("namespace") or "" for imp in schema_elem.findall(f"{{{XS}}}import")}
        implied: dict[str, int] = {}
        for elem in schema_elem.iter(f"{{{XS}}}*"):
            for attribute in _QNAME_ATTRIBUTES:
                value = elem.get(attribute)
                if not value:
                    continue
                for qname in value.split():
                    prefix = qname.rpartition(":")[0]
                    uri = elem.nsmap.get(prefix or None)
                    if uri and uri != own and uri in targets and uri not in imported and uri not in implied:
                        implied[uri] = elem.sourceline
        for uri, line in implied.items():
            self.warnings.append(f"{base}:{line}: the schema of {own or 'no namespace'} refers to {uri} without "
                                 "xs:import; read as imported (another schema of this wsdl:types defines it)")
        return list(implied)

    def _declared_elements(self) -> set[str]:
        names: set[str] = set()
        for schema in self.schemas:
            names.update(schema.maps.elements.keys())
        return names

    def _where(self, elem: Any) -> str:
        """``FILE:LINE`` of an element of the WSDL or of a WSDL it imports."""
        url = elem.getroottree().docinfo.URL
        name = str(self.path) if not url or Path(url).resolve() == self.path.resolve() else url
        return f"{name}:{elem.sourceline}"

    def _qname(self, elem: Any, text: str | None) -> str:
        if not text:
            return ""
        prefix, _, local = text.partition(":") if ":" in text else ("", "", text)
        uri = elem.nsmap.get(prefix or None)
        if uri is None and prefix:
            raise WsdlError(f"undeclared namespace prefix {prefix!r} in {text!r}", where=f"{self.path}:{elem.sourceline}")
        return f"{{{uri}}}{local}" if uri else local

    def _port(self, port_elem: Any, binding_name: str, elements: set[str]) -> Port | None:
        binding = self.bindings.get(binding_name)
        if binding is None:
            raise WsdlError(f"port {port_elem.get('name')!r}: unknown binding {binding_name}", where=f"{self.path}:{port_elem.sourceline}")
        return self._bind(binding, binding_name, port_elem.get("name"), port_elem, elements)

    def _bind(self, binding: Any, binding_name: str, name: str, port_elem: Any, elements: set[str]) -> Port | None:
        """A port of ``binding`` (``port_elem`` None: a binding no service uses, no address)."""
        soap_binding = next((c for c in binding if isinstance(c.tag, str) and c.tag.endswith("}binding") and c.tag[1:].split("}")[0] in SOAP_NS), None)
        if soap_binding is None:
            return None  # an HTTP or other non-SOAP binding
        ns = soap_binding.tag[1:].split("}")[0]
        address = port_elem.find(f"{{{ns}}}address") if port_elem is not None else None
        port = Port(
            name=name,
            binding=binding_name,
            address=address.get("location") if address is not None else None,
            soap_version=SOAP_NS[ns],
            style=soap_binding.get("style", "document"),
            transport=soap_binding.get("transport"),
        )
        port_type = self.port_types.get(self._qname(binding, binding.get("type")))
        if port_type is None:
            raise WsdlError(f"binding {binding_name}: unknown portType {binding.get('type')}", where=f"{self._where(binding)}")
        abstract = {op.get("name"): op for op in port_type.findall(f"{{{WSDL}}}operation")}
        for op_elem in binding.findall(f"{{{WSDL}}}operation"):
            port.operations.append(self._operation(op_elem, abstract, ns, port.style, elements))
        return port

    def _operation(self, op_elem: Any, abstract: dict[str, Any], ns: str, default_style: str, elements: set[str]) -> Operation:
        name = op_elem.get("name")
        op_abstract = abstract.get(name)
        if op_abstract is None:
            raise WsdlError(f"operation {name!r} is bound but not in the portType", where=f"{self.path}:{op_elem.sourceline}")
        soap_op = op_elem.find(f"{{{ns}}}operation")
        style = (soap_op.get("style") if soap_op is not None else None) or default_style
        operation = Operation(name, soap_op.get("soapAction") if soap_op is not None else None, style, None, None,
                              where=self._where(op_elem))
        for direction in ("input", "output"):
            abstract_msg = op_abstract.find(f"{{{WSDL}}}{direction}")
            if abstract_msg is None:
                continue
            bound = op_elem.find(f"{{{WSDL}}}{direction}")
            info = self._message(abstract_msg, abstract_msg.get("message"), elements)
            if bound is not None:
                body = bound.find(f"{{{ns}}}body")
                if body is not None:
                    info.use = body.get("use", "literal")
                    info.namespace = body.get("namespace")
                    if body.get("parts"):
                        wanted = body.get("parts").split()
                        info.parts = [p for p in info.parts if p.name in wanted]
                for header in bound.findall(f"{{{ns}}}header"):
                    hmsg = self._message(header, header.get("message"), elements)
                    part = next((p for p in hmsg.parts if p.name == header.get("part")), None)
                    info.headers.append(HeaderInfo(hmsg.message, header.get("part"), part.element if part else None))
            setattr(operation, direction, info)
        for fault in op_abstract.findall(f"{{{WSDL}}}fault"):
            fmsg = self._message(fault, fault.get("message"), elements)
            element = fmsg.parts[0].element if fmsg.parts else None
            operation.faults.append(FaultInfo(fault.get("name"), fmsg.message, element))
        return operation

    def _message(self, ref_elem: Any, ref: str | None, elements: set[str]) -> MessageInfo:
        qname = self._qname(ref_elem, ref)
        message = self.messages.get(qname)
        if message is None:
            raise WsdlError(f"unknown message {ref!r}", where=self._where(ref_elem))
        info = MessageInfo(qname)
        for part in message.findall(f"{{{WSDL}}}part"):
            element = self._qname(part, part.get("element")) or None
            if element and element not in elements:
                raise WsdlError(
                    f"message {message.get('name')!r} part {part.get('name')!r}: element {part.get('element')} is not declared by any schema",
                    where=self._where(part),
                )
            info.parts.append(Part(part.get("name"), element, self._qname(part, part.get("type")) or None))
        return info


def _standalone(schema_elem: Any, imports: list[str] = ()) -> bytes:  # type: ignore[assignment]
    """An inline schema as its own document, declaring every namespace in scope where it stands
    (its QName-valued attributes such as ``type="tns:Foo"`` may use a prefix that only
    ``wsdl:definitions`` declares; serialising the element alone drops that declaration). The
    missing declarations are added to the start tag of the serialised element: moving the
    element under a new root with lxml would merge prefixes bound to the same URI. ``imports``:
    namespaces to import (written right after the start tag, on its line: the lines of the
    schema stay those of the WSDL, counted from the schema's start tag)."""
    text = etree.tostring(schema_elem)
    end = text.index(b">")
    closed = text[end - 1:end] == b"/"
    if closed:
        end -= 1
    start = text[:end].decode("utf-8")
    declared = set(_DECLARED.findall(start))
    extra = "".join(
        f' xmlns{":" + prefix if prefix else ""}="{escape(uri, {chr(34): "&quot;"})}"'
        for prefix, uri in schema_elem.nsmap.items() if (prefix or "") not in declared
    )
    head = text[:end] + extra.encode("utf-8")
    if not imports:
        return head + text[end:]
    added = "".join(f'<import xmlns="{XS}" namespace="{escape(uri, {chr(34): "&quot;"})}"/>' for uri in imports)
    if closed:
        return head + b">" + added.encode("utf-8") + f"</{schema_elem.prefix + ':' if schema_elem.prefix else ''}schema>".encode()
    return head + b">" + added.encode("utf-8") + text[end + 1:]


def _is_schema_file(path: Path) -> bool:
    """Whether an imported file is an XSD (WSDLs import schemas under other suffixes, e.g. ``?xsd=1``)."""
    try:
        _, root = next(etree.iterparse(str(path), events=("start",), resolve_entities=False, no_network=True,
                                       load_dtd=False))
    except (etree.XMLSyntaxError, OSError, StopIteration):
        return False
    return root.tag == f"{{{XS}}}schema"
