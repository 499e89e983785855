"""What the console's pages say, read as an operator reads them (issue 30 item 10): the store
in words, the adapters' health beside their state, dead-letter rows one line each (the
reason cut short with the whole of it a click away, the message id on one line and a link to
its trace), and the rate chart's in and out both visible where they are equal."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

from lxml import html

from coupler.bus.config.loader import load_site
from coupler.bus.runtime.console.server import read_token
from coupler.canonical import Envelope, FormatIndicator

from ..site_helpers import running_daemon, wait_for
from .helpers import console_site


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
