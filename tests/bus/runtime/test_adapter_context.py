"""What the daemon gives every adapter: option paths relative to site.toml, ``site_dir`` and
``resolve_path``, and ``invalid`` (the Invalid Message Channel with a reason)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import ClassVar

import pytest

from coupler.bus.api import Adapter
from coupler.bus.config.loader import load_site
from coupler.bus.model.commands import InvalidMessage
from coupler.bus.plugins.hookspecs import hookimpl
from coupler.bus.plugins.manager import plugin_manager
from coupler.bus.runtime.context import BusContext, Statistics
from coupler.bus.runtime.daemon import Daemon
from coupler.bus.transport.sqlite.transport import SqliteTransport
from coupler.canonical import Envelope, FormatIndicator


class PathProbe(Adapter):
    """Declares path options; keeps what it was created with."""

    type_name = "pathprobe"
    path_options: ClassVar[tuple[str, ...]] = ("wsdl", "tls.cert", "tls.ca", "dirs", "missing")

    def start(self) -> None:
        self.seen = dict(self.options)


@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {"pathprobe": PathProbe}


SITE = """
[site]
data_dir = "/DATA"

[[adapters]]
name = "probe"
type = "pathprobe"
channel = "in"
[adapters.options]
wsdl = "legacy/policy.wsdl"
copybook = "not/declared.cpy"
dirs = ["drop", "/srv/abs"]
home = "~/x"
port = 7
[adapters.options.tls]
cert = "certs/server.pem"
ca = "/etc/ssl/ca.pem"
key = "certs/server.key"
"""


def _daemon(tmp_path: Path) -> Daemon:
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "site.toml").write_text(SITE.replace("/DATA", str(tmp_path / "data")))
    return Daemon(load_site(site_dir / "site.toml"), pm=plugin_manager(entry_points=False, extra=(sys.modules[__name__],)))


def test_declared_path_options_are_relative_to_site_toml(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # not the site's directory: the working directory does not matter
    d = _daemon(tmp_path)
    d.start()
    try:
        ra = d.adapters["probe"]
        site_dir = (tmp_path / "site").resolve()
        seen = ra.adapter.seen  # type: ignore[attr-defined]
        assert seen["wsdl"] == str(site_dir / "legacy" / "policy.wsdl")
        assert seen["tls"] == {"cert": str(site_dir / "certs" / "server.pem"), "ca": "/etc/ssl/ca.pem", "key": "certs/server.key"}
        assert seen["dirs"] == [str(site_dir / "drop"), "/srv/abs"]
        assert seen["copybook"] == "not/declared.cpy" and seen["port"] == 7 and "missing" not in seen
        assert ra.context.config == seen
        # for paths an adapter finds elsewhere: the context resolves them the same way
        assert ra.context.site_dir == site_dir
        assert ra.context.resolve_path("not/declared.cpy") == site_dir / "not" / "declared.cpy"
        assert ra.context.resolve_path("/abs/file") == Path("/abs/file")
        assert ra.context.resolve_path("~/x") == Path.home() / "x"
    finally:
        d.shutdown()


def test_context_invalid_keeps_raw_bytes_and_envelopes_with_the_reason(tmp_path: Path) -> None:
    d = _daemon(tmp_path)
    d.start()
    try:
        ctx = d.adapters["probe"].context
        raw_id = ctx.invalid(b"\x00\x01garbage", "record of 10 bytes, the layout needs 42")
        env = Envelope(format=FormatIndicator("acme.Thing", 1, "application/json"), body=b"{")
        env_id = ctx.invalid(env, "not JSON")
        assert d.transport is not None
        raw = d.transport.dead_letter(raw_id)
        assert (raw.kind, raw.raw, raw.envelope, raw.channel) == ("invalid", b"\x00\x01garbage", None, "in")
        assert raw.reason == "record of 10 bytes, the layout needs 42" and raw.component == "adapter:probe"
        kept = d.transport.dead_letter(env_id)
        assert kept.envelope is not None and kept.envelope.message_id == env.message_id
        assert kept.envelope.origin == "probe" and kept.reason == "not JSON"
        assert {s["name"]: s["failed"] for s in d.statistics.snapshot()} == {"probe": 2}
    finally:
        d.shutdown()


def test_context_invalid_once_records_a_key_once_with_its_dead_letter(tmp_path: Path) -> None:
    d = _daemon(tmp_path)
    d.start()
    try:
        ctx = d.adapters["probe"].context
        env = Envelope(format=FormatIndicator("acme.Thing", 1, "application/json"), body=b"{")
        first = ctx.invalid_once(env, "not JSON", "row 7 v1")
        assert first is not None
        assert ctx.invalid_once(env, "not JSON", "row 7 v1") is None  # read again: not again
        assert ctx.invalid_once(env, "not JSON", "row 7 v2") is not None  # another key: recorded
        assert d.transport is not None
        letters = d.transport.dead_letters(kind="invalid", limit=10)
        assert len(letters) == 2 and d.transport.dead_letter(first).envelope.origin == "probe"  # type: ignore[union-attr]
        assert {s["name"]: s["failed"] for s in d.statistics.snapshot()} == {"probe": 2}
    finally:
        d.shutdown()


def _refusing_context(transport, statistics) -> BusContext:  # type: ignore[no-untyped-def]
    """A context whose inbound stage (the adapter's mapping) refuses every message."""

    def mapping(envelope: Envelope) -> Envelope:
        raise ValueError("field AMOUNT: 'x1' is not a number")

    return BusContext(name="rows", config={}, data_dir=Path("/nonexistent"), transport=transport,
                      statistics=statistics, channel="in", inbound=mapping)


def test_a_message_the_inbound_stage_refuses_twice_is_one_dead_letter(tmp_path: Path) -> None:
    # the database adapter publishes a batch inside its database transaction; when that rolls
    # back, the same rows (the same message ids and bodies) are published again
    transport = SqliteTransport(tmp_path / "data").open()
    try:
        stats = Statistics()
        stats.add("rows", "database")
        ctx = _refusing_context(transport, stats)
        fmt = FormatIndicator("acme.Payment", 1, "application/json")
        bad = Envelope(format=fmt, body=b'{"AMOUNT": "x1"}', message_id="db:payments:7")
        for _read in range(2):
            reasons: list[str] = []
            assert ctx.publish_many([bad], reasons=reasons) == [None]
            assert len(reasons) == 1 and "cannot translate acme.Payment@1 from adapter rows" in reasons[0]
            with pytest.raises(InvalidMessage, match="is not a number"):
                ctx.publish(bad)
        letters = transport.dead_letters(kind="invalid", limit=10)
        assert [(d.envelope.message_id, d.component) for d in letters] == [("db:payments:7", "adapter:rows")]  # type: ignore[union-attr]
        # the same id with another body (the row changed) is another unit: a second dead letter
        changed = bad.replace(body=b'{"AMOUNT": "x2"}')
        assert ctx.publish_many([changed]) == [None]
        assert len(transport.dead_letters(kind="invalid", limit=10)) == 2
        assert {s["name"]: (s["failed"], s["out"]) for s in stats.snapshot()} == {"rows": (2, 0)}
    finally:
        transport.close()
