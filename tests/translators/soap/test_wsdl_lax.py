"""Lax and multi-schema WSDLs (issue 31): what zeep and .NET clients accept is read, each liberty
a warning naming the line; remote imports through an OASIS XML catalog (fetching stays off);
bindings no service port uses are listed. The zeep comparison of every corpus WSDL is in
``test_wsdl_corpus.py``; these tests pin the behaviour a user sees."""

from __future__ import annotations

from pathlib import Path

import pytest

from coupler.bus.cli.main import main
from coupler.translators.soap.wsdl import WsdlError, read_wsdl
from coupler.translators.xml.catalog import XmlCatalog
from coupler.translators.xml.errors import XsdError

CORPUS = Path(__file__).parent / "corpus"
EVENTS = CORPUS / "onvif" / "ver10" / "events" / "wsdl" / "event.wsdl"
CATALOG = CORPUS / "onvif" / "catalog.xml"


def test_a_reference_to_another_schema_of_the_types_without_import_is_read_with_a_warning_naming_the_line() -> None:
    description = read_wsdl(CORPUS / "lax_cross_namespace.wsdl")
    (port,) = description.services[0].ports
    assert [p.element for p in port.operations[0].input.parts] == ["{urn:a}Request"]
    (warning,) = description.warnings
    assert warning.startswith(f"{CORPUS / 'lax_cross_namespace.wsdl'}:7: ") and "urn:b" in warning
    # the implied import resolves the reference (not xs:anyType): the type of Response is b:DocType
    schema = description.schemas[0]
    assert schema.maps.elements["{urn:a}Response"].type.name == "{urn:b}DocType"


def test_the_cli_prints_warnings_on_stderr_and_the_description_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["wsdl", "describe", str(CORPUS / "lax_cross_namespace.wsdl")]) == 0
    out, err = capsys.readouterr()
    assert "operation Op" in out and "warning" not in out
    assert err.startswith("coupler: warning: ") and ":7: " in err


def test_schema_constructs_xsd_does_not_allow_are_warnings_naming_the_file() -> None:
    description = read_wsdl(CORPUS / "wsdltophp" / "partner" / "PartnerService.local.wsdl")
    assert any("PartnerService.3.xsd:3: " in w and "nillable" in w for w in description.warnings), description.warnings
    assert len(description.services[0].ports) == 2


def test_a_wsdl_in_no_namespace_is_read() -> None:
    description = read_wsdl(CORPUS / "wsdltophp" / "MyBoardPack.wsdl")  # targetNamespace=""
    (port,) = description.services[0].ports
    assert port.binding == "BasicHttpBinding_IBoardPackService" and port.operations


def test_remote_imports_need_a_catalog_and_the_error_says_so() -> None:
    with pytest.raises(WsdlError) as info:
        read_wsdl(EVENTS)
    message = str(info.value)
    assert "http://docs.oasis-open.org/wsn/bw-2.wsdl" in message and "event.wsdl:13" in message
    assert "catalog" in message


def test_remote_imports_are_read_through_the_catalog_and_imported_messages_resolve() -> None:
    description = read_wsdl(EVENTS, catalog=CATALOG)
    assert not description.services  # WS-Notification: no wsdl:service
    unbound = {p.name: p for p in description.unbound}
    assert {"EventBinding", "PullPointSubscriptionBinding", "NotificationProducerBinding"} <= set(unbound)
    assert all(p.address is None and not p.bound and p.soap_version == "1.2" for p in unbound.values())
    subscribe = next(op for op in unbound["NotificationProducerBinding"].operations if op.name == "Subscribe")
    # wsntw:SubscribeRequest is a message of the imported bw-2.wsdl
    assert subscribe.input.message == "{http://docs.oasis-open.org/wsn/bw-2}SubscribeRequest"
    assert subscribe.input.parts[0].element == "{http://docs.oasis-open.org/wsn/b-2}Subscribe"
    assert description.callable_services()[0].ports == description.unbound


ORACLE_LOGGING = CORPUS / "oracle" / "ccms" / "Schema" / "BusinessServices" / "CCMS" / "Logging"


def test_an_oracle_mds_location_is_not_taken_for_a_relative_path(tmp_path: Path) -> None:
    """Oracle SOA Suite writes ``schemaLocation="oramds:/apps/..."`` (its MDS repository): a
    location with a URI scheme is named as such, not looked for as ``<folder>/oramds:/...``."""
    catalog = tmp_path / "catalog.xml"  # maps the remote RuntimeFault.wsdl only
    catalog.write_text((ORACLE_LOGGING / "catalog.xml").read_text().replace(
        '<rewriteURI uriStartString="oramds:/apps/lsc/" rewritePrefix="../../../../"/>', "").replace(
        'uri="RuntimeFault.wsdl"', f'uri="{(ORACLE_LOGGING / "RuntimeFault.wsdl").as_uri()}"'))
    with pytest.raises(WsdlError) as info:
        read_wsdl(ORACLE_LOGGING / "CommonLogging.wsdl", catalog=catalog)
    message = str(info.value)
    assert "'oramds:/apps/lsc/Schema/BusinessObjects/CCMS/Logging/1.0/LoggingBIM.xsd' is not a file location" in message
    assert "CommonLogging.wsdl:26" in message and "does not map it" in message and "Logging/oramds:" not in message


def test_oracle_mds_locations_are_read_through_the_catalog() -> None:
    """The catalog's ``rewriteURI`` of ``oramds:/apps/lsc/`` serves the import of the inline
    schema (which xmlschema asks for as ``oramds:///apps/...``) and the schemas it imports."""
    description = read_wsdl(ORACLE_LOGGING / "CommonLogging.wsdl", catalog=ORACLE_LOGGING / "catalog.xml")
    (port,) = description.services[0].ports
    (process,) = port.operations
    assert process.output is None  # one-way
    assert process.input.parts[0].element == "{http://legalservices.gov.uk/CCMS/Logging/1.0/LoggingBIM}LogMessageAddRQ"


def test_describe_lists_unbound_bindings_as_not_bound_to_an_address(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["wsdl", "describe", str(EVENTS), "--catalog", str(CATALOG)]) == 0
    out = capsys.readouterr().out
    assert "bindings no service port uses (no address in the WSDL: give one in site.toml)" in out
    assert "  binding EventBinding: SOAP 1.2, document" in out


def test_a_catalog_entry_that_points_nowhere_is_a_located_error(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.xml"
    catalog.write_text('<catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">'
                       '<uri name="http://docs.oasis-open.org/wsn/bw-2.wsdl" uri="missing.wsdl"/></catalog>')
    with pytest.raises(WsdlError, match="the catalog maps it to .*missing.wsdl, which does not exist"):
        read_wsdl(EVENTS, catalog=catalog)


def test_catalog_entries_exact_rewrite_suffix_and_next(tmp_path: Path) -> None:
    (tmp_path / "more.xml").write_text(
        '<catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">'
        '<system systemId="urn:x:doc" uri="doc.xsd"/></catalog>')
    (tmp_path / "catalog.xml").write_text(
        '<catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">'
        '<uri name="https://example.com/a/b.xsd" uri="exact/b.xsd"/>'
        '<rewriteURI uriStartString="https://example.com/" rewritePrefix="mirror/"/>'
        '<rewriteURI uriStartString="https://example.com/a/" rewritePrefix="deeper/"/>'
        '<group xml:base="sub/"><uriSuffix uriSuffix="/xml.xsd" uri="xml.xsd"/></group>'
        '<nextCatalog catalog="more.xml"/></catalog>')
    catalog = XmlCatalog(tmp_path / "catalog.xml")
    assert catalog.resolve("https://example.com/a/b.xsd") == tmp_path / "exact" / "b.xsd"
    assert catalog.resolve("https://example.com/a/c.xsd") == tmp_path / "deeper" / "c.xsd"  # the longest prefix
    assert catalog.resolve("https://example.com/z.xsd") == tmp_path / "mirror" / "z.xsd"
    assert catalog.resolve("http://www.w3.org/2001/xml.xsd") == tmp_path / "sub" / "xml.xsd"
    assert catalog.resolve("urn:x:doc") == tmp_path / "doc.xsd"
    assert catalog.resolve("https://elsewhere.org/x.xsd") is None


def test_a_file_that_is_not_a_catalog_is_refused(tmp_path: Path) -> None:
    (tmp_path / "c.xml").write_text("<catalog/>")
    with pytest.raises(XsdError, match="not an OASIS XML catalog"):
        XmlCatalog(tmp_path / "c.xml")
    with pytest.raises(XsdError, match="not found"):
        XmlCatalog(tmp_path / "none.xml")


def test_the_client_adapter_calls_an_unbound_binding_at_the_configured_address() -> None:
    """site.toml: wsdl, catalog, address (the WSDL has none), port = the binding's name."""
    from coupler.adapters.soap import SoapAdapter

    adapter = SoapAdapter("camera-events", {"mode": "client", "wsdl": str(EVENTS), "catalog": str(CATALOG),
                                            "port": "EventBinding", "address": "http://127.0.0.1:9/onvif/events"})
    assert "CreatePullPointSubscription" in adapter.operations["1.2"]
    assert adapter.ports["1.2"].address is None and adapter.endpoint == "http://127.0.0.1:9/onvif/events"
