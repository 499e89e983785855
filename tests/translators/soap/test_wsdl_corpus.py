"""Public WSDLs of real services (.NET ASMX and WCF, Java Axis/Axis2/XFire/CXF/JAX-WS RI, PHP NuSOAP,
ONVIF/WS-Notification, ...): ``coupler wsdl describe`` lists the same services, SOAP ports,
operations, message parts and SOAP header parts as zeep (an independent WSDL reader) reads from
each file, and the SOAP bindings no service port uses. A WSDL whose imports are ``http(s)://``
locations is read through the OASIS XML catalog beside it (``catalog.xml``), zeep through the
same mapping. Sources and licences: ``corpus/SOURCES.md``."""

from __future__ import annotations

import contextlib
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import xmlschema
import zeep
from lxml import etree
from zeep.wsdl.bindings.soap import Soap11Binding, Soap12Binding

from coupler.bus.cli.main import main

CORPUS = Path(__file__).parent / "corpus"
#: WSDLs only imported by others (Service10 by wcf/Service1, the OASIS ones by onvif/event.wsdl)
IMPORTED = {"Service10.wsdl", "bw-2.wsdl", "rw-2.wsdl", "RuntimeFault.wsdl"}
WSDLS = sorted(p for p in CORPUS.rglob("*.wsdl") if p.name not in IMPORTED)
CATALOG_NS = "{urn:oasis:names:tc:entity:xmlns:xml:catalog}"


def _catalog(wsdl: Path) -> Path | None:
    """The ``catalog.xml`` of the WSDL's folder or of a folder above it (inside the corpus)."""
    for folder in wsdl.parents:
        if (folder / "catalog.xml").is_file():
            return folder / "catalog.xml"
        if folder == CORPUS:
            return None
    return None


def _catalog_map(catalog: Path | None) -> dict[str, Path]:
    """The catalog's exact ``uri`` entries and its ``rewriteURI`` prefixes (a key ending in
    ``/``), read here with lxml (not with coupler's reader)."""
    if catalog is None:
        return {}
    root = etree.parse(str(catalog)).getroot()
    exact = {e.get("name"): (catalog.parent / e.get("uri")).resolve() for e in root.iter(f"{CATALOG_NS}uri")}
    prefixes = {e.get("uriStartString"): (catalog.parent / e.get("rewritePrefix")).resolve()
                for e in root.iter(f"{CATALOG_NS}rewriteURI")}
    return exact | prefixes


class _OfflineTransport(zeep.Transport):
    """zeep imports the SOAP encoding schema from the network when a type derives from
    ``SOAP-ENC:Array`` (rpc/encoded WSDLs such as NuSOAP's); it is served from the copy that
    xmlschema ships. Nothing else may need the network."""

    LOCAL = {"http://schemas.xmlsoap.org/soap/encoding/":
             Path(xmlschema.__file__).parent / "schemas" / "WSDL" / "soap-encoding.xsd"}

    def __init__(self, catalog: dict[str, Path] | None = None):
        super().__init__()
        self.catalog = catalog or {}

    def load(self, url: str) -> bytes:
        if url in self.LOCAL:
            return self.LOCAL[url].read_bytes()
        if url in self.catalog:
            return self.catalog[url].read_bytes()
        for start, target in self.catalog.items():  # zeep joins a location of another scheme
            if start.endswith("/") and ":" in start and f"/{start}" in url:  # (oramds:/...) to the base
                return (target / url.split(f"/{start}", 1)[1]).read_bytes()
        assert "://" not in url or url.startswith("file:"), f"zeep wants the network: {url}"
        return super().load(url)


def _parts(message: Any, bound: Any = None) -> list[tuple[str, str | None, str | None]]:
    """The parts of the abstract message that go in the SOAP body: zeep leaves out the parts
    that the binding puts in a ``soap:header``."""
    if message is None:
        return []
    in_header = {(name, getattr(el.qname, "text", None)) for name, el in _headers(bound)}
    out = []
    for name, part in message.parts.items():
        element = part.element.qname.text if part.element is not None else None
        type_ = part.type.qname.text if part.type is not None and part.element is None else None
        if (name, element) not in in_header:
            out.append((name, element, type_))
    return out


def _headers(bound: Any) -> list[tuple[str, Any]]:
    header = getattr(bound, "header", None)
    return list(header.type.elements) if header is not None else []


def _header_view(bound: Any) -> list[tuple[str, str | None]]:
    return [(name, el.qname.text if el.qname is not None and "}" in el.qname.text else None)
            for name, el in _headers(bound)]


def _binding_view(binding: Any, address: str | None) -> dict[str, Any]:
    operations = {}
    for name, op in binding._operations.items():
        operations[name] = {
            "soap_action": op.soapaction or "",
            "style": op.style,
            "input": _parts(op.abstract.input_message, op.input),
            "output": _parts(op.abstract.output_message, op.output)
            if op.abstract.output_message is not None else None,
            "headers": (_header_view(op.input), _header_view(op.output)),
        }
    return {"version": "1.2" if isinstance(binding, Soap12Binding) else "1.1", "address": address,
            "operations": operations}


def _zeep_view(path: Path) -> dict[tuple[str, str], Any]:
    """(service, port) -> the port as zeep reads it; ("", binding) for a SOAP binding no port uses."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        document = zeep.wsdl.Document(str(path), _OfflineTransport(_catalog_map(_catalog(path))))
    view = {}
    used = set()
    for service in document.services.values():
        for port in service.ports.values():
            binding = port.binding
            used.add(id(binding))
            if not isinstance(binding, Soap11Binding | Soap12Binding):
                continue  # HTTP GET/POST ports: not SOAP, coupler lists SOAP ports only
            view[(service.name, port.name)] = _binding_view(binding, port.binding_options.get("address"))
    for binding in document.bindings.values():
        if id(binding) not in used and isinstance(binding, Soap11Binding | Soap12Binding):
            view[("", binding.name.localname)] = _binding_view(binding, None)
    return view


def _coupler_view(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[tuple[str, str], Any]:
    catalog = _catalog(path)
    # run from the distribution's folder, as its user would: the current directory is a schema
    # root (Oracle's WSDLs import ../../../BusinessObjects), no --schema-root needed
    parts = path.relative_to(CORPUS).parts
    root = CORPUS / parts[0] if len(parts) > 1 else CORPUS
    with contextlib.chdir(root):
        assert main(["wsdl", "describe", str(path.relative_to(root)), "--json",
                     *(["--catalog", str(catalog)] if catalog else [])]) == 0
    data = json.loads(capsys.readouterr().out)
    view = {}
    unbound = [{"name": "", "ports": data["unbound_bindings"]}] if data["unbound_bindings"] else []
    for service in data["services"] + unbound:
        for port in service["ports"]:
            operations = {}
            for op in port["operations"]:
                def parts(message: Any) -> list[tuple[str, str | None, str | None]] | None:
                    if message is None:
                        return None
                    return [(p["name"], _clark(p["element"]), _clark(p["type"]) if not p["element"] else None)
                            for p in message["parts"]]

                def headers(message: Any) -> list[tuple[str, str | None]]:
                    return [(h["part"], h["element"]) for h in message["headers"]] if message else []

                operations[op["name"]] = {
                    "soap_action": op["soap_action"] or "",
                    "style": op["style"],
                    "input": parts(op["input"]) or [],
                    "output": parts(op["output"]),
                    "headers": (headers(op["input"]), headers(op["output"])),
                }
            view[(service["name"], port["name"])] = {
                "version": port["soap_version"], "address": port["address"], "operations": operations,
            }
    return view


def _clark(name: str | None) -> str | None:
    return name or None


@pytest.mark.parametrize("wsdl", WSDLS, ids=[str(p.relative_to(CORPUS)) for p in WSDLS])
def test_describe_lists_what_zeep_reads(wsdl: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = _zeep_view(wsdl)
    assert expected, "zeep found no SOAP port"
    assert _coupler_view(wsdl, capsys) == expected


def test_the_corpus_has_twenty_services_or_more() -> None:
    assert len(WSDLS) >= 20
    assert (CORPUS / "SOURCES.md").is_file()


def test_describe_names_the_use_the_binding_declares(capsys: pytest.CaptureFixture[str]) -> None:
    """NuSOAP binds rpc/encoded (SOAP encoding); the text description says so instead of
    calling every port literal."""
    assert main(["wsdl", "describe", str(CORPUS / "AphiaNameService.wsdl")]) == 0
    out = capsys.readouterr().out
    assert "SOAP 1.1, rpc/encoded," in out and "/literal" not in out
    assert main(["wsdl", "describe", str(CORPUS / "calculator.wsdl")]) == 0
    assert "SOAP 1.1, document/literal," in capsys.readouterr().out
