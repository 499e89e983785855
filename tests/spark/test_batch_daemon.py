"""The daemon runs batch ingestion by itself (``[[batch]]``): when the file drop stages a file
over its threshold (``on_staged``), with the job's options, output format and output folder
(relative to site.toml); an interval job whose source has nothing staged comes due and starts
nothing. Each run is a ``coupler batch ingest`` child process with its own Spark (one JVM per
run), so the test runs one: an interval run's trigger is ``BatchScheduler``'s ``due()``, the
same step as the staged one's, tested without Spark in tests/bus/batch/test_batch_schedule.py
(a second JVM here proved no more and was a third of the test's CPU time; the one left runs
lean: the client JIT only, another third)."""

from __future__ import annotations

import functools
import io
import json
import os
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from coupler.bus.batch.ingest import EVENT_FORMAT
from coupler.bus.batch.jobs import LEAN_JVM_OPTIONS
from coupler.bus.cli.main import main
from coupler.bus.config.loader import load_site
from coupler.bus.runtime.control import ControlClient
from coupler.bus.runtime.daemon import Daemon
from coupler.canonical.registry import SchemaRegistry
from tests.bus import site_helpers

from .test_batch_ingest import COPYBOOK, RECORD, write_cards

#: relative paths throughout: they are relative to site.toml, not to the working directory
SITE = """
[site]
data_dir = "data"

[[adapters]]
name = "cards-in"
type = "filedrop"
direction = "inbound"
channel = "cards"
[adapters.options]
directory = "drop"
payload = "copybook"
copybook = "card.cpy"
batch_threshold_bytes = 1000
batch_dir = "staged"
stable_seconds = 0
poll_interval = 0.05

[[adapters]]
name = "ledger-in"
type = "filedrop"
direction = "inbound"
channel = "ledger"
[adapters.options]
directory = "ledger-drop"
payload = "copybook"
copybook = "card.cpy"
batch_threshold_bytes = 1000
batch_dir = "ledger-staged"

[[batch]]
source = "cards-in"
on_staged = true
poll_seconds = 0.2
master = "local[1]"
options = { generate_record_id = true }
# the run's JVM lives seconds: the client JIT only (jobs.LEAN_JVM_OPTIONS; the quiet log4j option stays)
conf = { "spark.driver.defaultJavaOptions" = "@LEAN@" }
to = "jsonl"
output = "out/cards"

[[batch]]
source = "ledger-in"
interval_seconds = 1
master = "local[1]"
""".replace("@LEAN@", LEAN_JVM_OPTIONS)


def completed(daemon: Daemon, channel: str) -> list[dict[str, Any]]:
    assert daemon.transport is not None
    registry = SchemaRegistry.default()
    return [
        registry.decode(e.body, EVENT_FORMAT) for e in daemon.transport.peek(channel, max=100)
        if e.format.ref == EVENT_FORMAT
    ]


wait_for = functools.partial(site_helpers.wait_for, timeout=600.0)  # a JVM started under load: only a guard against a hang


def batch_row(site: Any, source: str) -> dict[str, Any]:
    return next(r for r in ControlClient(site.control_socket).call("status")["batch"] if r["source"] == source)


def test_the_daemon_ingests_staged_files_by_itself_and_on_a_schedule(tmp_path: Path) -> None:
    (tmp_path / "card.cpy").write_text(COPYBOOK)
    site_file = tmp_path / "site.toml"
    site_file.write_text(SITE)
    site = load_site(site_file)
    daemon = Daemon(site)
    daemon.start()
    try:
        first_due = batch_row(site, "ledger-in")["next_run"]
        # the file drop stages a file over its threshold; nobody runs anything by hand
        (tmp_path / "drop").mkdir(exist_ok=True)
        write_cards(tmp_path / "drop" / ".cards.tmp", 0, 30)
        os.replace(tmp_path / "drop" / ".cards.tmp", tmp_path / "drop" / "cards.dat")

        (cards,) = wait_for(lambda: completed(daemon, "cards"), "BatchCompleted of cards-in")
        status = wait_for(
            lambda: (s := ControlClient(site.control_socket).call("status"))
            and all(r["state"] == "idle" for r in s["batch"]) and s,
            "the job to be collected",
        )
        # the interval job came due (its next run moved on) with nothing staged: it started nothing
        ledger = wait_for(lambda: (r := batch_row(site, "ledger-in"))["next_run"] != first_due and r, "the interval to come due")
        assert [p.name for p in (tmp_path / "staged").iterdir() if p.is_file()] == []
        other_events = [e.format.ref for e in daemon.transport.peek("cards", max=100)]  # type: ignore[union-attr]
        from prometheus_client.parser import text_string_to_metric_families

        metrics = {(m.name, tuple(sorted(m.labels.items()))): m.value
                   for f in text_string_to_metric_families(daemon.observer.exposition().decode()) for m in f.samples}
    finally:
        daemon.shutdown()

    assert "coupler.batch.StagedFile@1" in other_events
    assert (cards["source"], cards["records"], cards["errors"]) == ("cards-in", 30, 0)
    # the job's output format and folder, relative to site.toml
    assert cards["outputs"] == [str(tmp_path / "out" / "cards" / cards["batch_id"])]
    rows = [json.loads(line) for f in Path(cards["outputs"][0]).glob("part-*.json") for line in f.read_text().splitlines()]
    assert sorted(r["CARD_ID"] for r in rows) == list(range(30))
    assert {r["Record_Byte_Length"] for r in rows} == {RECORD}  # the job's options reached the reader
    (archived,) = (tmp_path / "staged" / "archive" / cards["batch_id"]).iterdir()
    assert archived.name.endswith("-cards.dat")
    # /metrics: per batch job, records written and input bytes read
    assert metrics[("coupler_batch_records_total", (("job", "cards-in"),))] == 30
    assert metrics[("coupler_batch_input_bytes_total", (("job", "cards-in"),))] == archived.stat().st_size
    assert metrics[("coupler_batch_runs_total", (("job", "cards-in"),))] == 1
    assert metrics[("coupler_batch_runs_total", (("job", "ledger-in"),))] == 0
    assert metrics[("coupler_batch_records_total", (("job", "ledger-in"),))] == 0

    assert (ledger["state"], ledger["last_run"], ledger["staged"]) == ("idle", None, 0)
    assert (tmp_path / "data" / "batch" / "cards-in" / "run.log").exists()
    assert not (tmp_path / "data" / "batch" / "ledger-in" / "run.log").exists()  # no process was started

    runs = {r["source"]: r for r in status["batch"]}
    cards_run = runs["cards-in"]["last_run"]
    assert (cards_run["outcome"], cards_run["trigger"], cards_run["records"], cards_run["errors"]) == ("succeeded", "staged", 30, 0)
    assert cards_run["batches"] == 1
    assert cards_run["duration_seconds"] > 0 and cards_run["events"] and not status["alerts"]

    # and as an operator reads it, the daemon stopped: the last runs are on record
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["ctl", "--site", str(site_file), "status"]) == 0
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("BATCH "))
    batch_rows = {line.split()[0]: line.split() for line in lines[start + 1:] if line.strip()[:1].isalpha() and not line.startswith("CHANNEL")}
    cards_row = batch_rows["cards-in"]
    assert cards_row[1] == "stopped" and cards_row[cards_row.index("succeeded") + 1] == "30"
    assert batch_rows["ledger-in"][1] == "stopped" and "succeeded" not in batch_rows["ledger-in"]
