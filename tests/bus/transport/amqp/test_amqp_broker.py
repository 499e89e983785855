"""What only the broker transport has: broker restarts, broker-side expiry, AMQP interop,
state shared through PostgreSQL by several transports (daemons), the site configuration."""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pika
import pytest

from coupler.bus.config.loader import load_site
from coupler.bus.transport.amqp.link import BrokerRefusedError
from coupler.bus.transport.amqp.transport import AmqpTransport
from coupler.bus.transport.base import LeaseLostError, TransportError
from coupler.bus.transport.factory import open_transport
from tests.bus.site_helpers import wait_for
from tests.bus.transport.amqp.broker import AMQP_URL, PG_DSN
from tests.bus.transport.contract.support import doc, drain


def _transport(names: dict[str, str], url: str = AMQP_URL, **options) -> AmqpTransport:  # noqa: ANN003
    return AmqpTransport(url, postgres=PG_DSN, **names, **options).open()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rabbitmq_bin(name: str) -> str:
    # the scripts themselves: /usr/sbin's wrappers would run them as the rabbitmq user,
    # who can neither write under tmp_path nor read this node's cookie
    for path in (f"/usr/lib/rabbitmq/bin/{name}", shutil.which(name)):
        if path and os.access(path, os.X_OK):
            return path
    pytest.fail(f"{name} is not installed (the broker restart test starts a RabbitMQ node of its own)")


class PrivateBroker:
    """A RabbitMQ node of this test's own (its own name, ports, Mnesia and cookie under
    tmp_path): restarting it disturbs neither the rest of the suite nor the other runs
    sharing the machine's broker. (Stopping the shared broker cut every other run's
    connections, and once, on a loaded machine with another run deleting its queues during
    the recovery, left it with a dead quorum-queue dead-letter supervisor: every new queue
    failed with INTERNAL_ERROR and publisher nacks until the next restart.)"""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.node = f"coupler-test-{uuid.uuid4().hex[:8]}@localhost"
        self.port = _free_port()
        (base / "plugins").write_text("[].\n")
        self.env = {
            **os.environ,
            "HOME": str(base),  # the node's and rabbitmqctl's .erlang.cookie
            "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(_free_port()),
            "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(base / "log"),
            "RABBITMQ_PID_FILE": str(base / "pid"),
            "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq"),  # none: the defaults
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(base / "advanced.config"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "plugins"),
        }
        self.url = f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 180.0) -> None:
        with open(self.base / "server.out", "wb") as out:
            self.process = subprocess.Popen(
                [_rabbitmq_bin("rabbitmq-server")], env=self.env, cwd=self.base, stdout=out, stderr=subprocess.STDOUT,
            )
        wait_for(lambda: self.process is not None and (self.process.poll() is not None or self.answers()),
                 "the test's own RabbitMQ node listening", timeout=timeout)
        assert self.process.poll() is None, (self.base / "server.out").read_text()[-2000:]

    def answers(self) -> bool:
        with socket.socket() as s:
            s.settimeout(1)
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def ctl(self, *args: str) -> None:
        subprocess.run([_rabbitmq_bin("rabbitmqctl"), "-n", self.node, *args], env=self.env,
                       check=True, capture_output=True, timeout=180)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self.ctl("shutdown")
        if self.process.poll() is None:
            # rabbitmq-server execs the Erlang VM: this pid is the node itself
            self.process.kill()
        self.process.wait(timeout=60)


@pytest.fixture
def private_broker(tmp_path: Path) -> Iterator[PrivateBroker]:
    broker = PrivateBroker(tmp_path)
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()


def test_broker_restart_during_traffic_reconnects_and_loses_nothing(broker_names, private_broker: PrivateBroker) -> None:
    producer = _transport(broker_names, private_broker.url, reconnect_timeout=45)
    consumer = _transport(broker_names, private_broker.url, reconnect_timeout=45)
    total = 300
    sent: list[str] = []
    received: set[str] = set()
    errors: list[BaseException] = []
    done = threading.Event()

    def produce() -> None:
        try:
            for i in range(total):
                sent.extend(producer.send("traffic", doc(str(i).encode())))
                time.sleep(0.005)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    def consume() -> None:
        deadline = time.monotonic() + 90
        while not done.is_set() and time.monotonic() < deadline:
            try:
                got = consumer.receive_wait("traffic", "c", max=20, wait=0.5)
                consumer.ack(got)
                received.update(d.message_id for d in got)
            except LeaseLostError:
                pass  # received before the restart: it is back in the queue, comes again
            except TransportError as exc:
                errors.append(exc)
                return

    threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
    for th in threads:
        th.start()
    try:
        while len(sent) < total // 3 and threads[0].is_alive():
            time.sleep(0.01)
        private_broker.ctl("stop_app")
        time.sleep(2)  # the broker stays away a while (this is the test's scenario, not a wait)
    finally:
        private_broker.ctl("start_app")  # whatever happened, the broker comes back
    try:
        threads[0].join(timeout=60)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not set(sent) <= received and not errors:
            time.sleep(0.1)
    finally:
        done.set()
        threads[1].join(timeout=10)
        producer.close()
        consumer.close()
    assert errors == []
    assert len(sent) == total  # every send returned (after the broker came back)
    assert set(sent) <= received  # and nothing was lost


def _drop_connection(t: AmqpTransport) -> None:
    """Cut this transport's TCP connection to the broker (the broker itself stays up)."""
    link = t._link
    assert link is not None

    def cut() -> bool:
        sock = link._socket()
        if sock is None:
            return False  # between two connections: cut the next one
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # ENOTCONN: this one is already gone (a reconnect is under way)
            return False
        return True

    wait_for(cut, "a connection to the broker to cut", timeout=60)


def test_coalesced_acknowledgements_reach_the_broker_while_the_consumer_idles(broker_names) -> None:
    """Acknowledgements are coalesced (sent together, at most 5 ms after the first): a
    consumer that acknowledges three messages and then does nothing more with the transport
    still has them acknowledged on the broker, so losing its connection afterwards gives
    them to nobody again."""
    consumer = _transport(broker_names)
    other = _transport(broker_names)
    try:
        consumer.send("acks", [doc(b"1"), doc(b"2"), doc(b"3")])
        got = []
        while len(got) < 3:
            got += consumer.receive_wait("acks", "c", max=3, wait=5)
        consumer.ack(got)  # fewer than the ten that go out at once: deferred
        link = consumer._link
        assert link is not None
        # taken and sent holding the connection: once it is free again, they are on the socket
        wait_for(lambda: not consumer._ack_tags and link._io_owner is None,
                 "the link's thread sending the coalesced acknowledgements", timeout=5)
        _drop_connection(consumer)
        assert other.receive_wait("acks", "c", max=3, wait=1.0) == []
    finally:
        consumer.close()
        other.close()


def _full_after_one(t: AmqpTransport, length: int = 1) -> AmqpTransport:
    """Channel queues of ``t`` that hold one (``length``) ready message at most (with the
    transport's ``x-overflow reject-publish``: the broker nacks a publish to a full queue)."""
    arguments = t.names.channel_arguments
    t.names.channel_arguments = lambda: {**arguments(), "x-max-length": length}  # type: ignore[method-assign]
    return t


def test_a_batch_the_broker_takes_in_part_is_published_again_without_what_it_took(broker_names, caplog) -> None:
    """A batch of 300 to a topic with two subscriptions: every message is published twice in
    it (a copy per subscription, interleaved, in chunks of 25 envelopes), and one queue is full
    (it holds 3: proved by a publish the broker nacked) while the other has room. The broker
    confirms the 300 copies it took and nacks the 300 for the full queue; the send publishes
    only the nacked copies again (the confirmed ones are on their queue already: publishing
    them again would deliver them twice), and each copy arrives once on each subscription as
    a consumer makes room.

    The full queue is filled first: a batch of 300 to an empty quorum queue of 3 is not taken
    in part on every run (the queue takes what reached it before it applied its limit, the
    whole batch on a loaded machine), and a batch the broker takes whole proves nothing."""
    caplog.set_level(logging.DEBUG, logger="coupler.bus.transport.amqp.link")
    small = _full_after_one(_transport(broker_names), 3)  # declares (and consumes) the queue of 3
    roomy = _transport(broker_names)  # declares (and consumes) the queue with room
    impatient = _transport(broker_names, reconnect_timeout=0.5)
    producer = _transport(broker_names, reconnect_timeout=60)
    bodies = [b"%d" % i for i in range(300)]
    errors: list[BaseException] = []
    try:
        small.declare("news", kind="topic")
        every = small.subscribe("news", "every")
        events = roomy.subscribe("news", "events", selector="kind = 'event'")
        fills = 0
        with pytest.raises(BrokerRefusedError, match="publisher nack"):
            for i in range(20):  # to "every" only; a quorum queue's limit is approximate
                impatient.send("news", doc(b"fill %d" % i))
                fills += 1
        assert fills >= 3  # the queue of "every" is full: the broker refuses what comes to it

        def send() -> None:
            try:
                producer.send("news", [doc(b, kind="event") for b in bodies])
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)

        caplog.clear()
        sender = threading.Thread(target=send)
        sender.start()
        nacked = wait_for(lambda: [r.getMessage() for r in caplog.records if "nacked" in r.getMessage()],
                          "the broker to nack the copies for the full queue", timeout=30)
        assert nacked[0].startswith("RabbitMQ nacked 300 message(s) of a batch")  # taken in part
        got: list[bytes] = []
        while sender.is_alive() or len(got) < len(bodies):
            deliveries = small.receive_wait(every, "c", max=50, wait=5)
            if not deliveries and not sender.is_alive():
                break  # the send failed: reported below
            small.ack(deliveries)
            got += [d.envelope.body for d in deliveries if not d.envelope.body.startswith(b"fill")]
            assert len(got) == len(set(got)), "a copy for the full queue was delivered twice"
        sender.join(timeout=30)
        assert errors == [] and sorted(got) == sorted(bodies)
        assert small.receive_wait(every, "c", max=5, wait=1.0) == []
        taken: list[bytes] = []
        while len(taken) < len(bodies):
            deliveries = roomy.receive_wait(events, "c", max=100, wait=5)
            assert deliveries, f"only {len(taken)} of the copies the broker confirmed came"
            roomy.ack(deliveries)
            taken += [d.envelope.body for d in deliveries]
        assert roomy.receive_wait(events, "c", max=5, wait=1.0) == []  # none twice
        assert len(taken) == len(set(taken)) and sorted(taken) == sorted(bodies)
    finally:
        for t in (producer, impatient, roomy, small):
            t.close()


def test_a_publish_the_broker_nacks_is_published_again_until_the_queue_takes_it(broker_names, caplog) -> None:
    """RabbitMQ nacks a publish it refuses responsibility for (a full queue here; a quorum
    queue whose leader is not elected yet on a loaded machine): the send publishes it again
    after a growing pause (back-pressure), goes through once a consumer made room, and fails
    with BrokerRefusedError when no room comes within the reconnect timeout."""
    caplog.set_level(logging.DEBUG, logger="coupler.bus.transport.amqp.link")
    producer = _full_after_one(_transport(broker_names, reconnect_timeout=30))
    impatient = _full_after_one(_transport(broker_names, reconnect_timeout=0.5))
    consumer = _full_after_one(_transport(broker_names))
    accepted: list[bytes] = []
    errors: list[BaseException] = []
    try:
        with pytest.raises(BrokerRefusedError, match="publisher nack"):
            for i in range(10):  # a quorum queue's limit is approximate: it may take one more
                impatient.send("full", doc(b"%d" % i))
                accepted.append(b"%d" % i)
        assert 1 <= len(accepted) <= 2

        def patient() -> None:
            try:
                producer.send("full", doc(b"next"))
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)

        caplog.clear()
        sender = threading.Thread(target=patient)
        sender.start()
        wait_for(lambda: any("nacked" in r.getMessage() for r in caplog.records),
                 "the broker to nack the publish to the full queue", timeout=30)
        assert sender.is_alive() and errors == []  # still trying: not failed at the first nack
        first = consumer.receive_wait("full", "c", max=1, wait=10)
        assert [d.envelope.body for d in first] == accepted[:1]
        consumer.ack(first)
        sender.join(timeout=30)
        assert not sender.is_alive() and errors == []
        rest: list[bytes] = []
        while len(rest) < len(accepted):
            got = consumer.receive_wait("full", "c", max=5, wait=10)
            assert got, f"only {rest} of {accepted[1:]} and the patient send came"
            consumer.ack(got)
            rest += [d.envelope.body for d in got]
        assert rest == [*accepted[1:], b"next"]
    finally:
        for t in (producer, impatient, consumer):
            t.close()


def test_outputs_of_a_transaction_the_broker_nacks_are_published_again_until_the_queue_takes_them(
        broker_names, caplog) -> None:
    """A unit of work's outputs are published when its transaction ends; when the broker nacks
    them (their queue is full), the commit publishes again what it nacked -- not what it
    confirmed -- after a growing pause, as a plain send does, instead of failing the unit
    (which put the outputs the broker had taken on their queue a second time when it ran
    again); then the input is acknowledged. Each output arrives once, in order."""
    caplog.set_level(logging.DEBUG, logger="coupler.bus.transport.amqp.link")
    worker = _full_after_one(_transport(broker_names, reconnect_timeout=30))
    impatient = _full_after_one(_transport(broker_names, reconnect_timeout=0.5))
    consumer = _full_after_one(_transport(broker_names))
    accepted: list[bytes] = []
    errors: list[BaseException] = []
    try:
        impatient.send("in", doc(b"input"))
        with pytest.raises(BrokerRefusedError, match="publisher nack"):
            for i in range(10):  # a quorum queue's limit is approximate: it may take one more
                impatient.send("out", doc(b"%d" % i))
                accepted.append(b"%d" % i)
        assert 1 <= len(accepted) <= 2
        [d] = wait_for(lambda: worker.receive("in", "w"), "the input")

        def unit() -> None:
            try:
                with worker.transaction() as tx:
                    tx.send("out", [doc(b"a"), doc(b"b")], component="step")
                    tx.ack(d)
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)

        caplog.clear()
        committing = threading.Thread(target=unit)
        committing.start()
        wait_for(lambda: errors or any("nacked" in r.getMessage() for r in caplog.records),
                 "the broker to nack the outputs for the full queue", timeout=30)
        assert errors == [] and committing.is_alive()  # still trying: not failed at the first nack
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < len(accepted) + 2:
            assert time.monotonic() < deadline and not errors, f"only {got} came; {errors}"
            taken = consumer.receive_wait("out", "c", max=1, wait=1)
            consumer.ack(taken)  # room for the next
            got += [x.envelope.body for x in taken]
        committing.join(timeout=30)
        assert not committing.is_alive() and errors == []
        assert got == [*accepted, b"a", b"b"]  # each once: the confirmed one was not published again
        assert consumer.receive_wait("out", "c", max=5, wait=1.0) == []
        assert consumer.receive_wait("in", "c", max=5, wait=1.0) == []  # the input was acknowledged
    finally:
        for t in (worker, impatient, consumer):
            t.close()


def test_outputs_of_a_transaction_the_broker_keeps_refusing_fail_it_in_one_line(broker_names, monkeypatch) -> None:
    """When the broker refuses a transaction's outputs for the whole reconnect timeout, the
    commit fails with the plain send's one-line error and the input received in it goes
    back to its queue (the worker's consumer, idle, returns it: after 1 s here, not 5)."""
    from coupler.bus.transport.amqp import transport as amqp_transport

    monkeypatch.setattr(amqp_transport, "_IDLE_SECONDS", 1.0)
    worker = _full_after_one(_transport(broker_names, reconnect_timeout=0.5))
    other = _full_after_one(_transport(broker_names))
    try:
        worker.send("in", doc(b"input"))
        with pytest.raises(BrokerRefusedError, match="publisher nack"):
            for i in range(10):
                worker.send("out", doc(b"%d" % i))
        with pytest.raises(BrokerRefusedError) as refused:
            with worker.transaction() as tx:
                [d] = wait_for(lambda: tx.receive("in", "w"), "the input")
                tx.send("out", doc(b"a"), component="step")
                tx.ack(d)
        assert str(refused.value).splitlines()[0].startswith(
            "RabbitMQ refused 1 message(s) (publisher nack) for 0.5 s")
        [again] = other.receive_wait("in", "c", wait=10)  # rolled back: the input is there again
        assert again.envelope.body == b"input"
    finally:
        worker.close()
        other.close()


def test_lost_connections_during_traffic_reconnect_and_lose_nothing(broker_names) -> None:
    """The connections of a producer and of a consumer break under traffic (client side: the
    shared broker is not restarted); the threads using them find out, the link's thread
    reconnects, unconfirmed sends are sent again, unacknowledged messages come again."""
    producer = _transport(broker_names, reconnect_timeout=30)
    consumer = _transport(broker_names, reconnect_timeout=30)
    total = 400
    sent: list[str] = []
    received: set[str] = set()
    errors: list[BaseException] = []
    done = threading.Event()

    def produce() -> None:
        try:
            for i in range(total):
                sent.extend(producer.send("traffic", doc(str(i).encode())))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    def consume() -> None:
        while not done.is_set():
            try:
                got = consumer.receive_wait("traffic", "c", max=20, wait=0.2)
                consumer.ack(got)
                received.update(d.message_id for d in got)
            except LeaseLostError:
                pass  # received before the loss: it is back in the queue, comes again
            except TransportError as exc:
                errors.append(exc)
                return

    threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
    for th in threads:
        th.start()
    try:
        for cut in (total // 4, total // 2):
            deadline = time.monotonic() + 60
            while len(sent) < cut and threads[0].is_alive() and time.monotonic() < deadline:
                time.sleep(0.005)
            _drop_connection(producer)
            _drop_connection(consumer)
        threads[0].join(timeout=90)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not set(sent) <= received and not errors:
            time.sleep(0.05)
    finally:
        done.set()
        threads[1].join(timeout=10)
        producer.close()
        consumer.close()
    assert errors == []
    assert len(sent) == total  # every send returned
    assert set(sent) <= received  # and nothing was lost


def test_message_expiring_in_the_queue_goes_to_dead_letters_as_expired(broker_names) -> None:
    t = _transport(broker_names)
    try:
        soon = datetime.now(UTC) + timedelta(milliseconds=300)
        t.send("slow", [doc(b"short-lived", expires_at=soon), doc(b"keeps")])
        # the broker's per-message TTL runs out while it waits in the queue (in 0.3 s; on a busy
        # machine the dead letter arrives when it arrives: wait for it)
        [dead] = wait_for(t.dead_letters, "the expired message among the dead letters", timeout=30)
        assert (dead.reason, dead.channel, dead.envelope.body) == ("expired", "slow", b"short-lived")
        assert [d.envelope.body for d in drain(t, "slow")] == [b"keeps"]
        assert t.stats("slow")[0].expired == 1
    finally:
        t.close()


def test_envelope_headers_are_amqp_properties_any_client_reads(broker_names) -> None:
    t = _transport(broker_names)
    try:
        env = doc(b"<order/>", correlation_id="corr-1", return_address="replies", kind="command",
                  properties={"region": "EU"}, format="acme.Order@2;application/xml")
        t.send("interop", env, component="inbound")
    finally:
        t.close()
    conn = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
    try:
        method, props, body = conn.channel().basic_get(f"{broker_names['prefix']}q:interop", auto_ack=True)
    finally:
        conn.close()
    assert method is not None and body == b"<order/>"
    assert (props.message_id, props.correlation_id, props.reply_to, props.type, props.content_type) == (
        env.message_id, "corr-1", "replies", "command", "application/xml")
    assert props.delivery_mode == 2  # persistent
    assert props.headers["coupler-format"] == "acme.Order"
    assert props.headers["coupler-version"] == 2
    assert props.headers["coupler-properties"] == {"region": "EU"}


def test_two_daemons_share_identities_idempotency_journal_and_channels(broker_names) -> None:
    one, two = _transport(broker_names), _transport(broker_names)
    try:
        one.identities.register("crm/acme/customers@2", "crm.in", adapter="crm")
        assert two.identities.resolve("crm/*/customers").channel == "crm.in"
        one.mark_seen("loader", ["order-7"])
        assert two.seen("loader", ["order-7", "order-8"]) == {"order-7"}
        one.declare("orders", dead_letter="orders.dead")
        [mid] = one.send("orders", doc(b"o"))
        [d] = two.receive("orders", "c")
        two.nack(d, "no", "c", dead=True)
        two.store.flush()  # journal entries of another daemon are written in the background
        assert [x.envelope.body for x in one.dead_letters("orders.dead")] == [b"o"]
        assert [e.event for e in one.journal(message_id=mid)] == ["sent", "received", "dead-lettered"]
    finally:
        one.close()
        two.close()


def test_site_toml_selects_the_broker_transport(broker_names, tmp_path: Path) -> None:
    (tmp_path / "site.toml").write_text(
        f"""
[store]
type = "amqp"

[store.amqp]
url = "{AMQP_URL}"
postgres = "{PG_DSN}"
prefix = "{broker_names['prefix']}"
postgres_schema = "{broker_names['postgres_schema']}"

[[channels]]
name = "events"
kind = "topic"
"""
    )
    t = open_transport(load_site(tmp_path / "site.toml"))
    try:
        assert isinstance(t, AmqpTransport)
        assert t.channel_config("events").kind == "topic"
        sub = t.subscribe("events", "audit")
        t.send("events", doc(b"e"))
        assert [d.envelope.body for d in drain(t, sub)] == [b"e"]
    finally:
        t.close()


def test_unreachable_broker_is_a_clear_error(broker_names) -> None:
    with pytest.raises(TransportError, match="cannot connect to RabbitMQ at 127.0.0.1:1"):
        AmqpTransport("amqp://guest:guest@127.0.0.1:1/%2F", postgres=PG_DSN, **broker_names).open()


def test_statistics_never_count_as_deliveries_of_a_waiting_message(broker_names) -> None:
    """The stuck-channel monitor reads stats() every few seconds: an idle message must not
    reach the queue's delivery limit (and the dead letters) by being looked at."""
    t = _transport(broker_names, delivery_limit=3)
    try:
        t.send("idle", doc(b"waiting"))
        ages = [t.stats("idle")[0] for _ in range(12)]
        assert all(st.depth == 1 for st in ages)
        assert t.dead_letters() == []
        assert ages[-1].oldest_age is not None and ages[-1].oldest_age >= ages[1].oldest_age
        [d] = t.receive("idle", "c")
        assert d.envelope.body == b"waiting" and d.attempt == 1
        t.ack(d)
    finally:
        t.close()


def test_a_connection_on_a_descriptor_above_1023_works_and_idles(broker_names) -> None:
    """The daemon raises its open-files limit at start (bus/runtime/openfiles.py), so its broker
    connection may get a descriptor of 1024 or more, which select(2) refuses: on one, the link
    sends, receives and waits for the broker without spinning (it raised ValueError in select,
    swallowed, and its thread looped at full speed)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1400:
        pytest.fail(f"the test needs a hard open-files limit of 1400 or more (ulimit -Hn: {hard})")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1400), hard))
    filler = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        t = _transport(broker_names)
        try:
            link = t._link
            assert link is not None and link._socket().fileno() >= 1024, link._socket()
            t.send("high", [doc(b"1")])
            got = t.receive_wait("high", "c", max=1, wait=10)
            assert [d.envelope.body for d in got] == [b"1"]
            t.ack(got)
            started = time.process_time()
            threading.Event().wait(2.0)  # a measuring window (the link idles), not a wait for a condition
            busy = time.process_time() - started
            assert busy < 0.5, f"the idle link used {busy:.2f} s of CPU in 2 s"
        finally:
            t.close()
    finally:
        for fd in filler:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
