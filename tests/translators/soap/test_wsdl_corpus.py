"""Public WSDLs of real services (.NET ASMX and WCF, Java Axis/Axis2/XFire, PHP): ``coupler wsdl
describe`` lists the same services, SOAP ports, operations and message parts as zeep (an
independent WSDL reader) reads from each file. Sources and licences: ``corpus/SOURCES.md``."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import zeep
from zeep.wsdl.bindings.soap import Soap11Binding, Soap12Binding

from coupler.bus.cli.main import main

CORPUS = Path(__file__).parent / "corpus"
WSDLS = sorted(p for p in CORPUS.rglob("*.wsdl") if p.name != "Service10.wsdl")  # Service10: imported by Service1


def _parts(message: Any) -> list[tuple[str, str | None, str | None]]:
    if message is None:
        return []
    out = []
    for name, part in message.parts.items():
        element = part.element.qname.text if part.element is not None else None
        type_ = part.type.qname.text if part.type is not None and part.element is None else None
        out.append((name, element, type_))
    return out


def _zeep_view(path: Path) -> dict[tuple[str, str], Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        document = zeep.wsdl.Document(str(path), zeep.Transport())
    view = {}
    for service in document.services.values():
        for port in service.ports.values():
            binding = port.binding
            if not isinstance(binding, Soap11Binding | Soap12Binding):
                continue  # HTTP GET/POST ports: not SOAP, coupler lists SOAP ports only
            operations = {}
            for name, op in binding._operations.items():
                operations[name] = {
                    "soap_action": op.soapaction or "",
                    "style": op.style,
                    "input": _parts(op.abstract.input_message),
                    "output": _parts(op.abstract.output_message) if op.abstract.output_message is not None else None,
                }
            view[(service.name, port.name)] = {
                "version": "1.2" if isinstance(binding, Soap12Binding) else "1.1",
                "address": port.binding_options.get("address"),
                "operations": operations,
            }
    return view


def _coupler_view(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[tuple[str, str], Any]:
    assert main(["wsdl", "describe", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    view = {}
    for service in data["services"]:
        for port in service["ports"]:
            operations = {}
            for op in port["operations"]:
                def parts(message: Any) -> list[tuple[str, str | None, str | None]] | None:
                    if message is None:
                        return None
                    return [(p["name"], _clark(p["element"]), _clark(p["type"]) if not p["element"] else None)
                            for p in message["parts"]]

                operations[op["name"]] = {
                    "soap_action": op["soap_action"] or "",
                    "style": op["style"],
                    "input": parts(op["input"]) or [],
                    "output": parts(op["output"]),
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


def test_the_corpus_has_six_services_or_more() -> None:
    assert len(WSDLS) >= 6
    assert (CORPUS / "SOURCES.md").is_file()
