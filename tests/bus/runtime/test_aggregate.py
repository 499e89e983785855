"""The Aggregator step through a real daemon from site.toml, on SQLite and on RabbitMQ +
PostgreSQL: completion by size, time-out, predicate and Message Sequence, the strategies, late
messages, and groups (with their time-outs) that survive a restart of the daemon."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import fastavro
import pytest
from lxml import etree

from coupler.bus.config.loader import ConfigError, load_site
from coupler.bus.plugins.manager import plugin_manager
from coupler.bus.runtime.steps import aggregate as aggregate_step
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.envelope import Sequence
from tests.bus import plugin_echo, plugin_strategy
from tests.bus.runtime.test_route_steps import drained, order, settled
from tests.bus.site_helpers import running_daemon, wait_for, write_reading_site, write_site

SIZE_AND_TIMEOUT = """
[[routes]]
name = "batches"
from = "orders.in"
to = ["batches.out"]
[[routes.steps]]
type = "aggregate"
correlation = "body.customer.region"
complete_size = 3
timeout_seconds = {timeout}
strategy = "lines"
late_to = "late.out"
"""


def aggregator_clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The Aggregator's clock, standing still until the test moves it (``clock[0] += s``).

    Internal, unavoidable: the Aggregator reads ``time.time()`` of its module and has no clock to
    inject; a test on the real clock races a busy machine (a slow store read or shutdown let the
    time-out fire before the restart it is about; slow deliveries, before the group's last member)."""
    clock = [time.time()]

    class Clock:  # time.time() stands still; the rest of the time module as it is
        def __getattr__(self, name: str) -> Any:
            return getattr(time, name)

        def time(self) -> float:
            return clock[0]

    monkeypatch.setattr(aggregate_step, "time", Clock())
    return clock


def test_groups_complete_by_size_and_by_time_out_and_late_messages_go_aside(store: str, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    clock = aggregator_clock(monkeypatch)  # US 5 joins US 2 however slowly the messages between go
    with running_daemon(write_site(tmp_path, store + SIZE_AND_TIMEOUT.format(timeout=1.5))) as d:
        t = d.transport
        assert t is not None
        t.send("orders.in", [order("EU", 1), order("US", 2), order("EU", 3), order("EU", 4), order("US", 5)])
        [first] = drained(d, "batches.out", 1)  # EU by size at once ...
        settled(d, "orders.in")
        clock[0] += 2
        [second] = drained(d, "batches.out", 1)  # ... US by its time-out
        assert first.properties["aggregate.reason"] == "size" and first.correlation_id == "EU"
        assert [json.loads(x)["amount"] for x in first.body.splitlines()] == [1, 3, 4]
        assert second.properties["aggregate.reason"] == "timeout" and second.properties["aggregate.key"] == "US"
        assert [json.loads(x)["amount"] for x in second.body.splitlines()] == [2, 5]
        assert first.format == order("EU", 1).format
        # a message for a completed group is late
        t.send("orders.in", [order("EU", 6)])
        [late] = drained(d, "late.out", 1)
        assert json.loads(late.body)["amount"] == 6
        settled(d, "orders.in")
        agg = d.pipelines["batches"].steps[0]
        with t.transaction() as tx:
            assert agg.open_groups(tx) == []  # type: ignore[attr-defined]
        assert t.dead_letters() == []


def test_open_groups_and_their_time_outs_survive_a_restart(store: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    site = write_site(tmp_path, store + SIZE_AND_TIMEOUT.format(timeout=2))
    clock = aggregator_clock(monkeypatch)  # the group cannot time out while the first daemon runs
    with running_daemon(site) as d:
        assert d.transport is not None
        d.transport.send("orders.in", [order("EU", 1), order("EU", 2)])
        settled(d, "orders.in")
        with d.transport.transaction() as tx:
            [group] = d.pipelines["batches"].steps[0].open_groups(tx)  # type: ignore[attr-defined]
        assert group["key"] == "EU" and group["size"] == 2
    # the time-out falls due while the daemon is down ...
    clock[0] += 2.5
    with running_daemon(site) as d:
        # ... and fires when it starts (this daemon completes it): nothing lost, nothing twice
        [batch] = drained(d, "batches.out", 1)
        assert batch.properties["aggregate.reason"] == "timeout"
        assert [json.loads(x)["amount"] for x in batch.body.splitlines()] == [1, 2]
        agg = d.pipelines["batches"].steps[0]
        wait_for(lambda: agg.completed["timeout"] == 1, "the restarted daemon to count the time-out")  # type: ignore[attr-defined]


SEQUENCE_AND_PREDICATE = """
[[routes]]
name = "parts"
from = "parts.in"
to = ["docs.out"]
[[routes.steps]]
type = "aggregate"
complete_sequence = true
strategy = "fixed"
record_length = 4

[[routes]]
name = "until-last"
from = "lines.in"
to = ["lines.out"]
[[routes.steps]]
type = "aggregate"
correlation = "properties.batch"
complete_when = "properties.last = 'true' or properties.group_size >= 10"
"""


def test_a_message_sequence_and_a_predicate_complete_groups(store: str, tmp_path: Path) -> None:
    text = FormatIndicator.parse("test.Rec@1;text/plain")
    with running_daemon(write_site(tmp_path, store + SEQUENCE_AND_PREDICATE)) as d:
        t = d.transport
        assert t is not None
        parts = [Envelope(format=text, body=f"R{i:03d}".encode(), sequence=Sequence("doc-1", i, 4)) for i in (2, 0, 3, 1)]
        t.send("parts.in", parts[:3])
        t.send("parts.in", [Envelope(format=text, body=b"TOOLONG", sequence=Sequence("doc-1", 9, 4))])
        t.send("parts.in", parts[3:])
        [doc] = drained(d, "docs.out", 1)
        assert doc.body == b"R000R001R002R003" and doc.properties["aggregate.reason"] == "sequence"
        [bad] = wait_for(lambda: t.dead_letters(kind="invalid"), "the bad record in the Invalid Message Channel")
        assert "not a record of 4" in bad.reason
        t.send("lines.in", [Envelope(format=text, body=f"l{i}".encode(), properties={"batch": "b1"}) for i in range(3)])
        t.send("lines.in", [Envelope(format=text, body=b"end", properties={"batch": "b1", "last": "true"})])
        [lines] = drained(d, "lines.out", 1)
        assert lines.body == b"l0\nl1\nl2\nend\n" and lines.properties["aggregate.reason"] == "predicate"
        assert lines.properties["batch"] == "b1" and "last" not in lines.properties  # what all members share


BATCH_SCHEMA = {"type": "record", "name": "ReadingBatch", "namespace": "test",
                "fields": [{"name": "meter", "type": "string"},
                           {"name": "readings", "type": {"type": "array", "items": "test.Reading"}}]}

STRATEGIES = """
[[routes]]
name = "as-records"
from = "readings.in"
to = ["records.out", "container.in"]
[[routes.steps]]
type = "aggregate"
correlation = "body.meter"
complete_size = 3
strategy = "records"
format = "test.ReadingBatch@1"
field = "readings"
key_field = "meter"

[[routes]]
name = "as-container"
from = "container.in"
to = ["container.out"]
[[routes.steps]]
type = "aggregate"
correlation = "format.name"
complete_size = 1
strategy = "avro"

[[routes]]
name = "as-xml"
from = "xml.in"
to = ["xml.out"]
[[routes.steps]]
type = "aggregate"
correlation = "xpath('/order/@region')"
complete_size = 2
strategy = "xml"
wrapper = "orders"

[[routes]]
name = "third-party"
from = "json.in"
to = ["totals.out"]
[[routes.steps]]
type = "aggregate"
correlation = "body.customer.region"
complete_size = 2
strategy = "total"
"""


def test_strategies_records_avro_container_xml_and_a_third_party_hook(store: str, tmp_path: Path) -> None:
    site = write_reading_site(tmp_path, '[schemas]\npaths = ["schemas"]\n' + store + STRATEGIES)
    path = site.parent / "schemas" / "test" / "readingbatch" / "v1.avsc"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(BATCH_SCHEMA))
    reading = FormatIndicator.parse("test.Reading@1")
    with running_daemon(site, (plugin_echo, plugin_strategy)) as d:
        t = d.transport
        assert t is not None
        registry = d.registry()
        t.send("readings.in", [Envelope(format=reading, body=registry.encode({"meter": "m1", "value": v}, reading))
                               for v in (1, 2, 3)])
        [batch] = drained(d, "records.out", 1)
        assert str(batch.format) == str(FormatIndicator.parse("test.ReadingBatch@1"))
        assert registry.decode(batch.body, batch.format) == {
            "meter": "m1", "readings": [{"meter": "m1", "value": v} for v in (1, 2, 3)]}
        # the batch record again, as an Avro object container file of one record
        [container] = drained(d, "container.out", 1)
        assert container.format.content_type == "application/avro"
        [record] = list(fastavro.reader(io.BytesIO(container.body)))
        assert record["readings"][2]["value"] == 3
        xml = FormatIndicator.parse("test.Order@1;application/xml")
        t.send("xml.in", [Envelope(format=xml, body=f'<order region="EU" n="{i}"/>'.encode()) for i in range(2)])
        [doc] = drained(d, "xml.out", 1)
        root = etree.fromstring(doc.body)
        assert root.tag == "orders" and [o.get("n") for o in root] == ["0", "1"]
        t.send("json.in", [order("EU", 10), order("EU", 32)])
        [total] = drained(d, "totals.out", 1)
        assert json.loads(total.body) == {"key": "EU", "count": 2, "total": 42, "reason": "size"}


def test_an_aggregator_without_completion_or_with_an_unknown_strategy_is_refused(tmp_path: Path) -> None:
    route = """
[[routes]]
name = "r"
from = "a"
to = ["b"]
[[routes.steps]]
type = "aggregate"
"""
    with pytest.raises(ConfigError) as no_completion:
        load_site(write_site(tmp_path, route), pm=plugin_manager(entry_points=False))
    assert "routes[r].steps[0]: no completion: set complete_size" in str(no_completion.value)
    with pytest.raises(ConfigError) as unknown:  # the strategies of plugins are known when the daemon starts
        with running_daemon(write_site(tmp_path, route + 'complete_size = 2\nstrategy = "sum"\n')):
            pass
    assert "routes[r].steps[0].strategy: unknown strategy 'sum' (known: all, avro, best, first, fixed, lines, records, xml)" in str(unknown.value)


OPERATED = """
[[routes]]
name = "batches"
from = "orders.in"
to = ["batches.out"]
[[routes.steps]]
type = "aggregate"
name = "by-region"
correlation = "body.customer.region"
complete_size = 100
timeout_seconds = 3600
"""


def test_an_operator_sees_open_groups_completes_or_discards_one_and_metrics_count_them(store: str, tmp_path: Path) -> None:
    from coupler.bus.runtime.console import pages
    from coupler.bus.runtime.control import ControlService

    with running_daemon(write_site(tmp_path, store + OPERATED)) as d:
        t = d.transport
        assert t is not None
        t.send("orders.in", [order("EU", 1), order("US", 2), order("EU", 3)])
        settled(d, "orders.in")
        ctl = ControlService(d)
        groups = {g["key"]: g for g in ctl.call("groups")}
        assert {k: (g["route"], g["step"], g["type"], g["size"]) for k, g in groups.items()} == {
            "EU": ("batches", "by-region", "aggregate", 2), "US": ("batches", "by-region", "aggregate", 1)}
        assert groups["EU"]["age_seconds"] >= 0
        html = pages.render("groups", "site", {"status": {}, "groups": list(groups.values()), "query": {}})
        assert "Complete now" in html and "<code>EU</code>" in html
        metrics = d.observer.exposition().decode()
        assert 'coupler_step_open_groups{route="batches",step="by-region",type="aggregate"} 2.0' in metrics
        assert 'coupler_step_held_messages{route="batches",step="by-region",type="aggregate"} 3.0' in metrics
        done = ctl.call("group.complete", route="batches", step="by-region", key="EU")
        [batch] = drained(d, "batches.out", 1)
        assert batch.message_id == done["message_id"] and batch.properties["aggregate.reason"] == "forced"
        assert [json.loads(x)["amount"] for x in batch.body.splitlines()] == [1, 3]
        assert ctl.call("group.discard", route="batches", step="by-region", key="US")["discarded"] == 1
        assert ctl.call("groups") == []
        with pytest.raises(Exception, match="no open group 'US'"):
            ctl.call("group.discard", route="batches", step="by-region", key="US")
        metrics = d.observer.exposition().decode()
        assert 'coupler_aggregate_completions_total{reason="forced",route="batches",step="by-region"} 1.0' in metrics
        assert 'coupler_step_open_groups{route="batches",step="by-region",type="aggregate"} 0.0' in metrics


def test_ctl_groups_lists_completes_and_discards_as_the_console_does(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from coupler.bus.cli.main import main

    def ctl(*argv: str) -> tuple[int, str, str]:
        rc = main(["ctl", "--site", str(site), "groups", *argv])
        out, err = capsys.readouterr()
        return rc, out, err

    site = write_site(tmp_path, OPERATED)
    with running_daemon(site) as d:
        assert d.transport is not None
        d.transport.send("orders.in", [order("EU", 1), order("US", 2), order("EU", 3)])
        settled(d, "orders.in")
        rc, out, _ = ctl("list")
        assert rc == 0
        header, *rows = out.splitlines()
        assert header.split()[:6] == ["ROUTE", "STEP", "TYPE", "KEY", "SIZE", "AGE"]
        assert sorted(r.split()[:5] for r in rows) == [["batches", "by-region", "aggregate", "EU", "2"],
                                                       ["batches", "by-region", "aggregate", "US", "1"]]
        rc, out, _ = ctl("list", "--json", "--route", "batches")
        assert {g["key"]: g["size"] for g in json.loads(out)} == {"EU": 2, "US": 1}
        rc, out, _ = ctl("complete", "batches", "by-region", "EU")
        assert rc == 0 and "group EU completed as message" in out
        [batch] = drained(d, "batches.out", 1)
        assert batch.properties["aggregate.reason"] == "forced"
        assert [json.loads(x)["amount"] for x in batch.body.splitlines()] == [1, 3]
        rc, out, _ = ctl("discard", "batches", "by-region", "US", "--json")
        assert json.loads(out)["discarded"] == 1
        assert ctl("list")[1] == "no open groups\n"
        rc, out, err = ctl("discard", "batches", "by-region", "US")
        assert rc != 0 and "no open group 'US'" in err and "Traceback" not in err


BATCHED = """
[[routes]]
name = "batches"
from = "orders.in"
to = ["batches.out"]
[[routes.steps]]
type = "aggregate"
correlation = "body.customer.region"
complete_size = 9
strategy = "lines"
"""


def test_a_bad_message_among_others_taken_together_goes_alone_to_the_invalid_messages(tmp_path: Path) -> None:
    """The route's worker takes the ready messages of its channel together (one transaction,
    SQLite); one without a group key rolls that back, and each goes again alone: the bad one is
    invalid with its cause, the others are counted once each."""
    from tests.bus.runtime.test_route_steps import JSON

    with running_daemon(write_site(tmp_path, BATCHED)) as d:
        t = d.transport
        assert t is not None
        keyless = Envelope(format=JSON, body=json.dumps({"id": "x", "amount": 99}).encode())
        t.send("orders.in", [order("EU", i) for i in range(4)] + [keyless] + [order("EU", i) for i in range(4, 9)])
        [batch] = drained(d, "batches.out", 1)
        assert sorted(json.loads(x)["amount"] for x in batch.body.splitlines()) == list(range(9))
        [bad] = wait_for(lambda: t.dead_letters(kind="invalid"), "the keyless order in the invalid messages")
        assert bad.envelope is not None and bad.envelope.message_id == keyless.message_id and bad.attempts == 1
        assert "step 0 aggregate" in bad.reason and "no group key body.customer.region" in bad.reason, bad.reason
        settled(d, "orders.in")
        step = d.pipelines["batches"].steps[0]
        wait_for(lambda: step.completed["size"] == 1, "the completion counted")  # type: ignore[attr-defined]
