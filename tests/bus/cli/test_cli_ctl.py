"""``coupler ctl`` and ``coupler send`` against a daemon running in this process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coupler.bus.cli.main import main
from coupler.canonical import Envelope, FormatIndicator
from tests.bus.site_helpers import running_daemon, wait_for, write_site

SITE = """
[[adapters]]
name = "echo1"
type = "echo"
channel = "to-echo"
identity = { class = "crm", provider = "acme", name = "customers", version = "2" }
[adapters.options]
forward_to = "echo.out"
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_ctl_inspection_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = write_site(tmp_path, SITE)
    s = str(site)
    with running_daemon(site) as d:
        assert d.transport is not None
        d.transport.send("to-echo", Envelope(format=FormatIndicator.parse("t.T@1"), body=b"1"))
        d.transport.receive_wait("echo.out", "t", wait=10)

        def status_once_delivered() -> dict:
            rc, out, _ = run(capsys, "ctl", "--site", s, "status", "--json")
            assert rc == 0
            got = json.loads(out)
            return got if got["adapters"][0]["out"] == 2 else {}

        # OUT counts what it passed on: the copy it published and the document it delivered
        status = wait_for(status_once_delivered, "the delivery to be counted")
        assert status["state"] == "running"
        (echo,) = status["adapters"]
        assert echo["name"] == "echo1" and echo["state"] == "running" and echo["in"] == 1 and echo["out"] == 2
        assert echo["last_heartbeat_age"] is not None
        channels = {c["channel"]: c for c in status["channels"]}
        assert channels["to-echo"]["acked"] == 1 and channels["to-echo"]["depth"] == 0
        rc, out, _ = run(capsys, "ctl", "--site", s, "status")
        assert "echo1" in out and "running" in out and "CHANNEL" in out
        rc, out, _ = run(capsys, "ctl", "--site", s, "adapters", "--json")
        assert json.loads(out)[0]["commands"] == ["send", "fetch", "request", "ping", "describe"]
        rc, out, _ = run(capsys, "ctl", "--site", s, "identities")
        assert "crm/acme/customers@2" in out and "echo1" in out
        rc, out, _ = run(capsys, "ctl", "--site", s, "channels", "--json")
        assert "echo.out" in {c["channel"] for c in json.loads(out)}


def test_ctl_ping_pause_resume_and_dlq(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = write_site(tmp_path, SITE)
    s = str(site)
    with running_daemon(site) as d:
        rc, out, _ = run(capsys, "ctl", "--site", s, "ping", "echo1")
        assert rc == 0 and out.startswith("echo1: ok")
        rc, out, _ = run(capsys, "ctl", "--site", s, "ping", "ghost", "--json")
        (fault,) = json.loads(out)
        assert rc == 1 and fault["code"] == "unserved"
        rc, out, _ = run(capsys, "ctl", "--site", s, "pause", "echo1")
        assert out.strip() == "adapter echo1 paused"
        rc, out, _ = run(capsys, "ctl", "--site", s, "ping", "echo1", "--timeout", "0.5")
        assert rc == 1  # held while paused: no reply in time
        run(capsys, "ctl", "--site", s, "resume", "echo1")
        assert d.transport is not None
        env = Envelope(format=FormatIndicator.parse("t.T@1"), body=b"bad")
        d.transport.send("q", env)
        (delivery,) = d.transport.receive("q", "t")
        d.transport.nack(delivery, "cannot handle", "test", dead=True)
        rc, out, _ = run(capsys, "ctl", "--site", s, "dlq", "list", "--json")
        (dl,) = [x for x in json.loads(out) if x["message_id"] == env.message_id]
        assert dl["channel"] == "q" and dl["reason"]
        rc, out, _ = run(capsys, "ctl", "--site", s, "dlq", "show", str(dl["id"]))
        assert "error: cannot handle" in out and out.rstrip().endswith("bad")
        rc, out, _ = run(capsys, "ctl", "--site", s, "dlq", "replay", str(dl["id"]))
        assert out.startswith("replayed as message")
        assert [x.envelope.body for x in d.transport.receive_wait("q", "t", wait=5)] == [b"bad"]
        rc, out, err = run(capsys, "ctl", "--site", s, "dlq", "show", "999")
        assert rc == 1 and "999" in err
        rc, out, _ = run(capsys, "ctl", "--site", s, "dlq", "purge")
        assert out.startswith("purged ")
        rc, out, _ = run(capsys, "ctl", "--site", s, "dlq", "list")
        assert out.strip() == "no dead letters"


def test_send_prints_replies_and_faults(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = write_site(tmp_path, SITE)
    s = str(site)
    doc = tmp_path / "doc.txt"
    doc.write_text("quote please")
    with running_daemon(site):
        rc, out, _ = run(capsys, "send", "--site", s, "--command", "request", "--target", "echo1",
                         "--format", "acme.Note@1;text/plain", "--unregistered", "--operation", "Quote", str(doc))
        assert rc == 0 and out.splitlines()[0].startswith("echo1: ok") and "QUOTE PLEASE" in out
        rc, out, _ = run(capsys, "send", "--site", s, "-c", "fetch", "-t", "crm/acme", "--max", "1", "--json")
        (reply,) = json.loads(out)
        assert reply["ok"] and reply["adapter"] == "echo1" and len(reply["documents"]) == 1
        rc, out, _ = run(capsys, "send", "--site", s, "-c", "describe", "-t", "echo1", "--json")
        (reply,) = json.loads(out)
        assert reply["details"]["description"]["name"] == "echo1"  # an object, not JSON in a string
        assert "send" in reply["details"]["description"]["commands"]
        rc, out, _ = run(capsys, "send", "--site", s, "-c", "describe", "-t", "echo1")
        assert rc == 0 and '"description": {' in out
        rc, out, _ = run(capsys, "send", "--site", s, "-c", "describe", "-t", "nobody")
        assert rc == 1 and out.startswith("bus: fault unserved: no adapter serves 'describe' for target 'nobody'")
        rc, _, err = run(capsys, "send", "--site", s, "-c", "send", "-t", "echo1")
        assert rc == 2 and "needs a document" in err


def test_ctl_status_without_daemon_reports_stopped_with_store_stats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = str(write_site(tmp_path, SITE))
    (tmp_path / "one.txt").write_text("one")
    (tmp_path / "two.txt").write_text("two")
    assert run(capsys, "channel", "put", "--site", s, "inbox", str(tmp_path / "one.txt"), str(tmp_path / "two.txt"))[0] == 0
    rc, out, err = run(capsys, "ctl", "--site", s, "status", "--json")
    assert rc == 0, err
    status = json.loads(out)
    assert status["state"] == "stopped" and status["pid"] is None and status["site"] == "coupler-site"
    assert [(a["name"], a["state"]) for a in status["adapters"]] == [("echo1", "stopped")]
    channels = {c["channel"]: c for c in status["channels"]}
    assert channels["inbox"]["depth"] == 2 and channels["inbox"]["oldest_age"] >= 0
    rc, out, _ = run(capsys, "ctl", "--site", s, "status")
    assert rc == 0 and out.splitlines()[0] == "site coupler-site: stopped (no daemon runs)"
    assert any(line.split()[:3] == ["inbox", "queue", "2"] for line in out.splitlines())
    # operations that need the daemon still say so
    for op in (["adapters"], ["pause", "echo1"], ["ping", "echo1"], ["stop"]):
        rc, _, err = run(capsys, "ctl", "--site", s, *op)
        assert rc == 1 and "no daemon runs for site" in err, op


def test_send_refuses_an_unregistered_format_unless_told(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 20: as ``channel put``, a format naming no registered schema is a one-line error
    naming the known subjects (before any daemon is asked); --unregistered sends it anyway."""
    s = str(write_site(tmp_path, SITE))
    doc = tmp_path / "doc.txt"
    doc.write_text("x")
    rc, out, err = run(capsys, "send", "--site", s, "-c", "send", "-t", "echo1", "--format", "acme.Nope@1", str(doc))
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert "no schema named 'acme.Nope'" in err and "acme.Address" in err and "--unregistered" in err
    rc, _, err = run(capsys, "send", "--site", s, "-c", "send", "-t", "echo1", "--format", "acme.Nope@1",
                     "--unregistered", str(doc))
    assert rc == 1 and "no daemon runs" in err  # past the format check
    rc, _, err = run(capsys, "send", "--site", s, "-c", "send", "-t", "echo1", str(doc))
    assert rc == 1 and "no daemon runs" in err  # the default format is one of Coupler's opaque formats
