"""The Control Bus: operations over the store without a daemon, the client, the socket."""

from __future__ import annotations

from pathlib import Path

import pytest

from coupler.bus.config.loader import load_site
from coupler.bus.runtime.control import (
    ControlClient,
    ControlError,
    StoreService,
    decode_envelope,
    encode_envelope,
    site_service,
)
from coupler.canonical import Envelope, FormatIndicator
from tests.bus.site_helpers import running_daemon, wait_for, write_site

TEXT = FormatIndicator.parse("test.Text@1;text/plain")


def test_store_operations_work_without_a_daemon(tmp_path: Path) -> None:
    site = load_site(write_site(tmp_path, ""))
    with site_service(site) as service:
        assert isinstance(service, StoreService)
        env = Envelope(format=TEXT, body=b"x")
        (mid,) = service.call("channel.put", channel="q", envelopes=[encode_envelope(env)])["message_ids"]
        assert mid == env.message_id
        assert [c["channel"] for c in service.call("channels")] == ["q"]
        (got,) = service.call("channel.get", channel="q", max=5, wait=0)
        assert decode_envelope(got).body == b"x"
        # a message that fails for good lands in the dead letters; replay and purge it
        service.call("channel.put", channel="q", envelopes=[encode_envelope(env)])
        (d,) = service.transport.receive("q", "t")
        service.transport.nack(d, "boom", "test", dead=True)
        (dl,) = service.call("dlq.list")
        assert dl["message_id"] == env.message_id and dl["error"] == "boom"
        shown = service.call("dlq.show", id=dl["id"])
        assert decode_envelope(shown["envelope"]).body == b"x"
        service.call("dlq.replay", id=dl["id"])
        assert service.call("dlq.list") == []
        assert service.call("channel.purge", channel="q") == {"purged": 1}
        status = service.call("status")  # without a daemon: stopped, with the store's channels
        assert status["state"] == "stopped" and [c["channel"] for c in status["channels"]] == ["q"]
        with pytest.raises(ControlError, match="unknown control operation 'pause'"):
            service.call("pause", adapter="x")


def test_operations_that_need_the_daemon_say_so(tmp_path: Path) -> None:
    site = load_site(write_site(tmp_path, ""))
    with pytest.raises(ControlError, match=r"no daemon runs for site .* \(start it with `coupler daemon"):
        with site_service(site, need_daemon=True):
            pass
    with pytest.raises(ControlError, match="no daemon answers"):
        ControlClient(site.control_socket).call("status")


def test_control_endpoint_answers_and_reports_errors_in_one_line(tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, "")) as d:
        client = ControlClient(d.site.control_socket)
        status = client.call("status")
        assert status["state"] == "running" and status["site"] == "coupler-site"
        assert {"adapters", "channels", "alerts", "pid", "uptime_seconds"} <= set(status)
        with pytest.raises(ControlError, match="unknown control operation 'frobnicate'"):
            client.call("frobnicate")
        with pytest.raises(ControlError, match="bad arguments for 'pause'"):
            client.call("pause", nobody="x")
        with site_service(d.site) as service:
            assert isinstance(service, ControlClient)


def test_too_long_socket_path_is_a_clear_error(tmp_path: Path) -> None:
    site = load_site(write_site(tmp_path, f'[control]\nsocket = "{"x" * 120}.sock"\n'))
    with pytest.raises(ControlError, match="longer than the 107 a Unix socket allows .*control.socket"):
        ControlClient(site.control_socket).call("status")


def test_stuck_channel_raises_an_alert(tmp_path: Path) -> None:
    text = '[monitor]\ninterval_seconds = 0.05\n[[channels]]\nname = "slow"\nstuck_after_seconds = 0.2\n'
    with running_daemon(write_site(tmp_path, text)) as d:
        assert d.transport is not None
        d.transport.send("slow", Envelope(format=TEXT, body=b"waiting"))
        client = ControlClient(d.site.control_socket)
        alerts = wait_for(lambda: client.call("status")["alerts"], "the stuck channel's alert")
        assert alerts[0]["channel"] == "slow"
        d.transport.purge("slow")
        assert client.call("status")["alerts"] == []
