"""The common command set: Avro-defined Command Messages, replies, faults, dispatch rules."""

from __future__ import annotations

import pytest

from coupler.bus.api import Adapter, Command, CommandFault, Document
from coupler.bus.model.commands import (
    COMMAND_FORMATS,
    FAULT_FORMAT,
    REPLY_FORMAT,
    command_envelope,
    fault_envelope,
    parse_command,
    parse_reply,
    reply_envelope,
)
from coupler.bus.runtime.dispatch import Dispatcher, Servant
from coupler.canonical import Envelope, FormatIndicator, MessageKind
from coupler.canonical.registry import SchemaRegistry
from coupler.schemas import SCHEMA_DIR

DOC = Document(FormatIndicator.parse("acme.Note@1;text/plain"), b"hello", {"k": "v"})


def test_every_command_schema_is_in_the_registry() -> None:
    registry = SchemaRegistry.from_dirs([SCHEMA_DIR])
    for fmt in [*COMMAND_FORMATS.values(), REPLY_FORMAT, FAULT_FORMAT]:
        assert registry.get(fmt.name, fmt.version).subject == fmt.name


@pytest.mark.parametrize(
    ("name", "kwargs", "check"),
    [
        ("send", {"document": DOC}, lambda c: c.document == DOC),
        ("fetch", {"query": {"pattern": "*.dat"}, "max": 3}, lambda c: c.query == {"pattern": "*.dat"} and c.max == 3),
        ("request", {"document": DOC, "operation": "GetQuote", "timeout": 2.5}, lambda c: (c.operation, c.timeout, c.document) == ("GetQuote", 2.5, DOC)),
        ("ping", {"payload": "are you there"}, lambda c: c.payload == "are you there"),
        ("describe", {}, lambda c: c.document is None),
    ],
)
def test_command_round_trips_through_envelope_bytes(name: str, kwargs: dict, check) -> None:
    env = command_envelope(name, "billing", return_address="replies", **kwargs)
    assert env.kind is MessageKind.COMMAND and env.format == COMMAND_FORMATS[name]
    back = Envelope.from_bytes(env.to_bytes())
    cmd = parse_command(back)
    assert cmd.name == name and cmd.target == "billing" and check(cmd)
    assert cmd.envelope.return_address == "replies"


def test_send_without_a_document_is_refused() -> None:
    with pytest.raises(Exception, match="needs a document"):
        command_envelope("send", "x")


def test_garbage_is_not_a_command() -> None:
    with pytest.raises(CommandFault) as info:
        parse_command(Envelope(format="coupler.commands.Send@1", body=b"\xff\xff", kind=MessageKind.COMMAND))
    assert info.value.code == "invalid"
    with pytest.raises(CommandFault, match="not a common command"):
        parse_command(Envelope(format="acme.Order@1", body=b"", kind=MessageKind.DOCUMENT))


def test_reply_and_fault_are_correlated_and_decode() -> None:
    env = command_envelope("fetch", "files", return_address="r")
    cmd = parse_command(env)
    from coupler.bus.api import Reply

    reply = reply_envelope(cmd, Reply(documents=[DOC], details={"n": 1}), "sftp-in", count=2)
    assert reply.kind is MessageKind.REPLY and reply.correlation_id == env.message_id
    info = parse_reply(Envelope.from_bytes(reply.to_bytes()))
    assert info.ok and info.adapter == "sftp-in" and info.count == 2
    assert info.documents == [DOC] and info.details == {"n": "1"}
    fault = parse_reply(fault_envelope(env, "unserved", "nobody home"))
    assert not fault.ok and fault.code == "unserved" and fault.reason == "nobody home"
    assert fault.command == "fetch" and fault.target == "files" and fault.correlation_id == env.message_id


def test_dispatcher_picks_every_adapter_declaring_the_command_for_the_target() -> None:
    servants = [
        Servant("a", ("send", "ping"), ("billing",)),
        Servant("b", ("ping",), ("billing",)),
        Servant("c", ("send",), ()),
    ]
    d = Dispatcher(lambda: servants, lambda target: ["c"] if target == "billing/*" else [])
    assert d.recipients("ping", "billing") == ["a", "b"]
    assert d.recipients("send", "billing") == ["a"]
    assert d.recipients("send", "c") == ["c"]
    assert d.recipients("fetch", "billing") == []
    assert d.recipients("send", "billing/*") == ["c"]
    assert d.recipients("ping", "billing/*") == []  # c does not declare ping
    assert "none declares 'fetch'" in d.unserved_reason("fetch", "billing")
    assert "known targets: a, b, billing, c" in d.unserved_reason("fetch", "nowhere")


def test_base_adapter_serves_ping_and_describe_and_refuses_the_rest() -> None:
    adapter = Adapter("plain", {})
    ping = parse_command(command_envelope("ping", "plain", payload="x"))
    assert adapter.handle(ping).details == {"status": "ok", "payload": "x"}
    describe = adapter.handle(parse_command(command_envelope("describe", "plain")))
    assert '"name": "plain"' in describe.details["description"]
    with pytest.raises(CommandFault) as info:
        adapter.handle(Command("fetch", "plain", ping.envelope))
    assert info.value.code == "unsupported"


def test_a_truncated_command_body_names_why_even_when_the_reader_says_nothing():
    env = command_envelope("fetch", "files", return_address="r")
    cut = env.replace(body=b"")
    with pytest.raises(CommandFault) as caught:
        parse_command(cut)
    assert not str(caught.value).rstrip().endswith(":"), str(caught.value)
    assert "EOFError" in str(caught.value) or "Expected" in str(caught.value), str(caught.value)
