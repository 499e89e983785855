"""The adapter tests' bus is the daemon itself (tests/adapters/daemon_bus.py): commands to a
test's adapters go through the daemon's dispatcher, so its refusals hold for them too."""

from __future__ import annotations

from coupler.bus.api import Document, command_envelope, parse_reply
from coupler.canonical import FormatIndicator

TEXT = FormatIndicator("text.Plain", 1, "text/plain")


def _ask(bus, target: str) -> object:  # noqa: ANN001
    ctx = bus.context("tester")
    return parse_reply(ctx.request(command_envelope("request", target, document=Document(TEXT, b"abc")),
                                   "coupler.commands", timeout=10))


def test_a_request_is_answered_by_the_adapter_through_the_daemon(bus, upper) -> None:
    reply = _ask(bus, "uppercase")
    assert reply.ok and reply.adapter == "upper" and reply.documents[0].body == b"ABC"
    assert bus.commands_handled("upper") == 1


def test_a_paused_adapter_is_answered_paused_and_an_unknown_target_unserved(bus, upper) -> None:
    bus.daemon.pause("upper")
    paused = _ask(bus, "uppercase")
    assert not paused.ok and paused.code == "paused" and "ctl resume upper" in (paused.reason or "")
    unserved = _ask(bus, "nobody")
    assert not unserved.ok and unserved.code == "unserved"
    assert bus.commands_handled("upper") == 0
