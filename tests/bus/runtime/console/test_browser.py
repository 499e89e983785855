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
from tests.bus.runtime.console.helpers import console_site
from tests.bus.site_helpers import running_daemon, wait_for

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.slow


@pytest.fixture
def browser():
    """A missing Chromium fails the test (like every other missing real component)."""
    from playwright.sync_api import sync_playwright

    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"Debian chromium is not installed at {CHROMIUM}: run `make system-deps` (as root)")

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
        # the rate chart draws the messages that went through (sampled every 2 s)
        page.wait_for_function(
            "() => [...document.querySelectorAll('#channels svg.chart')].some("
            "s => /peak (0\\.[1-9]|[1-9])/.test(s.getAttribute('aria-label') || ''))"
        )

        # a dead letter: edited in the page and replayed, then delivered
        bad = Envelope(format=FormatIndicator("acme.Order", 1, "application/json"), body=b'{"order": "broken"}',
                       properties={"file.name": "repaired.json"})
        daemon.transport.invalid(bad, "does not fit acme.Order@1: order is not a number", "adapter:drop-in", channel="orders")
        [dl] = daemon.transport.dead_letters()
        daemon.transport.invalid(b"\x00\x01 not an envelope", "unreadable", "test", channel="orders")
        page.goto(daemon.console_url)
        page.locator("#overview-channels tr", has_text="orders").get_by_text("2", exact=True).wait_for()  # two invalid
        page.screenshot(path=str(shots / "overview.png"), full_page=True)
        page.goto(daemon.console_url + "/dead-letters")
        page.locator("#dead-letters tbody tr").nth(1).wait_for()
        page.get_by_label("Kind").select_option("invalid")
        page.get_by_label("Text").fill("does not fit")
        page.get_by_role("button", name="Filter").click()
        page.wait_for_url("**kind=invalid**")
        assert page.locator("#dead-letters tbody tr").count() == 1
        page.get_by_role("link", name=str(dl.id), exact=True).click()
        page.wait_for_selector("textarea#body")
        assert json.loads(page.locator("textarea#body").input_value()) == {"order": "broken"}
        page.locator("textarea#body").fill('{"order": "fixed"}')
        page.screenshot(path=str(shots / "dead-letter.png"), full_page=True)
        page.get_by_role("button", name="Replay edited body").click()
        page.wait_for_selector("#notice:has-text('replayed as message')")
        page.screenshot(path=str(shots / "dead-letters.png"), full_page=True)
        assert [d.reason for d in daemon.transport.dead_letters()] == ["unreadable"]
        # back on its channel, the outbound adapter delivers the edited body
        wait_for(lambda: (tmp_path / "out" / "repaired.json").exists(), "the repaired message delivered")
        assert json.loads((tmp_path / "out" / "repaired.json").read_text()) == {"order": "fixed"}
        page.goto(daemon.console_url + "/trace?q=repaired.json")
        page.locator("#trace tbody tr", has_text="adapter:drop-out").filter(has_text="acked").wait_for()
        assert "replayed" in page.locator("#trace").inner_text()

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
