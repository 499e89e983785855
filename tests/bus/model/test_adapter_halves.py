"""The adapter contract's halves from coupler.bus.api: an inbound source polled by the bus's
Poller (interval, back-off while idle, a failing poll contained, fetch) and an outbound sink."""

from __future__ import annotations

from pathlib import Path

from coupler.bus.api import (
    CommandFault,
    InboundAdapter,
    OutboundAdapter,
    PollOutcome,
    command_envelope,
)
from coupler.bus.model.commands import parse_command
from coupler.bus.testing import EmbeddedBus
from coupler.canonical import Envelope

NOTE = "test.Note@1"


class Lines(InboundAdapter):
    """Publishes the lines queued in ``pending``; a line ``boom`` makes the poll fail."""

    type_name = "lines"
    poll_interval, max_interval, idle_backoff = 1.0, 4.0, 2.0

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.pending: list[str] = []

    def poll(self) -> PollOutcome:
        taken = 0
        while self.pending:
            line = self.pending.pop(0)
            if line == "boom":
                raise OSError("the legacy system went away")
            assert self.context is not None
            self.context.publish(Envelope(format=NOTE, body=line.encode()), self.channel)
            taken += 1
        return PollOutcome(taken=taken)


class Sink(OutboundAdapter):
    type_name = "sink"

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.got: list[bytes] = []

    def deliver(self, envelope: Envelope) -> None:
        if envelope.body == b"never":
            raise CommandFault("not for this system", code="invalid")
        self.got.append(envelope.body)


def test_an_inbound_source_is_polled_with_back_off_and_a_failing_poll_is_contained(tmp_path: Path) -> None:
    with EmbeddedBus(tmp_path) as bus:
        adapter = bus.adapter(Lines, "lines", {}, direction="inbound", channel="notes", start=False)
        adapter.start()
        adapter.stop()  # the thread is the Poller's; drive its passes by hand from here on
        poller = adapter.poller
        adapter.pending[:] = ["a", "b"]
        assert poller.run_once() == 0.0  # took something: poll again at once
        assert [e.body for e in bus.published("notes")] == [b"a", b"b"]
        assert [poller.run_once() for _ in range(3)] == [2.0, 4.0, 4.0]  # idle: back off, capped
        adapter.pending[:] = ["boom"]
        assert poller.run_once() == 4.0  # the failure is contained, the source goes on
        health = adapter.health()
        assert health["status"] == "degraded" and "the legacy system went away" in health["problems"][0]
        adapter.pending[:] = ["c"]
        reply = adapter.handle(parse_command(command_envelope("fetch", "lines")))
        assert reply.details["taken"] == "1" and [e.body for e in bus.published("notes")] == [b"c"]
        assert poller.run_once() == 4.0 and adapter.health()["status"] == "ok"


def test_an_outbound_sink_delivers_and_refuses(tmp_path: Path) -> None:
    with EmbeddedBus(tmp_path) as bus:
        sink = bus.adapter(Sink, "sink", {}, direction="outbound", channel="notes")
        bus.deliver(sink, Envelope(format=NOTE, body=b"hello"))
        assert sink.got == [b"hello"]
        try:
            bus.deliver(sink, Envelope(format=NOTE, body=b"never"))
        except CommandFault as fault:
            assert fault.code == "invalid"
        else:
            raise AssertionError("an undeliverable document was accepted")
