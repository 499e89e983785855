"""The Resequencer step through a real daemon from site.toml, on SQLite and on RabbitMQ +
PostgreSQL: stream mode (in order as soon as it can, a gap given up after its time-out goes to
the Invalid Message Channel, held messages survive a restart) and batch mode (a window, sorted)."""

from __future__ import annotations

import json
from pathlib import Path

from coupler.canonical import Envelope, FormatIndicator
from tests.bus.runtime.test_route_steps import drained, settled
from tests.bus.site_helpers import running_daemon, write_site

TEXT = FormatIndicator.parse("test.Msg@1;text/plain")

SITE = """
[[routes]]
name = "partners"
from = "in"
to = ["ordered"]
[[routes.steps]]
type = "resequence"
sequence = "properties.seq"
correlation = "properties.partner"
first = 1
gap_timeout_seconds = {gap}

[[routes]]
name = "sorted"
from = "batch.in"
to = ["batch.out"]
[[routes.steps]]
type = "resequence"
mode = "batch"
sequence = "body.at"
window_seconds = 1
"""


def msg(partner: str, seq: int) -> Envelope:
    return Envelope(format=TEXT, body=f"{partner}{seq}".encode(), properties={"partner": partner, "seq": str(seq)})


def test_stream_mode_releases_in_order_per_partner_and_survives_a_restart(store: str, tmp_path: Path) -> None:
    site = write_site(tmp_path, store + SITE.format(gap=60))
    with running_daemon(site) as d:
        t = d.transport
        assert t is not None
        t.send("in", [msg("A", 3), msg("B", 2), msg("A", 2)])
        settled(d, "in")
        assert t.receive("ordered", "test") == []  # A waits for 1, B for 1
    with running_daemon(site) as d:  # the held messages are in the store
        t = d.transport
        assert t is not None
        t.send("in", [msg("B", 1), msg("A", 1), msg("A", 4)])
        got = drained(d, "ordered", 6)
        by_partner = {p: [e.body.decode() for e in got if e.properties["partner"] == p] for p in "AB"}
        assert by_partner == {"A": ["A1", "A2", "A3", "A4"], "B": ["B1", "B2"]}
        t.send("in", [msg("A", 2)])  # again: a duplicate goes to the Invalid Message Channel
        settled(d, "in")
        [dup] = t.dead_letters(kind="invalid")
        assert "number 2 came twice" in dup.reason


def test_a_gap_that_stays_open_goes_to_the_invalid_message_channel_and_the_stream_goes_on(store: str, tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, store + SITE.format(gap=1))) as d:
        t = d.transport
        assert t is not None
        t.send("in", [msg("A", 1), msg("A", 4), msg("A", 5)])
        got = drained(d, "ordered", 3)  # 1 at once; 4 and 5 after the gap time-out
        assert [e.body for e in got] == [b"A1", b"A4", b"A5"]
        [gap] = t.dead_letters(kind="invalid")
        assert "numbers 2..3 missing" in gap.reason
        assert gap.envelope is not None and json.loads(gap.envelope.body)["missing_from"] == 2
        t.send("in", [msg("A", 6)])
        assert [e.body for e in drained(d, "ordered", 1)] == [b"A6"]


def test_batch_mode_sorts_what_a_window_collected(store: str, tmp_path: Path) -> None:
    json_fmt = FormatIndicator.parse("test.Ev@1;application/json")
    with running_daemon(write_site(tmp_path, store + SITE.format(gap=60))) as d:
        t = d.transport
        assert t is not None
        t.send("batch.in", [Envelope(format=json_fmt, body=json.dumps({"at": at}).encode()) for at in (30, 4, 12.5, 7)])
        got = drained(d, "batch.out", 4)
        assert [json.loads(e.body)["at"] for e in got] == [4, 7, 12.5, 30]
