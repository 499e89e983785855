"""The operator's day with records of a mainframe file, in a real headless Chromium (Debian's
/usr/bin/chromium driven by Playwright, as test_browser.py): an EBCDIC record a mapping
refused is shown as JSON (decoded with the copybook of the adapter's mapping), edited in the
page and replayed through the adapter's mapping (canonical on the channel, written back by the
outbound mapping byte-exact); the trace of one record shows that record alone, with its
mappings and the file written as hops, the whole trace a click away. Screenshots go to the test's directory
(``COUPLER_SCREENSHOTS=DIR`` writes them there instead: docs/images holds the documented ones)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from coupler.bus.config.loader import load_site
from coupler.bus.runtime.console.server import console_url
from tests.adapters.filedrop.test_site_translation import RECORDS
from tests.bus.runtime.console.test_browser import browser  # noqa: F401 - the fixture
from tests.bus.runtime.console.test_ebcdic_dead_letter import BAD, FIXED, ebcdic, ebcdic_site
from tests.bus.site_helpers import running_daemon, wait_for

pytestmark = pytest.mark.slow


def test_ebcdic_dead_letter_edited_as_json_and_the_trace_of_one_record(tmp_path: Path, browser) -> None:  # noqa: F811
    shots = Path(os.environ.get("COUPLER_SCREENSHOTS") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    site_file = ebcdic_site(tmp_path, http=True)
    with running_daemon(site_file, plugins=None) as daemon:
        t = daemon.transport
        assert t is not None
        (tmp_path / "drop" / "accounts.dat").write_bytes(ebcdic(RECORDS[0]) + ebcdic(BAD) + ebcdic(RECORDS[1]))
        (dead,) = wait_for(lambda: t.dead_letters(kind="invalid"), "the invalid record")
        target = tmp_path / "out" / "accounts.dat"
        wait_for(lambda: target.exists() and target.stat().st_size == 44, "the two good records written back")
        daemon.pause("accounts-out")  # the replayed record stays on its channel, to be looked at

        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(30_000)
        page.goto(console_url(load_site(site_file)))
        page.goto(daemon.console_url + "/dead-letters")
        page.get_by_role("link", name=str(dead.id), exact=True).click()
        body = page.locator("textarea#body")
        body.wait_for()
        assert "decoded as copybook" in page.locator("label[for=body]").inner_text()
        record = json.loads(body.input_value())
        assert record["ACCT_NAME"] == "MALLORY" and record["STATUS_CODE"] == "X"
        record["STATUS_CODE"] = "A"
        body.fill(json.dumps(record, indent=2))
        page.screenshot(path=str(shots / "console-ebcdic-dead-letter.png"), full_page=True)
        page.get_by_role("button", name="Replay edited body").click()
        page.wait_for_selector("#notice:has-text('through mapping mappings/account.toml')")
        [replayed] = wait_for(lambda: t.peek("accounts", 10), "the replayed record")
        # through the adapter's mapping: on the channel in its canonical format
        assert replayed.message_id == dead.envelope.message_id and replayed.format.ref == "test.Account@1"
        daemon.resume("accounts-out")
        wait_for(lambda: target.stat().st_size == 66, "the replayed record written back")
        # the outbound mapping writes the edited record back: EBCDIC, byte for byte
        assert target.read_bytes() == ebcdic(RECORDS[0]) + ebcdic(RECORDS[1]) + ebcdic(FIXED)

        first = next(e.message_id for e in t.journal(channel="accounts", limit=50) if e.event in ("sent", "published"))
        page.goto(f"{daemon.console_url}/trace?q={first}")
        rows = page.locator("#trace tbody tr")
        rows.filter(has_text="acked").first.wait_for()
        links = page.locator("#trace tbody a")
        assert {links.nth(i).get_attribute("href") for i in range(links.count())} == {f"/trace?q={first}"}
        # the inbound and the outbound mapping, and the file written, are hops of their own
        table = [[cell.strip() for cell in row] for row in page.eval_on_selector_all(
            "#trace tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.innerText))")]
        assert [(r[1], r[2], r[5]) for r in table] == [
            ("mapped", "mapping mappings/account.toml", "adapter:accounts-in"),
            ("sent", "stored", "adapter:accounts-in"),
            ("received", "received", "adapter:accounts-out"),
            ("mapped", "mapping mappings/account.toml", "adapter:accounts-out"),
            ("delivered", f"to {target}", "adapter:accounts-out"),
            ("acked", "done", "adapter:accounts-out"),
        ]
        page.screenshot(path=str(shots / "console-record-trace.png"), full_page=True)
        one = rows.count()
        page.get_by_role("link", name="show the whole trace").click()
        page.wait_for_url("**whole=1**")
        assert page.locator("#trace tbody tr").count() > one  # the other records of the file too
