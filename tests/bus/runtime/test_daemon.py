"""The site daemon in-process: adapters from plugins, command dispatch, routes, control bus."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from coupler.bus.api import Document
from coupler.bus.config.loader import ConfigError, load_site
from coupler.bus.messaging.request_reply import request_reply
from coupler.bus.model.commands import command_envelope, parse_reply
from coupler.bus.plugins.manager import plugin_manager
from coupler.bus.runtime.control import ControlClient, ControlError
from coupler.bus.runtime.daemon import Daemon
from coupler.bus.runtime.site import DaemonLockError
from coupler.canonical import Envelope, FormatIndicator
from tests.bus import plugin_echo
from tests.bus.site_helpers import wait_for

SITE = """
[site]
name = "test-site"

[monitor]
interval_seconds = 0.1

[[adapters]]
name = "echo1"
type = "echo"
direction = "both"
channel = "to-echo"
targets = ["orders"]
identity = { class = "orders", provider = "acme", name = "orders-in", version = "2" }
[adapters.options]
forward_to = "echo.out"

[[adapters]]
name = "echo2"
type = "echo"
targets = ["orders"]
commands = ["ping", "describe"]

[[adapters]]
name = "broken"
type = "echo"
[adapters.options]
fail_start = true

[[routes]]
from = "incoming"
otherwise = "other"
[[routes.rules]]
when = "properties.region = 'EU'"
to = ["eu", "audit"]
[[routes.rules]]
when = "format.name = 'acme.Order'"
to = ["orders"]
"""

TEXT = FormatIndicator.parse("test.Text@1;text/plain")


def make_site(tmp_path: Path, text: str = SITE) -> Path:
    path = tmp_path / "site.toml"
    path.write_text(text)
    return path


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(load_site(make_site(tmp_path)), pm=plugin_manager(entry_points=False, extra=(plugin_echo,)))
    d.start()
    yield d
    d.shutdown()


def command(d: Daemon, name: str, target: str, **kw: object) -> list:
    env = command_envelope(name, target, **kw)  # type: ignore[arg-type]
    assert d.transport is not None
    replies = request_reply(
        d.transport, env, d.site.command_channel, reply_channel="test.replies", consumer="test",
        timeout=10, component="test", count=None,
    )
    return [parse_reply(r) for r in replies]


def test_command_nobody_serves_gets_a_fault_reply(daemon: Daemon) -> None:
    (fault,) = command(daemon, "fetch", "nobody")
    assert not fault.ok and fault.code == "unserved"
    assert "nobody" in (fault.reason or "")


def test_command_a_target_serves_but_not_this_command_is_a_fault(daemon: Daemon) -> None:
    (fault,) = command(daemon, "fetch", "echo2")
    assert not fault.ok and fault.code == "unserved"
    assert "none declares 'fetch'" in (fault.reason or "")


def test_command_goes_to_every_adapter_declaring_it_for_the_target(daemon: Daemon) -> None:
    replies = command(daemon, "ping", "orders", payload="hello")
    assert sorted(r.adapter for r in replies) == ["echo1", "echo2"]
    assert all(r.ok and r.details["payload"] == "hello" and r.count == 2 for r in replies)
    (only,) = command(daemon, "fetch", "orders", max=3)
    assert only.adapter == "echo1" and len(only.documents) == 2


def test_request_reply_is_correlated_and_adapter_faults_are_answered(daemon: Daemon) -> None:
    doc = Document(TEXT, b"hello")
    env = command_envelope("request", "echo1", document=doc, operation="shout")
    assert daemon.transport is not None
    (reply,) = request_reply(daemon.transport, env, "coupler.commands", reply_channel="r", consumer="t", timeout=10, component="t")
    assert reply.correlation_id == env.message_id
    info = parse_reply(reply)
    assert info.documents[0].body == b"HELLO" and info.details["operation"] == "shout"
    (fault,) = command(daemon, "request", "echo1", document=Document(TEXT, b"x", {"fail": "1"}))
    assert fault.code == "failed" and "said no" in (fault.reason or "")


def test_a_failed_adapter_answers_with_a_fault(daemon: Daemon) -> None:
    (fault,) = command(daemon, "ping", "broken")
    assert fault.code == "failed" and "told to fail at start" in (fault.reason or "")
    adapters = {a["name"]: a for a in ControlClient(daemon.site.control_socket).call("adapters")}
    assert adapters["broken"]["state"] == "failed"


def test_identity_pattern_reaches_the_most_specific_adapter(daemon: Daemon) -> None:
    (reply,) = command(daemon, "describe", "orders/acme/*@2")
    assert reply.ok and reply.adapter == "echo1"
    idents = ControlClient(daemon.site.control_socket).call("identities")
    assert [i["adapter"] for i in idents] == ["echo1"]


def test_outbound_adapter_delivers_documents_from_its_channel(daemon: Daemon) -> None:
    assert daemon.transport is not None
    daemon.transport.send("to-echo", Envelope(format=TEXT, body=b"one"))
    (got,) = daemon.transport.receive_wait("echo.out", "t", wait=10)
    assert got.envelope.body == b"one" and got.envelope.properties["echoed-by"] == "echo1"
    assert got.envelope.origin == "echo1"


def test_routes_content_based_and_recipient_list(daemon: Daemon) -> None:
    t = daemon.transport
    assert t is not None
    t.send("incoming", Envelope(format=TEXT, body=b"eu", properties={"region": "EU"}))
    t.send("incoming", Envelope(format=FormatIndicator.parse("acme.Order@1"), body=b"order"))
    t.send("incoming", Envelope(format=TEXT, body=b"rest"))
    assert [d.envelope.body for d in t.receive_wait("eu", "t", wait=10)] == [b"eu"]
    assert [d.envelope.body for d in t.receive_wait("audit", "t", wait=10)] == [b"eu"]
    assert [d.envelope.body for d in t.receive_wait("orders", "t", wait=10)] == [b"order"]
    (rest,) = t.receive_wait("other", "t", wait=10)
    assert rest.envelope.body == b"rest"
    assert "route:route-0" in [h.component for h in rest.envelope.history]


def test_unroutable_message_goes_to_the_dead_letters(tmp_path: Path) -> None:
    text = '[[routes]]\nname = "r"\nfrom = "in"\n[[routes.rules]]\nwhen = "properties.x = 1"\nto = ["a"]\n'
    d = Daemon(load_site(make_site(tmp_path, text)), pm=plugin_manager(entry_points=False))
    d.start()
    try:
        assert d.transport is not None
        env = Envelope(format=TEXT, body=b"lost?")
        d.transport.send("in", env)
        client = ControlClient(d.site.control_socket)
        (dl,) = wait_for(lambda: client.call("dlq.list"), "the unroutable message in the dead letters")
        assert dl["message_id"] == env.message_id and "unroutable" in dl["error"]
        assert dl["component"] == "route:r"
    finally:
        d.shutdown()


def test_control_socket_is_private_and_pause_holds_work(daemon: Daemon) -> None:
    sock = daemon.site.control_socket
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    client = ControlClient(sock)
    client.call("pause", adapter="echo1")
    assert daemon.transport is not None
    daemon.transport.send("to-echo", Envelope(format=TEXT, body=b"held"))
    assert daemon.transport.receive_wait("echo.out", "t", wait=0.5) == []
    client.call("resume", adapter="echo1")
    (got,) = daemon.transport.receive_wait("echo.out", "t", wait=10)
    assert got.envelope.body == b"held"
    with pytest.raises(ControlError, match="no adapter named 'nope'"):
        client.call("pause", adapter="nope")


def test_second_daemon_on_the_same_data_dir_fails_clearly(daemon: Daemon) -> None:
    other = Daemon(daemon.site, pm=plugin_manager(entry_points=False, extra=(plugin_echo,)))
    with pytest.raises(DaemonLockError, match="another coupler daemon .* already runs for data directory"):
        other.start()


def test_unknown_adapter_type_names_the_key_path(tmp_path: Path) -> None:
    site = load_site(make_site(tmp_path, '[[adapters]]\nname = "x"\ntype = "nosuch"\n'))
    with pytest.raises(ConfigError, match=r"site\.toml:3: adapters\[x\]\.type: no installed plugin provides adapter type 'nosuch'"):
        Daemon(site, pm=plugin_manager(entry_points=False, extra=(plugin_echo,))).start()


def test_adapter_context_request_waits_for_the_correlated_reply(daemon: Daemon) -> None:
    from coupler.bus import api

    context = daemon.adapters["echo1"].context
    assert context.command_channel == "coupler.commands"
    reply = context.request(api.command_envelope("ping", "echo2", payload="via context"), context.command_channel, timeout=10)
    info = api.parse_reply(reply)
    assert info.ok and info.adapter == "echo2" and info.details["payload"] == "via context"
    assert reply.correlation_id is not None
    with pytest.raises(Exception, match="no reply"):
        context.request(command_envelope("ping", "echo2"), "nobody.listens", timeout=0.3)


def test_adapters_and_routes_reading_a_topic_get_a_durable_subscription_each(tmp_path: Path) -> None:
    text = """
[[channels]]
name = "news"
kind = "topic"

[[adapters]]
name = "reader"
type = "echo"
direction = "outbound"
channel = "news"
[adapters.options]
forward_to = "read"

[[routes]]
from = "news"
[[routes.rules]]
to = ["archive"]
"""
    d = Daemon(load_site(make_site(tmp_path, text)), pm=plugin_manager(entry_points=False, extra=(plugin_echo,)))
    d.start()
    try:
        assert d.transport is not None
        d.transport.send("news", Envelope(format=TEXT, body=b"extra"))
        assert [x.envelope.body for x in d.transport.receive_wait("read", "t", wait=10)] == [b"extra"]
        assert [x.envelope.body for x in d.transport.receive_wait("archive", "t", wait=10)] == [b"extra"]
    finally:
        d.shutdown()
