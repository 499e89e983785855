"""Poison units: whatever exception one unit of work (a file, a record, a frame, a SOAP request)
makes a translator or a mapping raise, that unit goes to the Invalid Message Channel (or the
error directory) with its cause in one line, the unit after it is delivered, and the adapter
stays ``ok``. One test per inbound adapter type, each a whole site run by the daemon.

The exceptions are not CouplerErrors: a mapping function of a plugin raising ``RuntimeError``
(user code the bus cannot vet), and the XML decoder's ``OverflowError`` on a date whose year
has 20 digits (the report of issue 17).
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import pytest
import requests

from coupler.bus.config.loader import load_site
from coupler.bus.plugins.hookspecs import hookimpl
from coupler.bus.plugins.manager import site_plugin_manager
from coupler.bus.runtime.daemon import Daemon
from tests.bus.site_helpers import wait_for

from .sftp.sshd import PASSPHRASE, Sshd

POISON_NAME = "POISON"


def refuse_poison(value: str) -> str:
    """A mapping function with a bug: it raises a plain RuntimeError on one name."""
    if value.strip() == POISON_NAME:
        raise RuntimeError(f"cannot handle {value.strip()!r}")
    return value


class PoisonPlugin:
    """The plugin registering :func:`refuse_poison` as the mapping function ``refuse_poison``."""

    @hookimpl
    def coupler_mapping_functions(self) -> dict[str, object]:
        return {"refuse_poison": refuse_poison}


COPYBOOK = """\
       01  ACCOUNT.
           05  ACCT-ID      PIC 9(4).
           05  ACCT-NAME    PIC X(10).
"""
ACCOUNT = {"type": "record", "name": "Account", "namespace": "test",
           "fields": [{"name": "account_id", "type": "string"}, {"name": "name", "type": "string"}]}
ACCOUNT_MAPPING = """
legacy = "copybook:account.cpy"
canonical = "test.Account@1"

[legacy_options]
encoding = "ascii"

[[field]]
legacy = "ACCT-ID"
canonical = "account_id"
format = "04d"

[[field]]
legacy = "ACCT-NAME"
canonical = "name"
function = "refuse_poison"
"""
GOOD = b"0001ALICE     "
POISON = b"0666POISON    "

ORDER_XSD = """<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:o="urn:test:order"
           targetNamespace="urn:test:order" elementFormDefault="qualified">
  <xs:element name="order">
    <xs:complexType><xs:sequence>
      <xs:element name="id" type="xs:string"/>
      <xs:element name="day" type="xs:date"/>
    </xs:sequence></xs:complexType>
  </xs:element>
</xs:schema>
"""
ORDER = {"type": "record", "name": "Order", "namespace": "test",
         "fields": [{"name": "id", "type": "string"}, {"name": "day", "type": {"type": "int", "logicalType": "date"}}]}
ORDER_MAPPING = """
legacy = "xml:order.xsd#order"
canonical = "test.Order@1"

[[field]]
legacy = "id"
canonical = "id"

[[field]]
legacy = "day"
canonical = "day"
"""


def order_xml(order_id: str, day: str) -> bytes:
    return (f'<?xml version="1.0"?><order xmlns="urn:test:order"><id>{order_id}</id>'
            f"<day>{day}</day></order>").encode()


TWENTY_DIGIT_YEAR = "12345678901234567890-01-01"


def write_site(root: Path, adapter: str) -> Path:
    """A site whose one inbound adapter (``adapter``: its [[adapters]] entry) publishes on ``in``."""
    for name, schema in (("account", ACCOUNT), ("order", ORDER)):
        path = root / "schemas" / "test" / name / "v1.avsc"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(schema))
    maps = root / "mappings"
    maps.mkdir(exist_ok=True)
    (maps / "account.cpy").write_text(COPYBOOK)
    (maps / "account.toml").write_text(ACCOUNT_MAPPING)
    (maps / "order.xsd").write_text(ORDER_XSD)
    (maps / "order.toml").write_text(ORDER_MAPPING)
    site = root / "site.toml"
    site.write_text(f'[site]\ndata_dir = "data"\n\n[schemas]\npaths = ["schemas"]\n\n{adapter}')
    return site


@contextmanager
def daemon_of(site: Path, *plugins: object) -> Iterator[Daemon]:
    daemon = Daemon(load_site(site), pm=site_plugin_manager(extra=(PoisonPlugin(), *plugins)))
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.shutdown()


def channel_bodies(daemon: Daemon, n: int) -> list[dict[str, object]]:
    """The first ``n`` messages of channel ``in``, decoded (waits for them)."""
    assert daemon.transport is not None
    transport = daemon.transport
    registry = daemon.registry()
    got = wait_for(lambda: (msgs := transport.peek("in", 10)) and len(msgs) >= n and msgs, f"{n} message(s) on in")
    return [registry.decode(m.body, m.format.ref) for m in got]


def the_invalid(daemon: Daemon):  # type: ignore[no-untyped-def]
    assert daemon.transport is not None
    transport = daemon.transport
    (dead,) = wait_for(lambda: transport.dead_letters(kind="invalid"), "the poison unit in the Invalid Message Channel")
    return dead


def assert_still_ok(daemon: Daemon, name: str) -> None:
    (row,) = [r for r in daemon.adapter_rows() if r["name"] == name]
    assert row["state"] == "running", row
    assert row["health"]["status"] == "ok", row["health"]
    status = daemon.status()
    assert status["alerts"] == [], status["alerts"]


def assert_one_line(reason: str) -> None:
    assert "\n" not in reason and "Traceback" not in reason


FILEDROP = """
[[adapters]]
name = "drop-in"
type = "filedrop"
direction = "inbound"
channel = "in"
mapping = "mappings/{mapping}.toml"
[adapters.options]
directory = "drop"
payload = "{payload}"
stable_seconds = 0
poll_interval = 0.05
max_poll_interval = 0.2
order = "name"
"""


def test_filedrop_a_record_a_mapping_function_breaks_on_is_set_aside(tmp_path: Path) -> None:
    site = write_site(tmp_path, FILEDROP.format(mapping="account", payload="fixed") + "record_length = 14\n")
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "1-poison.dat").write_bytes(POISON)
    (drop / "2-good.dat").write_bytes(GOOD)
    with daemon_of(site) as daemon:
        assert channel_bodies(daemon, 1) == [{"account_id": "0001", "name": "ALICE"}]
        dead = the_invalid(daemon)
        assert dead.envelope is not None and dead.envelope.body == POISON
        assert dead.component == "adapter:drop-in"
        assert "RuntimeError: cannot handle 'POISON'" in dead.reason, dead.reason
        assert "file.path=1-poison.dat" in dead.reason and "record.number=1" in dead.reason, dead.reason
        assert "test_poison_units.py" in dead.reason  # the line of code that raised
        assert_one_line(dead.reason)
        wait_for(lambda: (drop / "archive" / "2-good.dat").exists() and (drop / "archive" / "1-poison.dat").exists(),
                 "both files finished")
        assert_still_ok(daemon, "drop-in")


def test_filedrop_an_xml_date_with_a_20_digit_year_does_not_halt_the_adapter(tmp_path: Path) -> None:
    """The report of issue 17: this file made the poll fail every 0.5 s forever."""
    site = write_site(tmp_path, FILEDROP.format(mapping="order", payload="whole"))
    drop = tmp_path / "drop"
    drop.mkdir()
    poison = order_xml("A-1", TWENTY_DIGIT_YEAR)
    (drop / "1-poison.xml").write_bytes(poison)
    (drop / "2-good.xml").write_bytes(order_xml("A-2", "2026-11-23"))
    with daemon_of(site) as daemon:
        (good,) = channel_bodies(daemon, 1)
        assert good["id"] == "A-2" and str(good["day"]) == "2026-11-23"
        dead = the_invalid(daemon)
        assert dead.envelope is not None and dead.envelope.body == poison
        assert "/order/day" in dead.reason and "xs:date" in dead.reason and "file.path=1-poison.xml" in dead.reason, dead.reason
        assert_one_line(dead.reason)
        wait_for(lambda: not (drop / "1-poison.xml").exists() and not (drop / "2-good.xml").exists(), "both files taken")
        assert_still_ok(daemon, "drop-in")


def test_filedrop_a_file_the_bus_side_breaks_on_goes_to_the_error_directory(tmp_path: Path) -> None:
    """The inbound pipeline itself contains what escapes a publish: the file goes to error/
    with a .reason naming the exception; the next file is taken."""
    from coupler.bus.runtime.context import BusContext

    site = write_site(tmp_path, FILEDROP.format(mapping="account", payload="fixed") + "record_length = 14\n")
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "1-poison.dat").write_bytes(POISON)
    (drop / "2-good.dat").write_bytes(GOOD)
    publish, publish_many = BusContext.publish, BusContext.publish_many

    def broken_publish(self: BusContext, envelope, channel=None):  # type: ignore[no-untyped-def]
        if envelope.body == POISON:
            return {}["a bug on the bus side"]  # KeyError, outside any translation stage
        return publish(self, envelope, channel)

    def broken_publish_many(self: BusContext, envelopes, channel=None):  # type: ignore[no-untyped-def]
        if any(e.body == POISON for e in envelopes):  # records of a file go in batches
            return {}["a bug on the bus side"]
        return publish_many(self, envelopes, channel)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(BusContext, "publish", broken_publish)
        mp.setattr(BusContext, "publish_many", broken_publish_many)
        with daemon_of(site) as daemon:
            assert channel_bodies(daemon, 1) == [{"account_id": "0001", "name": "ALICE"}]
            reason_file = wait_for(lambda: next((drop / "error").glob("1-poison.dat.reason"), None), "the .reason file")
            assert (drop / "error" / "1-poison.dat").read_bytes() == POISON
            reason = reason_file.read_text()
            assert "KeyError: 'a bug on the bus side'" in reason and f"{drop}/1-poison.dat" in reason, reason
            assert_still_ok(daemon, "drop-in")


def test_sftp_a_record_a_mapping_function_breaks_on_is_set_aside(tmp_path: Path) -> None:
    server = Sshd(tmp_path / "sshd").start()
    try:
        remote = tmp_path / "remote"
        remote.mkdir()
        (remote / "1-poison.dat").write_bytes(POISON)
        (remote / "2-good.dat").write_bytes(GOOD)
        site = write_site(tmp_path / "site", f"""
[[adapters]]
name = "sftp-in"
type = "sftp"
direction = "inbound"
channel = "in"
mapping = "mappings/account.toml"
[adapters.options]
host = "127.0.0.1"
port = {server.port}
username = "root"
private_key = "{server.keys['ed25519']}"
passphrase = "{PASSPHRASE}"
known_hosts = "{server.known_hosts}"
remote_directory = "{remote}"
payload = "fixed"
record_length = 14
stable_seconds = 0
poll_interval = 0.1
max_poll_interval = 0.5
""")
        with daemon_of(site) as daemon:
            assert channel_bodies(daemon, 1) == [{"account_id": "0001", "name": "ALICE"}]
            dead = the_invalid(daemon)
            assert dead.envelope is not None and dead.envelope.body == POISON
            assert "RuntimeError: cannot handle 'POISON'" in dead.reason and "file.path=1-poison.dat" in dead.reason
            assert_one_line(dead.reason)
            wait_for(lambda: (remote / "archive" / "2-good.dat").exists() and (remote / "archive" / "1-poison.dat").exists(),
                     "both files finished")
            assert_still_ok(daemon, "sftp-in")
    finally:
        server.stop()


class Exploding:
    """A socket translator with a bug on one payload."""

    def __init__(self, options: dict[str, object]):
        from coupler.adapters.socket.translate import RawTranslator
        from coupler.canonical import FormatIndicator

        self.raw = RawTranslator(FormatIndicator.parse("coupler.Frame@1;application/octet-stream"))

    def decode(self, payload: bytes):  # type: ignore[no-untyped-def]
        if payload.startswith(b"BOOM"):
            raise ZeroDivisionError("division by zero in a homemade translator")
        return self.raw.decode(payload)

    def encode(self, document):  # type: ignore[no-untyped-def]
        return self.raw.encode(document)


def exploding(options: dict[str, object]) -> Exploding:
    """The factory ``translator = "module:attribute"`` names."""
    return Exploding(options)


def _frame_exchange(address: tuple[str, int], frame: bytes) -> bytes:
    """Send one newline-delimited frame, return what the server wrote until it closed or 1 s passed."""
    with socket.create_connection(address, timeout=10) as s:
        s.sendall(frame + b"\n")
        s.settimeout(1.0)
        answer = b""
        try:
            while chunk := s.recv(100):
                answer += chunk
        except TimeoutError:
            pass
    return answer


SOCKET = """
[[adapters]]
name = "sock-in"
type = "socket"
direction = "inbound"
channel = "in"
{mapping}
[adapters.options]
mode = "server"
host = "127.0.0.1"
port = 0
framing = "delimiter"
translator = "{translator}"
fault_response = "ERR {{code}}"
"""


def test_socket_a_frame_a_mapping_function_breaks_on_is_set_aside(tmp_path: Path) -> None:
    site = write_site(tmp_path, SOCKET.format(mapping='mapping = "mappings/account.toml"', translator="raw"))
    with daemon_of(site) as daemon:
        adapter = daemon.adapters["sock-in"].adapter
        assert _frame_exchange(adapter.address, POISON) == b"ERR invalid\n"
        _frame_exchange(adapter.address, GOOD)
        assert channel_bodies(daemon, 1) == [{"account_id": "0001", "name": "ALICE"}]
        dead = the_invalid(daemon)
        assert dead.envelope is not None and dead.envelope.body == POISON
        assert "RuntimeError: cannot handle 'POISON'" in dead.reason and "socket.peer=127.0.0.1:" in dead.reason
        assert_one_line(dead.reason)
        assert_still_ok(daemon, "sock-in")


def test_socket_a_frame_its_translator_breaks_on_is_set_aside(tmp_path: Path) -> None:
    module = ModuleType("poison_translators")
    module.exploding = exploding  # type: ignore[attr-defined]
    sys.modules["poison_translators"] = module
    try:
        site = write_site(tmp_path, SOCKET.format(mapping="", translator="poison_translators:exploding"))
        with daemon_of(site) as daemon:
            adapter = daemon.adapters["sock-in"].adapter
            assert _frame_exchange(adapter.address, b"BOOM 1") == b"ERR invalid\n"
            _frame_exchange(adapter.address, b"fine 2")
            assert daemon.transport is not None
            transport = daemon.transport
            (msg,) = wait_for(lambda: transport.peek("in", 10), "the good frame")
            assert msg.body == b"fine 2"
            dead = the_invalid(daemon)
            assert dead.raw == b"BOOM 1" and dead.envelope is None
            assert "ZeroDivisionError: division by zero in a homemade translator" in dead.reason, dead.reason
            assert "frame from 127.0.0.1:" in dead.reason
            assert_one_line(dead.reason)
            assert_still_ok(daemon, "sock-in")
    finally:
        del sys.modules["poison_translators"]


ORDER_WSDL = """<?xml version="1.0" encoding="UTF-8"?>
<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/"
                  xmlns:o="urn:test:order" xmlns:tns="urn:test:order:wsdl"
                  name="OrderService" targetNamespace="urn:test:order:wsdl">
  <wsdl:types>
    <xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:test:order:wsdl:types">
      <xs:import namespace="urn:test:order" schemaLocation="order.xsd"/>
    </xs:schema>
  </wsdl:types>
  <wsdl:message name="SubmitIn"><wsdl:part name="parameters" element="o:order"/></wsdl:message>
  <wsdl:portType name="OrderPortType">
    <wsdl:operation name="Submit"><wsdl:input message="tns:SubmitIn"/></wsdl:operation>
  </wsdl:portType>
  <wsdl:binding name="OrderSoap11" type="tns:OrderPortType">
    <soap:binding style="document" transport="http://schemas.xmlsoap.org/soap/http"/>
    <wsdl:operation name="Submit">
      <soap:operation soapAction="urn:test:order:Submit"/>
      <wsdl:input><soap:body use="literal"/></wsdl:input>
    </wsdl:operation>
  </wsdl:binding>
  <wsdl:service name="OrderService">
    <wsdl:port name="OrderPort" binding="tns:OrderSoap11"><soap:address location="http://localhost:9/order"/></wsdl:port>
  </wsdl:service>
</wsdl:definitions>
"""
SOAP11 = "http://schemas.xmlsoap.org/soap/envelope/"


def soap_order(order_id: str, day: str) -> bytes:
    return (f'<e:Envelope xmlns:e="{SOAP11}"><e:Body><o:order xmlns:o="urn:test:order"><o:id>{order_id}</o:id>'
            f"<o:day>{day}</o:day></o:order></e:Body></e:Envelope>").encode()


def test_soap_a_request_with_a_20_digit_year_is_set_aside(tmp_path: Path) -> None:
    site = write_site(tmp_path, """
[[adapters]]
name = "soap-in"
type = "soap"
direction = "inbound"
channel = "in"
[adapters.options]
mode = "server"
wsdl = "mappings/order.wsdl"
target = "nobody"
""")
    (tmp_path / "mappings" / "order.wsdl").write_text(ORDER_WSDL)
    with daemon_of(site) as daemon:
        url = daemon.adapters["soap-in"].adapter.url
        headers = {"Content-Type": "text/xml", "SOAPAction": '"urn:test:order:Submit"'}
        poison = soap_order("A-1", TWENTY_DIGIT_YEAR)
        bad = requests.post(url, data=poison, headers=headers, timeout=10)
        assert bad.status_code == 500 and b"Fault" in bad.content and b"Traceback" not in bad.content
        good = requests.post(url, data=soap_order("A-2", "2026-11-23"), headers=headers, timeout=10)
        assert good.status_code == 202, good.text
        assert daemon.transport is not None
        transport = daemon.transport
        (msg,) = wait_for(lambda: transport.peek("in", 10), "the good request published")
        assert json.loads(msg.body) == {"id": "A-2", "day": "2026-11-23"}
        dead = the_invalid(daemon)
        assert dead.raw == poison
        assert "xs:date" in dead.reason and "SOAP request from 127.0.0.1" in dead.reason, dead.reason
        assert_one_line(dead.reason)
        assert_still_ok(daemon, "soap-in")


def test_the_reason_names_the_code_that_raised() -> None:
    from coupler.canonical.errors import UnitError

    try:
        refuse_poison(POISON_NAME)
    except RuntimeError as exc:
        error = UnitError.of(exc, where="file x.dat")
    text = str(error)
    assert text.startswith("file x.dat: RuntimeError: cannot handle 'POISON' (raised at test_poison_units.py:")
    assert "in refuse_poison)" in text
