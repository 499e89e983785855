"""Bodies for people: ``coupler channel get`` on a terminal decodes Avro through the format
indicator (never binary on the screen), ``--raw`` and pipes keep the bytes; the trace of a
command holds its reply."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from coupler.bus.config.loader import load_site
from coupler.bus.runtime.bodies import decode_body, encode_body
from coupler.bus.runtime.control import ControlService
from coupler.bus.runtime.trace import trace
from coupler.bus.transport.factory import open_transport
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.registry import SchemaRegistry
from tests.bus.site_helpers import REPO, running_daemon, write_site
from tests.terminal import coupler_on_a_terminal

EVENT = FormatIndicator("coupler.BatchCompleted", 1, "avro/binary")
RECORD = {
    "batch_id": "B-1", "source": "orders-in", "inputs": ["ORDERS.DAT"], "from_spec": "copybook:order.cpy",
    "to_spec": "parquet", "records": 1200, "errors": 3, "outputs": ["/srv/out/B-1"], "errors_output": None,
    "started_at": 1763935200000, "duration_ms": 5400,
}


def _on_a_terminal(*argv: str) -> bytes:
    """Run ``coupler ARGV`` with its standard output on a pseudo-terminal; what it printed."""
    run = coupler_on_a_terminal(list(argv), terminal="stdout", env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert run.returncode == 0, run.piped
    return run.shown.encode()


def test_channel_get_decodes_avro_on_a_terminal(tmp_path: Path) -> None:
    site_file = write_site(tmp_path, "")
    body = SchemaRegistry.default().encode(RECORD, EVENT)
    transport = open_transport(load_site(site_file))
    try:
        transport.send("events", [Envelope(format=EVENT, body=body), Envelope(format=EVENT, body=body)])
    finally:
        transport.close()
    shown = _on_a_terminal("channel", "get", "--site", str(site_file), "events")
    text = shown.decode("utf-8")
    assert "coupler.BatchCompleted@1 avro/binary (shown as avro)" in text
    assert '"batch_id": "B-1"' in text and '"records": 1200' in text
    assert body not in shown
    raw = _on_a_terminal("channel", "get", "--site", str(site_file), "events", "--raw")
    assert raw.replace(b"\r\n", b"\n").startswith(body.replace(b"\r\n", b"\n")[:8])
    piped = subprocess.run([sys.executable, "-m", "coupler.bus.cli.main", "channel", "get", "--site", str(site_file), "events"],
                           capture_output=True, env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120)
    assert piped.stdout.startswith(b"no message") or piped.stdout == b""  # both were taken above


def test_decode_and_encode_bodies_by_format() -> None:
    registry = SchemaRegistry.default()
    avro = Envelope(format=EVENT, body=registry.encode(RECORD, EVENT))
    shown = decode_body(avro, registry=registry)
    assert shown["as"] == "avro" and shown["error"] is None
    assert '"started_at": "2025-11-23T22:00:00+00:00"' in shown["text"]
    edited = shown["text"].replace('"records": 1200', '"records": 1201')
    again = registry.decode(encode_body(EVENT, edited, registry), EVENT)
    assert again["records"] == 1201 and again["started_at"] == registry.decode(avro.body, EVENT)["started_at"]
    xml = Envelope(format=FormatIndicator("acme.Order", 1, "application/xml"), body=b"<o><id>7</id></o>")
    assert decode_body(xml) == {"as": "xml", "text": "<o>\n  <id>7</id>\n</o>\n", "error": None}
    binary = Envelope(format=FormatIndicator("acme.Blob", 1, "application/octet-stream"), body=bytes(range(40)))
    dump = decode_body(binary)
    assert dump["as"] == "hex" and dump["text"].startswith("00000000  00 01 02")
    bad = Envelope(format=FormatIndicator("coupler.BatchCompleted", 1, "avro/binary"), body=b"\xff\xfe")
    assert decode_body(bad, registry=registry)["error"]


def test_the_trace_of_a_command_holds_its_reply(tmp_path: Path) -> None:
    site_file = write_site(tmp_path, """
[[adapters]]
name = "echo-1"
type = "echo"
""")
    with running_daemon(site_file) as daemon:
        [reply] = ControlService(daemon).op_ping("echo-1", timeout=20)
        assert reply["ok"]
        found = trace(daemon.transport, reply["correlation_id"])  # the command's message id
        assert len(found["trace_ids"]) == 1 and len(found["messages"]) == 2
        channels = {c for m in found["messages"] for c in m["channels"]}
        assert {"coupler.commands", "coupler.adapter.echo-1", "coupler.replies.control"} <= channels
        assert any(h["event"] == "acked" and h["channel"] == "coupler.replies.control" for h in found["hops"])
