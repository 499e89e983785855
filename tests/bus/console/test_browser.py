"""The console in a real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright;
never a downloaded browser): live channel depth, pause/resume by clicking, edit-and-replay of
a dead letter, and the trace of a dropped file to its outbound copy. A screenshot of each page
is saved in the test's temporary directory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from coupler.bus.config.loader import load_site
from coupler.bus.runtime.console.server import console_url
from coupler.canonical import Envelope, FormatIndicator

from ..site_helpers import running_daemon, wait_for
from .helpers import console_site

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="Debian chromium is not installed (make system-deps)"),
]


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def test_console_in_chromium(tmp_path: Path, browser):
    shots = tmp_path / "screenshots"
    shots.mkdir()
    site_file = console_site(tmp_path)
    with running_daemon(site_file, plugins=None) as daemon:
        site = load_site(site_file)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.set_default_timeout(30_000)
        page.goto(console_url(site))  # the token in the URL becomes a cookie, then a redirect
        assert "token=" not in page.url
        page.wait_for_selector("h1:has-text('Overview')")
        page.screenshot(path=str(shots / "overview.png"), full_page=True)

        # pause the outbound adapter by clicking: messages pile up on the channel
        page.goto(daemon.console_url + "/adapters")
        page.get_by_role("button", name="Pause drop-out").click()
        page.wait_for_selector("#notice:has-text('adapter drop-out paused')")
        wait_for(lambda: daemon.adapters["drop-out"].paused.is_set(), "drop-out paused")
        page.get_by_role("button", name="Resume drop-out").wait_for()
        page.screenshot(path=str(shots / "adapters.png"), full_page=True)

        page.goto(daemon.console_url + "/channels")
        for i in range(4):
            (tmp_path / "in" / f"order-{i}.json").write_text(json.dumps({"order": i}))
        depth = page.locator("[data-depth='orders']")
        depth.filter(has_text="4").wait_for()  # without a reload: the page refreshes itself
        page.screenshot(path=str(shots / "channels.png"), full_page=True)

        # resume by clicking: the channel drains, the page shows it
        page.goto(daemon.console_url + "/adapters")
        page.get_by_role("button", name="Resume drop-out").click()
        page.wait_for_selector("#notice:has-text('adapter drop-out resumed')")
        page.goto(daemon.console_url + "/channels")
        page.locator("[data-depth='orders']").filter(has_text="0").wait_for()
        wait_for(lambda: len(list((tmp_path / "out").iterdir())) == 4, "four files delivered")

        # a dead letter: edited in the page and replayed, then delivered
        bad = Envelope(format=FormatIndicator("acme.Order", 1, "application/json"), body=b'{"order": "broken"}',
                       properties={"file.name": "repaired.json"})
        daemon.transport.send("orders.hold", bad)
        [d] = daemon.transport.receive("orders.hold", "test")
        daemon.transport.nack(d, "the legacy system refused it", "test", dead=True)
        [dl] = daemon.transport.dead_letters()
        page.goto(daemon.console_url + "/dead-letters")
        page.get_by_role("link", name=str(dl.id)).click()
        page.wait_for_selector("textarea#body")
        assert json.loads(page.locator("textarea#body").input_value()) == {"order": "broken"}
        page.locator("textarea#body").fill('{"order": "fixed"}')
        page.screenshot(path=str(shots / "dead-letter.png"), full_page=True)
        page.get_by_role("button", name="Replay edited body").click()
        page.wait_for_selector("#notice:has-text('replayed as message')")
        page.screenshot(path=str(shots / "dead-letters.png"), full_page=True)
        assert daemon.transport.dead_letters() == []
        # replayed to its channel (orders.hold): route it on to orders by hand, as an operator would
        [again] = daemon.transport.receive("orders.hold", "test")
        assert json.loads(again.envelope.body) == {"order": "fixed"}
        daemon.transport.send("orders", again.envelope)
        daemon.transport.ack([again])
        wait_for(lambda: (tmp_path / "out" / "repaired.json").exists(), "the repaired message delivered")
        assert json.loads((tmp_path / "out" / "repaired.json").read_text()) == {"order": "fixed"}

        # trace a dropped file to its outbound copy
        page.goto(daemon.console_url + "/trace")
        page.get_by_label("Message id, trace id, correlation id or business key").fill("order-2.json")
        page.get_by_role("button", name="Trace").click()
        rows = page.locator("#trace tbody tr")
        rows.nth(2).wait_for()
        texts = [rows.nth(i).inner_text() for i in range(rows.count())]
        assert "adapter:drop-in" in texts[0] and "sent" in texts[0]
        assert any("acked" in t and "adapter:drop-out" in t and "done" in t for t in texts), texts
        page.screenshot(path=str(shots / "trace.png"), full_page=True)

        for name in ("identities", "batch"):
            page.goto(daemon.console_url + "/" + name)
            page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
    print(f"screenshots in {shots}")
