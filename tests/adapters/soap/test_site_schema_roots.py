"""In a site, a WSDL's imports may read files under the site's folder (the directory of
site.toml) and the site's ``[schemas] paths`` besides the WSDL's own directory, as a schema
distribution laid out the usual way needs (``wsdl/`` importing ``../xsd/``); a system file
stays refused, in one line."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from coupler.bus.config.loader import load_site
from coupler.bus.plugins.manager import site_plugin_manager
from coupler.bus.runtime.daemon import Daemon
from coupler.canonical.errors import CouplerError
from tests.bus.site_helpers import write_site

XS = "http://www.w3.org/2001/XMLSchema"


def _order_xsd(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'''<?xml version="1.0"?>
<xs:schema xmlns:xs="{XS}" targetNamespace="urn:h107:order" elementFormDefault="qualified">
  <xs:element name="order"><xs:complexType><xs:sequence>
    <xs:element name="id" type="xs:string"/></xs:sequence></xs:complexType></xs:element>
</xs:schema>
''')
    return path


def _wsdl(path: Path, location: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'''<?xml version="1.0" encoding="UTF-8"?>
<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/"
                  xmlns:o="urn:h107:order" xmlns:tns="urn:h107:wsdl" targetNamespace="urn:h107:wsdl">
  <wsdl:types>
    <xs:schema xmlns:xs="{XS}" targetNamespace="urn:h107:wsdl:types">
      <xs:import namespace="urn:h107:order" schemaLocation="{location}"/>
    </xs:schema>
  </wsdl:types>
  <wsdl:message name="SubmitIn"><wsdl:part name="parameters" element="o:order"/></wsdl:message>
  <wsdl:portType name="OrderPortType">
    <wsdl:operation name="Submit"><wsdl:input message="tns:SubmitIn"/></wsdl:operation>
  </wsdl:portType>
  <wsdl:binding name="OrderSoap11" type="tns:OrderPortType">
    <soap:binding style="document" transport="http://schemas.xmlsoap.org/soap/http"/>
    <wsdl:operation name="Submit">
      <soap:operation soapAction="urn:h107:Submit"/>
      <wsdl:input><soap:body use="literal"/></wsdl:input>
    </wsdl:operation>
  </wsdl:binding>
  <wsdl:service name="OrderService">
    <wsdl:port name="OrderPort" binding="tns:OrderSoap11"><soap:address location="http://localhost:9/order"/></wsdl:port>
  </wsdl:service>
</wsdl:definitions>
''')
    return path


def _site(directory: Path, extra: str = "") -> Path:
    return write_site(directory, f"""{extra}
[[adapters]]
name = "orders"
type = "soap"
direction = "inbound"
channel = "in"
[adapters.options]
mode = "server"
wsdl = "wsdl/orders.wsdl"
target = "nobody"
""")


@contextmanager
def _started(site: Path) -> Iterator[Daemon]:
    daemon = Daemon(load_site(site), pm=site_plugin_manager())
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.shutdown()


def _elements(daemon: Daemon) -> set[str]:
    adapter = daemon.adapters["orders"].adapter
    return {name for schema in adapter.description.schemas for name in schema.maps.elements}


def test_a_site_whose_wsdl_imports_a_sibling_directory_under_the_site_folder_starts(tmp_path: Path) -> None:
    site_dir = tmp_path / "h107_site"
    _order_xsd(site_dir / "xsd" / "order.xsd")
    _wsdl(site_dir / "wsdl" / "orders.wsdl", "../xsd/order.xsd")
    with _started(_site(site_dir)) as daemon:
        assert "{urn:h107:order}order" in _elements(daemon)


def test_the_sites_schema_directories_are_roots_too(tmp_path: Path) -> None:
    site_dir = tmp_path / "h107_site"
    _order_xsd(tmp_path / "h107_shared" / "order.xsd")
    _wsdl(site_dir / "wsdl" / "orders.wsdl", "../../h107_shared/order.xsd")
    with _started(_site(site_dir, '[schemas]\npaths = ["../h107_shared"]\n')) as daemon:
        assert "{urn:h107:order}order" in _elements(daemon)


def test_a_system_file_stays_refused_in_a_site_in_one_line(tmp_path: Path) -> None:
    site_dir = tmp_path / "h107_site"
    _wsdl(site_dir / "wsdl" / "orders.wsdl", "/etc/passwd")
    with pytest.raises(CouplerError) as info:
        with _started(_site(site_dir)):
            pass
    text = str(info.value)
    assert "\n" not in text and "outside the directories" in text and "/etc/passwd" in text
    assert str(site_dir) in text  # the site folder is named among the directories it may read
