"""The messaging patterns a site declares on its consumers, run by the daemon: Idempotent
Receiver (``idempotent_key``), Message Throttle (``throttle``), Message Sequence reassembly
(``[[channels]] reassemble``)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from coupler.bus.config.loader import ConfigError, parse_site
from coupler.bus.messaging.sequence import split
from coupler.bus.runtime.daemon import Daemon
from coupler.canonical import Envelope, FormatIndicator
from tests.bus.site_helpers import running_daemon, wait_for, write_site

TEXT = FormatIndicator.parse("test.Text@1;text/plain")


def order(body: bytes, **properties: str) -> Envelope:
    return Envelope(format=TEXT, body=body, origin="erp", properties=properties)


def drained(d: Daemon, channel: str, n: int) -> list[Envelope]:
    """The ``n`` messages of ``channel`` (waiting for them), acknowledged."""
    assert d.transport is not None
    got: list[Envelope] = []

    def take() -> bool:
        assert d.transport is not None
        batch = d.transport.receive(channel, "test", max=100)
        d.transport.ack(batch)
        got.extend(x.envelope for x in batch)
        return len(got) >= n

    wait_for(take, f"{n} message(s) on {channel}")
    return got


IDEMPOTENT = """
[monitor]
interval_seconds = 0.1

[[routes]]
name = "orders"
from = "orders.in"
idempotent_key = "origin, properties.order_no"
[[routes.rules]]
to = ["orders.out"]

[[adapters]]
name = "echo1"
type = "echo"
direction = "outbound"
channel = "to-echo"
idempotent_key = "message_id"
[adapters.options]
forward_to = "echo.out"
"""


def test_a_route_drops_what_it_already_routed_by_business_key(tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, IDEMPOTENT)) as d:
        t = d.transport
        assert t is not None
        first = order(b"order 17", order_no="17")
        t.send("orders.in", [first, order(b"order 17 again", order_no="17"), order(b"order 18", order_no="18")])
        t.send("orders.in", first.replace())  # the same message once more
        t.send("orders.in", order(b"no order number"))
        routed = drained(d, "orders.out", 2)
        [bad] = wait_for(lambda: t.dead_letters(kind="invalid"), "the message without the key in invalid")
        wait_for(lambda: t.stats("orders.in")[0].depth == 0, "orders.in drained")
        assert sorted(e.body for e in routed) == [b"order 17", b"order 18"]
        assert t.receive("orders.out", "test") == []
        assert "has no properties.order_no" in bad.reason and bad.component == "route:orders"


def test_an_outbound_adapter_gets_a_redelivered_message_once(tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, IDEMPOTENT)) as d:
        t = d.transport
        assert t is not None
        env = Envelope(format=TEXT, body=b"pay invoice 9")
        t.send("to-echo", env)
        [out] = drained(d, "echo.out", 1)
        t.send("to-echo", [env.replace(), Envelope(format=TEXT, body=b"pay invoice 10")])
        [second] = drained(d, "echo.out", 1)
        wait_for(lambda: t.stats("to-echo")[0].depth == 0, "to-echo drained")
        assert (out.body, second.body) == (b"pay invoice 9", b"pay invoice 10")
        assert t.receive("echo.out", "test") == []


THROTTLED = """
[[routes]]
name = "slow"
from = "bulk"
throttle = { rate = 10 }
[[routes.rules]]
to = ["bulk.out"]

[[adapters]]
name = "echo1"
type = "echo"
direction = "outbound"
channel = "to-echo"
throttle = { concurrency = 3 }
[adapters.options]
forward_to = "echo.out"
delay = 0.2
"""


def test_a_throttled_route_never_exceeds_its_rate(tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, THROTTLED)) as d:
        t = d.transport
        assert t is not None
        t.send("bulk", [Envelope(format=TEXT, body=str(i).encode()) for i in range(20)])
        assert len(drained(d, "bulk.out", 20)) == 20
        sent = [e.at for e in t.journal(channel="bulk.out", event="sent")]
        # a token every 0.1 s, one at the start: 20 messages span at least 1.9 s
        assert (max(sent) - min(sent)).total_seconds() >= 1.8


def test_a_throttle_concurrency_runs_that_many_workers(tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, THROTTLED)) as d:
        t = d.transport
        assert t is not None
        names = sorted(th.name for th in threading.enumerate() if th.name.startswith("deliver:echo1"))
        assert names == ["deliver:echo1#1", "deliver:echo1#2", "deliver:echo1#3"]
        t.send("to-echo", [Envelope(format=TEXT, body=str(i).encode()) for i in range(6)])
        assert sorted(int(e.body) for e in drained(d, "echo.out", 6)) == list(range(6))


# the parts of a sequence all come at once: 60 s is a hang guard (1 s was missed on two cores
# at load 20, while the route moved the parts one by one); the time-out test shortens it
SEQUENCES = """
[monitor]
interval_seconds = 0.1

[[channels]]
name = "docs"
reassemble = true
sequence_timeout_seconds = 60

[[routes]]
name = "docs"
from = "docs"
[[routes.rules]]
to = ["docs.whole"]
"""


def test_parts_are_reassembled_before_the_route_sees_them(tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, SEQUENCES)) as d:
        t = d.transport
        assert t is not None
        big = Envelope(format=TEXT, body=bytes(range(256)) * 40, properties={"file": "policies.dat"})
        parts = split(big, 1000)
        assert len(parts) == 11
        t.send("docs", list(reversed(parts)))  # arrival order does not matter
        t.send("docs", Envelope(format=TEXT, body=b"a small one"))
        got = drained(d, "docs.whole", 2)
        [whole] = [e for e in got if e.body != b"a small one"]
        assert whole.body == big.body and whole.message_id == big.message_id and whole.sequence is None
        assert whole.properties == {"file": "policies.dat"}
        assert t.receive("docs.whole", "test") == []
        assert not [s for s in t.stats() if s.channel.startswith("coupler.sequence.") and s.depth]
        assert [s.channel for s in t.stats() if s.channel.startswith("coupler.sequence.")]  # it held parts


def test_an_incomplete_sequence_goes_to_the_invalid_channel_after_its_timeout(tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, SEQUENCES.replace("sequence_timeout_seconds = 60", "sequence_timeout_seconds = 1"))) as d:
        t = d.transport
        assert t is not None
        parts = split(Envelope(format=TEXT, body=b"x" * 50), 10)
        t.send("docs", parts[:3])
        invalid = wait_for(lambda: len(t.dead_letters(kind="invalid")) == 3 and t.dead_letters(kind="invalid"),
                           "the 3 parts in the invalid channel")
        seq_id = parts[0].sequence.id if parts[0].sequence else None
        assert all(dl.reason.startswith(f"incomplete sequence {seq_id}: 3 of 5 parts") for dl in invalid)
        assert t.receive("docs.whole", "test") == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('[[routes]]\nfrom = "a"\nidempotent_key = "origin,,x"\n[[routes.rules]]\nto = ["b"]\n',
         "routes[0].idempotent_key: empty field in 'origin,,x'"),
        ('[[routes]]\nfrom = "a"\nthrottle = { rate = 0 }\n[[routes.rules]]\nto = ["b"]\n',
         "routes[0].throttle.rate: 0 is not greater than 0"),
        ('[[adapters]]\nname = "x"\ntype = "echo"\nthrottle = { concurency = 2 }\n',
         "adapters[x].throttle.concurency: unknown key (did you mean 'concurrency'?)"),
        ('[[channels]]\nname = "a"\nreassemble = "yes"\n',
         "channels[a].reassemble: expected true or false"),
    ],
)
def test_pattern_keys_are_checked_on_load(text: str, problem: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_site(text)
    assert any(p.startswith(problem) for p in err.value.problems), err.value.problems


def test_a_copy_handled_by_another_worker_meanwhile_is_dropped_inside_the_transaction(tmp_path: Path) -> None:
    """Two copies of one message leased by two route workers at once both pass the Idempotent
    Receiver's first look; the look again inside the handling transaction (where no other
    worker commits meanwhile) acknowledges the later one without handling it."""
    from coupler.bus.runtime.consumers import ConsumerPatterns
    from coupler.bus.transport.sqlite.transport import SqliteTransport

    fmt = FormatIndicator.parse("t.T@1;application/json")
    with SqliteTransport(tmp_path / "data") as t:
        patterns = ConsumerPatterns.declared(t, "route:r", "in", channel=None, idempotent_key="message_id",
                                             throttle=None, where="routes[0]")
        first, other = Envelope(format=fmt, body=b"{}"), Envelope(format=fmt, body=b"{}")
        t.send("in", [first, other])
        leased = patterns.receiver(t, lambda wait: t.receive("in", "route:r", max=10))(0)
        assert [d.message_id for d in leased] == [first.message_id, other.message_id]  # both look fresh
        with t.transaction() as tx:  # meanwhile, another worker handles a copy of ``first``
            patterns.idempotent.mark(tx, first)  # type: ignore[union-attr]
        with t.transaction() as tx:
            handle = patterns.screen(tx, leased)
            patterns.settle_many(tx, handle)
        assert [d.message_id for d in handle] == [other.message_id]
        assert t.stats("in")[0].depth == 0  # the copy acknowledged, not handled


def test_a_copy_leased_with_another_is_handled_once_one_by_one(tmp_path: Path) -> None:
    """Two copies of one business key, both past the Idempotent Receiver's first look (leased
    by two workers), handled one at a time (a route worker's path without a batch): the second
    finds the first's key at the start of its transaction and is acknowledged, not handled."""
    from coupler.bus.runtime.consumers import ConsumerPatterns
    from coupler.bus.runtime.router import Route
    from coupler.bus.runtime.steps.pipeline import Pipeline
    from coupler.bus.transport.sqlite.transport import SqliteTransport

    config = parse_site('[[routes]]\nfrom = "in"\nidempotent_key = "properties.order_no"\n'
                        '[[routes.rules]]\nto = ["out"]\n').routes[0]
    fmt = FormatIndicator.parse("t.T@1;application/json")
    with SqliteTransport(tmp_path / "data") as t:
        patterns = ConsumerPatterns.declared(t, "route:in", "in", channel=None, idempotent_key=config.idempotent_key,
                                             throttle=None, where="routes[0]")
        pipeline = Pipeline(config.label, [], Route.from_config(config))
        t.send("in", [Envelope(format=fmt, body=b"{}", properties={"order_no": "A-7"}) for _ in range(2)])
        receive = patterns.receiver(t, lambda wait: t.receive("in", "route:in", max=1))
        leased = receive(0) + receive(0)  # two workers' leases: both look fresh
        assert len(leased) == 2
        assert [pipeline.handle(t, d, patterns.settle, patterns.screen) for d in leased] == ["done", "duplicate"]
        assert len(t.receive("out", "test", max=10)) == 1
        assert t.stats("in")[0].depth == 0
