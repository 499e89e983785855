"""What the console's pages say, read as an operator reads them (issue 30 item 10): the store
in words, the adapters' health beside their state, dead-letter rows one line each (the
reason cut short with the whole of it a click away, the message id on one line and a link to
its trace), and the rate chart's in and out both visible where they are equal."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

import pytest
from lxml import html

from coupler.bus.cli.ctl import print_trace
from coupler.bus.config.loader import load_site
from coupler.bus.runtime.console.server import read_token
from coupler.bus.runtime.control import ControlClient
from coupler.canonical import Envelope, FormatIndicator
from tests.bus.runtime.console.helpers import console_site
from tests.bus.site_helpers import running_daemon, wait_for


def _page(url: str, token: str) -> html.HtmlElement:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200
        return html.fromstring(r.read())


def test_overview_adapters_dead_letters_and_chart_read_as_an_operator_needs(tmp_path: Path) -> None:
    site_file = console_site(tmp_path)
    long_reason = "cannot translate acme.Order@1 from adapter drop-in: " + "the field is not a date; " * 20
    with running_daemon(site_file, plugins=None) as daemon:
        token = read_token(load_site(site_file))
        url = daemon.console_url
        t = daemon.transport
        assert url and t is not None
        env = Envelope(format=FormatIndicator("acme.Order", 1, "application/json"), body=b'{"order": 1}')
        t.invalid(env, long_reason, "adapter:drop-in", channel="orders")
        for i in range(3):
            (tmp_path / "in" / f"order-{i}.json").write_text(json.dumps({"order": i}))
        wait_for(lambda: len(list((tmp_path / "out").iterdir())) == 3, "three files delivered")

        overview = _page(url + "/", token)
        store = overview.xpath("//dt[.='Store']/following-sibling::dd[1]")[0].text_content()
        assert "Transport(" not in overview.text_content()
        assert store.startswith("embedded SQLite store ") and "synchronous FULL" in store, store

        adapters = _page(url + "/adapters", token)
        header = [th.text_content() for th in adapters.xpath("//section[@id='adapters']//th")]
        assert header[:5] == ["Adapter", "Type", "Direction", "State", "Health"]
        assert adapters.xpath("//*[@data-health='drop-in']")[0].text_content() == "ok"

        dead = _page(url + "/dead-letters", token)
        [row] = dead.xpath("//section[@id='dead-letters']//tbody/tr")
        cells = row.xpath("./td")
        message = cells[3]
        assert message.xpath(".//a/@href") == [f"/trace?q={env.message_id}"]
        code = message.xpath(".//code")[0]
        assert code.get("title") == env.message_id and len(code.text_content()) <= 9
        reason = cells[7]
        summary = reason.xpath(".//details/summary")[0].text_content()
        assert len(summary) <= 142 and summary.startswith("cannot translate acme.Order@1")
        assert "".join(reason.xpath(".//details/text()")) == long_reason  # the whole of it, one click away

        [channels] = wait_for(lambda: [p for p in [_page(url + "/channels", token)]
                                       if p.xpath("//svg[contains(@class,'chart')]/polygon")], "a rate chart drawn")
        chart = channels.xpath("//svg[contains(@class,'chart')][polygon]")[0]
        assert chart.xpath("./polygon[@class='in']") and chart.xpath("./polyline[@class='out'][@stroke-dasharray]")
        assert re.search(r"in [\d.]+/s, out [\d.]+/s", chart.get("aria-label"))


def test_the_trace_of_one_record_shows_that_record_alone_with_links(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The records of a file share its trace: tracing one record's message id shows its hops
    alone (not its siblings' interleaved), ids are links, and the whole trace is one click."""
    from tests.adapters.filedrop.test_site_translation import RECORDS, SITE, make_site

    site_file = make_site(tmp_path, SITE.replace("[site]\n", '[http]\nlisten = "127.0.0.1:0"\n\n[site]\n', 1))
    with running_daemon(site_file, plugins=None) as daemon:
        token = read_token(load_site(site_file))
        url = daemon.console_url
        assert url
        (tmp_path / "drop" / "accounts.dat").write_bytes(b"".join(RECORDS))
        target = tmp_path / "out" / "accounts.dat"
        wait_for(lambda: target.exists() and target.stat().st_size == 66, "the three records written back")
        t = daemon.transport
        assert t is not None
        published = [e for e in t.journal(channel="accounts", limit=100) if e.event in ("sent", "published")]
        assert len(published) == 3 and len({e.trace_id for e in published}) == 1  # one trace for the file
        second = published[1].message_id
        assert second
        wait_for(lambda: any(e.event == "acked" for e in t.journal(message_id=second)), "the second record delivered")

        one = _page(f"{url}/trace?q={second}", token)
        ids = {a.get("href") for a in one.xpath("//section[@id='trace']//tbody//a")}
        assert ids == {f"/trace?q={second}"}  # its own hops only, each linking to itself
        rows = [[td.text_content() for td in tr.xpath("./td")] for tr in one.xpath("//section[@id='trace']//tbody/tr")]
        # At, Event, Outcome, Channel, Message, By: the inbound mapping, the outbound mapping and
        # the file written are hops of their own
        assert [(r[1], r[2], r[5]) for r in rows] == [
            ("mapped", "mapping mappings/account.toml", "adapter:accounts-in"),
            ("sent", "stored", "adapter:accounts-in"),
            ("received", "received", "adapter:accounts-out"),
            ("mapped", "mapping mappings/account.toml", "adapter:accounts-out"),
            ("delivered", f"to {target}", "adapter:accounts-out"),
            ("acked", "done", "adapter:accounts-out"),
        ]
        # `coupler ctl trace` prints the same hops
        print_trace(ControlClient(load_site(site_file).control_socket).call("trace", query=second))
        printed = capsys.readouterr().out
        assert re.search(r"mapped +mapping mappings/account.toml +accounts +\S+ +adapter:accounts-in", printed), printed
        assert re.search(rf"delivered +to {re.escape(str(target))} +accounts +\S+ +adapter:accounts-out", printed), printed
        whole_link = one.xpath("//p[@id='scope']/a[contains(., 'whole trace')]/@href")
        assert whole_link == [f"/trace?q={second}&whole=1"]

        whole = _page(url + whole_link[0], token)
        linked = {a.get("href") for a in whole.xpath("//section[@id='trace']//tbody//a")}
        assert {f"/trace?q={e.message_id}" for e in published} <= linked  # all three records


def test_a_note_reads_back_whatever_a_file_name_or_a_reason_holds() -> None:
    """What a consumer did is journaled as one text with its acknowledgement; the trace reads
    its parts back whatever the values hold (a file name with "; to " or "%3B" in it)."""
    from coupler.bus.runtime.trace import note, note_parts

    odd = "/out/a; to b%3B.dat"
    assert note_parts(note(mapping="maps/m.toml", to=odd) or "") == [("mapped", "mapping maps/m.toml"), ("delivered", f"to {odd}")]
    reason = "did not match \"body.note = 'x; mapping y'\""
    assert note_parts(note(discarded=("f (step 0 filter)", reason)) or "") == [("discarded", f"discarded by f (step 0 filter): {reason}")]
