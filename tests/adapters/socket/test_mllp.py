"""HL7 v2 over MLLP, with the ``hl7`` package's MLLP client as the independent peer."""

from __future__ import annotations

import hl7
import pytest
from hl7.client import MLLPClient

from coupler.adapters.socket import SocketAdapter
from coupler.adapters.socket.hl7v2 import acknowledgement, read_header
from coupler.adapters.socket.translate import HL7_FORMAT
from coupler.bus.api import Adapter, Command, CommandFault, Document, Reply

ADT = "\r".join(
    [
        "MSH|^~\\&|HIS|NORTH|LAB|SOUTH|20240102030405||ADT^A01^ADT_A01|MSG{n:05d}|P|2.5",
        "EVN|A01|20240102030405",
        "PID|1||12345^^^HIS^MR||DOE^JANE||19700101|F",
    ]
)


def _ack(raw) -> hl7.Message:
    text = raw.decode() if isinstance(raw, bytes) else raw
    return hl7.parse(text)


def _server(bus, **options):
    adapter = SocketAdapter(
        "hl7-in",
        {"mode": "server", "host": "127.0.0.1", "port": 0, "framing": "mllp", "translator": "hl7", **options},
        bus.context("hl7-in", "adt"),
    )
    adapter.channel = "adt"
    return bus.add(adapter)


def test_messages_are_published_and_acknowledged_aa(bus):
    adapter = _server(bus)
    with MLLPClient(*adapter.address) as client:
        acks = [_ack(client.send_message(ADT.format(n=n))) for n in range(3)]
    for n, ack in enumerate(acks):
        assert str(ack.segment("MSA")[1]) == "AA"
        assert str(ack.segment("MSA")[2]) == f"MSG{n:05d}"
        msh = ack.segment("MSH")
        assert str(msh[3]) == "LAB" and str(msh[5]) == "HIS"  # sender and receiver swapped
        assert str(msh[9]) == "ACK^A01^ACK"
    published = bus.received("adt", wait=5)
    assert [e.properties["hl7.control_id"] for e in published] == ["MSG00000", "MSG00001", "MSG00002"]
    assert published[0].body == ADT.format(n=0).encode()
    assert published[0].properties["hl7.message_type"] == "ADT^A01^ADT_A01"


def test_text_that_is_not_hl7_is_rejected_ar(bus):
    adapter = _server(bus)
    with MLLPClient(*adapter.address) as client:
        ack = _ack(client.send_message("hello, not HL7"))
    assert str(ack.segment("MSA")[1]) == "AR"
    assert bus.received("adt", wait=0.5) == []


class Registry(Adapter):
    """The patient registry behind the bus: refuses patients without a name."""

    commands = ("request", "ping", "describe")

    def on_request(self, command: Command) -> Reply:
        assert command.document is not None
        message = hl7.parse(command.document.body.decode())
        if not str(message.segment("PID")[5]):
            raise CommandFault("PID-5 (patient name) is required", code="invalid")
        if str(message.segment("PID")[5]).startswith("CRASH"):
            raise CommandFault("registry database unavailable", code="failed")
        return Reply(details={"status": "stored"})


@pytest.mark.parametrize(
    ("pid", "code", "text"),
    [
        ("PID|1||1^^^HIS^MR||DOE^JOHN", "AA", None),
        ("PID|1||2^^^HIS^MR||", "AR", "PID-5 (patient name) is required"),
        ("PID|1||3^^^HIS^MR||CRASH^TEST", "AE", "registry database unavailable"),
    ],
)
def test_request_reply_acknowledges_what_the_bus_did(bus, pid, code, text):
    registry = Registry("registry", {}, bus.context("registry"))
    bus.add(registry)
    adapter = _server(bus, exchange="request-reply", target="registry")
    message = "MSH|^~\\&|HIS|NORTH|REG|SOUTH|20240102||ADT^A04|C1|P|2.5\r" + pid
    with MLLPClient(*adapter.address) as client:
        ack = _ack(client.send_message(message))
    assert str(ack.segment("MSA")[1]) == code
    assert str(ack.segment("MSA")[2]) == "C1"
    if text:
        assert str(ack.segment("MSA")[3]) == text


def test_nak_when_nobody_serves_the_target(bus):
    adapter = _server(bus, exchange="request-reply", target="nobody")
    with MLLPClient(*adapter.address) as client:
        ack = _ack(client.send_message(ADT.format(n=7)))
    assert str(ack.segment("MSA")[1]) == "AR"
    assert "no adapter serves 'request' for target 'nobody'" in str(ack.segment("MSA")[3])


def test_client_mode_delivers_over_mllp_and_checks_the_ack(bus):
    """Our MLLP client against our MLLP server: AA passes, AR becomes an invalid fault."""
    server = _server(bus)

    def client(name, translator):
        options = {"mode": "client", "port": server.address[1], "framing": "mllp", "translator": translator}
        return bus.add(SocketAdapter(name, options, bus.context(name)))

    hl7_out, raw_out = client("hl7-out", "hl7"), client("raw-out", "raw")
    hl7_out.deliver(Document(HL7_FORMAT, ADT.format(n=9).encode()).to_envelope())
    assert bus.received("adt", wait=5)[0].properties["hl7.control_id"] == "MSG00009"
    with pytest.raises(CommandFault, match="not an HL7 v2 message"):  # refused before sending
        hl7_out.deliver(Document(HL7_FORMAT, b"hello").to_envelope())
    with pytest.raises(CommandFault, match="the HL7 receiver answered AR") as info:
        raw_out.deliver(Document(HL7_FORMAT, b"hello").to_envelope())
    assert info.value.code == "invalid"


def test_acknowledgement_escapes_separators_and_reads_custom_separators():
    msg = "MSH#@~\\&#A#B#C#D#20240101##ORU@R01#X9#T#2.3\rOBX#1"
    h = read_header(msg)
    assert (h.field_sep, h.control_id, h.trigger, h.version) == ("#", "X9", "R01", "2.3")
    ack = acknowledgement(msg, "AE", "bad # field @ here").decode()
    assert ack.split("\r")[1] == "MSA#AE#X9#bad \\F\\ field \\S\\ here"
