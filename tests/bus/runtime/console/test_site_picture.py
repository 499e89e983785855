"""The picture of the site in the console: adapters, channels and routes drawn from the
running configuration as a server-rendered SVG, with the counts on the arrows, dead letters
marked, each node a link to its page; checked in the HTML and in Chromium (screenshot)."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import pytest
from lxml import html

from coupler.bus.config.loader import load_site
from coupler.bus.runtime.console.server import console_url, read_token
from coupler.canonical import Envelope, FormatIndicator
from tests.bus.runtime.console.test_browser import browser  # noqa: F401 - the fixture
from tests.bus.site_helpers import running_daemon, wait_for, write_site


def picture_site(tmp_path: Path) -> Path:
    for d in ("in", "out"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
    return write_site(tmp_path, f"""
[site]
name = "picture-test"
[http]
listen = "127.0.0.1:0"
[monitor]
interval_seconds = 0.2

[[adapters]]
name = "drop-in"
type = "filedrop"
direction = "inbound"
channel = "incoming"
format = "acme.Order@1"
[adapters.options]
directory = "{tmp_path / 'in'}"
stable_seconds = 0
poll_interval = 0.1
max_poll_interval = 0.2

[[adapters]]
name = "drop-out"
type = "filedrop"
direction = "outbound"
channel = "orders"
[adapters.options]
directory = "{tmp_path / 'out'}"
file_name = "{{prop.file.name}}"

[[routes]]
name = "triage"
from = "incoming"
otherwise = "rejects"
[[routes.steps]]
type = "filter"
when = "format.name = 'acme.Order'"
[[routes.rules]]
to = ["orders"]
""")


def _page(url: str, token: str) -> html.HtmlElement:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return html.fromstring(r.read())


def test_the_site_picture_draws_the_configuration_with_live_counts(tmp_path: Path) -> None:
    site_file = picture_site(tmp_path)
    with running_daemon(site_file, plugins=None) as daemon:
        token = read_token(load_site(site_file))
        url = daemon.console_url
        t = daemon.transport
        assert url and t is not None
        for i in range(3):
            (tmp_path / "in" / f"order-{i}.json").write_text(json.dumps({"order": i}))
        wait_for(lambda: len(list((tmp_path / "out").iterdir())) == 3, "three files through the route")
        t.invalid(Envelope(format=FormatIndicator("acme.Order", 1, "application/json"), body=b"{}"), "no order id",
                  "adapter:drop-in", channel="orders")

        def drawn() -> list[html.HtmlElement]:
            page = _page(url + "/site", token)
            edges = page.xpath("//g[@class='edge']/text")
            marked = page.xpath("//a[@data-node='channel:orders'][contains(@class, 'dead')]")
            # the file drop counts a message after its send commits: it may be taken (and
            # delivered) before it is counted published
            counts = {e.text_content() for e in edges}
            return [page] if marked and {"3 taken", "3 published"} <= counts else []

        [page] = wait_for(drawn, "the picture with the counts of the three orders, published and taken")
        nodes = {a.get("data-node"): a for a in page.xpath("//svg[contains(@class,'site')]//a[@data-node]")}
        assert set(nodes) == {"adapter:drop-in", "adapter:drop-out", "channel:incoming", "channel:orders",
                              "channel:rejects", "route:triage"}
        edges = {(g.get("data-from"), g.get("data-to")): g.xpath("string(./text)")
                 for g in page.xpath("//g[@class='edge']")}
        assert edges[("drop-in", "incoming")] == "3 published"
        assert edges[("orders", "drop-out")] == "3 taken"
        assert ("incoming", "triage") in edges and ("triage", "orders") in edges and ("triage", "rejects") in edges
        # left to right as the messages flow
        x = {k: float(a.xpath("./rect/@x")[0]) for k, a in nodes.items()}
        assert x["adapter:drop-in"] < x["channel:incoming"] < x["route:triage"] < x["channel:orders"] < x["adapter:drop-out"]
        # the dead letter is marked and the node links to it; the others link to their pages
        assert "dead" in nodes["channel:orders"].get("class").split()
        assert nodes["channel:orders"].get("href") == "/dead-letters?channel=orders"
        assert nodes["adapter:drop-in"].get("href") == "/adapters"
        assert "dead" not in nodes["channel:incoming"].get("class").split()
        # a route shows its steps (Pipes and Filters) and its rules
        assert [t.text_content() for t in nodes["route:triage"].xpath(".//tspan")] == ["triage", "filter", "router, 1 rule(s)"]


@pytest.mark.slow
def test_the_site_picture_in_chromium(tmp_path: Path, browser) -> None:  # noqa: F811
    shots = Path(os.environ.get("COUPLER_SCREENSHOTS") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    site_file = picture_site(tmp_path)
    with running_daemon(site_file, plugins=None) as daemon:
        page = browser.new_page(viewport={"width": 1400, "height": 600})
        page.set_default_timeout(30_000)
        page.goto(console_url(load_site(site_file)))
        page.goto(daemon.console_url + "/site")
        for i in range(5):
            (tmp_path / "in" / f"order-{i}.json").write_text(json.dumps({"order": i}))
        # the page refreshes itself: the counts arrive without a reload
        page.locator("svg.site g.edge text", has_text="5 taken").wait_for()
        page.locator("svg.site a[data-node='adapter:drop-out']").click()
        page.wait_for_url("**/adapters")
        page.go_back()
        page.locator("svg.site g.edge text", has_text="5 taken").wait_for()
        page.screenshot(path=str(shots / "console-site-picture.png"), full_page=True)
